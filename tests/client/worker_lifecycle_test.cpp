// worker_lifecycle_test.cpp: live tests of jobqueue::Worker:
// stopping (grace period included), a server restart
// mid-run, signals.
// The fixture and the helpers are in worker_fixture.hpp.
#include "worker_fixture.hpp"

namespace {

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

}  // namespace
