// worker.cpp: jobqueue::Worker, the dispatcher / handler / heartbeat threads.
#include "jobqueue/worker.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <libpq-fe.h>

#include <algorithm>
#include <iostream>

#include "backoff.hpp"
#include "commit_outcome.hpp"
#include "completer.hpp"
#include "connection_log.hpp"
#include "utf8.hpp"

namespace jobqueue {

namespace {

// The longest wait inside one queue_reserve call. Short, so that a stop is
// noticed soon, and far below any sensible query_timeout of a pooler in
// front of the server (PgBouncer's is given in seconds): a call running
// longer than that is cut off with its connection, and the jobs it claimed
// come back only when their lease ends.
constexpr std::chrono::milliseconds kServerWaitSlice{500};

std::string default_worker_name() {
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(getpid());
}

}  // namespace

void WorkerOptions::validate() const {
    using std::chrono::milliseconds;
    if (threads < 1 || threads > max_threads)
        throw InvalidArgument("jobqueue: WorkerOptions.threads must be 1 to " + std::to_string(max_threads));
    if (poll_interval <= milliseconds(0)) throw InvalidArgument("jobqueue: WorkerOptions.poll_interval must be positive");
    if (grace_period < milliseconds(0)) throw InvalidArgument("jobqueue: WorkerOptions.grace_period must not be negative");
    if (max_batch < 0) throw InvalidArgument("jobqueue: WorkerOptions.max_batch must not be negative");
    if (claim_ahead < 0) throw InvalidArgument("jobqueue: WorkerOptions.claim_ahead must not be negative");
    if (completion_batch_size < 1 || completion_batch_size > 10000)
        throw InvalidArgument("jobqueue: WorkerOptions.completion_batch_size must be 1 to 10000");
    if (completion_flush_interval < milliseconds(0))
        throw InvalidArgument("jobqueue: WorkerOptions.completion_flush_interval must not be negative");
    if (tick_interval < milliseconds(0)) throw InvalidArgument("jobqueue: WorkerOptions.tick_interval must not be negative");
    if (max_reconnect_delay < milliseconds(1))
        throw InvalidArgument("jobqueue: WorkerOptions.max_reconnect_delay must be positive");
    (void)pooler_mode_or_environment(connection.pooler);  // a bad JOBQUEUE_POOLER fails here, not in a thread
}

Worker::Worker(WorkerOptions options)
    : options_(std::move(options)),
      connections_(std::make_unique<ConnectionLog>([](const std::string& line) { std::cerr << (line + "\n"); })) {
    options_.validate();
    if (options_.name.empty()) options_.name = default_worker_name();
    if (options_.max_batch == 0) options_.max_batch = options_.threads + options_.claim_ahead;
}

Worker::~Worker() {
    try {
        stop();
    } catch (...) {
        // destructors never throw; the jobs come back when their leases end
    }
}

PGconn* JobContext::connection() const noexcept { return client_ != nullptr ? client_->connection() : nullptr; }

Client& JobContext::client() const {
    if (client_ == nullptr)
        throw InvalidArgument("jobqueue: JobContext::client() is only for transactional handlers "
                              "(Worker::on_transactional, WorkerOptions::transactional)");
    return *client_;
}

void Worker::on(const std::string& job_name, Handler handler) {
    if (started_) throw InvalidArgument("jobqueue: register handlers before Worker::start()");
    handlers_[job_name] = std::move(handler);
    transactional_.erase(job_name);
}

void Worker::on_transactional(const std::string& job_name, Handler handler) {
    on(job_name, std::move(handler));
    transactional_.insert(job_name);
}

void Worker::on(const std::string& job_name, std::function<void(const Job&)> handler) {
    on(job_name, Handler([h = std::move(handler)](const Job& job, JobContext&) {
           h(job);
           return Outcome::done();
       }));
}

void Worker::on_any(Handler handler) {
    if (started_) throw InvalidArgument("jobqueue: register handlers before Worker::start()");
    default_handler_ = std::move(handler);
}

WorkerCounters Worker::counters() const {
    return {claimed_.load(), completed_.load(), retried_.load(), failed_.load(), lost_.load(), reconnects_.load()};
}

void Worker::sleep_for(std::chrono::milliseconds span) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, span, [&] { return hard_stop_.load(); });
}

