// worker_test.cpp: live tests of jobqueue::Worker (dispatcher, handler and
// heartbeat threads, shutdown, reconnection, wake-ups).
//
// Every test works on queues of its own (unique_queue) and removes its jobs
// and failed rows at the end. Waits are bounded polls for a condition,
// never assertions on how long something took.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "jobqueue/jobqueue.hpp"
#include "commit_cutter.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::Job;
using jobqueue::JobContext;
using jobqueue::NewJob;
using jobqueue::Outcome;
using jobqueue::PushOptions;
using jobqueue::QueueStats;
using jobqueue::Worker;
using jobqueue::WorkerCounters;
using jobqueue::WorkerOptions;
using jobqueue::testing::restart_server;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;

namespace {

// Polls pred every step until it holds or timeout passes; true if it held.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = 20ms) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (pred()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return pred();
        std::this_thread::sleep_for(step);
    }
}

// SQL text literal.
std::string lit(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += '\'';
        out += c;
    }
    return out + "'";
}

// The first row of a query on a fresh superuser connection, every column as
// text ("" for NULL); empty when there is no row.
std::vector<std::string> sql_row(const std::string& sql) {
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(""), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect: ") + PQerrorMessage(conn.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
    std::vector<std::string> row;
    if (PQntuples(r.get()) == 0) return row;
    for (int c = 0; c < PQnfields(r.get()); ++c) row.emplace_back(PQgetvalue(r.get(), 0, c));
    return row;
}

std::int64_t sql_int(const std::string& sql) { return std::stoll(sql_value(sql)); }

// Thread-safe record of the job ids a handler saw, with a count per id.
class Seen {
public:
    void add(std::int64_t id) {
        std::lock_guard<std::mutex> lock(m_);
        ++count_[id];
        ++total_;
    }
    int of(std::int64_t id) const {
        std::lock_guard<std::mutex> lock(m_);
        auto it = count_.find(id);
        return it == count_.end() ? 0 : it->second;
    }
    std::size_t distinct() const {
        std::lock_guard<std::mutex> lock(m_);
        return count_.size();
    }
    std::int64_t total() const {
        std::lock_guard<std::mutex> lock(m_);
        return total_;
    }
    std::map<std::int64_t, int> snapshot() const {
        std::lock_guard<std::mutex> lock(m_);
        return count_;
    }

private:
    mutable std::mutex m_;
    std::map<std::int64_t, int> count_;
    std::int64_t total_ = 0;
};

std::string describe(const WorkerCounters& c) {
    return "claimed=" + std::to_string(c.claimed) + " completed=" + std::to_string(c.completed) +
           " retried=" + std::to_string(c.retried) + " failed=" + std::to_string(c.failed) +
           " lost=" + std::to_string(c.lost) + " reconnects=" + std::to_string(c.reconnects);
}

class WorkerTest : public ::testing::Test {
protected:
    void SetUp() override { client_ = std::make_unique<Client>(); }

    // Removes every job and failed row of the queues this test made, on a
    // fresh connection (the test's own may have been cut by a restart).
    void TearDown() override {
        for (const auto& q : queues_) {
            try {
                Client c;
                (void)c.clear(q);
                sql_value("DELETE FROM queue_failed_jobs WHERE queue = " + lit(q));
                sql_value("DELETE FROM queue_settings WHERE queue = " + lit(q));
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cleanup of queue " << q << " failed: " << e.what();
            }
        }
    }

    std::string make_queue(const std::string& prefix) {
        queues_.push_back(unique_queue("wt_" + prefix));
        return queues_.back();
    }

    // Options every test starts from: its own queue, quick polling and
    // reconnection so that nothing waits long.
    static WorkerOptions options(const std::string& queue, int threads = 2) {
        WorkerOptions o;
        o.queues = {queue};
        o.threads = threads;
        o.poll_interval = 200ms;
        o.max_reconnect_delay = 500ms;
        o.name = "worker_test:" + queue;
        return o;
    }

    static PushOptions on_queue(const std::string& queue, int max_attempts = 3) {
        PushOptions p;
        p.queue = queue;
        p.max_attempts = max_attempts;
        return p;
    }

    // The queue's row of queue_stats(), zeros when the queue has no jobs.
    static QueueStats stats_of(Client& c, const std::string& queue) {
        for (const auto& s : c.stats())
            if (s.queue == queue) return s;
        QueueStats none;
        none.queue = queue;
        return none;
    }

    static std::int64_t jobs_in(const std::string& queue) {
        return sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(queue));
    }
    static std::int64_t failed_rows_of(const std::string& queue) {
        return sql_int("SELECT count(*) FROM queue_failed_jobs WHERE queue = " + lit(queue));
    }
    static bool is_failed(std::int64_t id) {
        return sql_int("SELECT count(*) FROM queue_failed_jobs WHERE id = " + std::to_string(id)) == 1;
    }

    // The failed row of a job, through the client.
    std::optional<jobqueue::FailedJob> failed_row(std::int64_t id) { return client_->failed_job(id); }

    std::unique_ptr<Client> client_;
    std::vector<std::string> queues_;
};

// ---------------------------------------------------------------- options

// Out-of-range options are refused when the worker is made, and a worker
// without handlers cannot start; handlers cannot be added once started.
TEST_F(WorkerTest, RejectsBadOptionsAndLateHandlers) {
    const std::string q = make_queue("opts");
    auto bad = [&](const std::function<void(WorkerOptions&)>& change) {
        WorkerOptions o = options(q);
        change(o);
        EXPECT_THROW(Worker w(o), jobqueue::InvalidArgument);
    };
    bad([](WorkerOptions& o) { o.threads = 0; });
    bad([](WorkerOptions& o) { o.poll_interval = 0ms; });
    bad([](WorkerOptions& o) { o.grace_period = -1ms; });
    bad([](WorkerOptions& o) { o.max_batch = -1; });
    bad([](WorkerOptions& o) { o.claim_ahead = -1; });
    bad([](WorkerOptions& o) { o.completion_batch_size = 0; });
    bad([](WorkerOptions& o) { o.completion_batch_size = 10001; });
    bad([](WorkerOptions& o) { o.completion_flush_interval = -1ms; });

    Worker empty(options(q));
    EXPECT_THROW(empty.start(), jobqueue::InvalidArgument);

    Worker w(options(q));
    w.on("noop", [](const Job&) {});
    w.start();
    EXPECT_THROW(w.on("late", [](const Job&) {}), jobqueue::InvalidArgument);
    w.stop();
    w.stop();  // a second stop is harmless
}

