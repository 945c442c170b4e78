// sampler.hpp: reads the cumulative counters every few seconds, whether or
// not a page is open, so the overview's chart has the last minutes to show
// the moment it opens.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client_pool.hpp"
#include "rates.hpp"

namespace jobqueue::dashboard {

// Why the counters cannot be read, for the page.
struct CountersProblem {
    std::string message;
    std::string sqlstate;
};

class CounterSampler {
public:
    // Keeps `history` readings, one every `interval`.
    CounterSampler(ClientPool& pool, std::chrono::milliseconds interval, std::size_t history);
    ~CounterSampler();  // stops the thread
    CounterSampler(const CounterSampler&) = delete;
    CounterSampler& operator=(const CounterSampler&) = delete;

    void start();
    void stop();

    [[nodiscard]] std::vector<RatePoint> rates() const;
    // Why the last reading failed; none when it worked.
    [[nodiscard]] std::optional<CountersProblem> problem() const;
    [[nodiscard]] std::chrono::milliseconds interval() const noexcept { return interval_; }

private:
    void run();
    void sample_once();

    ClientPool& pool_;
    std::chrono::milliseconds interval_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    RateHistory history_;
    std::optional<CountersProblem> problem_;
    std::thread thread_;
};

}  // namespace jobqueue::dashboard
