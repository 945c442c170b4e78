// jobqueue/client.hpp: a thin C++ client of the jobqueue extension.
//
// Every operation is one call of one SQL function of the extension, sent as
// a named prepared statement (prepared once per connection), or, behind a
// transaction-pooling pooler such as PgBouncer, as an unnamed statement
// (see PoolerMode). A Client owns a libpq connection, or borrows the
// application's PGconn* so that push() joins the application's own
// transaction.
//
// Threading: a Client (and its connection) belongs to one thread at a
// time. Give each thread its own Client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobqueue/error.hpp"
#include "jobqueue/job.hpp"

typedef struct pg_conn PGconn;

namespace jobqueue {

namespace pg {
class PreparedStatements;
}

// What stands between the client and the server, which decides how
// statements are sent.
enum class PoolerMode {
    // The JOBQUEUE_POOLER environment variable when set (session or
    // transaction), else found out on the first call: a pooler announces a
    // backend pid of its own (PQbackendPID differs from pg_backend_pid()),
    // and one is then taken for a transaction pooler, since its pool mode
    // cannot be seen from the client.
    detect,
    // A direct connection or a session-pooling pooler: every call runs in
    // the same server session, so named prepared statements (prepared once
    // per connection) and LISTEN work.
    session,
    // A transaction-pooling pooler (PgBouncer pool_mode = transaction):
    // each transaction may run on another server connection, so nothing may
    // outlive a transaction. Calls are sent as unnamed statements (parsed
    // with each call) and the worker never LISTENs.
    transaction,
};

// "detect", "session" or "transaction"; nothing for any other text.
std::optional<PoolerMode> parse_pooler_mode(const std::string& text);
// detect: the mode JOBQUEUE_POOLER names when it is set (InvalidArgument when
// it names none); any other mode as it is.
PoolerMode pooler_mode_or_environment(PoolerMode mode);

struct ClientOptions {
    // libpq connection string; "" uses the standard PG* environment.
    std::string conninfo;
    // Schema the extension lives in; "" calls the functions unqualified
    // (found through search_path).
    std::string schema;
    PoolerMode pooler = PoolerMode::detect;
};

class Client {
public:
    // Owns a new connection (throws ConnectionError when it cannot connect,
    // InvalidArgument when JOBQUEUE_POOLER names no PoolerMode).
    explicit Client(ClientOptions options = {});
    explicit Client(const std::string& conninfo) : Client(ClientOptions{conninfo, ""}) {}
    // Borrows the application's connection; the caller keeps ownership and
    // must keep it open while this Client is used.
    static Client borrow(PGconn* connection, std::string schema = "",
                         PoolerMode pooler = PoolerMode::detect);

    Client(Client&&) noexcept;
    Client& operator=(Client&&) noexcept;
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    ~Client();

    // ---- producing
    [[nodiscard]] std::int64_t push(const std::string& name,
                                    const nlohmann::json& payload = nlohmann::json::object(),
                                    const PushOptions& options = {});
    [[nodiscard]] std::vector<std::int64_t> push_many(const std::vector<NewJob>& jobs);

    // ---- working
    [[nodiscard]] std::vector<Job> reserve(const ReserveOptions& options);
    // queues: none = queue_reserve's default queue; lease: none = the queue's default lease.
    [[nodiscard]] std::optional<Job> reserve_one(const std::vector<std::string>& queues = {},
                                                 std::optional<std::chrono::milliseconds> lease = {},
                                                 const std::string& worker = "");
    // queue_delete: the job is done. false when the claim was lost.
    [[nodiscard]] bool complete(std::int64_t id, std::int64_t token);
    [[nodiscard]] bool complete(const Job& job) { return complete(job.id, job.token); }
    // The ids completed, in the order given.
    [[nodiscard]] std::vector<std::int64_t> complete_many(const std::vector<Claim>& claims);
    // delay: none = the server's backoff.
    [[nodiscard]] bool release(std::int64_t id, std::int64_t token,
                               std::optional<std::chrono::milliseconds> delay = {},
                               const std::string& error = "");
    [[nodiscard]] std::vector<std::int64_t> release_many(const std::vector<Claim>& claims,
                                                         std::optional<std::chrono::milliseconds> delay = {},
                                                         const std::string& error = "");
    [[nodiscard]] bool fail(std::int64_t id, std::int64_t token, const std::string& error = "");
    [[nodiscard]] std::vector<std::int64_t> fail_many(const std::vector<Claim>& claims,
                                                      const std::string& error = "");
    [[nodiscard]] bool extend(std::int64_t id, std::int64_t token, std::chrono::milliseconds lease);

