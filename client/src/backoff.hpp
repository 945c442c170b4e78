// backoff.hpp (internal): pauses between attempts to reach the server.
#pragma once

#include <chrono>
#include <random>

namespace jobqueue {

// Exponential backoff with jitter: each pause is drawn at random from the
// upper half of the current step, and the step doubles up to the largest.
// The jitter keeps workers that lost the server together from all coming
// back at the same instant.
class Backoff {
public:
    Backoff(std::chrono::milliseconds first, std::chrono::milliseconds largest);

    // The pause before the next attempt, in [step / 2, step].
    std::chrono::milliseconds next();

private:
    std::chrono::milliseconds step_;
    std::chrono::milliseconds largest_;
    std::minstd_rand random_;
};

}  // namespace jobqueue
