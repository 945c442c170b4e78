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

// What a push with a unique key does when a job already holds the key
// (extension 1.5).
enum class OnDuplicate {
    keep,     // the job holding the key stays as it is; its id is returned
    replace,  // a pending job holding it takes the new payload, priority, attempts,
              // deadline and run-at (now + delay); a held (running) one is left alone
    debounce, // as replace, and the delay (which must be given) starts again at
              // each push: a burst of pushes runs once, delay after the last
};

// What becomes of a job whose parent (see PushOptions::after) fails to the
// failed table or is cancelled (extension 1.5).
enum class AfterFailed {
    fail,  // the job moves to the failed table, its error naming the parent
    run,   // the job runs anyway
};

// The words the server takes: "keep", "replace", "debounce"; "fail", "run".
[[nodiscard]] const char* to_string(OnDuplicate mode) noexcept;
[[nodiscard]] const char* to_string(AfterFailed mode) noexcept;
// The mode a word names; nothing for any other text.
[[nodiscard]] std::optional<OnDuplicate> parse_on_duplicate(const std::string& text);
[[nodiscard]] std::optional<AfterFailed> parse_after_failed(const std::string& text);

// How to push a job. A field left empty is not sent, so queue_push's own
// default applies: the defaults live in the extension alone.
struct PushOptions {
    std::optional<std::string> queue;
    std::optional<std::chrono::milliseconds> delay;
    std::optional<int> priority;
    std::optional<std::string> unique_key;
    std::optional<int> max_attempts;
    std::optional<TimePoint> deadline;
    // ---- flow control (extension 1.5)
    // Jobs of one queue with the same key run at most max_running at a
    // time (1 unless queue_concurrency_set says otherwise).
    std::optional<std::string> concurrency_key;
    // With unique_key: what a push does when a job already holds the key.
    std::optional<OnDuplicate> on_duplicate;
    // Ids of jobs that must be completed before this one runs (empty: none).
    std::vector<std::int64_t> after;
    // With after: what happens when a parent fails or is cancelled.
    std::optional<AfterFailed> after_failed;

    // Whether an option of extension 1.5 is set (only then are they sent,
    // so that a push without them works with an older extension too).
    [[nodiscard]] bool uses_flow_control() const noexcept {
        return concurrency_key || on_duplicate || !after.empty() || after_failed;
    }
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

// One row of queue_overview() (extension 1.4): a queue's backlog counted
// cheaply. The counts stop at the cap the call was given: counts_capped is
// then true and a count means "at least this many". From extension 1.5 a
// count past the cap also has an estimate (from the planner's statistics);
// none means the count is exact, or (1.4) that it was not estimated.
struct QueueOverview {
    std::string queue;
    bool paused = false;
    std::int64_t pending = 0;
    std::int64_t delayed = 0;
    std::int64_t reserved = 0;
    std::int64_t failed = 0;
    bool counts_capped = false;
    std::optional<TimePoint> oldest_pending_at;  // none: nothing pending
    std::optional<std::int64_t> pending_estimate;
    std::optional<std::int64_t> delayed_estimate;
    std::optional<std::int64_t> reserved_estimate;
    std::optional<std::int64_t> failed_estimate;
    bool estimates = false;  // the extension estimates past the cap (1.5 on)
};

// Which page of a queue's jobs queue_jobs_page() returns (keyset paging by
// id). A field left empty is not sent: the server's default applies.
struct JobsPageOptions {
    std::optional<std::string> state;        // pending, delayed, reserved or failed; none: every state
    std::optional<std::int64_t> after_id;    // the last id of the previous page
    std::optional<int> max_rows;
};

// One row of queue_jobs_page(): a job as a listing shows it.
struct JobSummary {
    std::int64_t id = 0;
    std::string name;
    std::string state;  // pending, delayed, reserved or failed
    int priority = 0;
    int attempts = 0;
    int max_attempts = 0;
    std::optional<TimePoint> available_at;  // when it is due; none for a failed job
    std::optional<std::string> reserved_by;
    std::optional<TimePoint> reserved_until;
    std::optional<std::string> unique_key;
    std::optional<TimePoint> deadline;
    TimePoint created_at;
};

// One job in full, live or failed (queue_job()).
struct JobDetail {
    JobSummary summary;
    std::string queue;
    nlohmann::json payload;
    std::string last_error;
    std::optional<TimePoint> failed_at;
};

// A live lease: who holds which job (queue_leases()).
struct Lease {
    std::string worker;
    std::string queue;
    std::int64_t id = 0;
    std::string name;
    int attempts = 0;
    TimePoint reserved_until;
};

// One row of queue_counters(): what happened to a queue's jobs since the
// server started (or since queue_counters_reset()).
struct QueueCounters {
    std::string queue;  // "" for the row of the queues beyond those the server counts by name
    std::int64_t pushed = 0;
    std::int64_t claimed = 0;
    std::int64_t completed = 0;
    std::int64_t released = 0;
    std::int64_t retried = 0;
    std::int64_t failed = 0;
    std::int64_t expired = 0;
};

// One row of queue_concurrency_list() (extension 1.5): the most jobs of
// one concurrency key that may run at once, for the keys of queue that
// start with key_prefix ("" : every key of the queue; the longest prefix
// that matches a key wins).
struct ConcurrencyLimit {
    std::string queue;
    std::string key_prefix;
    int max_running = 0;
};

// One row of queue_concurrency_keys(): a concurrency key jobs use now.
struct ConcurrencyKey {
    std::string queue;
    std::string key;
    int max_running = 0;       // the limit that applies to it
    int running = 0;           // jobs holding one of its slots
    std::int64_t waiting = 0;  // jobs due but waiting for a slot
};

// One row of queue_rate_limits(): at most max_claims claims of the queue
// per period, across every session.
struct RateLimit {
    std::string queue;
    int max_claims = 0;
    std::chrono::milliseconds per{0};
    std::optional<TimePoint> next_slot;  // none: a claim may be made now
};

// One row of queue_blocked(): a queue's jobs held back by flow control.
struct BlockedJobs {
    std::string queue;
    std::int64_t waiting_for_key = 0;      // due, but their key's slots are taken
    std::int64_t waiting_for_parents = 0;  // their parents are not all done
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
void to_json(nlohmann::json& out, const QueueOverview& overview);
void to_json(nlohmann::json& out, const JobSummary& job);
void to_json(nlohmann::json& out, const JobDetail& job);
void to_json(nlohmann::json& out, const Lease& lease);
void to_json(nlohmann::json& out, const QueueCounters& counters);
void to_json(nlohmann::json& out, const ConcurrencyLimit& limit);
void to_json(nlohmann::json& out, const ConcurrencyKey& key);
void to_json(nlohmann::json& out, const RateLimit& limit);
void to_json(nlohmann::json& out, const BlockedJobs& blocked);

// The object queue_push_many takes for one job: only the options that are
// set are written, the server's defaults apply to the others.
[[nodiscard]] nlohmann::json push_many_element(const NewJob& job);

}  // namespace jobqueue
