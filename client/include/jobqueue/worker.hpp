// jobqueue/worker.hpp: a worker runtime on top of Client.
//
// Handlers are registered by job name. A dispatcher thread claims jobs in
// batches sized to the idle handler threads plus claim_ahead, waiting on
// NOTIFY wake-ups with a polling fallback; N handler threads run the jobs;
// a completer thread records their outcomes in batches (queue_delete_many
// and friends) every few milliseconds; a heartbeat thread extends the lease
// of any job still running at half its lease and, every tick_interval,
// calls queue_tick() for recurring schedules. When a claim comes back empty
// because every queue of the worker is rate limited (extension 1.5), the
// dispatcher sleeps until the next claim slot opens instead of claiming again. Lost connections are re-opened
// with backoff (a server that refuses writes because it is a standby counts
// as lost: libpq then looks for the primary among its hosts), and each
// outage is logged on stderr once, when it begins and when it ends, however
// many threads notice it; completions are fenced by the claim's token, so
// repeating one after a lost answer can neither lose nor double-complete a job.
//
// A transactional handler (Worker::on_transactional, or every handler with
// WorkerOptions::transactional) runs inside a transaction the worker began
// on its handler thread's own connection (JobContext::connection() and
// client()); the worker then records the outcome with the claim's token in
// that same transaction and commits, so the handler's writes and the job's
// completion commit together or not at all.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jobqueue/client.hpp"

namespace jobqueue {

// What a handler decided about its job.
class Outcome {
public:
    enum class Kind { done, retry, fail };

    // The job is done: it is completed (queue_delete).
    static Outcome done() { return Outcome(Kind::done, {}, ""); }
    // Try again after delay (none: the server's backoff), recording reason.
    static Outcome retry(std::string reason = "", std::optional<std::chrono::milliseconds> delay = {}) {
        return Outcome(Kind::retry, delay, std::move(reason));
    }
    static Outcome retry_in(std::chrono::milliseconds delay, std::string reason = "") {
        return Outcome(Kind::retry, delay, std::move(reason));
    }
    // A permanent error: the job goes to the failed table now.
    static Outcome fail(std::string error) { return Outcome(Kind::fail, {}, std::move(error)); }

    [[nodiscard]] Kind kind() const noexcept { return kind_; }
    [[nodiscard]] const std::optional<std::chrono::milliseconds>& delay() const noexcept { return delay_; }
    [[nodiscard]] const std::string& message() const noexcept { return message_; }

private:
    Outcome(Kind k, std::optional<std::chrono::milliseconds> d, std::string m)
        : kind_(k), delay_(d), message_(std::move(m)) {}
    Kind kind_;
    std::optional<std::chrono::milliseconds> delay_;
    std::string message_;
};

// Given to a running handler: long handlers should look at it now and then.
class JobContext {
public:
    // The worker is shutting down and the grace period is over, or the
    // claim was lost: the job's result will not be recorded by this worker.
    [[nodiscard]] bool should_stop() const noexcept { return stop_ || lease_lost_; }
    [[nodiscard]] bool lease_lost() const noexcept { return lease_lost_; }

    // Whether the handler runs in the worker's transaction (registered with
    // Worker::on_transactional, or WorkerOptions::transactional).
    [[nodiscard]] bool transactional() const noexcept { return client_ != nullptr; }
    // A transactional handler's connection, inside the transaction the
    // worker began for this job (BEGIN, isolation level as the session's
    // default): what the handler writes on it commits together with the
    // job's outcome, or not at all. The handler must neither COMMIT nor
    // ROLLBACK it. nullptr for a handler that is not transactional.
    [[nodiscard]] PGconn* connection() const noexcept;
    // The same connection as a Client: a push() of a follow-up job joins
    // the transaction too. Throws InvalidArgument for a handler that is not
    // transactional.
    [[nodiscard]] Client& client() const;

private:
    friend class Worker;
    std::atomic<bool> stop_{false};
    std::atomic<bool> lease_lost_{false};
    Client* client_ = nullptr;  // set while a transactional handler runs
};

// A handler returns an Outcome; an exception it throws releases the job
// with the server's backoff (or fails it when it was the last attempt).
using Handler = std::function<Outcome(const Job&, JobContext&)>;

// The worker's own settings. What the server judges (queue names, the
// lease's range) it judges alone: a value it refuses stops the worker at
// its first claim, with the server's error (see Worker::failure()).
struct WorkerOptions {
    static constexpr int max_threads = 256;