template <typename Attempt>
bool Worker::with_retries(Attempt&& attempt, const std::atomic<bool>& give_up) {
    Backoff backoff(std::chrono::milliseconds(100), options_.max_reconnect_delay);
    for (;;) {
        std::uint64_t tag = 0;
        try {
            attempt(tag);
            connections_->working();
            return true;
        } catch (const ConnectionError& e) {
            ++reconnects_;
            connections_->lost(e.what(), tag);
            if (give_up) return false;
            sleep_for(backoff.next());
        }
    }
}

template <typename Op>
bool Worker::with_reconnect(Client& client, std::uint64_t& opened, Op&& op, const std::atomic<bool>& give_up) {
    return with_retries(
        [&](std::uint64_t& tag) {
            if (!client.healthy()) {
                tag = connections_->generation();
                client.reconnect();
                opened = tag;
            }
            tag = opened;
            op();
        },
        give_up);
}

std::optional<Client> Worker::connect(std::uint64_t& opened, const std::atomic<bool>& give_up) {
    std::optional<Client> client;
    if (!with_retries(
            [&](std::uint64_t& tag) {
                tag = connections_->generation();
                client.emplace(options_.connection);
                opened = tag;
            },
            give_up))
        return std::nullopt;
    return client;
}

std::exception_ptr Worker::failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
}

void Worker::start() {
    if (started_) return;
    if (handlers_.empty() && !default_handler_) throw InvalidArgument("jobqueue: register at least one handler before Worker::start()");
    started_ = true;
    completer_ = std::make_unique<Completer>(
        Completer::Settings{options_.connection, options_.completion_batch_size, options_.completion_flush_interval,
                            options_.max_reconnect_delay},
        *connections_,
        [this](const Completer::Tally& t) {
            completed_ += t.completed;
            retried_ += t.retried;
            failed_ += t.failed;
            lost_ += t.lost;
            reconnects_ += t.reconnects;
        },
        [this](const char* what, const Error& e) { report_error(what, e); });
    completer_->start();
    dispatcher_ = std::thread([this] { dispatcher_loop(); });
    heartbeat_ = std::thread([this] { heartbeat_loop(); });
    for (int i = 0; i < options_.threads; ++i) handler_threads_.emplace_back([this] { handler_loop(); });
}

int Worker::claim_ahead_now() const {
    const std::int64_t mean_us = mean_run_us_.load();
    // no job has finished yet: its run time is unknown, so claim only for idle threads
    if (mean_us <= 0) return 0;
    const std::int64_t horizon_us = std::chrono::microseconds(WorkerOptions::claim_ahead_horizon).count();
    const std::int64_t startable = options_.threads * horizon_us / mean_us;
    return static_cast<int>(std::min<std::int64_t>(options_.claim_ahead, startable));
}

