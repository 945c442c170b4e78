// pgbouncer_test.cpp: the client and the worker through a PgBouncer in
// pool_mode = transaction (tests/pgbouncer/run.sh starts one).
//
//   JQ_PGBOUNCER_DSN              libpq connection string to the pooled database
//   JQ_PGBOUNCER_RESTART_COMMAND  restarts that PgBouncer (drops every connection)
//   JQ_PGBOUNCER_QUERY_TIMEOUT_MS its query_timeout, when one is set
//
// Without JQ_PGBOUNCER_DSN the tests through the pooler are skipped (the
// client suite runs this program against the bare server, where the tests
// of the statement modes on a direct connection run). The Clients under test leave their
// PoolerMode at detect, so JOBQUEUE_POOLER=session forces the named
// prepared statements of a direct connection, which must make these tests
// fail (42P05, 26000). Checks and cleanups use direct connections (the PG*
// environment), which no pooler restart touches.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "jobqueue/jobqueue.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::ClientOptions;
using jobqueue::Job;
using jobqueue::JobContext;
using jobqueue::NewJob;
using jobqueue::Outcome;
using jobqueue::PushOptions;
using jobqueue::ReserveOptions;
using jobqueue::Worker;
using jobqueue::WorkerOptions;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;

namespace {

std::string env(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

std::int64_t sql_int(const std::string& sql) { return std::stoll(sql_value(sql)); }

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) return pred();
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// ---- on the bare server (run by the client suite too)

// Statements named by this connection in pg_prepared_statements, e.g.
// "jobqueue_push": one per call kind prepared so far.
std::int64_t prepared_on(Client& c) {
    return std::stoll(jobqueue::testing::sql_value(
        c.connection(), "SELECT count(*) FROM pg_catalog.pg_prepared_statements WHERE name LIKE 'jobqueue%'"));
}

TEST(PoolerMode, ParsesTheThreeNames) {
    EXPECT_EQ(jobqueue::parse_pooler_mode("detect"), jobqueue::PoolerMode::detect);
    EXPECT_EQ(jobqueue::parse_pooler_mode("session"), jobqueue::PoolerMode::session);
    EXPECT_EQ(jobqueue::parse_pooler_mode("transaction"), jobqueue::PoolerMode::transaction);
    EXPECT_FALSE(jobqueue::parse_pooler_mode("Transaction"));
    EXPECT_FALSE(jobqueue::parse_pooler_mode(""));
}

// A direct connection keeps named prepared statements (prepared once, then
// executed by name); PoolerMode::transaction leaves none behind.
TEST(PoolerMode, DirectConnectionsPrepareAndTransactionModeDoesNot) {
    if (!env("JOBQUEUE_POOLER").empty()) GTEST_SKIP() << "JOBQUEUE_POOLER is set";
    const std::string queue = unique_queue("pooler_mode");
    PushOptions to_queue;
    to_queue.queue = queue;

    Client direct;
    EXPECT_FALSE(direct.transaction_pooled());
    (void)direct.push("a", {}, to_queue);
    (void)direct.push("b", {}, to_queue);
    EXPECT_EQ(direct.pending(queue), 2);
    EXPECT_EQ(prepared_on(direct), 2);  // jobqueue_push and jobqueue_pending, each once

    Client unnamed(ClientOptions{"", "", jobqueue::PoolerMode::transaction});
    EXPECT_TRUE(unnamed.transaction_pooled());
    (void)unnamed.push("c", {}, to_queue);
    auto job = unnamed.reserve_one({queue});
    ASSERT_TRUE(job);
    EXPECT_TRUE(unnamed.complete(*job));
    EXPECT_EQ(unnamed.pending(queue), 2);
    EXPECT_EQ(prepared_on(unnamed), 0);
    EXPECT_THROW((void)unnamed.wait(10ms), jobqueue::InvalidArgument);  // no LISTEN there
    (void)direct.clear(queue);
}

// ---- through the pooler

class PgBouncerTest : public ::testing::Test {
protected:
    void SetUp() override {
        dsn_ = env("JQ_PGBOUNCER_DSN");
        if (dsn_.empty()) GTEST_SKIP() << "JQ_PGBOUNCER_DSN is not set (tests/pgbouncer/run.sh sets it)";
        queue_ = unique_queue("pgb");
    }

