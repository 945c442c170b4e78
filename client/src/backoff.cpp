// backoff.cpp: exponential backoff with jitter.
#include "backoff.hpp"

#include <algorithm>

namespace jobqueue {

Backoff::Backoff(std::chrono::milliseconds first, std::chrono::milliseconds largest)
    : step_(std::max(std::chrono::milliseconds(1), std::min(first, largest))),
      largest_(std::max(largest, step_)),
      random_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::next() {
    std::uniform_int_distribution<std::chrono::milliseconds::rep> pick(step_.count() / 2, step_.count());
    std::chrono::milliseconds pause(pick(random_));
    step_ = std::min(step_ * 2, largest_);
    return pause;
}

}  // namespace jobqueue
