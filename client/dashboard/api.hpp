// api.hpp: what the page's JSON endpoints answer, each read through one
// Client from the extension's functions (the dashboard reads no table).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jobqueue/client.hpp"
#include "metrics.hpp"

namespace jobqueue::dashboard {

// The cap the overview passes to queue_overview: counts are exact up to
// it; past it (extension 1.5) the page shows "≥ 1,000 (≈ 1.2 M)" and
// /metrics the estimate; an extension at 1.4 makes no estimate, and a
// count that reached the cap shows as "1,000+".
constexpr int kOverviewCountCap = 1000;

// The failed rows of every queue together, and whether that is exact.
struct FailedTotal {
    std::int64_t rows = 0;
    bool exact = true;
};

// The failed rows of the overview's queues summed (each estimated past the
// cap), so that the total costs no count of the failed table; when a
// count stopped at the cap without an estimate (extension 1.4),
// queue_failed_count() instead.
FailedTotal failed_total(Client& client, const std::vector<QueueOverview>& queues);

// {queues: [queue_overview rows + oldest_pending_age_seconds], count_cap,
//  failed_total}. Ages are counted from `now`.
nlohmann::json overview_json(Client& client, TimePoint now);

// One page of a queue's jobs: {queue, state, jobs: [...], next_after}. It
// asks for one row more than `limit` to know whether a next page exists;
// next_after is the id to pass as `after` for it, or null.
nlohmann::json queue_jobs_json(Client& client, const std::string& queue, const std::optional<std::string>& state,
                               std::optional<std::int64_t> after, int limit);

// One job in full, or none.
std::optional<nlohmann::json> job_json(Client& client, std::int64_t id);

// {jobs: [...]}: the newest failed jobs, of one queue when given.
nlohmann::json failed_json(Client& client, const std::optional<std::string>& queue, int limit);

// {schedules: [...]}
nlohmann::json schedules_json(Client& client);

// {workers: [{worker, leases: [...]}]}: who holds which lease now, grouped
// by worker (in the order queue_leases gives), seconds_left counted from now.
nlohmann::json workers_json(Client& client, TimePoint now);

// What the connection is: host, port, database, user, server version and
// whether it goes through a pooler (read from libpq, no query).
nlohmann::json connection_json(Client& client);

// The readings /metrics writes; the counters are left out when the server
// cannot count. Throws what the client throws.
MetricsSnapshot metrics_snapshot(Client& client);

}  // namespace jobqueue::dashboard
