// metrics.hpp: the /metrics page: what the dashboard read from the
// database, written as Prometheus metrics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jobqueue/job.hpp"

namespace jobqueue::dashboard {

// One reading of the database for /metrics.
struct MetricsSnapshot {
    bool up = false;  // the database answered
    std::vector<QueueOverview> queues;
    int count_cap = 0;  // the cap the queues were counted up to
    std::optional<std::int64_t> failed_total;  // the queues' failed rows summed (failed_total in api.hpp)
    bool failed_total_exact = true;
    // queue_counters(); none when the server cannot count (jobqueue not in
    // shared_preload_libraries): the counter families are then left out.
    std::optional<std::vector<QueueCounters>> counters;
};

// The exposition text. `now` dates the oldest pending job's age.
std::string render_metrics(const MetricsSnapshot& snapshot, TimePoint now);

}  // namespace jobqueue::dashboard