// Claims batches sized to the idle handler threads plus claim_ahead_now();
// when nothing is due it waits for a wake-up (or sleeps) at most poll_interval.
void Worker::dispatcher_loop() {
    std::uint64_t opened = 0;
    auto client = connect(opened, stopping_);
    if (!client) return;
    while (!stopping_) {
        int free_slots;
        const int capacity = options_.threads + claim_ahead_now();
        {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait_for(lock, options_.poll_interval, [&] {
                return stopping_ || capacity - busy_ - static_cast<int>(ready_.size()) > 0;
            });
            free_slots = capacity - busy_ - static_cast<int>(ready_.size());
        }
        if (stopping_) break;
        if (free_slots <= 0) continue;

        std::vector<Job> jobs;
        const auto claimed_at = std::chrono::steady_clock::now();
        ReserveOptions claim{options_.queues, options_.lease, options_.name, std::min(free_slots, options_.max_batch),
                             std::nullopt};
        if (options_.wait_in_server) claim.wait = std::min(options_.poll_interval, kServerWaitSlice);
        try {
            if (!with_reconnect(*client, opened, [&] { jobs = client->reserve(claim); }, stopping_)) break;
        } catch (const InvalidArgument&) {
            // the server refused the worker's own options: no retry can help
            {
                std::lock_guard<std::mutex> lock(mutex_);
                failure_ = std::current_exception();
            }
            request_stop();
            break;
        } catch (const Error& e) {
            if (options_.wait_in_server && e.sqlstate() == "42883") {
                options_.wait_in_server = false;  // the extension predates 1.2: LISTEN / poll instead
                continue;
            }
            // e.g. the role lacks the worker tier: say so, and try again later
            report_error("claim", e);
            wait_for_wakeup(*client, opened);
            continue;
        }
        if (!jobs.empty()) {
            std::lock_guard<std::mutex> lock(mutex_);
            claimed_ += static_cast<std::int64_t>(jobs.size());
            for (auto& job : jobs) ready_.push_back(Claimed{std::move(job), claimed_at});
            work_.notify_all();
            continue;
        }
        if (wait_for_rate_slot(*client, opened)) continue;
        if (!options_.wait_in_server) wait_for_wakeup(*client, opened);
    }
    release_unstarted(*client, opened);
}

// The claim came back empty: when every queue of the worker is rate limited
// with no slot free, a new claim would come back empty too (at once, or after
// waiting in the server for a job that is there already), so sleep until the
// first slot opens, at most poll_interval. Returns whether it slept. An
// extension before 1.5 (42883) or a role without the call (42501) turns the
// check off.
bool Worker::wait_for_rate_slot(Client& client, std::uint64_t& opened) {
    if (!check_rate_limits_) return false;
    std::optional<std::chrono::milliseconds> wait;
    try {
        if (!with_reconnect(client, opened, [&] { wait = client.rate_limit_wait(options_.queues); }, stopping_))
            return false;
    } catch (const Error& e) {
        if (e.sqlstate() != "42883" && e.sqlstate() != "42501") report_error("reading the rate limits", e);
        check_rate_limits_ = false;
        return false;
    }
    if (!wait) return false;
    const auto span = std::clamp(*wait, std::chrono::milliseconds(1), options_.poll_interval);
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, span, [&] { return stopping_.load(); });
    return true;
}

// Nothing was due: wait for a NOTIFY wake-up (or just sleep) at most
// poll_interval, in short slices so that a stop is noticed at once. Through
// a transaction pooler a LISTEN stays behind on whichever server connection
// ran it, so notifications never arrive: only sleep there.
void Worker::wait_for_wakeup(Client& client, std::uint64_t& opened) {
    const auto slice = std::chrono::milliseconds(200);
    auto until = std::chrono::steady_clock::now() + options_.poll_interval;
    while (!stopping_) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        bool listen = false;
        if (options_.use_notify &&
            !with_reconnect(client, opened, [&] { listen = !client.transaction_pooled(); }, stopping_))
            return;
        if (!listen) {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait_for(lock, left, [&] { return stopping_.load(); });
            return;
        }
        std::optional<std::string> woken;
        try {
            // a lost connection here only costs the wait: reconnect and go on
            if (!with_reconnect(client, opened, [&] { woken = client.wait(std::min(left, slice)); }, stopping_))
                return;
        } catch (const Error& e) {
            // the server refused the LISTEN: sleep instead (an exception
            // leaving the dispatcher thread would end the process)
            report_error("listening for wake-ups", e);
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait_for(lock, left, [&] { return stopping_.load(); });
            return;
        }
        if (woken) return;
    }
}

void Worker::report_error(const char* what, const Error& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::cerr << "jobqueue worker: " << what << " failed: " << e.what();
    if (!e.sqlstate().empty()) std::cerr << " (SQLSTATE " << e.sqlstate() << ")";
    std::cerr << "\n";
}