    ClientOptions connection;
    // In precedence order; none: queue_reserve's default queue.
    std::vector<std::string> queues;
    int threads = 4;  // 1 to max_threads
    // The lease of each claim, renewed at half time while a handler runs.
    // The worker names it in every claim because its heartbeat must know it.
    std::chrono::milliseconds lease{std::chrono::seconds(60)};
    // Longest wait between claims when no wake-up arrives.
    std::chrono::milliseconds poll_interval{std::chrono::seconds(1)};
    // Wait for jobs inside queue_reserve (extension 1.2: woken through shared
    // memory when the library is preloaded, no NOTIFY needed), in slices of
    // at most 500 ms; one statement, so it works through any pooler. Falls
    // back to LISTEN / polling on an older extension.
    bool wait_in_server = true;
    // LISTEN for wake-ups when not waiting in the server. Never done through
    // a transaction-pooling pooler (connection.pooler), which only polls.
    bool use_notify = true;
    // How long running jobs may finish after stop() before they are released.
    std::chrono::milliseconds grace_period{std::chrono::seconds(10)};
    // Jobs claimed beyond the idle handler threads, so that one claim's
    // round trip serves many short jobs. They wait in the worker for a free
    // thread with their lease running, so the worker claims ahead no more
    // than its threads are expected to start within claim_ahead_horizon, by
    // the recent mean run time of its jobs: none ahead for long jobs (nor
    // before a first job has finished).
    int claim_ahead = 100;
    static constexpr std::chrono::milliseconds claim_ahead_horizon{10};
    // Largest claim batch; 0 means threads + claim_ahead.
    int max_batch = 0;
    // Outcomes of finished jobs are recorded together, one call per kind
    // (and delay and error), once completion_batch_size of them are waiting
    // (1 to 10,000) or the oldest has waited completion_flush_interval.
    int completion_batch_size = 100;
    std::chrono::milliseconds completion_flush_interval{2};
    // How often to call queue_tick() so recurring schedules enqueue their
    // jobs (0: never; the database's own ticker or pg_cron may do it).
    std::chrono::milliseconds tick_interval{std::chrono::seconds(5)};
    // Longest pause between reconnection attempts.
    std::chrono::milliseconds max_reconnect_delay{std::chrono::seconds(5)};
    // Stored as reserved_by; "" means "<host>:<pid>".
    std::string name;
    // Every handler is transactional (see Worker::on_transactional): each
    // handler thread keeps a connection of its own (application_name
    // "jobqueue handler <name>"), and each job's outcome is recorded in the
    // handler's transaction, one job per call, instead of in the completer's
    // batches.
    bool transactional = false;

    // Throws InvalidArgument when a setting of the worker's own is out of range.
    void validate() const;
};

struct WorkerCounters {
    std::int64_t claimed = 0;
    std::int64_t completed = 0;
    std::int64_t retried = 0;    // released for another attempt (or failed by the server when out of attempts)
    std::int64_t failed = 0;     // failed on the handler's word, or for an unknown name
    std::int64_t lost = 0;       // results not recorded: claim lost, dropped after the grace period, or refused;
                                 // for a transactional handler also a connection lost before its COMMIT
    std::int64_t reconnects = 0;
};

class Completer;
class ConnectionLog;

class Worker {
public:
    explicit Worker(WorkerOptions options);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Register the handler of a job name (before start()).
    void on(const std::string& job_name, Handler handler);
    // A handler that returns nothing: done unless it throws.
    void on(const std::string& job_name, std::function<void(const Job&)> handler);
    // The handler of every job name without a handler of its own. Without
    // one, such jobs are failed with an error naming the job name.
    void on_any(Handler handler);
    // Register a transactional handler (before start()): it runs inside a
    // transaction the worker began on the handler thread's own connection
    // (JobContext::connection() / client()), and the worker records its
    // outcome there, fenced by the claim's token (queue_delete,
    // queue_release or queue_fail), then commits. A stale token (the lease
    // was lost and the job claimed again) rolls the handler's writes back
    // and counts the job lost; a throw rolls them back and releases the job
    // as for any handler; a lost connection rolls them back, and the job
    // runs again once its lease has run out.
    void on_transactional(const std::string& job_name, Handler handler);

    // Start the threads; returns at once.
    void start();
    // Graceful stop: claim nothing more, release claimed jobs not started,
    // let running jobs finish within the grace period, release the rest,
    // then join the threads. Safe to call more than once.
    void stop();
    // Ask for a stop from any thread (or a signal handler's thread); run()
    // and run_until_signal() return after stopping.
    void request_stop() noexcept;
    // start(), wait until SIGINT or SIGTERM (or request_stop()), stop().
    void run_until_signal();

    [[nodiscard]] WorkerCounters counters() const;

