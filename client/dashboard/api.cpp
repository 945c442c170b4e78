// api.cpp: the JSON answers of the page's GET endpoints.
#include "api.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <map>

namespace jobqueue::dashboard {

namespace {

double seconds_between(TimePoint from, TimePoint to) { return std::chrono::duration<double>(to - from).count(); }

}  // namespace

FailedTotal failed_total(Client& client, const std::vector<QueueOverview>& queues) {
    FailedTotal total;
    for (const auto& q : queues) {
        if (q.failed_estimate) {
            total.rows += *q.failed_estimate;
            total.exact = false;
        } else if (!q.estimates && q.counts_capped && q.failed >= kOverviewCountCap) {
            return {client.failed_count(), true};  // capped, not estimated: the extension is at 1.4
        } else {
            total.rows += q.failed;
        }
    }
    return total;
}

nlohmann::json overview_json(Client& client, TimePoint now) {
    nlohmann::json queues = nlohmann::json::array();
    auto rows = client.overview(kOverviewCountCap);
    for (const auto& q : rows) {
        nlohmann::json row = q;
        row["oldest_pending_age_seconds"] =
            q.oldest_pending_at ? nlohmann::json(seconds_between(*q.oldest_pending_at, now)) : nlohmann::json();
        queues.push_back(std::move(row));
    }
    auto failed = failed_total(client, rows);
    return {{"queues", std::move(queues)},
            {"count_cap", kOverviewCountCap},
            {"failed_total", failed.rows},
            {"failed_total_exact", failed.exact}};
}

nlohmann::json queue_jobs_json(Client& client, const std::string& queue, const std::optional<std::string>& state,
                               std::optional<std::int64_t> after, int limit) {
    auto rows = client.jobs_page(queue, JobsPageOptions{state, after, limit + 1});
    nlohmann::json next_after;
    if (rows.size() > static_cast<std::size_t>(limit)) {
        rows.resize(static_cast<std::size_t>(limit));
        next_after = rows.back().id;
    }
    return {{"queue", queue},
            {"state", state ? nlohmann::json(*state) : nlohmann::json()},
            {"after", after ? nlohmann::json(*after) : nlohmann::json()},
            {"jobs", rows},
            {"next_after", next_after}};
}

std::optional<nlohmann::json> job_json(Client& client, std::int64_t id) {
    auto job = client.job(id);
    if (!job) return std::nullopt;
    return nlohmann::json(*job);
}

nlohmann::json failed_json(Client& client, const std::optional<std::string>& queue, int limit) {
    return {{"jobs", client.failed(limit, queue)}, {"limit", limit}};
}

nlohmann::json schedules_json(Client& client) { return {{"schedules", client.schedules()}}; }

nlohmann::json workers_json(Client& client, TimePoint now) {
    nlohmann::json workers = nlohmann::json::array();
    std::map<std::string, std::size_t> position;  // worker -> its index in workers
    for (const auto& lease : client.leases()) {
        auto [it, added] = position.emplace(lease.worker, workers.size());
        if (added) workers.push_back({{"worker", lease.worker}, {"leases", nlohmann::json::array()}});
        nlohmann::json row = lease;
        row["seconds_left"] = seconds_between(now, lease.reserved_until);
        workers[it->second]["leases"].push_back(std::move(row));
    }
    return {{"workers", std::move(workers)}};
}

nlohmann::json connection_json(Client& client) {
    PGconn* conn = client.connection();
    auto text = [](const char* value) { return value ? nlohmann::json(value) : nlohmann::json(); };
    int version = PQserverVersion(conn);
    return {{"host", text(PQhost(conn))},
            {"port", text(PQport(conn))},
            {"database", text(PQdb(conn))},
            {"user", text(PQuser(conn))},
            {"server_version", std::to_string(version / 10000) + "." + std::to_string(version % 10000)},
            {"pooler", client.transaction_pooled()}};
}

MetricsSnapshot metrics_snapshot(Client& client) {
    MetricsSnapshot s;
    s.queues = client.overview(kOverviewCountCap);
    s.count_cap = kOverviewCountCap;
    auto failed = failed_total(client, s.queues);
    s.failed_total = failed.rows;
    s.failed_total_exact = failed.exact;
    try {
        s.counters = client.counters();
    } catch (const Error& e) {
        // 55000: jobqueue is not in shared_preload_libraries; 42883: the
        // extension predates the counters. Either way there is nothing to count.
        if (e.sqlstate() != "55000" && e.sqlstate() != "42883") throw;
    }
    s.up = true;
    return s;
}

}  // namespace jobqueue::dashboard
