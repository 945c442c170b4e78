// rates.hpp: jobs per second pushed and completed, from successive
// readings of the cumulative counters (queue_counters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "jobqueue/job.hpp"

namespace jobqueue::dashboard {

// The rate over the interval that ends at `at`.
struct RatePoint {
    TimePoint at;
    double pushed_per_second = 0;
    double completed_per_second = 0;
};

// The last `capacity` readings and the rates between them. A counter that
// went down was reset (queue_counters_reset, a server restart): its new
// value is all that happened since, as Prometheus's rate() takes it. A
// queue not seen in the previous reading starts from zero. Not
// thread-safe: its owner locks.
class RateHistory {
public:
    explicit RateHistory(std::size_t capacity) : capacity_(capacity) {}

    void add(TimePoint at, const std::vector<QueueCounters>& counters);
    // A reading was missed (the database was unreachable): the next one
    // starts a new series instead of spreading the gap's jobs over it.
    void gap();
    // One point per pair of successive readings, oldest first.
    [[nodiscard]] std::vector<RatePoint> rates() const;

private:
    struct Reading {
        TimePoint at;
        std::map<std::string, std::pair<std::int64_t, std::int64_t>> totals;  // queue -> (pushed, completed)
        bool after_gap = false;
    };
    std::size_t capacity_;
    std::deque<Reading> readings_;
    bool gap_ = false;
};

}  // namespace jobqueue::dashboard