// A setting the server judges (here a lease under its one-second minimum)
// is refused by the server at the first claim: the worker stops by itself
// and run_until_signal() throws the server's error; nothing was claimed.
TEST_F(WorkerTest, ALeaseTheServerRefusesStopsTheWorkerWithItsError) {
    const std::string q = make_queue("badlease");
    (void)client_->push("noop", {}, on_queue(q));
    WorkerOptions o = options(q);
    o.lease = 500ms;
    Worker w(o);
    w.on("noop", [](const Job&) {});
    auto outcome = std::async(std::launch::async, [&] {
        try {
            w.run_until_signal();
            return std::string("returned");
        } catch (const jobqueue::InvalidArgument& e) {
            return e.sqlstate();
        }
    });
    ASSERT_EQ(outcome.wait_for(30s), std::future_status::ready) << "the worker did not stop";
    EXPECT_EQ(outcome.get(), "22023");
    EXPECT_TRUE(w.failure() != nullptr);
    EXPECT_EQ(w.counters().claimed, 0);
    EXPECT_EQ(jobs_in(q), 1);
}

// ---------------------------------------------------------------- 1. volume

// 10,000 jobs, four handler threads: every job runs exactly once, and the
// queue is empty afterwards with nothing failed.
TEST_F(WorkerTest, TenThousandJobsOverFourThreadsAreEachDoneExactlyOnce) {
    const std::string q = make_queue("bulk");
    const std::int64_t failed_before = client_->failed_count();

    std::vector<std::int64_t> ids;
    for (int batch = 0; batch < 10; ++batch) {
        std::vector<NewJob> jobs;
        for (int i = 0; i < 1000; ++i) jobs.push_back(NewJob{"count", {{"i", batch * 1000 + i}}, on_queue(q)});
        auto got = client_->push_many(jobs);
        ASSERT_EQ(got.size(), 1000u);
        ids.insert(ids.end(), got.begin(), got.end());
    }
    ASSERT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), 10000u);

    Seen seen;
    Worker w(options(q, 4));
    w.on("count", [&](const Job& job) { seen.add(job.id); });
    w.start();
    bool all = wait_until([&] { return seen.distinct() >= 10000; }, 150s, 50ms);
    w.stop();
    ASSERT_TRUE(all) << "only " << seen.distinct() << " of 10000 jobs ran; " << describe(w.counters());

    auto counts = seen.snapshot();
    EXPECT_EQ(counts.size(), 10000u);
    int not_once = 0;
    for (auto id : ids)
        if (seen.of(id) != 1) ++not_once;
    EXPECT_EQ(not_once, 0) << "jobs not run exactly once";
    EXPECT_EQ(seen.total(), 10000);

    EXPECT_EQ(client_->pending(q), 0);
    EXPECT_EQ(stats_of(*client_, q).total, 0);
    EXPECT_EQ(client_->failed_count(), failed_before);
    auto c = w.counters();
    EXPECT_EQ(c.completed, 10000) << describe(c);
    EXPECT_EQ(c.claimed, 10000) << describe(c);
    EXPECT_EQ(c.lost, 0);
    EXPECT_EQ(c.retried, 0);
    EXPECT_EQ(c.failed, 0);
}

// ---------------------------------------------------------------- 2. exceptions

// Retried twice without delay, then the handler throws on the last of its
// three attempts: the job goes to the failed table with the exception text.
TEST_F(WorkerTest, ThrowOnLastAttemptFailsTheJobWithTheError) {
    const std::string q = make_queue("lastthrow");
    const std::int64_t id = client_->push("flaky", {{"k", 1}}, on_queue(q, 3));

    std::mutex m;
    std::vector<int> attempts;
    std::vector<std::string> last_errors;
    Worker w(options(q));
    w.on("flaky", [&](const Job& job, JobContext&) -> Outcome {
        {
            std::lock_guard<std::mutex> lock(m);
            attempts.push_back(job.attempts);
            last_errors.push_back(job.last_error);
        }
        if (!job.last_attempt()) return Outcome::retry_in(0ms, "try again");
        throw std::runtime_error("boom on the last attempt");
    });
    w.start();
    bool failed = wait_until([&] { return is_failed(id); }, 30s);
    w.stop();
    ASSERT_TRUE(failed) << describe(w.counters());

    EXPECT_EQ(attempts, (std::vector<int>{1, 2, 3}));
    ASSERT_EQ(last_errors.size(), 3u);
    EXPECT_EQ(last_errors[1], "try again");  // the reason of the first retry reached the next claim
    EXPECT_EQ(jobs_in(q), 0);

    auto row = failed_row(id);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->attempts, 3);
    EXPECT_EQ(row->max_attempts, 3);
    EXPECT_EQ(row->name, "flaky");
    EXPECT_NE(row->error.find("boom on the last attempt"), std::string::npos) << row->error;

    auto c = w.counters();
    EXPECT_EQ(c.claimed, 3) << describe(c);
    EXPECT_EQ(c.retried, 3) << describe(c);  // two releases, then the release the server turned into a failure
    EXPECT_EQ(c.completed, 0);
    EXPECT_EQ(c.failed, 0);
    EXPECT_EQ(c.lost, 0);
}

// A plain exception on an early attempt releases the job with the server's
// backoff (10 s x [0.5, 1] after the first attempt), recording its text.
TEST_F(WorkerTest, ExceptionReleasesWithServerBackoffAndRecordsIt) {
    const std::string q = make_queue("throw");
    const std::int64_t id = client_->push("throws", {}, on_queue(q, 3));

    std::atomic<int> runs{0};
    Worker w(options(q));
    w.on("throws", [&](const Job&) {
        ++runs;
        throw std::runtime_error("disk on fire");
    });
    w.start();
    bool released = wait_until([&] { return w.counters().retried >= 1; }, 30s);
    w.stop();
    ASSERT_TRUE(released) << describe(w.counters());
    EXPECT_EQ(runs.load(), 1);

    auto row = sql_row(
        "SELECT attempts, reserved_until IS NULL, token IS NULL, last_error,"
        " available_at > clock_timestamp() + interval '3 seconds',"
        " available_at <= clock_timestamp() + interval '10 seconds'"
        " FROM queue_jobs WHERE id = " + std::to_string(id));
    ASSERT_EQ(row.size(), 6u) << "the job left the queue";
    EXPECT_EQ(row[0], "1");
    EXPECT_EQ(row[1], "t") << "still held";
    EXPECT_EQ(row[2], "t") << "still held";
    EXPECT_NE(row[3].find("disk on fire"), std::string::npos) << row[3];
    EXPECT_EQ(row[4], "t") << "no backoff: the job is due (almost) at once";
    EXPECT_EQ(row[5], "t") << "backoff longer than 10 s after a first attempt";

    auto s = stats_of(*client_, q);
    EXPECT_EQ(s.delayed, 1);
    EXPECT_EQ(s.pending, 0);
    EXPECT_EQ(s.reserved, 0);
    auto c = w.counters();
    EXPECT_EQ(c.retried, 1) << describe(c);
    EXPECT_EQ(c.completed, 0);
    EXPECT_EQ(c.failed, 0);
}

