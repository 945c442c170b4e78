// metrics.cpp: the metric families of /metrics.
#include "metrics.hpp"

#include <array>
#include <chrono>
#include <tuple>

#include "prometheus.hpp"

namespace jobqueue::dashboard {

namespace {

// One counter family per field of QueueCounters.
struct CounterFamily {
    const char* name;
    const char* help;
    std::int64_t QueueCounters::*field;
};

// The help texts say what docs/sql-api.md's queue_counters table says.
const CounterFamily kCounterFamilies[] = {
    {"jobqueue_jobs_pushed_total",
     "Jobs pushed (queue_push, queue_push_many, schedules), since the server started or queue_counters_reset().",
     &QueueCounters::pushed},
    {"jobqueue_jobs_claimed_total", "Jobs handed out by queue_reserve.", &QueueCounters::claimed},
    {"jobqueue_jobs_completed_total", "Jobs deleted by their worker (queue_delete, queue_delete_many).",
     &QueueCounters::completed},
    {"jobqueue_jobs_released_total", "Jobs given back for another attempt (queue_release, queue_release_many).",
     &QueueCounters::released},
    {"jobqueue_jobs_retried_total", "Jobs requeued from the failed table (queue_retry_failed).",
     &QueueCounters::retried},
    {"jobqueue_jobs_failed_total", "Jobs moved to the failed table, for any reason.", &QueueCounters::failed},
    {"jobqueue_jobs_expired_total", "Jobs found by a claim with their lease run out.", &QueueCounters::expired},
};

}  // namespace

std::string render_metrics(const MetricsSnapshot& s, TimePoint now) {
    PrometheusText out;
    out.family("jobqueue_up", "gauge", "Whether the dashboard reached the database (1) or not (0).");
    out.sample("jobqueue_up", {}, std::int64_t{s.up ? 1 : 0});
    if (!s.up) return out.text();

    // each state's count and its estimate (none: the count is exact)
    auto states = [](const QueueOverview& q) {
        return std::array<std::tuple<const char*, std::int64_t, std::optional<std::int64_t>>, 4>{
            {{"pending", q.pending, q.pending_estimate},
             {"delayed", q.delayed, q.delayed_estimate},
             {"reserved", q.reserved, q.reserved_estimate},
             {"failed", q.failed, q.failed_estimate}}};
    };
    out.family("jobqueue_jobs", "gauge",
               "Jobs of a queue by state (pending, delayed, reserved, failed): exact up to the overview's cap "
               "(" + std::to_string(s.count_cap) + "), estimated from the planner's statistics past it "
               "(see jobqueue_jobs_exact).");
    for (const auto& q : s.queues)
        for (const auto& [state, count, estimate] : states(q))
            out.sample("jobqueue_jobs", {{"queue", q.queue}, {"state", state}}, estimate.value_or(count));
    out.family("jobqueue_jobs_exact", "gauge",
               "1 when jobqueue_jobs of the queue and state is an exact count, 0 when it is an estimate "
               "(or, for an extension before 1.5, a count stopped at the cap).");
    for (const auto& q : s.queues)
        for (const auto& [state, count, estimate] : states(q))
            out.sample("jobqueue_jobs_exact", {{"queue", q.queue}, {"state", state}},
                       std::int64_t{q.estimates ? !estimate : !(q.counts_capped && count >= s.count_cap)});
    out.family("jobqueue_jobs_counts_capped", "gauge",
               "1 when a queue's counts in jobqueue_jobs stopped at the cap (there are at least that many).");
    for (const auto& q : s.queues) out.sample("jobqueue_jobs_counts_capped", {{"queue", q.queue}}, std::int64_t{q.counts_capped});
    out.family("jobqueue_queue_paused", "gauge", "1 when the queue is paused (hands out nothing).");
    for (const auto& q : s.queues) out.sample("jobqueue_queue_paused", {{"queue", q.queue}}, std::int64_t{q.paused});
    out.family("jobqueue_oldest_pending_age_seconds", "gauge",
               "How long the oldest job due now has waited (0 when none is pending).");
    for (const auto& q : s.queues) {
        double age = 0;
        if (q.oldest_pending_at && *q.oldest_pending_at < now)
            age = std::chrono::duration<double>(now - *q.oldest_pending_at).count();
        out.sample("jobqueue_oldest_pending_age_seconds", {{"queue", q.queue}}, age);
    }
    if (s.failed_total) {
        out.family("jobqueue_failed_jobs", "gauge",
                   "Rows in the failed table, every queue together: the sum of jobqueue_jobs{state=\"failed\"} "
                   "(an estimate when one of them is, see jobqueue_failed_jobs_exact).");
        out.sample("jobqueue_failed_jobs", {}, *s.failed_total);
        out.family("jobqueue_failed_jobs_exact", "gauge", "1 when jobqueue_failed_jobs is exact, 0 when estimated.");
        out.sample("jobqueue_failed_jobs_exact", {}, std::int64_t{s.failed_total_exact});
    }
    if (s.counters) {
        for (const auto& family : kCounterFamilies) {
            out.family(family.name, "counter", family.help);
            for (const auto& c : *s.counters) out.sample(family.name, {{"queue", c.queue}}, c.*family.field);
        }
    }
    return out.text();
}

}  // namespace jobqueue::dashboard