    // ---- looking
    [[nodiscard]] std::int64_t pending(const std::optional<std::string>& queue = {});
    [[nodiscard]] std::vector<QueueStats> stats();
    [[nodiscard]] std::vector<QueueInfo> queues();
    [[nodiscard]] std::int64_t failed_count();
    // The newest failed jobs first (limit: none = the server's default); only
    // those of queue when given.
    [[nodiscard]] std::vector<FailedJob> failed(std::optional<int> limit = {},
                                                const std::optional<std::string>& queue = {});
    // One failed job by its id, if it is in the failed table.
    [[nodiscard]] std::optional<FailedJob> failed_job(std::int64_t id);

    // ---- browsing (extension 1.4)
    // Every queue's backlog, its counts stopping at count_cap (none: the
    // server's default cap).
    [[nodiscard]] std::vector<QueueOverview> overview(std::optional<int> count_cap = {});
    // One page of a queue's jobs, by ascending id.
    [[nodiscard]] std::vector<JobSummary> jobs_page(const std::string& queue, const JobsPageOptions& options = {});
    // One job, live or failed; none when no job has that id.
    [[nodiscard]] std::optional<JobDetail> job(std::int64_t id);
    // The live leases (max_rows: none = the server's default).
    [[nodiscard]] std::vector<Lease> leases(std::optional<int> max_rows = {});
    // What happened to each queue's jobs since the server started. Needs
    // jobqueue in shared_preload_libraries: the server raises 55000 without.
    [[nodiscard]] std::vector<QueueCounters> counters();
    void reset_counters();

    // ---- failed-job management
    // Requeue one failed job, or all of them when id is empty (max_attempts:
    // none = the server's default).
    std::int64_t retry_failed(std::optional<std::int64_t> id = {}, std::optional<int> max_attempts = {});
    std::int64_t forget_failed(std::int64_t id);
    std::int64_t forget_failed_before(TimePoint before);
    std::int64_t forget_all_failed();

    // ---- administration
    [[nodiscard]] bool cancel(std::int64_t id, bool force = false);
    std::int64_t clear(const std::string& queue);
    void pause(const std::string& queue);
    void resume(const std::string& queue);
    void set_default_lease(const std::string& queue, std::optional<std::chrono::milliseconds> lease);
    void set_notify(const std::string& queue, bool enabled);

