// jobqueue/client.hpp: a thin C++ client of the jobqueue extension.
//
// Every operation is one call of one SQL function of the extension, sent as
// a named prepared statement (prepared once per connection). A Client owns
// a libpq connection, or borrows the application's PGconn* so that push()
// joins the application's own transaction.
//
// Threading: a Client (and its connection) belongs to one thread at a
// time. Give each thread its own Client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobqueue/error.hpp"
#include "jobqueue/job.hpp"

typedef struct pg_conn PGconn;

namespace jobqueue {

struct ClientOptions {
    // libpq connection string; "" uses the standard PG* environment.
    std::string conninfo;
    // Schema the extension lives in; "" calls the functions unqualified
    // (found through search_path).
    std::string schema;
};

class Client {
public:
    // Owns a new connection (throws ConnectionError when it cannot connect).
    explicit Client(ClientOptions options = {});
    explicit Client(const std::string& conninfo) : Client(ClientOptions{conninfo, ""}) {}
    // Borrows the application's connection; the caller keeps ownership and
    // must keep it open while this Client is used.
    static Client borrow(PGconn* connection, std::string schema = "");

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
    std::optional<std::string> wait(std::chrono::milliseconds timeout);

    // ---- the connection
    [[nodiscard]] PGconn* connection() const noexcept { return conn_; }
    [[nodiscard]] bool owns_connection() const noexcept { return owned_ != nullptr; }
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
    Client(PGconn* borrowed, std::string schema);

    class Result;
    Result call(const char* statement, const std::string& sql, const std::vector<std::optional<std::string>>& params,
                bool writes);
    std::string fn(const char* name) const;
    std::vector<FailedJob> failed_rows(const char* statement, const std::string& arguments,
                                       const std::vector<std::optional<std::string>>& params);

    std::unique_ptr<Owned> owned_;
    PGconn* conn_ = nullptr;
    ClientOptions options_;
    std::set<std::string> prepared_;
    bool listening_ = false;
    bool broken_ = false;  // a call found the connection lost
};

}  // namespace jobqueue