// Claimed jobs that no handler started go back at once.
void Worker::release_unstarted(Client& client, std::uint64_t& opened) {
    std::deque<Claimed> left;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        left.swap(ready_);
    }
    if (left.empty()) return;
    std::vector<Claim> claims;
    for (const auto& claimed : left) claims.push_back({claimed.job.id, claimed.job.token});
    try {
        // one try: when it fails the leases run out and the jobs come back anyway
        with_reconnect(
            client, opened,
            [&] { (void)client.release_many(claims, std::chrono::milliseconds(0), "worker stopped before running it"); },
            stopping_);
    } catch (const Error& e) {
        report_error("releasing unstarted jobs", e);
    }
}

// Handler threads need no connection: the completer records their outcomes.
// Only a transactional handler's thread opens one, at its first such job,
// and keeps it for the next.
void Worker::handler_loop() {
    HandlerConnection connection;
    for (;;) {
        Job job;
        std::shared_ptr<JobContext> context = std::make_shared<JobContext>();
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_.wait(lock, [&] { return !ready_.empty() || stopping_; });
            if (stopping_) return;  // unstarted jobs are released by the dispatcher
            job = std::move(ready_.front().job);
            const auto claimed_at = ready_.front().claimed_at;
            ready_.pop_front();
            ++busy_;
            running_[job.id] = Running{job, context, claimed_at};
        }
        const auto began = std::chrono::steady_clock::now();
        run_job(job, *context, connection);
        const std::int64_t ran_us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began).count();
        // a moving average over about the last 16 jobs (races between threads only blur it)
        const std::int64_t mean_us = mean_run_us_.load();
        mean_run_us_.store(mean_us == 0 ? std::max<std::int64_t>(ran_us, 1) : mean_us + (ran_us - mean_us) / 16);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            --busy_;
            running_.erase(job.id);
            changed_.notify_all();
        }
    }
}

void Worker::run_job(const Job& job, JobContext& context, HandlerConnection& connection) {
    auto it = handlers_.find(job.name);
    const Handler* handler = it != handlers_.end() ? &it->second : (default_handler_ ? &default_handler_ : nullptr);
    if (handler != nullptr && (options_.transactional || transactional_.count(job.name) != 0)) {
        run_in_transaction(job, context, *handler, connection);
        return;
    }
    Outcome outcome = Outcome::fail("no handler registered for job name \"" + job.name + "\"");
    if (handler != nullptr) {
        try {
            outcome = (*handler)(job, context);
        } catch (const std::exception& e) {
            outcome = Outcome::retry(std::string("handler threw: ") + e.what());
        } catch (...) {
            outcome = Outcome::retry("handler threw a non-standard exception");
        }
    }
    // The grace period ended while it ran: the job was handed back (see
    // release_running), so its result, whatever it is, is not recorded.
    if (context.stop_) {
        ++lost_;
        return;
    }
    record(job, outcome);
}

// Hand the outcome to the completer, which records it in its next batch,
// fenced by the claim's token. The job leaves running_ in the same step, so
// the heartbeat no longer extends it and release_running cannot hand back a
// job whose outcome is already buffered; a job release_running handed back
// first is no longer in running_, and its result is dropped.
void Worker::record(const Job& job, const Outcome& outcome) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_.erase(job.id) == 0) {
        ++lost_;
        return;
    }
    completer_->add(job.id, job.token, outcome);
}

void Worker::drop(const Job& job) {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.erase(job.id);
    ++lost_;
}

// Sends BEGIN on the handler thread's connection, opening it first when it
// has none or lost it, with the backoff of every thread (nothing has run in
// the transaction yet, so trying again is safe). A freshly opened connection
// is named, so that it can be told apart in pg_stat_activity.
bool Worker::begin_transaction(HandlerConnection& connection) {
    if (!connection.client) {
        connection.client = connect(connection.opened, hard_stop_);
        if (!connection.client) return false;
    }
    Client& client = *connection.client;
    return with_reconnect(
        client, connection.opened,
        [&] {
            PGconn* conn = client.connection();
            if (conn != connection.named) {
                std::string name = ("jobqueue handler " + options_.name).substr(0, 63);
                // a name libpq cannot quote (not in the connection's encoding) is left out
                if (char* quoted = PQescapeLiteral(conn, name.c_str(), name.size())) {
                    const std::string sql = std::string("SET application_name = ") + quoted;
                    PQfreemem(quoted);
                    client.execute(sql);
                }
                connection.named = conn;
            }
            // a transaction left open (a handler that began one of its own) ends here
            if (PQtransactionStatus(conn) != PQTRANS_IDLE) client.execute("ROLLBACK");
            client.execute("BEGIN");
        },
        hard_stop_);
}