    // ---- flow control (extension 1.5)
    // At most max_running jobs of a concurrency key of queue starting with
    // key_prefix run at once ("" : every key of the queue; the longest
    // prefix that matches a key wins). Admin tier.
    void set_concurrency(const std::string& queue, const std::string& key_prefix, int max_running);
    // false when there was no such limit.
    bool remove_concurrency(const std::string& queue, const std::string& key_prefix);
    [[nodiscard]] std::vector<ConcurrencyLimit> concurrency_limits();
    // The keys jobs use now, with their limits, running and waiting jobs
    // (queue: none = every queue).
    [[nodiscard]] std::vector<ConcurrencyKey> concurrency_keys(const std::optional<std::string>& queue = {});
    // At most max_claims claims of queue per period, across every session. Admin tier.
    void set_rate_limit(const std::string& queue, int max_claims, std::chrono::milliseconds per);
    // false when the queue had no rate limit.
    bool remove_rate_limit(const std::string& queue);
    [[nodiscard]] std::vector<RateLimit> rate_limits();
    // When queue's next claim slot opens; none when one is free now (or the
    // queue has no rate limit).
    [[nodiscard]] std::optional<TimePoint> rate_limit_next(const std::string& queue);
    // How long until every one of queues (none: the default queue) has a
    // claim slot again, by the server's clock: none when one of them has a
    // slot free now or no rate limit. A worker whose claim came back empty
    // sleeps this long rather than claiming in vain.
    [[nodiscard]] std::optional<std::chrono::milliseconds> rate_limit_wait(const std::vector<std::string>& queues);
    // Jobs held back by flow control, per queue (queue: none = every queue).
    [[nodiscard]] std::vector<BlockedJobs> blocked(const std::optional<std::string>& queue = {});

    // ---- recurring schedules (extension 1.2)
    // Create or replace; returns the next due window.
    TimePoint schedule_set(const Schedule& schedule);
    bool schedule_remove(const std::string& name);
    [[nodiscard]] std::vector<Schedule> schedules();
    // Enqueue the jobs of every due window (exactly once across callers).
    std::vector<Tick> tick();

    // ---- wake-ups
    // LISTENs on the wake-up channel (once), then waits up to timeout for a
    // notification. Returns the queue named by the first one, or nothing on
    // timeout. Notifications that arrived earlier are returned at once.
    // Through a transaction pooler notifications never arrive: there it
    // throws InvalidArgument; wait with reserve(ReserveOptions::wait) instead.
    std::optional<std::string> wait(std::chrono::milliseconds timeout);

    // ---- the connection
    [[nodiscard]] PGconn* connection() const noexcept { return conn_; }
    [[nodiscard]] bool owns_connection() const noexcept { return owned_ != nullptr; }
    // Whether calls go through a transaction-pooling pooler (unnamed
    // statements, no LISTEN); PoolerMode::detect looks on first use.
    [[nodiscard]] bool transaction_pooled();
    // Whether the connection is still usable.
    [[nodiscard]] bool healthy() const;
    // Replace a broken owned connection by a new one (ConnectionError on failure).
    void reconnect();
    // Run a plain SQL command (BEGIN, COMMIT, ...). A COMMIT whose answer is
    // lost throws InDoubtError.
    void execute(const std::string& sql);
    // The current transaction's id (pg_current_xact_id(), assigned if it had
    // none yet). Taken before a COMMIT, it lets transaction_status() tell on
    // a new connection whether a COMMIT whose answer was lost committed.
    [[nodiscard]] std::int64_t transaction_id();
    // pg_xact_status(id): "committed", "aborted" or "in progress"; none when
    // the server no longer knows the transaction.
    [[nodiscard]] std::optional<std::string> transaction_status(std::int64_t id);

private:
    struct Owned;
    Client(PGconn* borrowed, std::string schema, PoolerMode pooler);

    class Result;
    Result call(const char* statement, const std::string& sql, const std::vector<std::optional<std::string>>& params,
                bool writes);
    std::string fn(const char* name) const;
    // Throws the ConnectionError of a write refused by a standby.
    [[noreturn]] void standby_refused(const std::string& message);
    std::vector<FailedJob> failed_rows(const char* statement, const std::string& arguments,
                                       const std::vector<std::optional<std::string>>& params);

    std::unique_ptr<Owned> owned_;
    PGconn* conn_ = nullptr;
    ClientOptions options_;
    std::unique_ptr<pg::PreparedStatements> prepared_;
    std::optional<bool> transaction_pooled_;  // unknown until the first call (PoolerMode::detect)
    bool listening_ = false;
    bool broken_ = false;  // a call found the connection lost
};

}  // namespace jobqueue