// A handler that throws something that is not a std::exception is treated
// the same way: released for another attempt.
TEST_F(WorkerTest, NonStandardExceptionReleasesTheJob) {
    const std::string q = make_queue("throwint");
    const std::int64_t id = client_->push("throws", {}, on_queue(q, 3));

    Worker w(options(q));
    w.on("throws", [&](const Job&) { throw 42; });
    w.start();
    bool released = wait_until([&] { return w.counters().retried >= 1; }, 30s);
    w.stop();
    ASSERT_TRUE(released) << describe(w.counters());
    auto row = sql_row("SELECT attempts, reserved_until IS NULL, last_error <> '' FROM queue_jobs WHERE id = " +
                       std::to_string(id));
    ASSERT_EQ(row.size(), 3u);
    EXPECT_EQ(row[0], "1");
    EXPECT_EQ(row[1], "t");
    EXPECT_EQ(row[2], "t") << "no error recorded";
}

// An exception whose text is not valid UTF-8 must still release the job
// (the contract: a handler's exception releases it), not stop the worker.
TEST_F(WorkerTest, ExceptionWithInvalidUtf8TextStillReleasesTheJob) {
    const std::string q = make_queue("badutf8");
    const std::int64_t bad = client_->push("throws", {}, on_queue(q, 3));

    Worker w(options(q, 1));
    w.on("throws", [&](const Job&) { throw std::runtime_error("bad bytes \xff\xfe here"); });
    w.on("fine", [&](const Job&) {});
    w.start();
    bool released = wait_until(
        [&] {
            return sql_value("SELECT count(*) FROM queue_jobs WHERE reserved_until IS NULL AND attempts = 1 AND id = " +
                             std::to_string(bad)) == "1";
        },
        30s);
    ASSERT_TRUE(released) << describe(w.counters());
    auto row = sql_row("SELECT last_error FROM queue_jobs WHERE id = " + std::to_string(bad));
    ASSERT_EQ(row.size(), 1u);
    EXPECT_NE(row[0].find("bad bytes"), std::string::npos) << "the exception text was not recorded: " << row[0];
    EXPECT_NE(row[0].find("here"), std::string::npos) << row[0];
    // the worker goes on working
    const std::int64_t good = client_->push("fine", {}, on_queue(q));
    bool done = wait_until([&] { return sql_int("SELECT count(*) FROM queue_jobs WHERE id = " + std::to_string(good)) == 0; },
                           30s);
    w.stop();
    EXPECT_TRUE(done) << describe(w.counters());
    EXPECT_EQ(w.counters().retried, 1) << describe(w.counters());
}

// An outcome the server refuses (a negative retry delay) must not end the
// process: the result is dropped (counted lost), the job stays held until
// its lease ends, and the worker goes on with other jobs.
TEST_F(WorkerTest, OutcomeTheServerRefusesDoesNotStopTheWorker) {
    const std::string q = make_queue("refused");
    const std::int64_t odd = client_->push("odd", {}, on_queue(q, 3));

    Worker w(options(q, 1));
    w.on("odd", [&](const Job&, JobContext&) { return Outcome::retry_in(-5ms, "negative"); });
    w.on("fine", [&](const Job&) {});
    w.start();
    bool dropped = wait_until([&] { return w.counters().lost >= 1; }, 30s);
    ASSERT_TRUE(dropped) << describe(w.counters());
    const std::int64_t good = client_->push("fine", {}, on_queue(q));
    bool done = wait_until([&] { return sql_int("SELECT count(*) FROM queue_jobs WHERE id = " + std::to_string(good)) == 0; },
                           30s);
    w.stop();
    EXPECT_TRUE(done) << describe(w.counters());
    auto row = sql_row("SELECT attempts, reserved_until > clock_timestamp() FROM queue_jobs WHERE id = " +
                       std::to_string(odd));
    ASSERT_EQ(row.size(), 2u);
    EXPECT_EQ(row[0], "1");
    EXPECT_EQ(row[1], "t") << "still held by its (unrecorded) claim";
    EXPECT_EQ(w.counters().completed, 1);
    EXPECT_EQ(w.counters().retried, 0);
}

// ---------------------------------------------------------------- 3. outcomes

// Outcome::fail moves the job to the failed table at once, whatever
// attempts it has left, with the handler's error.
TEST_F(WorkerTest, OutcomeFailFailsAtOnce) {
    const std::string q = make_queue("fail");
    const std::int64_t id = client_->push("doomed", {{"x", 1}}, on_queue(q, 5));

    std::atomic<int> runs{0};
    Worker w(options(q));
    w.on("doomed", [&](const Job&, JobContext&) {
        ++runs;
        return Outcome::fail("permanently broken: bad payload");
    });
    w.start();
    bool failed = wait_until([&] { return is_failed(id); }, 30s);
    w.stop();
    ASSERT_TRUE(failed) << describe(w.counters());

    EXPECT_EQ(runs.load(), 1);
    EXPECT_EQ(jobs_in(q), 0);
    auto row = failed_row(id);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->error, "permanently broken: bad payload");
    EXPECT_EQ(row->attempts, 1);
    EXPECT_EQ(row->max_attempts, 5);
    EXPECT_EQ(row->payload, nlohmann::json({{"x", 1}}));
    auto c = w.counters();
    EXPECT_EQ(c.failed, 1) << describe(c);
    EXPECT_EQ(c.retried, 0);
    EXPECT_EQ(c.completed, 0);
}

// Outcome::retry_in(delay) releases the job to come back after that delay,
// with the reason as last_error.
TEST_F(WorkerTest, OutcomeRetryInReleasesWithThatDelay) {
    const std::string q = make_queue("retryin");
    const std::int64_t id = client_->push("later", {}, on_queue(q, 3));

    std::atomic<int> runs{0};
    Worker w(options(q));
    w.on("later", [&](const Job&, JobContext&) {
        ++runs;
        return Outcome::retry_in(std::chrono::minutes(30), "not yet");
    });
    w.start();
    bool released = wait_until([&] { return w.counters().retried >= 1; }, 30s);
    w.stop();
    ASSERT_TRUE(released) << describe(w.counters());
    EXPECT_EQ(runs.load(), 1);

    auto row = sql_row(
        "SELECT attempts, reserved_until IS NULL, last_error,"
        " available_at > clock_timestamp() + interval '29 minutes',"
        " available_at <= clock_timestamp() + interval '30 minutes'"
        " FROM queue_jobs WHERE id = " + std::to_string(id));
    ASSERT_EQ(row.size(), 5u) << "the job left the queue";
    EXPECT_EQ(row[0], "1");
    EXPECT_EQ(row[1], "t");
    EXPECT_EQ(row[2], "not yet");
    EXPECT_EQ(row[3], "t") << "available_at is not about 30 minutes ahead";
    EXPECT_EQ(row[4], "t") << "available_at is more than 30 minutes ahead";
    auto s = stats_of(*client_, q);
    EXPECT_EQ(s.delayed, 1);
    EXPECT_EQ(s.pending, 0);
    EXPECT_EQ(w.counters().failed, 0);
    EXPECT_EQ(w.counters().completed, 0);
}