// The handler's transaction: BEGIN; the handler; the outcome's one-job call
// (queue_delete, queue_release or queue_fail) with the claim's token; the
// transaction id; COMMIT. What cannot be recorded in it is rolled back:
//  - a stale token (the call returns false): the job is lost to this worker;
//  - a throw, or a handler that returned after one of its statements failed:
//    the job is released as for any handler, by the completer;
//  - a lost connection before the COMMIT: the server rolled the transaction
//    back; the job is counted lost and runs again after its lease;
//  - a lost answer to the COMMIT: the server is asked whether it committed.
void Worker::run_in_transaction(const Job& job, JobContext& context, const Handler& handler,
                                HandlerConnection& connection) {
    try {
        if (!begin_transaction(connection)) {
            drop(job);  // the grace period is over: release_running handed it back
            return;
        }
    } catch (const Error& e) {
        // the server refused BEGIN (or the SET before it): the handler does
        // not run, and the job is released (an exception leaving a handler
        // thread would end the process)
        report_error("beginning a handler's transaction", e);
        record(job, Outcome::retry(std::string("cannot begin the handler's transaction: ") + e.what()));
        return;
    }
    Client& client = *connection.client;
    std::optional<Outcome> outcome;
    std::string threw;
    context.client_ = &client;
    try {
        outcome = handler(job, context);
    } catch (const std::exception& e) {
        threw = std::string("handler threw: ") + e.what();
    } catch (...) {
        threw = "handler threw a non-standard exception";
    }
    context.client_ = nullptr;

    // Rolls the transaction back; false when the connection is lost (the
    // server has rolled it back itself).
    auto rollback = [&]() -> bool {
        try {
            client.execute("ROLLBACK");
            return true;
        } catch (const ConnectionError& e) {
            ++reconnects_;
            connections_->lost(e.what(), connection.opened);
            return false;
        } catch (const Error& e) {
            report_error("rolling back a handler's transaction", e);
            return client.healthy();
        }
    };

    const PGTransactionStatusType state =
        client.healthy() ? PQtransactionStatus(client.connection()) : PQTRANS_UNKNOWN;
    if (state == PQTRANS_UNKNOWN || state == PQTRANS_ACTIVE) {
        // the connection was lost while the handler ran: nothing it wrote
        // committed, and the outcome cannot be recorded in its transaction
        ++reconnects_;
        connections_->lost("jobqueue: connection lost while a transactional handler ran", connection.opened);
        drop(job);
        return;
    }
    if (context.stop_) {
        // the grace period ended while it ran: the job was handed back
        (void)rollback();
        ++lost_;
        return;
    }
    if (state == PQTRANS_IDLE) {
        // the handler ended the transaction itself: record its outcome as
        // any handler's (its writes are no longer the worker's to commit)
        record(job, outcome ? *outcome : Outcome::retry(threw));
        return;
    }
    if (!threw.empty() || state == PQTRANS_INERROR) {
        if (!rollback()) {
            drop(job);
            return;
        }
        record(job, threw.empty() ? Outcome::retry("the handler's transaction was aborted by an error")
                                  : Outcome::retry(threw));
        return;
    }

    // The job leaves the running set first, as in record(): the heartbeat no
    // longer extends it (nor waits for the row lock the call below takes),
    // and release_running cannot hand it back meanwhile.
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (running_.erase(job.id) == 0) {
            // handed back by release_running first: its result is dropped
            ++lost_;
            (void)rollback();
            return;
        }
    }
    const Outcome& o = *outcome;
    std::int64_t transaction = 0;
    bool ours = false;
    bool committed = false;
    try {
        switch (o.kind()) {
            case Outcome::Kind::done: ours = client.complete(job.id, job.token); break;
            case Outcome::Kind::retry:
                ours = client.release(job.id, job.token, o.delay(), utf8::valid(o.message()));
                break;
            case Outcome::Kind::fail: ours = client.fail(job.id, job.token, utf8::valid(o.message())); break;
        }
        if (!ours) {
            // the claim was lost: another claim holds the job now, and the
            // handler's writes must not stay behind
            (void)rollback();
            ++lost_;
            return;
        }
        transaction = client.transaction_id();
        client.execute("COMMIT");
        committed = true;
        connections_->working();
    } catch (const InDoubtError& e) {
        ++reconnects_;
        connections_->lost(e.what(), connection.opened);
        committed = committed_in_doubt(connection, transaction);
    } catch (const ConnectionError& e) {
        // lost before the COMMIT: rolled back; the job's lease runs out
        ++reconnects_;
        connections_->lost(e.what(), connection.opened);
    } catch (const RetryableError& e) {
        // 40001 / 40P01 in the call: the handler's writes cannot be sent
        // again, so the job is released for another run
        if (rollback()) {
            std::lock_guard<std::mutex> lock(mutex_);
            completer_->add(job.id, job.token, Outcome::retry(std::string("transaction: ") + e.what()));
            return;
        }
    } catch (const Error& e) {
        // e.g. a negative Outcome::retry_in delay (22023): rolled back, and
        // the job comes back when its lease runs out
        report_error(o.kind() == Outcome::Kind::done ? "completing a job" : "recording a job's outcome", e);
        (void)rollback();
    }
    if (!committed) {
        ++lost_;
        return;
    }
    switch (o.kind()) {
        case Outcome::Kind::done: ++completed_; break;
        case Outcome::Kind::retry: ++retried_; break;
        case Outcome::Kind::fail: ++failed_; break;
    }
}

