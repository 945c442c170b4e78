// job.cpp: JSON forms of the client's value types.
#include "jobqueue/job.hpp"

#include <date/date.h>

#include "pg.hpp"

namespace jobqueue {

std::string format_time(TimePoint t) {
    return date::format("%FT%TZ", date::floor<std::chrono::microseconds>(t));
}

namespace {
// An optional value as JSON: null when it is empty.
template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json();
}
nlohmann::json or_null(const std::optional<TimePoint>& value) {
    return value ? nlohmann::json(format_time(*value)) : nlohmann::json();
}
}  // namespace

void to_json(nlohmann::json& out, const Job& job) {
    out = {{"id", job.id},
           {"queue", job.queue},
           {"name", job.name},
           {"payload", job.payload},
           {"attempts", job.attempts},
           {"max_attempts", job.max_attempts},
           {"priority", job.priority},
           {"token", job.token},
           {"reserved_until", format_time(job.reserved_until)},
           {"created_at", format_time(job.created_at)},
           {"last_error", job.last_error},
           {"deadline", or_null(job.deadline)}};
}

void to_json(nlohmann::json& out, const QueueStats& stats) {
    out = {{"queue", stats.queue},
           {"pending", stats.pending},
           {"delayed", stats.delayed},
           {"reserved", stats.reserved},
           {"total", stats.total}};
}

void to_json(nlohmann::json& out, const QueueInfo& info) {
    to_json(out, info.stats);
    out["paused"] = info.paused;
    out["default_lease_ms"] = info.default_lease ? nlohmann::json(info.default_lease->count()) : nlohmann::json();
    out["notify"] = info.notify;
}

void to_json(nlohmann::json& out, const FailedJob& job) {
    out = {{"id", job.id},
           {"queue", job.queue},
           {"name", job.name},
           {"payload", job.payload},
           {"priority", job.priority},
           {"attempts", job.attempts},
           {"max_attempts", job.max_attempts},
           {"error", job.error},
           {"failed_at", format_time(job.failed_at)},
           {"created_at", format_time(job.created_at)}};
}

void to_json(nlohmann::json& out, const Schedule& s) {
    out = {{"name", s.name},
           {"cron", s.cron},
           {"job_name", s.job_name},
           {"payload", s.payload},
           {"queue", or_null(s.queue)},
           {"priority", or_null(s.priority)},
           {"max_attempts", or_null(s.max_attempts)},
           {"time_zone", or_null(s.time_zone)},
           {"enabled", or_null(s.enabled)},
           {"catch_up", or_null(s.catch_up)},
           {"next_due", or_null(s.next_due)},
           {"last_window", or_null(s.last_window)}};
}

void to_json(nlohmann::json& out, const QueueOverview& o) {
    out = {{"queue", o.queue},
           {"paused", o.paused},
           {"pending", o.pending},
           {"delayed", o.delayed},
           {"reserved", o.reserved},
           {"failed", o.failed},
           {"counts_capped", o.counts_capped},
           {"oldest_pending_at", or_null(o.oldest_pending_at)},
           {"pending_estimate", or_null(o.pending_estimate)},
           {"delayed_estimate", or_null(o.delayed_estimate)},
           {"reserved_estimate", or_null(o.reserved_estimate)},
           {"failed_estimate", or_null(o.failed_estimate)},
           {"estimates", o.estimates}};
}

void to_json(nlohmann::json& out, const JobSummary& j) {
    out = {{"id", j.id},
           {"name", j.name},
           {"state", j.state},
           {"priority", j.priority},
           {"attempts", j.attempts},
           {"max_attempts", j.max_attempts},
           {"available_at", or_null(j.available_at)},
           {"reserved_by", or_null(j.reserved_by)},
           {"reserved_until", or_null(j.reserved_until)},
           {"unique_key", or_null(j.unique_key)},
           {"deadline", or_null(j.deadline)},
           {"created_at", format_time(j.created_at)}};
}

void to_json(nlohmann::json& out, const JobDetail& j) {
    to_json(out, j.summary);
    out["queue"] = j.queue;
    out["payload"] = j.payload;
    out["last_error"] = j.last_error;
    out["failed_at"] = or_null(j.failed_at);
}

void to_json(nlohmann::json& out, const Lease& l) {
    out = {{"worker", l.worker},
           {"queue", l.queue},
           {"id", l.id},
           {"name", l.name},
           {"attempts", l.attempts},
           {"reserved_until", format_time(l.reserved_until)}};
}

void to_json(nlohmann::json& out, const QueueCounters& c) {
    out = {{"queue", c.queue},         {"pushed", c.pushed},   {"claimed", c.claimed}, {"completed", c.completed},
           {"released", c.released},   {"retried", c.retried}, {"failed", c.failed},   {"expired", c.expired}};
}

void to_json(nlohmann::json& out, const ConcurrencyLimit& l) {
    out = {{"queue", l.queue}, {"key_prefix", l.key_prefix}, {"max_running", l.max_running}};
}

void to_json(nlohmann::json& out, const ConcurrencyKey& k) {
    out = {{"queue", k.queue},
           {"concurrency_key", k.key},
           {"max_running", k.max_running},
           {"running", k.running},
           {"waiting", k.waiting}};
}

void to_json(nlohmann::json& out, const RateLimit& l) {
    out = {{"queue", l.queue},
           {"max_claims", l.max_claims},
           {"per_ms", l.per.count()},
           {"next_slot", or_null(l.next_slot)}};
}

void to_json(nlohmann::json& out, const BlockedJobs& b) {
    out = {{"queue", b.queue}, {"waiting_for_key", b.waiting_for_key}, {"waiting_for_parents", b.waiting_for_parents}};
}

const char* to_string(OnDuplicate mode) noexcept {
    switch (mode) {
        case OnDuplicate::keep: return "keep";
        case OnDuplicate::replace: return "replace";
        case OnDuplicate::debounce: return "debounce";
    }
    return "keep";
}

const char* to_string(AfterFailed mode) noexcept { return mode == AfterFailed::run ? "run" : "fail"; }

std::optional<OnDuplicate> parse_on_duplicate(const std::string& text) {
    for (auto mode : {OnDuplicate::keep, OnDuplicate::replace, OnDuplicate::debounce})
        if (text == to_string(mode)) return mode;
    return std::nullopt;
}

std::optional<AfterFailed> parse_after_failed(const std::string& text) {
    for (auto mode : {AfterFailed::fail, AfterFailed::run})
        if (text == to_string(mode)) return mode;
    return std::nullopt;
}

nlohmann::json push_many_element(const NewJob& job) {
    const PushOptions& o = job.options;
    nlohmann::json out = {{"name", job.name}, {"payload", job.payload}};
    if (o.queue) out["queue"] = *o.queue;
    if (o.delay) out["delay"] = pg::interval_text(*o.delay);
    if (o.priority) out["priority"] = *o.priority;
    if (o.unique_key) out["unique_key"] = *o.unique_key;
    if (o.max_attempts) out["max_attempts"] = *o.max_attempts;
    if (o.deadline) out["deadline"] = format_time(*o.deadline);
    if (o.concurrency_key) out["concurrency_key"] = *o.concurrency_key;
    if (o.on_duplicate) out["on_duplicate"] = to_string(*o.on_duplicate);
    if (!o.after.empty()) out["after"] = o.after;
    if (o.after_failed) out["after_failed"] = to_string(*o.after_failed);
    return out;
}

}  // namespace jobqueue