// ---------------------------------------------------------------- 4. unknown names

// A job whose name has no handler is failed at once, the error naming it;
// the worker goes on with the jobs it knows.
TEST_F(WorkerTest, UnknownJobNameIsFailedNamingTheName) {
    const std::string q = make_queue("unknown");
    const std::int64_t stranger = client_->push("mystery_job_name", {}, on_queue(q, 3));
    const std::int64_t known = client_->push("known", {}, on_queue(q, 3));

    Seen seen;
    Worker w(options(q));
    w.on("known", [&](const Job& job) { seen.add(job.id); });
    w.start();
    bool settled = wait_until([&] { return is_failed(stranger) && seen.of(known) == 1; }, 30s);
    w.stop();
    ASSERT_TRUE(settled) << describe(w.counters());

    auto row = failed_row(stranger);
    ASSERT_TRUE(row);
    EXPECT_NE(row->error.find("mystery_job_name"), std::string::npos) << row->error;
    EXPECT_EQ(row->attempts, 1) << "an unknown name should not be retried";
    EXPECT_EQ(seen.of(stranger), 0);
    EXPECT_EQ(jobs_in(q), 0);
    auto c = w.counters();
    EXPECT_EQ(c.failed, 1) << describe(c);
    EXPECT_EQ(c.completed, 1) << describe(c);
}

// on_any() takes every job name without a handler of its own; named
// handlers still win.
TEST_F(WorkerTest, OnAnyHandlesNamesWithoutTheirOwnHandler) {
    const std::string q = make_queue("onany");
    const std::int64_t named = client_->push("named", {}, on_queue(q));
    const std::int64_t other = client_->push("whatever_else", {}, on_queue(q));

    std::mutex m;
    std::map<std::int64_t, std::string> by;
    Worker w(options(q));
    w.on("named", [&](const Job& job) {
        std::lock_guard<std::mutex> lock(m);
        by[job.id] = "named";
    });
    w.on_any([&](const Job& job, JobContext&) {
        std::lock_guard<std::mutex> lock(m);
        by[job.id] = "any:" + job.name;
        return Outcome::done();
    });
    w.start();
    bool done = wait_until([&] { return jobs_in(q) == 0; }, 30s);
    w.stop();
    ASSERT_TRUE(done) << describe(w.counters());
    std::lock_guard<std::mutex> lock(m);
    EXPECT_EQ(by[named], "named");
    EXPECT_EQ(by[other], "any:whatever_else");
    EXPECT_EQ(w.counters().completed, 2);
    EXPECT_EQ(w.counters().failed, 0);
    EXPECT_EQ(failed_rows_of(q), 0);
}

// ---------------------------------------------------------------- 5. heartbeat

// A job running longer than its lease is kept by the heartbeat: another
// worker on the same queue never gets it, it runs once, on its first claim.
TEST_F(WorkerTest, HeartbeatKeepsALongJobFromRunningTwice) {
    const std::string q = make_queue("heartbeat");

    std::mutex m;
    std::vector<int> runners;        // which worker ran it, per run
    std::vector<int> attempts_seen;  // Job.attempts, per run
    std::atomic<bool> lease_lost{false};
    std::atomic<bool> running{false};
    std::atomic<int> finished{0};

    auto handler_for = [&](int worker) {
        return [&, worker](const Job& job, JobContext& ctx) -> Outcome {
            {
                std::lock_guard<std::mutex> lock(m);
                runners.push_back(worker);
                attempts_seen.push_back(job.attempts);
            }
            running = true;
            auto until = std::chrono::steady_clock::now() + 5s;
            while (std::chrono::steady_clock::now() < until) {
                if (ctx.lease_lost()) lease_lost = true;
                if (ctx.should_stop()) break;
                std::this_thread::sleep_for(50ms);
            }
            ++finished;
            return Outcome::done();
        };
    };

    WorkerOptions oa = options(q, 2), ob = options(q, 2);
    oa.lease = ob.lease = 2s;
    oa.poll_interval = ob.poll_interval = 100ms;
    oa.name += ":a";
    ob.name += ":b";
    Worker a(oa), b(ob);
    a.on("long", handler_for(0));
    b.on("long", handler_for(1));
    a.start();
    b.start();
    const std::int64_t id = client_->push("long", {}, on_queue(q, 3));

    ASSERT_TRUE(wait_until([&] { return running.load(); }, 30s));
    // Past one and a half leases: still held by a live lease, first attempt.
    std::this_thread::sleep_for(3s);
    auto mid = sql_row("SELECT attempts, reserved_until > clock_timestamp() FROM queue_jobs WHERE id = " +
                       std::to_string(id));
    ASSERT_EQ(mid.size(), 2u) << "the job left the queue while running";
    EXPECT_EQ(mid[0], "1");
    EXPECT_EQ(mid[1], "t") << "the lease was not extended";

    bool gone = wait_until([&] { return finished.load() >= 1 && jobs_in(q) == 0; }, 30s);
    // Give a second (wrong) run the chance to show up before stopping.
    std::this_thread::sleep_for(300ms);
    a.stop();
    b.stop();
    ASSERT_TRUE(gone);

    std::lock_guard<std::mutex> lock(m);
    ASSERT_EQ(runners.size(), 1u) << "the job ran more than once";
    EXPECT_EQ(attempts_seen[0], 1);
    EXPECT_FALSE(lease_lost.load());
    const auto first = runners[0] == 0 ? a.counters() : b.counters();
    const auto other = runners[0] == 0 ? b.counters() : a.counters();
    EXPECT_EQ(first.completed, 1) << describe(first);
    EXPECT_EQ(first.claimed, 1) << describe(first);
    EXPECT_EQ(first.lost, 0) << describe(first);
    EXPECT_EQ(other.claimed, 0) << describe(other);
    EXPECT_EQ(other.completed, 0) << describe(other);
}

// ---------------------------------------------------------------- 6. shutdown

