// job.cpp: JSON forms of the client's value types.
#include "jobqueue/job.hpp"

#include <cstdio>
#include <ctime>

namespace jobqueue {

std::string format_time(TimePoint t) {
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
    long fraction = static_cast<long>(micros % 1000000);
    if (fraction < 0) {
        fraction += 1000000;
        seconds -= 1;
    }
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, fraction);
    return buf;
}

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
           {"deadline", job.deadline ? nlohmann::json(format_time(*job.deadline)) : nlohmann::json()}};
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
           {"queue", s.queue},
           {"priority", s.priority},
           {"max_attempts", s.max_attempts},
           {"time_zone", s.time_zone},
           {"enabled", s.enabled},
           {"catch_up", s.catch_up},
           {"next_due", s.next_due ? nlohmann::json(format_time(*s.next_due)) : nlohmann::json()},
           {"last_window", s.last_window ? nlohmann::json(format_time(*s.last_window)) : nlohmann::json()}};
}

nlohmann::json push_many_element(const NewJob& job) {
    const PushOptions defaults;
    nlohmann::json out = {{"name", job.name}, {"payload", job.payload}};
    if (job.options.queue != defaults.queue) out["queue"] = job.options.queue;
    if (job.options.delay != defaults.delay)
        out["delay"] = std::to_string(job.options.delay.count()) + " milliseconds";
    if (job.options.priority != defaults.priority) out["priority"] = job.options.priority;
    if (job.options.unique_key) out["unique_key"] = *job.options.unique_key;
    if (job.options.max_attempts != defaults.max_attempts) out["max_attempts"] = job.options.max_attempts;
    if (job.options.deadline) out["deadline"] = format_time(*job.options.deadline);
    return out;
}

}  // namespace jobqueue