    void TearDown() override {
        if (dsn_.empty()) return;
        for (const char* table : {"queue_jobs", "queue_failed_jobs", "queue_settings"})
            sql_value(std::string("DELETE FROM ") + table + " WHERE queue = '" + queue_ + "'");
        if (!runs_table_.empty()) sql_value("DROP TABLE " + runs_table_);
    }

    [[nodiscard]] PushOptions to_queue() const {
        PushOptions options;
        options.queue = queue_;
        return options;
    }
    // A Client through the pooler, its PoolerMode left to detect.
    [[nodiscard]] Client pooled() const { return Client(ClientOptions{dsn_, ""}); }
    [[nodiscard]] std::int64_t jobs_in_queue() const {
        return sql_int("SELECT count(*) FROM queue_jobs WHERE queue = '" + queue_ + "'");
    }

    std::string dsn_;
    std::string queue_;
    std::string runs_table_;  // made by a test, dropped by TearDown
};

// The pooler is seen; a direct connection is not taken for one.
TEST_F(PgBouncerTest, DetectsThePoolerAndNotTheDirectServer) {
    auto through = pooled();
    EXPECT_TRUE(through.transaction_pooled());
    Client direct;
    EXPECT_FALSE(direct.transaction_pooled());
}

// Many Clients, each pushing in turn: their transactions share the pool's
// server connections, as short-lived CLI runs and web requests do.
TEST_F(PgBouncerTest, PushesOfInterleavedClientsAllSucceed) {
    std::vector<Client> clients;
    for (int i = 0; i < 4; ++i) clients.push_back(pooled());
    std::vector<std::int64_t> ids;
    for (int round = 0; round < 10; ++round)
        for (auto& c : clients) ids.push_back(c.push("interleaved", {{"round", round}}, to_queue()));
    EXPECT_EQ(jobs_in_queue(), 40);
    EXPECT_EQ(clients[0].pending(queue_), 40);
    auto batch = clients[1].push_many({NewJob{"batch", {{"n", 1}}, to_queue()},
                                       NewJob{"batch", {{"n", 2}}, to_queue()}});
    EXPECT_EQ(batch.size(), 2u);
    EXPECT_EQ(jobs_in_queue(), 42);
}

// A push joins the transaction it is sent in (the pooler keeps one server
// connection for the whole transaction): rolled back, it leaves nothing.
TEST_F(PgBouncerTest, PushInATransactionCommitsOrRollsBackWithIt) {
    auto other = pooled();  // keeps the pool's connections changing hands
    auto c = pooled();
    c.execute("BEGIN");
    auto rolled_back = c.push("rolled_back", {}, to_queue());
    (void)other.pending(queue_);
    auto also_rolled_back = c.push("rolled_back", {}, to_queue());
    c.execute("ROLLBACK");
    EXPECT_NE(rolled_back, also_rolled_back);
    EXPECT_EQ(jobs_in_queue(), 0);

    c.execute("BEGIN");
    auto kept = c.push("kept", {}, to_queue());
    (void)other.pending(queue_);
    c.execute("COMMIT");
    EXPECT_EQ(sql_value("SELECT name FROM queue_jobs WHERE id = " + std::to_string(kept)), "kept");

    // the application's own connection, borrowed, in the application's transaction
    std::unique_ptr<PGconn, decltype(&PQfinish)> app(PQconnectdb(dsn_.c_str()), &PQfinish);
    ASSERT_EQ(PQstatus(app.get()), CONNECTION_OK) << PQerrorMessage(app.get());
    jobqueue::testing::sql_value(app.get(), "BEGIN");
    auto borrowed = Client::borrow(app.get());
    (void)borrowed.push("borrowed", {}, to_queue());
    (void)other.pending(queue_);
    (void)borrowed.push("borrowed", {}, to_queue());
    jobqueue::testing::sql_value(app.get(), "ROLLBACK");
    EXPECT_EQ(jobs_in_queue(), 1);
}

// The claim's calls, each fenced by its token, with a producer interleaved.
TEST_F(PgBouncerTest, ReserveCompleteReleaseFailExtendWithTokens) {
    auto producer = pooled();
    auto worker = pooled();
    for (int i = 0; i < 3; ++i) (void)producer.push("job", {{"i", i}}, to_queue());

    auto jobs = worker.reserve(ReserveOptions{{queue_}, 30s, "pgb-test", 3, std::nullopt});
    ASSERT_EQ(jobs.size(), 3u);
    const Job &a = jobs[0], &b = jobs[1], &c = jobs[2];

    EXPECT_TRUE(worker.extend(a.id, a.token, 60s));
    EXPECT_FALSE(worker.extend(a.id, a.token + 1000, 60s));
    (void)producer.pending(queue_);
    EXPECT_FALSE(worker.complete(a.id, a.token + 1000));
    EXPECT_TRUE(worker.complete(a));
    EXPECT_FALSE(worker.complete(a));

    EXPECT_TRUE(worker.release(b.id, b.token, 0ms, "again"));
    auto again = worker.reserve_one({queue_});
    ASSERT_TRUE(again);
    EXPECT_EQ(again->id, b.id);
    EXPECT_NE(again->token, b.token);
    EXPECT_EQ(again->last_error, "again");
    EXPECT_FALSE(worker.complete(b.id, b.token));  // the old claim is void
    EXPECT_TRUE(worker.complete(*again));

    EXPECT_TRUE(worker.fail(c.id, c.token, "broken"));
    EXPECT_FALSE(worker.fail(c.id, c.token, "broken"));
    auto failed = producer.failed_job(c.id);
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->error, "broken");
    EXPECT_EQ(producer.retry_failed(c.id, 2), 1);
    auto retried = worker.reserve_one({queue_});
    ASSERT_TRUE(retried);
    EXPECT_EQ(retried->id, c.id);
    EXPECT_EQ(worker.complete_many({{retried->id, retried->token}}), std::vector<std::int64_t>{c.id});
    EXPECT_EQ(jobs_in_queue(), 0);
}

