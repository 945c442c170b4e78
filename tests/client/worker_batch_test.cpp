// worker_batch_test.cpp: live tests of jobqueue::Worker:
// outcomes recorded in batches: each once, lost claims,
// a lost COMMIT answer, a killed worker process.
// The fixture and the helpers are in worker_fixture.hpp.
#include "worker_fixture.hpp"

namespace {

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