// stop() in the middle of a run: jobs are either completed (once) or back in
// the queue claimable at once; a second worker finishes the rest, and no
// job runs twice (the grace period outlasts every handler).
TEST_F(WorkerTest, StopMidRunLosesNothing) {
    const std::string q = make_queue("shutdown");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 200; ++i) jobs.push_back(NewJob{"nap", {{"i", i}}, on_queue(q)});
    auto ids = client_->push_many(jobs);
    ASSERT_EQ(ids.size(), 200u);

    Seen seen;
    auto nap = [&](const Job& job) {
        std::this_thread::sleep_for(20ms);
        seen.add(job.id);
    };

    WorkerOptions o1 = options(q, 4);
    o1.grace_period = 10s;
    Worker w1(o1);
    w1.on("nap", nap);
    w1.start();
    ASSERT_TRUE(wait_until([&] { return seen.distinct() >= 40; }, 60s));
    w1.stop();
    const auto c1 = w1.counters();
    const auto done1 = seen.snapshot();

    EXPECT_LT(done1.size(), 200u) << "the run was over before stop(): nothing was tested";
    for (const auto& [id, n] : done1) EXPECT_EQ(n, 1) << "job " << id;
    EXPECT_EQ(c1.completed, static_cast<std::int64_t>(done1.size())) << describe(c1);
    EXPECT_EQ(c1.lost, 0) << describe(c1);

    // What is left is all claimable now: nothing held, nothing delayed.
    const auto left = static_cast<std::int64_t>(200 - done1.size());
    auto s = stats_of(*client_, q);
    EXPECT_EQ(s.reserved, 0);
    EXPECT_EQ(s.delayed, 0);
    EXPECT_EQ(s.pending, left);
    EXPECT_EQ(s.total, left);
    EXPECT_EQ(client_->pending(q), left);
    // Claimed but never started: released with the claim counted.
    const std::int64_t released = c1.claimed - c1.completed;
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q) + " AND attempts = 1"), released);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q) +
                      " AND attempts = 1 AND last_error = 'worker stopped before running it'"),
              released);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q) + " AND attempts = 0"),
              200 - c1.claimed);
    std::cout << "[          ] first worker: " << describe(c1) << ", left " << left << "\n";

    Worker w2(options(q, 4));
    w2.on("nap", nap);
    w2.start();
    bool all = wait_until([&] { return seen.distinct() >= 200; }, 60s);
    w2.stop();
    ASSERT_TRUE(all) << describe(w2.counters());
    for (auto id : ids) EXPECT_EQ(seen.of(id), 1) << "job " << id;
    EXPECT_EQ(seen.total(), 200);
    EXPECT_EQ(c1.completed + w2.counters().completed, 200);
    EXPECT_EQ(stats_of(*client_, q).total, 0);
    EXPECT_EQ(failed_rows_of(q), 0);
}

// A handler still running when the grace period ends: its job is released
// at once for another worker, the handler is told to stop, and its late
// result is not recorded. Another worker completes the job.
TEST_F(WorkerTest, GracePeriodOverReleasesTheRunningJob) {
    const std::string q = make_queue("grace");
    const std::int64_t id = client_->push("slow", {}, on_queue(q, 3));

    std::atomic<bool> started{false}, saw_stop{false};
    WorkerOptions oa = options(q, 1);
    oa.grace_period = 300ms;
    Worker a(oa);
    a.on("slow", [&](const Job&, JobContext& ctx) {
        started = true;
        auto until = std::chrono::steady_clock::now() + 30s;
        while (!ctx.should_stop() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        saw_stop = ctx.should_stop();
        // Whatever it returns now (it gave up half-way), the worker must not
        // record it: the job was handed back.
        return Outcome::done();
    });
    a.start();
    ASSERT_TRUE(wait_until([&] { return started.load(); }, 30s));
    a.stop();
    auto ca = a.counters();
    EXPECT_TRUE(saw_stop.load()) << "the handler was not told to stop";
    EXPECT_EQ(ca.completed, 0) << "the late result was recorded: " << describe(ca);
    EXPECT_EQ(ca.lost, 1) << describe(ca);

    auto row = sql_row("SELECT attempts, reserved_until IS NULL, last_error FROM queue_jobs WHERE id = " +
                       std::to_string(id));
    ASSERT_EQ(row.size(), 3u) << "the job left the queue: the late result was recorded";
    EXPECT_EQ(row[0], "1");
    EXPECT_EQ(row[1], "t") << "not released";
    EXPECT_EQ(row[2], "worker stopped while running it");
    EXPECT_EQ(client_->pending(q), 1);

    std::atomic<int> second_attempt{0};
    Worker b(options(q, 1));
    b.on("slow", [&](const Job& job, JobContext&) {
        second_attempt = job.attempts;
        return Outcome::done();
    });
    b.start();
    bool done = wait_until([&] { return b.counters().completed >= 1; }, 30s);
    b.stop();
    ASSERT_TRUE(done) << describe(b.counters());
    EXPECT_EQ(second_attempt.load(), 2);
    EXPECT_EQ(jobs_in(q), 0);
    EXPECT_EQ(failed_rows_of(q), 0);
}

// ---------------------------------------------------------------- 7. restart

// The server restarts (fast) in the middle of a run: the worker reconnects
// by itself and every job ends completed; only jobs in flight at the
// restart may run twice.
TEST_F(WorkerTest, ServerRestartMidRunLosesNothing) {
    // scripts/test.sh always sets it: without it this test cannot do its work
    const char* command = std::getenv("JQ_RESTART_COMMAND");
    ASSERT_TRUE(command != nullptr && *command != '\0') << "JQ_RESTART_COMMAND is not set";

    const std::string q = make_queue("restart");
    std::vector<std::int64_t> ids;
    for (int batch = 0; batch < 2; ++batch) {
        std::vector<NewJob> jobs;
        for (int i = 0; i < 1000; ++i) jobs.push_back(NewJob{"tick", {{"i", batch * 1000 + i}}, on_queue(q)});
        auto got = client_->push_many(jobs);
        ids.insert(ids.end(), got.begin(), got.end());
    }
    ASSERT_EQ(ids.size(), 2000u);

    Seen seen;
    WorkerOptions o = options(q, 4);
    // A claim whose answer the restart cut comes back when its lease ends.
    o.lease = 3s;
    o.max_reconnect_delay = 300ms;
    Worker w(o);
    w.on("tick", [&](const Job& job) {
        std::this_thread::sleep_for(1ms);
        seen.add(job.id);
    });
    w.start();
    ASSERT_TRUE(wait_until([&] { return seen.distinct() >= 300; }, 60s));
    const auto before = seen.distinct();
    ASSERT_TRUE(restart_server("fast")) << "the restart command failed";
    const auto after_restart = seen.distinct();
    client_.reset();  // its connection died with the server

    bool all = wait_until(
        [&] {
            try {
                return seen.distinct() >= 2000 && jobs_in(q) == 0;
            } catch (const std::exception&) {
                return false;  // the server is still coming up
            }
        },
        120s, 100ms);
    w.stop();
    const auto c = w.counters();
    const std::int64_t duplicates = seen.total() - static_cast<std::int64_t>(seen.distinct());
    std::cout << "[          ] restart: done before " << before << ", when the restart returned " << after_restart
              << "; runs " << seen.total() << ", distinct " << seen.distinct() << ", duplicates " << duplicates
              << "; " << describe(c) << "\n";
    ASSERT_TRUE(all) << "distinct " << seen.distinct() << ", left in queue " << jobs_in(q);

    EXPECT_LT(before, 2000u) << "all done before the restart: nothing was tested";
    EXPECT_GT(c.reconnects, 0) << describe(c);
    for (auto id : ids) EXPECT_GE(seen.of(id), 1) << "job " << id << " never ran";
    EXPECT_EQ(seen.distinct(), 2000u);
    EXPECT_LE(duplicates, o.threads + o.threads /* max_batch 0 = threads */) << describe(c);
    EXPECT_EQ(jobs_in(q), 0);
    EXPECT_EQ(failed_rows_of(q), 0);
    EXPECT_EQ(c.failed, 0);
}

// ---------------------------------------------------------------- 8. signals

// run_until_signal() returns on SIGTERM after a graceful stop: the job
// running at the signal finishes and is completed. SIGTERM is blocked in
// this thread first, so every thread of the test inherits the block and the
// signal can only be taken by run_until_signal()'s sigtimedwait.
TEST_F(WorkerTest, RunUntilSignalStopsGracefullyOnSigterm) {
    const std::string q = make_queue("signal");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 20; ++i) jobs.push_back(NewJob{"quick", {{"i", i}}, on_queue(q)});
    (void)client_->push_many(jobs);

    sigset_t term, previous;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &previous), 0);

    Seen seen;
    std::atomic<bool> slow_started{false}, slow_finished{false}, returned{false};
    Worker w(options(q, 2));
    w.on("quick", [&](const Job& job) { seen.add(job.id); });
    w.on("slow", [&](const Job& job) {
        slow_started = true;
        std::this_thread::sleep_for(500ms);
        seen.add(job.id);
        slow_finished = true;
    });
    std::thread runner([&] {
        w.run_until_signal();
        returned = true;
    });

    bool quick_done = wait_until([&] { return seen.distinct() >= 20; }, 30s);
    const std::int64_t slow = client_->push("slow", {}, on_queue(q));
    bool slow_running = wait_until([&] { return slow_started.load(); }, 30s);
    kill(getpid(), SIGTERM);
    bool stopped = wait_until([&] { return returned.load(); }, 30s);
    if (!stopped) w.request_stop();  // do not hang the suite
    runner.join();

    // Take a SIGTERM nobody took before unblocking it, or it would end the test.
    timespec zero{0, 0};
    while (sigtimedwait(&term, nullptr, &zero) == SIGTERM) ADD_FAILURE() << "SIGTERM was left pending";
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);

    ASSERT_TRUE(quick_done);
    ASSERT_TRUE(slow_running);
    EXPECT_TRUE(stopped) << "run_until_signal() did not return on SIGTERM";
    EXPECT_TRUE(slow_finished.load());
    EXPECT_EQ(seen.of(slow), 1);
    auto c = w.counters();
    EXPECT_EQ(c.completed, 21) << describe(c);
    EXPECT_EQ(c.lost, 0) << describe(c);
    EXPECT_EQ(jobs_in(q), 0);
}

