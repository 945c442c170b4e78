// worker_delivery_test.cpp: live tests of jobqueue::Worker:
// delivery: many jobs each run exactly once, the heartbeat
// that keeps a long job, wake-ups of an idle worker.
// The fixture and the helpers are in worker_fixture.hpp.
#include "worker_fixture.hpp"

namespace {

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

}  // namespace