// The COMMIT's answer was lost: reconnect, then ask pg_xact_status until the
// old session has ended ("in progress" meanwhile). A transaction id the
// server does not know (a standby promoted since) never committed there.
bool Worker::committed_in_doubt(HandlerConnection& connection, std::int64_t transaction) {
    Client& client = *connection.client;
    Backoff backoff(std::chrono::milliseconds(50), options_.max_reconnect_delay);
    for (int tries = 0; tries < 50; ++tries) {
        CommitOutcome outcome = CommitOutcome::not_committed;
        try {
            if (!with_reconnect(
                    client, connection.opened, [&] { outcome = commit_outcome(client, transaction); },
                    hard_stop_))
                return false;
        } catch (const Error& e) {
            report_error("asking whether a handler's transaction committed", e);
            return false;
        }
        if (outcome != CommitOutcome::in_progress) return outcome == CommitOutcome::committed;
        if (hard_stop_) return false;
        sleep_for(backoff.next());
    }
    return false;
}

// Every running job whose lease is half used gets a fresh lease.
void Worker::heartbeat_loop() {
    std::uint64_t opened = 0;
    auto client = connect(opened, hard_stop_);
    if (!client) return;
    const auto half = options_.lease / 2;
    const auto tick = std::max(std::chrono::milliseconds(50), options_.lease / 8);
    auto next_schedule_tick = std::chrono::steady_clock::now();
    while (!hard_stop_) {
        sleep_for(tick);
        if (hard_stop_) break;
        tick_schedules(*client, opened, next_schedule_tick);
        std::vector<std::pair<Job, std::shared_ptr<JobContext>>> due;
        auto now = std::chrono::steady_clock::now();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (auto& [id, running] : running_)
                if (now - running.lease_started >= half && !running.context->lease_lost())
                    due.emplace_back(running.job, running.context);
        }
        for (auto& [job, context] : due) {
            bool extended = false;
            auto started = std::chrono::steady_clock::now();
            try {
                if (!with_reconnect(
                        *client, opened, [&] { extended = client->extend(job.id, job.token, options_.lease); },
                        hard_stop_))
                    break;
            } catch (const Error& e) {
                report_error("extending a lease", e);
                continue;
            }
            std::lock_guard<std::mutex> lock(mutex_);
            if (!extended) context->lease_lost_ = true;
            auto it = running_.find(job.id);
            if (extended && it != running_.end()) it->second.lease_started = started;
        }
    }
}