// request_stop() from another thread ends run_until_signal() the same way.
TEST_F(WorkerTest, RequestStopEndsRunUntilSignal) {
    const std::string q = make_queue("reqstop");
    const std::int64_t id = client_->push("quick", {}, on_queue(q));

    Seen seen;
    std::atomic<bool> returned{false};
    Worker w(options(q, 1));
    w.on("quick", [&](const Job& job) { seen.add(job.id); });
    std::thread runner([&] {
        w.run_until_signal();
        returned = true;
    });
    bool done = wait_until([&] { return seen.of(id) == 1; }, 30s);
    w.request_stop();
    bool stopped = wait_until([&] { return returned.load(); }, 30s);
    runner.join();
    EXPECT_TRUE(done);
    EXPECT_TRUE(stopped);
    EXPECT_EQ(w.counters().completed, 1);
    EXPECT_EQ(jobs_in(q), 0);
}

// ---------------------------------------------------------------- 9. wake-ups

// Without NOTIFY the worker still finds jobs pushed while it is idle, by
// polling; it never LISTENs.
TEST_F(WorkerTest, PollingWithoutNotifyStillProcessesJobs) {
    const std::string q = make_queue("poll");
    const std::string app = "wt_poll_" + std::to_string(getpid());
    Seen seen;
    WorkerOptions o = options(q, 2);
    o.use_notify = false;
    o.poll_interval = 100ms;
    o.connection.conninfo = "application_name=" + app;
    Worker w(o);
    w.on("p", [&](const Job& job) { seen.add(job.id); });
    w.start();
    // idle first: its sessions are up and it has claimed nothing
    ASSERT_TRUE(wait_until(
        [&] { return sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + lit(app)) >= 3; },
        30s));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(w.counters().claimed, 0);

    std::vector<NewJob> jobs;
    for (int i = 0; i < 5; ++i) jobs.push_back(NewJob{"p", {{"i", i}}, on_queue(q)});
    auto ids = client_->push_many(jobs);
    bool all = wait_until([&] { return seen.distinct() >= 5; }, 30s);
    EXPECT_EQ(sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + lit(app) +
                      " AND query ILIKE 'LISTEN%'"),
              0)
        << "a worker with use_notify = false LISTENs";
    w.stop();
    ASSERT_TRUE(all) << describe(w.counters());
    for (auto id : ids) EXPECT_EQ(seen.of(id), 1);
    EXPECT_EQ(jobs_in(q), 0);
}

