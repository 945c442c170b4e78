// standby_test.cpp: the client and the worker connected to a hot standby
// (tests/failover/run.sh makes one by streaming replication).
//
//   JQ_STANDBY_DSN    libpq connection string to the standby's database, a
//                     superuser; its primary has pushed jobs to the queue
//                     JQ_STANDBY_QUEUE and holds one of them (a claim with a
//                     long lease), and the standby has replayed that
//   JQ_STANDBY_QUEUE  that queue
//
// Without JQ_STANDBY_DSN every test is skipped (the client suite builds and
// runs this program without a standby). Checked: reads work on the standby;
// every writing call is refused at once with a ConnectionError carrying
// SQLSTATE 25006, which leaves the client unhealthy so that reconnect()
// lets libpq pick a host again; a worker that finds itself on a standby
// logs that once, however often its threads retry, and never fails a job.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jobqueue/jobqueue.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Claim;
using jobqueue::Client;

namespace {

std::string env(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

class StandbyTest : public ::testing::Test {
protected:
    void SetUp() override {
        dsn_ = env("JQ_STANDBY_DSN");
        queue_ = env("JQ_STANDBY_QUEUE");
        if (dsn_.empty() || queue_.empty()) GTEST_SKIP() << "no standby (JQ_STANDBY_DSN, JQ_STANDBY_QUEUE)";
        admin_ = PQconnectdb(dsn_.c_str());
        ASSERT_EQ(PQstatus(admin_), CONNECTION_OK) << PQerrorMessage(admin_);
        ASSERT_EQ(jobqueue::testing::sql_value(admin_, "SELECT pg_is_in_recovery()"), "t") << "not a standby";
        const std::string held = jobqueue::testing::sql_value(
            admin_, "SELECT id || ' ' || token FROM queue_jobs WHERE token IS NOT NULL AND queue = '" + queue_ +
                        "' ORDER BY id LIMIT 1");
        ASSERT_FALSE(held.empty()) << "the primary holds no job of " << queue_;
        std::istringstream in(held);
        in >> held_.id >> held_.token;
    }
    void TearDown() override {
        if (admin_ != nullptr) PQfinish(admin_);
    }

    // op must throw a ConnectionError with SQLSTATE 25006 at once, leaving
    // client unhealthy; reconnect() then works (it is the same standby).
    void refused(Client& client, const char* what, const std::function<void()>& op) {
        const auto began = std::chrono::steady_clock::now();
        try {
            op();
            ADD_FAILURE() << what << " succeeded on a standby";
        } catch (const jobqueue::ConnectionError& e) {
            EXPECT_EQ(e.sqlstate(), "25006") << what << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("standby"), std::string::npos) << what << ": " << e.what();
            EXPECT_FALSE(client.healthy()) << what << ": the connection to the standby was kept";
        } catch (const jobqueue::Error& e) {
            ADD_FAILURE() << what << ": not a ConnectionError: " << e.what() << " (SQLSTATE " << e.sqlstate() << ")";
        }
        EXPECT_LT(std::chrono::steady_clock::now() - began, 1s) << what << " did not fail at once";
        client.reconnect();
    }

    std::string dsn_, queue_;
    PGconn* admin_ = nullptr;
    Claim held_;
};

TEST_F(StandbyTest, ReadsWork) {
    Client client(dsn_);
    EXPECT_GT(client.pending(queue_), 0);
    bool seen = false;
    for (const auto& s : client.stats()) seen = seen || s.queue == queue_;
    EXPECT_TRUE(seen);
    EXPECT_FALSE(client.queues().empty());
    (void)client.failed_count();
    (void)client.failed();
    (void)client.schedules();
    EXPECT_TRUE(client.healthy());
}

TEST_F(StandbyTest, EveryWriteIsRefusedAsAConnectionError) {
    Client client(dsn_);
    const std::vector<Claim> claims{held_};
    jobqueue::PushOptions push;
    push.queue = queue_;
    refused(client, "push", [&] { (void)client.push("n", {}, push); });
    refused(client, "push_many", [&] {
        jobqueue::NewJob job;
        job.name = "n";
        (void)client.push_many({job});
    });
    refused(client, "reserve_one", [&] { (void)client.reserve_one({queue_}); });
    refused(client, "reserve with a wait", [&] {
        jobqueue::ReserveOptions o;
        o.queues = {queue_ + "_empty"};
        o.wait = 5s;
        (void)client.reserve(o);
    });
    refused(client, "complete", [&] { (void)client.complete(held_.id, held_.token); });
    refused(client, "complete_many", [&] { (void)client.complete_many(claims); });
    refused(client, "release", [&] { (void)client.release(held_.id, held_.token); });
    refused(client, "release_many", [&] { (void)client.release_many(claims); });
    refused(client, "fail", [&] { (void)client.fail(held_.id, held_.token, "x"); });
    refused(client, "fail_many", [&] { (void)client.fail_many(claims, "x"); });
    refused(client, "extend", [&] { (void)client.extend(held_.id, held_.token, 60s); });
    refused(client, "retry_failed", [&] { (void)client.retry_failed(); });
    refused(client, "forget_all_failed", [&] { (void)client.forget_all_failed(); });
    refused(client, "cancel", [&] { (void)client.cancel(held_.id); });
    refused(client, "clear", [&] { (void)client.clear(queue_); });
    refused(client, "pause", [&] { client.pause(queue_); });
    refused(client, "resume", [&] { client.resume(queue_); });
    refused(client, "set_notify", [&] { client.set_notify(queue_, false); });
    refused(client, "tick", [&] { (void)client.tick(); });
    jobqueue::Schedule schedule;
    schedule.name = "standby_test";
    schedule.cron = "@every 1 minute";
    schedule.job_name = "n";
    refused(client, "schedule_set", [&] { (void)client.schedule_set(schedule); });
    refused(client, "schedule_remove", [&] { (void)client.schedule_remove("standby_test"); });
    EXPECT_GT(client.pending(queue_), 0);  // the reconnected client reads
}

// The claims fail every few hundred milliseconds for seconds: one line says
// so, none says a claim failed, and no job is failed or completed.
TEST_F(StandbyTest, AWorkerOnAStandbyLogsItOnceAndKeepsTrying) {
    jobqueue::WorkerOptions options;
    options.connection.conninfo = dsn_;
    options.queues = {queue_};
    options.threads = 2;
    options.max_reconnect_delay = 200ms;
    jobqueue::Worker worker(options);
    int ran = 0;
    worker.on_any([&](const jobqueue::Job&, jobqueue::JobContext&) {
        ++ran;
        return jobqueue::Outcome::done();
    });
    ::testing::internal::CaptureStderr();
    worker.start();
    std::this_thread::sleep_for(3s);
    const auto counters = worker.counters();
    worker.stop();
    const std::string log = ::testing::internal::GetCapturedStderr();

    int lost = 0, other = 0;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("jobqueue worker: connection lost (", 0) == 0 &&
            line.find("standby") != std::string::npos)
            ++lost;
        else
            ++other;
    }
    EXPECT_EQ(lost, 1) << log;
    EXPECT_EQ(other, 0) << log;
    EXPECT_GE(counters.reconnects, 3) << "the worker did not keep trying";
    EXPECT_EQ(counters.claimed, 0);
    EXPECT_EQ(counters.failed, 0);
    EXPECT_EQ(ran, 0);
    if (worker.failure()) ADD_FAILURE() << "the worker stopped by itself";
}

}  // namespace