// A claim that waits in the server is one statement: it works through the
// pooler and is woken by a push of another client. A wait longer than the
// pooler's query_timeout is cut off with the connection.
TEST_F(PgBouncerTest, WaitingClaimIsWokenAndQueryTimeoutCutsLongerWaits) {
    auto waiter = pooled();
    std::thread pusher([&] {
        std::this_thread::sleep_for(300ms);
        auto producer = pooled();
        (void)producer.push("wake", {}, to_queue());
    });
    auto start = std::chrono::steady_clock::now();
    auto jobs = waiter.reserve(ReserveOptions{{queue_}, 30s, "pgb-test", 1, 5s});
    auto waited = std::chrono::steady_clock::now() - start;
    pusher.join();
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_LT(waited, 4s) << "the claim waited its whole wait instead of being woken";
    EXPECT_TRUE(waiter.complete(jobs[0]));

    std::string timeout_ms = env("JQ_PGBOUNCER_QUERY_TIMEOUT_MS");
    if (timeout_ms.empty()) return;
    auto limit = std::chrono::milliseconds(std::stoll(timeout_ms));
    // the worker's slice (500 ms) stays below it
    EXPECT_TRUE(waiter.reserve(ReserveOptions{{queue_}, 30s, "pgb-test", 1, 500ms}).empty());
    EXPECT_THROW((void)waiter.reserve(ReserveOptions{{queue_}, 30s, "pgb-test", 1, limit + 2s}),
                 jobqueue::ConnectionError);
    EXPECT_FALSE(waiter.healthy());
    waiter.reconnect();
    EXPECT_EQ(waiter.pending(queue_), 0);
}