// With NOTIFY, an idle worker (listening, with a poll interval far longer
// than the wait below) picks up a job pushed after it went idle.
TEST_F(WorkerTest, NotifyWakesAnIdleWorker) {
    const std::string q = make_queue("notify");
    const std::string app = "wt_notify_" + std::to_string(getpid());
    Seen seen;
    WorkerOptions o = options(q, 2);
    o.wait_in_server = false;  // the NOTIFY path (older extensions, or by choice)
    o.use_notify = true;
    o.poll_interval = 60s;
    o.connection.conninfo = "application_name=" + app;
    Worker w(o);
    w.on("n", [&](const Job& job) { seen.add(job.id); });
    w.start();
    // Idle: the dispatcher found nothing and LISTENs.
    ASSERT_TRUE(wait_until(
        [&] {
            return sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + lit(app) +
                           " AND query = 'LISTEN jobqueue' AND state = 'idle'") == 1;
        },
        30s));
    EXPECT_EQ(w.counters().claimed, 0);

    const std::int64_t id = client_->push("n", {}, on_queue(q));
    // Far below the 60 s poll interval: only the wake-up can explain it.
    bool done = wait_until([&] { return seen.of(id) == 1; }, 20s);
    // The dispatcher sleeps in its NOTIFY wait for up to poll_interval and
    // stop() does not cut that wait short; a wake-up makes it see the stop.
    w.request_stop();
    sql_value("NOTIFY jobqueue, " + lit(q));
    w.stop();
    ASSERT_TRUE(done) << "the job pushed to an idle worker was not picked up; " << describe(w.counters());
    EXPECT_EQ(w.counters().completed, 1);
    EXPECT_EQ(jobs_in(q), 0);
}

// By default an idle worker waits inside queue_reserve (extension 1.2):
// no LISTEN, and a job pushed to the idle worker is picked up long before
// the 60 s poll interval.
TEST_F(WorkerTest, ServerWaitPicksUpAJobPushedToAnIdleWorker) {
    const std::string q = make_queue("srvwait");
    const std::string app = "wt_srvwait_" + std::to_string(getpid());
    Seen seen;
    WorkerOptions o = options(q, 2);
    o.poll_interval = 60s;
    o.connection.conninfo = "application_name=" + app;
    Worker w(o);
    w.on("n", [&](const Job& job) { seen.add(job.id); });
    w.start();
    // Idle: the dispatcher is inside queue_reserve, waiting there.
    ASSERT_TRUE(wait_until(
        [&] {
            return sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + lit(app) +
                           " AND query LIKE '%queue_reserve%' AND state = 'active'") == 1;
        },
        30s));
    EXPECT_EQ(sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + lit(app) +
                      " AND query = 'LISTEN jobqueue'"),
              0);
    const std::int64_t id = client_->push("n", {}, on_queue(q));
    bool done = wait_until([&] { return seen.of(id) == 1; }, 20s);
    w.stop();
    ASSERT_TRUE(done) << "the job pushed to an idle worker was not picked up; " << describe(w.counters());
    EXPECT_EQ(w.counters().completed, 1);
    EXPECT_EQ(jobs_in(q), 0);
}

// ---------------------------------------------------------------- batched completions

// 10,000 jobs over eight threads, outcomes of all three kinds (two retry
// delays and two failure texts, which cannot share a call): every job runs
// once, every outcome is recorded once, and the counters say exactly how.
TEST_F(WorkerTest, BatchedOutcomesOfTenThousandJobsAreEachRecordedOnce) {
    const std::string q = make_queue("batched");
    std::vector<std::int64_t> ids;
    for (int batch = 0; batch < 10; ++batch) {
        std::vector<NewJob> jobs;
        for (int i = 0; i < 1000; ++i) jobs.push_back(NewJob{"mixed", {{"i", batch * 1000 + i}}, on_queue(q)});
        auto got = client_->push_many(jobs);
        ids.insert(ids.end(), got.begin(), got.end());
    }
    // by the job's number: most are done, every 50th is retried in 1 or 2 hours,
    // every 97th (not a 50th) fails with one of two texts
    auto outcome_of = [](int i) {
        if (i % 50 == 0) return Outcome::retry_in(i % 100 == 0 ? 1h : 2h, "later");
        if (i % 97 == 0) return Outcome::fail(i % 2 == 0 ? "even" : "odd");
        return Outcome::done();
    };
    std::int64_t want_done = 0, want_retried = 0, want_failed = 0;
    for (int i = 0; i < 10000; ++i) {
        switch (outcome_of(i).kind()) {
            case Outcome::Kind::done: ++want_done; break;
            case Outcome::Kind::retry: ++want_retried; break;
            case Outcome::Kind::fail: ++want_failed; break;
        }
    }

    Seen seen;
    Worker w(options(q, 8));
    w.on("mixed", [&](const Job& job, JobContext&) {
        seen.add(job.id);
        return outcome_of(job.payload["i"].get<int>());
    });
    w.start();
    const bool all = wait_until([&] {
        auto c = w.counters();
        return c.completed + c.retried + c.failed + c.lost >= 10000;
    }, 150s, 50ms);
    w.stop();
    const auto c = w.counters();
    ASSERT_TRUE(all) << describe(c);

    for (auto id : ids) EXPECT_EQ(seen.of(id), 1) << "job " << id;
    EXPECT_EQ(c.claimed, 10000) << describe(c);
    EXPECT_EQ(c.completed, want_done) << describe(c);
    EXPECT_EQ(c.retried, want_retried) << describe(c);
    EXPECT_EQ(c.failed, want_failed) << describe(c);
    EXPECT_EQ(c.lost, 0) << describe(c);
    // what the server holds agrees: the retried jobs wait with their delay and
    // text, the failed ones carry their own text, the rest are gone
    const std::string in_q = " WHERE queue = " + lit(q);
    EXPECT_EQ(jobs_in(q), want_retried);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs" + in_q +
                      " AND last_error = 'later' AND attempts = 1 AND available_at > now() + interval '50 minutes'"),
              want_retried);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs" + in_q + " AND available_at > now() + interval '110 minutes'"),
              want_retried / 2);
    EXPECT_EQ(failed_rows_of(q), want_failed);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_failed_jobs" + in_q +
                      " AND error = CASE WHEN (payload->>'i')::int % 2 = 0 THEN 'even' ELSE 'odd' END"),
              want_failed);
}

// Options that buffer every outcome until stop(): nothing is flushed before.
static void buffer_until_stop(WorkerOptions& o) {
    o.completion_batch_size = 10000;
    o.completion_flush_interval = 1h;
}

