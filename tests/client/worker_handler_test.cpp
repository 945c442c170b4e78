// worker_handler_test.cpp: live tests of jobqueue::Worker:
// its options, and what it does with what a handler
// returns or throws, and with job names without a handler.
// The fixture and the helpers are in worker_fixture.hpp.
#include "worker_fixture.hpp"

namespace {

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

}  // namespace