// Without the wait in the server (an extension older than 1.2), the worker
// must not LISTEN through the pooler: it polls, and still drains the queue.
// It works through the pooler's database "logged", whose server connections
// log every statement: the server log of the run shows its claims, and no
// LISTEN.
TEST_F(PgBouncerTest, WorkerPollsInsteadOfListening) {
    const std::string logged = env("JQ_PGBOUNCER_LOGGED_DSN"), log_path = env("JQ_SERVER_LOG");
    if (logged.empty() || log_path.empty()) GTEST_SKIP() << "JQ_PGBOUNCER_LOGGED_DSN or JQ_SERVER_LOG is not set";
    std::ifstream log(log_path);
    ASSERT_TRUE(log) << log_path;
    log.seekg(0, std::ios::end);

    WorkerOptions options;
    options.connection = ClientOptions{logged, ""};
    options.queues = {queue_};
    options.threads = 2;
    options.wait_in_server = false;
    options.poll_interval = 100ms;
    options.tick_interval = 0ms;
    Worker worker(options);
    std::atomic<int> done{0};
    worker.on("job", [&](const Job&) { ++done; });
    worker.start();
    std::this_thread::sleep_for(500ms);  // idle: where it would LISTEN
    auto producer = pooled();
    for (int i = 0; i < 20; ++i) (void)producer.push("job", {}, to_queue());
    EXPECT_TRUE(wait_until([&] { return done == 20; }, 20s)) << done << " of 20 jobs done";
    worker.stop();

    int claims = 0, listens = 0;
    for (std::string line; std::getline(log, line);) {
        // "statement: ..." (simple protocol), "execute <unnamed>: ..." (extended)
        if (line.find("LOG:") == std::string::npos) continue;
        if (line.find("queue_reserve") != std::string::npos) ++claims;
        if (line.find("LISTEN") != std::string::npos) ++listens;
    }
    EXPECT_GT(claims, 0) << "the server log shows none of the worker's statements";
    EXPECT_EQ(listens, 0) << "the worker LISTENed through the pooler";
}

// A multi-threaded worker drains a backlog through the pooler; the pooler
// restarts in the middle (every connection dropped). The worker reconnects,
// and every job is run and completed exactly once: the handler records each
// run on a direct connection, and the queue ends empty.
TEST_F(PgBouncerTest, WorkerDrainsAcrossAPoolerRestart) {
    const std::string restart = env("JQ_PGBOUNCER_RESTART_COMMAND");
    if (restart.empty()) GTEST_SKIP() << "JQ_PGBOUNCER_RESTART_COMMAND is not set";
    const int total = 1500;
    const std::string runs_table = queue_ + "_runs";
    sql_value("CREATE TABLE " + runs_table + " (n int)");
    runs_table_ = runs_table;
    {
        auto producer = pooled();
        std::vector<NewJob> batch;
        for (int n = 0; n < total; ++n) {
            batch.push_back(NewJob{"drain", {{"n", n}}, to_queue()});
            if (batch.size() == 500) {
                (void)producer.push_many(batch);
                batch.clear();
            }
        }
    }
    ASSERT_EQ(jobs_in_queue(), total);

    WorkerOptions options;
    options.connection = ClientOptions{dsn_, ""};
    options.queues = {queue_};
    options.threads = 4;
    options.lease = 5s;  // claims whose answer the restart cut come back soon
    options.tick_interval = 0ms;
    options.max_reconnect_delay = 500ms;
    Worker worker(options);
    std::atomic<int> runs{0};
    worker.on("drain", [&](const Job& job) {
        thread_local std::unique_ptr<PGconn, decltype(&PQfinish)> direct(PQconnectdb(""), &PQfinish);
        sql_value(direct.get(),
                  "INSERT INTO " + runs_table + " VALUES (" + std::to_string(job.payload.at("n").get<int>()) + ")");
        std::this_thread::sleep_for(2ms);
        ++runs;
    });
    worker.start();
    ASSERT_TRUE(wait_until([&] { return runs >= total / 3; }, 60s)) << runs << " runs before the restart";
    ASSERT_EQ(std::system(restart.c_str()), 0) << restart;
    bool drained = wait_until([&] { return jobs_in_queue() == 0; }, 60s);
    worker.stop();
    auto counters = worker.counters();
    ASSERT_TRUE(drained) << jobs_in_queue() << " jobs left";
    EXPECT_GT(counters.reconnects, 0) << "the restart did not reach the worker";
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_failed_jobs WHERE queue = '" + queue_ + "'"), 0);
    EXPECT_EQ(sql_int("SELECT count(DISTINCT n) FROM " + runs_table), total);
    EXPECT_EQ(sql_int("SELECT count(*) FROM (SELECT n FROM " + runs_table + " GROUP BY n HAVING count(*) > 1) twice"),
              0)
        << "jobs run more than once";
}

}  // namespace