// A finished job whose lease runs out while its outcome waits in the buffer,
// and which another session claims before the flush: the flush does not
// complete it (the other claim holds it) and it alone is counted lost.
TEST_F(WorkerTest, AClaimLostBeforeTheFlushIsCountedLostForThatJobAlone) {
    const std::string q = make_queue("lostflush");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 20; ++i) jobs.push_back(NewJob{"n", {}, on_queue(q)});
    auto ids = client_->push_many(jobs);

    Seen seen;
    WorkerOptions o = options(q, 2);
    o.lease = 1s;  // the server's minimum
    buffer_until_stop(o);
    Worker w(o);
    w.on("n", [&](const Job& job) { seen.add(job.id); });
    w.start();
    ASSERT_TRUE(wait_until([&] { return seen.distinct() >= 20; }, 60s)) << describe(w.counters());
    EXPECT_EQ(w.counters().completed, 0) << "an outcome was recorded before stop()";
    // claim nothing more (the worker would take its own expired jobs back);
    // the buffered outcomes wait for stop()
    w.request_stop();
    // the buffered jobs' leases are not extended: after 1 s one can be taken
    std::optional<Job> taken;
    ASSERT_TRUE(wait_until([&] { return (taken = client_->reserve_one({q}, 60s, "thief")).has_value(); }, 10s));
    w.stop();
    const auto c = w.counters();

    EXPECT_EQ(c.completed, 19) << describe(c);
    EXPECT_EQ(c.lost, 1) << describe(c);
    EXPECT_EQ(c.retried + c.failed, 0) << describe(c);
    EXPECT_EQ(jobs_in(q), 1);
    EXPECT_EQ(sql_value("SELECT reserved_by FROM queue_jobs WHERE queue = " + lit(q)), "thief");
    EXPECT_TRUE(client_->complete(*taken)) << "the other session's claim was disturbed";
}

// stop() with every outcome still buffered: all are recorded, once, before
// it returns; nothing is released as if it were still running.
TEST_F(WorkerTest, StopRecordsBufferedOutcomesOnce) {
    const std::string q = make_queue("stopflush");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 300; ++i) jobs.push_back(NewJob{"n", {{"i", i}}, on_queue(q)});
    auto ids = client_->push_many(jobs);

    Seen seen;
    WorkerOptions o = options(q, 4);
    buffer_until_stop(o);
    Worker w(o);
    w.on("n", [&](const Job& job, JobContext&) {
        seen.add(job.id);
        return job.payload["i"].get<int>() % 3 == 0 ? Outcome::fail("third") : Outcome::done();
    });
    w.start();
    ASSERT_TRUE(wait_until([&] { return seen.distinct() >= 300; }, 60s)) << describe(w.counters());
    EXPECT_EQ(w.counters().completed + w.counters().failed, 0) << "an outcome was recorded before stop()";
    EXPECT_EQ(jobs_in(q), 300);
    w.stop();
    const auto c = w.counters();
    EXPECT_EQ(c.completed, 200) << describe(c);
    EXPECT_EQ(c.failed, 100) << describe(c);
    EXPECT_EQ(c.lost + c.retried, 0) << describe(c);
    EXPECT_EQ(jobs_in(q), 0);
    EXPECT_EQ(failed_rows_of(q), 100);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_failed_jobs WHERE queue = " + lit(q) +
                      " AND error = 'third' AND attempts = 1"),
              100);
    for (auto id : ids) EXPECT_EQ(seen.of(id), 1) << "job " << id;
}

// The answer to a batch's COMMIT is lost (the proxy cuts the connection
// right after passing the COMMIT on, so the server commits): the completer
// asks the server whether that transaction committed, and counts its jobs
// completed, not lost; nothing runs twice.
TEST_F(WorkerTest, ABatchWhoseCommitAnswerWasLostIsCountedOnce) {
    const std::string q = make_queue("indoubt");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 300; ++i) jobs.push_back(NewJob{"n", {}, on_queue(q)});
    auto ids = client_->push_many(jobs);

    jobqueue::testing::CommitCutter cutter;
    cutter.arm(1);
    Seen seen;
    WorkerOptions o = options(q, 4);
    o.connection.conninfo = cutter.conninfo();
    o.max_reconnect_delay = 200ms;
    Worker w(o);
    w.on("n", [&](const Job& job) { seen.add(job.id); });
    w.start();
    const bool all = wait_until([&] { return w.counters().completed + w.counters().lost >= 300; }, 60s);
    w.stop();
    const auto c = w.counters();
    ASSERT_TRUE(all) << describe(c);
    EXPECT_EQ(cutter.cuts(), 1);
    EXPECT_GE(c.reconnects, 1) << describe(c);
    EXPECT_EQ(c.completed, 300) << describe(c);
    EXPECT_EQ(c.lost, 0) << describe(c);
    EXPECT_EQ(jobs_in(q), 0);
    for (auto id : ids) EXPECT_EQ(seen.of(id), 1) << "job " << id;
}

// A worker process killed with SIGKILL mid-drain, with outcomes buffered:
// what it recorded stays recorded, what it had not come back after the
// lease and runs again on another worker, which records each of them once.
TEST_F(WorkerTest, AKilledWorkerProcessOnlyCausesReruns) {
    const std::string q = make_queue("killed");
    std::vector<NewJob> jobs;
    for (int i = 0; i < 2000; ++i) jobs.push_back(NewJob{"n", {}, on_queue(q)});
    auto ids = client_->push_many(jobs);

    int ran[2];
    ASSERT_EQ(pipe(ran), 0);
    WorkerOptions o = options(q, 4);
    o.lease = 1s;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // the worker process: says "ran" for each job through the pipe
        close(ran[0]);
        Worker w(o);
        w.on("n", [&](const Job&) {
            std::this_thread::sleep_for(1ms);
            if (write(ran[1], "r", 1) != 1) _exit(3);
        });
        w.start();
        for (;;) pause();
    }
    close(ran[1]);
    int ran_in_child = 0;
    char buffer[64];
    while (ran_in_child < 500) {
        ssize_t n = read(ran[0], buffer, sizeof buffer);
        if (n <= 0) break;
        ran_in_child += static_cast<int>(n);
    }
    const bool was_running = ran_in_child >= 500;
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    // what it ran up to the kill: the rest of the pipe, to its end
    for (ssize_t n; (n = read(ran[0], buffer, sizeof buffer)) > 0;) ran_in_child += static_cast<int>(n);
    close(ran[0]);
    ASSERT_TRUE(was_running) << "the worker process ended before it was killed";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    const std::int64_t left = jobs_in(q);
    EXPECT_GT(left, 0);
    EXPECT_LE(2000 - left, ran_in_child) << "more jobs gone than ran";

    // the left jobs: some ran in the killed process and were not recorded
    // (their lease runs out), the rest were never started
    Seen seen;
    Worker w(options(q, 4));
    w.on("n", [&](const Job& job) { seen.add(job.id); });
    w.start();
    const bool all = wait_until([&] { return jobs_in(q) == 0; }, 60s, 50ms);
    w.stop();
    const auto c = w.counters();
    ASSERT_TRUE(all) << describe(c);
    EXPECT_EQ(c.completed, left) << describe(c);
    EXPECT_EQ(c.lost, 0) << describe(c);
    EXPECT_EQ(static_cast<std::int64_t>(seen.distinct()), left);
    EXPECT_EQ(seen.total(), left);
    EXPECT_EQ(failed_rows_of(q), 0);
}

}  // namespace