    // Why the worker stopped by itself: the server refused its claim as
    // invalid (InvalidArgument, e.g. a lease out of range), which no retry
    // can mend. Empty while it runs or when it was stopped. run_until_signal()
    // rethrows it.
    [[nodiscard]] std::exception_ptr failure() const;

private:
    // A claimed job waiting for a handler thread; its lease runs from claimed_at.
    struct Claimed {
        Job job;
        std::chrono::steady_clock::time_point claimed_at;
    };
    struct Running {
        Job job;
        std::shared_ptr<JobContext> context;
        std::chrono::steady_clock::time_point lease_started;
    };

    void dispatcher_loop();
    // Jobs to claim beyond the idle threads now (see claim_ahead).
    [[nodiscard]] int claim_ahead_now() const;
    void handler_loop();
    // A handler thread's own connection, for its transactional handlers.
    struct HandlerConnection {
        std::optional<Client> client;
        std::uint64_t opened = 0;     // its generation (see ConnectionLog)
        PGconn* named = nullptr;      // the connection application_name was set on
    };
    void heartbeat_loop();
    void tick_schedules(Client& client, std::uint64_t& opened, std::chrono::steady_clock::time_point& next_tick);
    void run_job(const Job& job, JobContext& context, HandlerConnection& connection);
    void record(const Job& job, const Outcome& outcome);
    // A transactional handler: BEGIN, the handler, the outcome's one-job
    // call with the claim's token, COMMIT (see on_transactional).
    void run_in_transaction(const Job& job, JobContext& context, const Handler& handler,
                            HandlerConnection& connection);
    // The handler thread's connection, opened or re-opened, with BEGIN sent;
    // false once the grace period is over and it still cannot.
    bool begin_transaction(HandlerConnection& connection);
    // The job's result is not recorded: it leaves the running set (the
    // heartbeat stops extending it) and counts as lost.
    void drop(const Job& job);
    // A COMMIT whose answer was lost: asks the server, on a new connection,
    // whether transaction committed; false when it did not (or no answer
    // came before the grace period ended).
    bool committed_in_doubt(HandlerConnection& connection, std::int64_t transaction);
    void release_unstarted(Client& client, std::uint64_t& opened);
    void release_running(Client& client);
    // Runs attempt(tag) until it does not lose the connection, pausing with
    // backoff and jitter between tries; attempt sets tag to the generation
    // of the connection it used (see ConnectionLog), which is told of every
    // loss and success. Returns false once give_up is set and the last try
    // still failed.
    template <typename Attempt>
    bool with_retries(Attempt&& attempt, const std::atomic<bool>& give_up);
    // The same for op on client, re-opening its connection before each
    // retry; opened: the generation its connection was opened in.
    template <typename Op>
    bool with_reconnect(Client& client, std::uint64_t& opened, Op&& op, const std::atomic<bool>& give_up);
    // A connection of the thread's own, retried until it opens or give_up;
    // opened is set to its generation.
    std::optional<Client> connect(std::uint64_t& opened, const std::atomic<bool>& give_up);
    void wait_for_wakeup(Client& client, std::uint64_t& opened);
    bool wait_for_rate_slot(Client& client, std::uint64_t& opened);
    void report_error(const char* what, const Error& e);
    void sleep_for(std::chrono::milliseconds span);
    // Wake every waiting thread after a stop flag changed.
    void wake_all();

    WorkerOptions options_;
    std::map<std::string, Handler> handlers_;
    std::set<std::string> transactional_;  // job names of on_transactional's handlers
    Handler default_handler_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    // handler threads wait on this one alone: jobs claimed, or stopping
    std::condition_variable work_;
    std::deque<Claimed> ready_;             // claimed, not started
    std::map<std::int64_t, Running> running_;  // by job id
    int busy_ = 0;                          // handler threads running a job
    std::atomic<std::int64_t> mean_run_us_{0};  // of recent jobs (moving average); 0: none yet

    std::atomic<bool> stopping_{false};     // claim nothing more
    std::atomic<bool> hard_stop_{false};    // grace period over
    std::atomic<bool> stop_requested_{false};
    bool check_rate_limits_ = true;         // dispatcher only: off when the server has no rate limits
    bool started_ = false;
    bool stopped_ = false;
    std::exception_ptr failure_;            // under mutex_

    std::atomic<std::int64_t> claimed_{0}, completed_{0}, retried_{0}, failed_{0}, lost_{0}, reconnects_{0};

    std::unique_ptr<ConnectionLog> connections_;  // every thread's losses and successes, one line per outage
    std::unique_ptr<Completer> completer_;  // from start()
    std::thread dispatcher_;
    std::thread heartbeat_;
    std::vector<std::thread> handler_threads_;
};

}  // namespace jobqueue