// Recurring schedules: queue_tick() every tick_interval. A database whose
// extension predates schedules (no queue_tick: 42883) turns this off.
void Worker::tick_schedules(Client& client, std::uint64_t& opened, std::chrono::steady_clock::time_point& next_tick) {
    if (options_.tick_interval.count() == 0 || stopping_ || std::chrono::steady_clock::now() < next_tick) return;
    next_tick = std::chrono::steady_clock::now() + options_.tick_interval;
    try {
        with_reconnect(client, opened, [&] { (void)client.tick(); }, hard_stop_);
    } catch (const Error& e) {
        if (e.sqlstate() == "42883") {
            options_.tick_interval = std::chrono::milliseconds(0);
            return;
        }
        report_error("ticking schedules", e);
    }
}

// After the grace period: jobs still running are released for another
// worker; their handlers are told to stop and their results are dropped.
void Worker::release_running(Client& client) {
    std::vector<Claim> claims;
    std::vector<std::shared_ptr<JobContext>> contexts;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [id, running] : running_) {
            claims.push_back({running.job.id, running.job.token});
            contexts.push_back(running.context);
        }
        // handed back: a result that comes later is dropped (see record)
        running_.clear();
    }
    if (claims.empty()) return;
    try {
        (void)client.release_many(claims, std::chrono::milliseconds(0), "worker stopped while running it");
    } catch (const Error&) {
        // the leases will run out and the jobs come back by themselves
    }
    // Told only now: a handler that gives up on should_stop() could
    // otherwise record its result before the release (run_job drops it).
    for (auto& context : contexts) context->stop_ = true;
}

// Passing through the mutex first: a thread that saw the flag unset under it
// is already waiting, so it gets the notification (none is missed).
void Worker::wake_all() {
    { std::lock_guard<std::mutex> lock(mutex_); }
    changed_.notify_all();
    work_.notify_all();
}

void Worker::request_stop() noexcept {
    stop_requested_ = true;
    stopping_ = true;
    wake_all();
}

void Worker::stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    stopping_ = true;
    wake_all();
    if (dispatcher_.joinable()) dispatcher_.join();

    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait_for(lock, options_.grace_period, [&] { return busy_ == 0; });
    }
    hard_stop_ = true;
    changed_.notify_all();
    bool still_running;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        still_running = busy_ > 0;
    }
    if (still_running) {
        try {
            Client client(options_.connection);
            release_running(client);
        } catch (const Error&) {
            // no connection: the leases will run out instead; the handlers
            // are still told to stop
            std::lock_guard<std::mutex> lock(mutex_);
            for (auto& [id, running] : running_) running.context->stop_ = true;
        }
    }
    for (auto& t : handler_threads_)
        if (t.joinable()) t.join();
    // every handler has handed over its outcome: record what is still buffered
    completer_->stop(std::chrono::steady_clock::now() + options_.grace_period);
    if (heartbeat_.joinable()) heartbeat_.join();
}

void Worker::run_until_signal() {
    sigset_t signals, previous;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    // blocked before the threads start, so they inherit the mask and the
    // signal is taken here
    pthread_sigmask(SIG_BLOCK, &signals, &previous);
    start();
    while (!stop_requested_) {
        timespec tick{0, 200 * 1000 * 1000};
        int signal = sigtimedwait(&signals, nullptr, &tick);
        if (signal == SIGINT || signal == SIGTERM) break;
    }
    stop();
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (auto failed = failure()) std::rethrow_exception(failed);
}

}  // namespace jobqueue
