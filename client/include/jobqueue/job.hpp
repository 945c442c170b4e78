// jobqueue/job.hpp: the value types the client returns and takes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobqueue {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// A claimed job, as queue_reserve returns it. Keep id and token: every
// completion call needs both.
struct Job {
    std::int64_t id = 0;
    std::string queue;
    std::string name;
    nlohmann::json payload;
    int attempts = 0;      // claims so far, this one included
    int max_attempts = 0;
    int priority = 0;
    std::int64_t token = 0;  // fencing token of this claim
    TimePoint reserved_until;
    TimePoint created_at;
    std::string last_error;
    std::optional<TimePoint> deadline;

    [[nodiscard]] bool last_attempt() const noexcept { return attempts >= max_attempts; }
};

// How to push a job. A field left empty is not sent, so queue_push's own
// default applies: the defaults live in the extension alone.
struct PushOptions {
    std::optional<std::string> queue;
    std::optional<std::chrono::milliseconds> delay;
    std::optional<int> priority;
    std::optional<std::string> unique_key;
    std::optional<int> max_attempts;
    std::optional<TimePoint> deadline;
};

// One job of a batch push.
struct NewJob {
    std::string name;
    nlohmann::json payload = nlohmann::json::object();
    PushOptions options;
};

// How to claim.
struct ReserveOptions {
    std::vector<std::string> queues;                 // none: queue_reserve's default queue
    std::optional<std::chrono::milliseconds> lease;  // none: the queue's default lease
    std::string worker;
    std::optional<int> max_jobs;                     // none: queue_reserve's default
    // With nothing due, wait in the server up to this long for a job to
    // become due (extension 1.2; woken at once when the library is preloaded).
    std::optional<std::chrono::milliseconds> wait;
};

// One row of queue_stats().
struct QueueStats {
    std::string queue;
    std::int64_t pending = 0;
    std::int64_t delayed = 0;
    std::int64_t reserved = 0;
    std::int64_t total = 0;
};

// One row of queue_list(): settings beside the backlog.
struct QueueInfo {
    QueueStats stats;
    bool paused = false;
    std::optional<std::chrono::milliseconds> default_lease;
    bool notify = true;
};

// One row of queue_failed_rows().
struct FailedJob {
    std::int64_t id = 0;  // the job's id
    std::string queue;
    std::string name;
    nlohmann::json payload;
    int priority = 0;
    int attempts = 0;
    int max_attempts = 0;
    std::string error;
    TimePoint failed_at;
    TimePoint created_at;
};

// A recurring schedule (queue_schedule_set / queue_schedule_list). For
// schedule_set, a setting left empty is not sent (queue_schedule_set's own
// default applies); schedules() fills every field.
struct Schedule {
    std::string name;
    std::string cron;  // "*/5 9-17 * * mon-fri", "@daily", "@every 10 minutes"
    std::string job_name;
    nlohmann::json payload = nlohmann::json::object();
    std::optional<std::string> queue;
    std::optional<int> priority;
    std::optional<int> max_attempts;
    std::optional<std::string> time_zone;
    std::optional<bool> enabled;
    std::optional<bool> catch_up;  // enqueue every missed window, not only the latest
    // Read back by schedules():
    std::optional<TimePoint> next_due;
    std::optional<TimePoint> last_window;
};

// One job enqueued by queue_tick().
struct Tick {
    std::string schedule;
    TimePoint due_at;
    std::int64_t job_id = 0;
};

// A (job id, token) pair for the batch completion calls.
struct Claim {
    std::int64_t id = 0;
    std::int64_t token = 0;
};

}  // namespace jobqueue

namespace jobqueue {

// JSON forms, used for push_many's job objects and the CLI's --json output.
// Times are ISO 8601 UTC strings with microseconds.
std::string format_time(TimePoint t);
void to_json(nlohmann::json& out, const Job& job);
void to_json(nlohmann::json& out, const QueueStats& stats);
void to_json(nlohmann::json& out, const QueueInfo& info);
void to_json(nlohmann::json& out, const FailedJob& job);
void to_json(nlohmann::json& out, const Schedule& schedule);

// The object queue_push_many takes for one job: only the options that are
// set are written, the server's defaults apply to the others.
[[nodiscard]] nlohmann::json push_many_element(const NewJob& job);

}  // namespace jobqueue
