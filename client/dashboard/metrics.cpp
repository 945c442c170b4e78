// metrics.cpp: the metric families of /metrics.
#include "metrics.hpp"

#include <chrono>

#include "prometheus.hpp"

namespace jobqueue::dashboard {

namespace {

// One counter family per field of QueueCounters.
struct CounterFamily {
    const char* name;
    const char* help;
    std::int64_t QueueCounters::*field;
};

// The help texts say what README.md's queue_counters table says.
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

    out.family("jobqueue_jobs", "gauge",
               "Jobs of a queue by state (pending, delayed, reserved, failed); counts stop at the cap "
               "(see jobqueue_jobs_counts_capped).");
    for (const auto& q : s.queues) {
        out.sample("jobqueue_jobs", {{"queue", q.queue}, {"state", "pending"}}, q.pending);
        out.sample("jobqueue_jobs", {{"queue", q.queue}, {"state", "delayed"}}, q.delayed);
        out.sample("jobqueue_jobs", {{"queue", q.queue}, {"state", "reserved"}}, q.reserved);
        out.sample("jobqueue_jobs", {{"queue", q.queue}, {"state", "failed"}}, q.failed);
    }
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
        out.family("jobqueue_failed_jobs", "gauge", "Rows in the failed table, every queue together.");
        out.sample("jobqueue_failed_jobs", {}, *s.failed_total);
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
