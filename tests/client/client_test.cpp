// client_test.cpp: jobqueue::Client against a live server with the
// extension (the standard PG* environment; a superuser in database postgres).
//
// Every test uses queues of its own (unique_queue) and the fixture deletes
// their jobs, failed rows and settings at the end. Times are compared with
// the server's clock, read before and after a call, never with the client's
// clock or with elapsed time. Tests that look at the whole failed table run
// in a transaction that locks it first, so other sessions cannot disturb the
// counts; they roll back.
#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::TimePoint;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;

namespace {

std::int64_t to_micros(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

TimePoint from_micros(std::int64_t us) {
    return TimePoint(std::chrono::duration_cast<jobqueue::Clock::duration>(std::chrono::microseconds(us)));
}

std::string lit(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += '\'';
        out += c;
    }
    return out + "'";
}

// t lies in [lo, hi] (to the microsecond); failures print ISO times.
::testing::AssertionResult between(TimePoint t, TimePoint lo, TimePoint hi) {
    if (to_micros(t) >= to_micros(lo) && to_micros(t) <= to_micros(hi)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << jobqueue::format_time(t) << " is not within ["
                                         << jobqueue::format_time(lo) << ", " << jobqueue::format_time(hi) << "]";
}

struct PgConnCloser {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, PgConnCloser>;

ConnPtr connect_env() {
    ConnPtr c(PQconnectdb(""));
    if (PQstatus(c.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c.get()));
    return c;
}

// Calls op and returns the exception it threw (nullptr when none).
template <typename Op>
std::exception_ptr thrown_by(Op&& op) {
    try {
        op();
    } catch (...) {
        return std::current_exception();
    }
    return nullptr;
}

// The jobqueue::Error that op throws; fails the test when it throws
// something else or nothing. The result is the exception's dynamic type
// name, its SQLSTATE, and whether it is an E.
template <typename E, typename Op>
::testing::AssertionResult throws_with_state(Op&& op, const std::string& sqlstate) {
    try {
        op();
    } catch (const E& e) {
        if (!sqlstate.empty() && e.sqlstate() != sqlstate)
            return ::testing::AssertionFailure() << typeid(e).name() << " with sqlstate '" << e.sqlstate()
                                                 << "', expected '" << sqlstate << "': " << e.what();
        return ::testing::AssertionSuccess();
    } catch (const jobqueue::Error& e) {
        return ::testing::AssertionFailure() << "threw " << typeid(e).name() << " (sqlstate '" << e.sqlstate()
                                             << "'): " << e.what() << "; expected " << typeid(E).name();
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "threw a non-jobqueue exception: " << e.what();
    }
    return ::testing::AssertionFailure() << "threw nothing; expected " << typeid(E).name();
}

}  // namespace

class ClientTest : public ::testing::Test {
public:
    ClientTest() : admin_(connect_env()) {}

    // The wake-up tests check NOTIFY per transaction, in commit order: every
    // connection of this program sends its own NOTIFY at commit, not a
    // coalesced one (coalescing is tested by tests/notify).
    static void SetUpTestSuite() {
        const char* options = std::getenv("PGOPTIONS");
        std::string value = options != nullptr ? std::string(options) + " " : std::string();
        value += "-c jobqueue.notify_coalesce=0";
        ::setenv("PGOPTIONS", value.c_str(), 1);
    }

    void TearDown() override {
        for (const auto& q : queues_) {
            sql("DELETE FROM queue_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_failed_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_settings WHERE queue = " + lit(q));
        }
    }

    // A queue of this test's own (cleaned up at the end).
    std::string queue(const std::string& prefix = "cq") {
        queues_.push_back(unique_queue(prefix));
        return queues_.back();
    }

    jobqueue::PushOptions on(const std::string& q) {
        jobqueue::PushOptions o;
        o.queue = q;
        return o;
    }

    // SQL on the fixture's own superuser connection.
    std::string sql(const std::string& s) { return sql_value(admin_.get(), s); }
    std::int64_t sql_int(const std::string& s) { return std::stoll(sql(s)); }
    bool sql_bool(const std::string& s) { return sql(s) == "t"; }

    // The server's clock, to the microsecond.
    TimePoint server_now() {
        return from_micros(sql_int("SELECT (extract(epoch from clock_timestamp()) * 1000000)::int8"));
    }
    // A time column of a job in queue_jobs.
    TimePoint job_time(std::int64_t id, const std::string& column) {
        return from_micros(sql_int("SELECT (extract(epoch from " + column + ") * 1000000)::int8 FROM queue_jobs WHERE id = " +
                                   std::to_string(id)));
    }
    std::string job_col(std::int64_t id, const std::string& column) {
        return sql("SELECT " + column + " FROM queue_jobs WHERE id = " + std::to_string(id));
    }
    bool job_null(std::int64_t id, const std::string& column) {
        return sql_bool("SELECT " + column + " IS NULL FROM queue_jobs WHERE id = " + std::to_string(id));
    }
    std::int64_t jobs_in(const std::string& q) {
        return sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q));
    }
    bool job_exists(std::int64_t id) {
        return sql_bool("SELECT EXISTS (SELECT 1 FROM queue_jobs WHERE id = " + std::to_string(id) + ")");
    }
    bool failed_exists(std::int64_t id) {
        return sql_bool("SELECT EXISTS (SELECT 1 FROM queue_failed_jobs WHERE id = " + std::to_string(id) + ")");
    }

    std::optional<jobqueue::FailedJob> failed_row(Client& c, std::int64_t id) { return c.failed_job(id); }

    // Waits for the first wake-up naming one of `mine` (others' are skipped).
    static std::optional<std::string> next_wakeup(Client& listener, const std::set<std::string>& mine,
                                                  std::chrono::milliseconds timeout = 10s) {
        auto end = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto got = listener.wait(left);
            if (!got) return std::nullopt;
            if (mine.count(*got)) return got;
        }
    }

    // Starts listening and drops whatever arrived before.
    static void listen_and_drain(Client& listener) {
        while (listener.wait(1ms)) {
        }
    }

    ConnPtr admin_;
    Client client;
    std::vector<std::string> queues_;
};

// ======================================================================== push

// push with default options writes a due row with queue_push's defaults.
TEST_F(ClientTest, PushWritesTheRow) {
    auto q = queue();
    nlohmann::json payload = {{"to", "a@example.com"}, {"n", 3}, {"list", {1, 2, 3}}};
    TimePoint t0 = server_now();
    std::int64_t id = client.push("send_mail", payload, on(q));
    TimePoint t1 = server_now();

    EXPECT_GT(id, 0);
    EXPECT_EQ(job_col(id, "queue"), q);
    EXPECT_EQ(job_col(id, "name"), "send_mail");
    EXPECT_EQ(nlohmann::json::parse(job_col(id, "payload")), payload);
    EXPECT_EQ(job_col(id, "attempts"), "0");
    EXPECT_EQ(job_col(id, "max_attempts"), "3");
    EXPECT_EQ(job_col(id, "priority"), "0");
    EXPECT_TRUE(job_null(id, "unique_key"));
    EXPECT_TRUE(job_null(id, "reserved_until"));
    EXPECT_TRUE(job_null(id, "deadline"));
    EXPECT_TRUE(between(job_time(id, "created_at"), t0, t1));
    EXPECT_TRUE(between(job_time(id, "available_at"), t0, t1));
    EXPECT_EQ(client.pending(q), 1);
}

// An option the caller leaves empty is sent as NULL (left out of
// push_many's JSON), so the server's own default applies: a stand-in
// queue_push in a schema of its own reports which arguments came NULL
// (one bit each), and a real push gets what a plain SQL push gets.
TEST_F(ClientTest, PushLeavesUnsetOptionsToTheServer) {
    const std::string schema = "jq_probe_" + std::to_string(getpid());
    sql("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema);
    sql("CREATE FUNCTION " + schema +
        ".queue_push(name text, payload jsonb, queue text, delay interval, priority int, unique_key text,"
        " max_attempts int, deadline timestamptz) RETURNS bigint LANGUAGE sql AS $$ SELECT"
        " (queue IS NULL)::int + 2 * (delay IS NULL)::int + 4 * (priority IS NULL)::int"
        " + 8 * (unique_key IS NULL)::int + 16 * (max_attempts IS NULL)::int + 32 * (deadline IS NULL)::int $$");
    sql("CREATE FUNCTION " + schema +
        ".queue_push_many(jobs jsonb) RETURNS bigint[] LANGUAGE sql AS $$ SELECT ARRAY["
        " (SELECT count(*) FROM jsonb_object_keys(jobs -> 0))] $$");
    jobqueue::Client probe(jobqueue::ClientOptions{"", schema});
    EXPECT_EQ(probe.push("n"), 63);
    jobqueue::PushOptions o;
    o.max_attempts = 3;
    EXPECT_EQ(probe.push("n", {}, o), 63 - 16);
    EXPECT_EQ(probe.push_many({jobqueue::NewJob{"n", nlohmann::json::object(), {}}}), std::vector<std::int64_t>{2});  // name, payload
    sql("DROP SCHEMA " + schema + " CASCADE");

    auto q = queue();
    std::int64_t by_client = client.push("n", nlohmann::json::object(), on(q));
    std::int64_t by_sql = sql_int("SELECT queue_push('n', queue => " + lit(q) + ")");
    for (const char* column : {"max_attempts", "priority", "payload::text"})
        EXPECT_EQ(job_col(by_client, column), job_col(by_sql, column)) << column;
}

// The default payload is an empty object.
TEST_F(ClientTest, PushDefaultPayload) {
    auto q = queue();
    std::int64_t id = client.push("n", nlohmann::json::object(), on(q));
    EXPECT_EQ(nlohmann::json::parse(job_col(id, "payload")), nlohmann::json::object());
}

// A delayed push is due delay after now, and not pending before.
TEST_F(ClientTest, PushWithDelay) {
    auto q = queue();
    auto o = on(q);
    o.delay = 2h;
    TimePoint t0 = server_now();
    std::int64_t id = client.push("n", {}, o);
    TimePoint t1 = server_now();
    EXPECT_TRUE(between(job_time(id, "available_at"), t0 + 2h, t1 + 2h));
    EXPECT_EQ(client.pending(q), 0);
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    client.execute("SET jobqueue.clock_offset = '2 hours 1 minute'");
    EXPECT_EQ(client.pending(q), 1);
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->id, id);
}

// A sub-second delay is kept to the millisecond.
TEST_F(ClientTest, PushWithMillisecondDelay) {
    auto q = queue();
    auto o = on(q);
    o.delay = 1500ms;
    TimePoint t0 = server_now();
    std::int64_t id = client.push("n", {}, o);
    TimePoint t1 = server_now();
    EXPECT_TRUE(between(job_time(id, "available_at"), t0 + 1500ms, t1 + 1500ms));
}

// priority is stored and decides the claim order.
TEST_F(ClientTest, PushWithPriority) {
    auto q = queue();
    auto low = client.push("low", {}, on(q));
    auto o = on(q);
    o.priority = 5;
    auto high = client.push("high", {}, o);
    EXPECT_EQ(job_col(high, "priority"), "5");
    EXPECT_EQ(job_col(low, "priority"), "0");
    auto first = client.reserve_one({q});
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->id, high);
    EXPECT_EQ(first->priority, 5);
}

// A unique key held by a job gives that job's id; once done, the key is free.
TEST_F(ClientTest, PushWithUniqueKey) {
    auto q = queue();
    auto o = on(q);
    o.unique_key = "report-2024";
    std::int64_t a = client.push("report", {{"v", 1}}, o);
    std::int64_t b = client.push("report", {{"v", 2}}, o);
    EXPECT_EQ(a, b);
    EXPECT_EQ(jobs_in(q), 1);
    EXPECT_EQ(job_col(a, "unique_key"), "report-2024");
    EXPECT_EQ(nlohmann::json::parse(job_col(a, "payload")), (nlohmann::json{{"v", 1}}));

    auto other = o;
    other.unique_key = "report-2025";
    EXPECT_NE(client.push("report", {}, other), a);

    // The key belongs to the row: held while reserved, free after completion.
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    ASSERT_EQ(job->id, a);
    EXPECT_EQ(client.push("report", {}, o), a);
    EXPECT_TRUE(client.complete(*job));
    std::int64_t c = client.push("report", {}, o);
    EXPECT_NE(c, a);
    EXPECT_TRUE(job_exists(c));
}

TEST_F(ClientTest, PushWithMaxAttempts) {
    auto q = queue();
    auto o = on(q);
    o.max_attempts = 7;
    std::int64_t id = client.push("n", {}, o);
    EXPECT_EQ(job_col(id, "max_attempts"), "7");
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->max_attempts, 7);
    EXPECT_FALSE(job->last_attempt());
}

// A deadline is stored exactly; past it the job is failed as expired instead of handed out.
TEST_F(ClientTest, PushWithDeadline) {
    auto q = queue();
    auto o = on(q);
    TimePoint deadline = server_now() + 1h;
    o.deadline = deadline;
    std::int64_t id = client.push("n", {}, o);
    EXPECT_EQ(to_micros(job_time(id, "deadline")), to_micros(deadline));

    client.execute("SET jobqueue.clock_offset = '2 hours'");
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    EXPECT_FALSE(job_exists(id));
    auto f = failed_row(client, id);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->error.rfind("expired", 0), 0u) << f->error;
}

// A deadline not later than the moment the job becomes due is refused.
TEST_F(ClientTest, PushWithDeadlineBeforeDueIsRefused) {
    auto q = queue();
    auto o = on(q);
    o.delay = 2h;
    o.deadline = server_now() + 1h;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push("n", {}, o); }, "22023"));
    EXPECT_EQ(jobs_in(q), 0);
}

// ================================================================== push_many

// push_many returns one id per job, in the order given, and honours every option.
TEST_F(ClientTest, PushManyReturnsIdsInOrderAndHonoursOptions) {
    auto q = queue();
    auto q2 = queue();
    TimePoint deadline = server_now() + 3h;

    std::vector<jobqueue::NewJob> jobs(4);
    jobs[0].name = "first";
    jobs[0].payload = {{"i", 0}};
    jobs[0].options.queue = q;
    jobs[1].name = "second";
    jobs[1].payload = {{"i", 1}};
    jobs[1].options.queue = q2;
    jobs[1].options.delay = 1h;
    jobs[1].options.priority = 4;
    jobs[1].options.unique_key = "k";
    jobs[1].options.max_attempts = 9;
    jobs[1].options.deadline = deadline;
    jobs[2].name = "third";  // same key: the second job's id
    jobs[2].options.queue = q2;
    jobs[2].options.unique_key = "k";
    jobs[3].name = "fourth";
    jobs[3].options.queue = q;

    TimePoint t0 = server_now();
    auto ids = client.push_many(jobs);
    TimePoint t1 = server_now();
    ASSERT_EQ(ids.size(), 4u);
    EXPECT_LT(ids[0], ids[1]);
    EXPECT_EQ(ids[2], ids[1]);
    EXPECT_LT(ids[1], ids[3]);

    EXPECT_EQ(job_col(ids[0], "name"), "first");
    EXPECT_EQ(job_col(ids[0], "queue"), q);
    EXPECT_EQ(nlohmann::json::parse(job_col(ids[0], "payload")), (nlohmann::json{{"i", 0}}));
    EXPECT_EQ(job_col(ids[0], "priority"), "0");
    EXPECT_EQ(job_col(ids[0], "max_attempts"), "3");
    EXPECT_TRUE(job_null(ids[0], "unique_key"));
    EXPECT_TRUE(job_null(ids[0], "deadline"));
    EXPECT_TRUE(between(job_time(ids[0], "available_at"), t0, t1));

    EXPECT_EQ(job_col(ids[1], "name"), "second");
    EXPECT_EQ(job_col(ids[1], "queue"), q2);
    EXPECT_EQ(nlohmann::json::parse(job_col(ids[1], "payload")), (nlohmann::json{{"i", 1}}));
    EXPECT_EQ(job_col(ids[1], "priority"), "4");
    EXPECT_EQ(job_col(ids[1], "max_attempts"), "9");
    EXPECT_EQ(job_col(ids[1], "unique_key"), "k");
    EXPECT_EQ(to_micros(job_time(ids[1], "deadline")), to_micros(deadline));
    EXPECT_TRUE(between(job_time(ids[1], "available_at"), t0 + 1h, t1 + 1h));

    EXPECT_EQ(job_col(ids[3], "name"), "fourth");
    EXPECT_EQ(jobs_in(q), 2);
    EXPECT_EQ(jobs_in(q2), 1);
    EXPECT_EQ(client.pending(q), 2);
    EXPECT_EQ(client.pending(q2), 0);
}

TEST_F(ClientTest, PushManyEmpty) {
    auto ids = client.push_many({});
    EXPECT_TRUE(ids.empty());
}

// One bad job: nothing of the batch is written.
TEST_F(ClientTest, PushManyChecksEveryJobFirst) {
    auto q = queue();
    std::vector<jobqueue::NewJob> jobs(2);
    jobs[0].name = "fine";
    jobs[0].options.queue = q;
    jobs[1].name = "";
    jobs[1].options.queue = q;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push_many(jobs); }, "22023"));
    EXPECT_EQ(jobs_in(q), 0);
}

// =================================================================== reserve

// reserve_one returns every field of the claim, and the row agrees.
TEST_F(ClientTest, ReserveOneFields) {
    auto q = queue();
    auto o = on(q);
    o.priority = 2;
    o.max_attempts = 4;
    TimePoint deadline = server_now() + 5h;
    o.deadline = deadline;
    nlohmann::json payload = {{"a", {1, 2}}, {"s", "x\"y"}, {"u", "é"}, {"nested", {{"b", nullptr}}}};
    TimePoint p0 = server_now();
    std::int64_t id = client.push("resize", payload, o);
    TimePoint p1 = server_now();

    TimePoint t0 = server_now();
    auto job = client.reserve_one({q}, 30s, "worker-1");
    TimePoint t1 = server_now();
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->id, id);
    EXPECT_EQ(job->queue, q);
    EXPECT_EQ(job->name, "resize");
    EXPECT_EQ(job->payload, payload);
    EXPECT_EQ(job->attempts, 1);
    EXPECT_EQ(job->max_attempts, 4);
    EXPECT_EQ(job->priority, 2);
    EXPECT_GT(job->token, 0);
    EXPECT_EQ(std::to_string(job->token), job_col(id, "token"));
    EXPECT_TRUE(between(job->reserved_until, t0 + 30s, t1 + 30s));
    EXPECT_EQ(to_micros(job->reserved_until), to_micros(job_time(id, "reserved_until")));
    EXPECT_EQ(to_micros(job->created_at), to_micros(job_time(id, "created_at")));
    EXPECT_TRUE(between(job->created_at, p0, p1));
    ASSERT_TRUE(job->deadline.has_value());
    EXPECT_EQ(to_micros(*job->deadline), to_micros(deadline));
    EXPECT_EQ(job->last_error, "");
    EXPECT_EQ(job_col(id, "reserved_by"), "worker-1");
    EXPECT_EQ(job_col(id, "attempts"), "1");

    // Held: nothing more to claim.
    EXPECT_FALSE(client.reserve_one({q}).has_value());
}

// A job without a deadline has none; attempts, token and last_error follow the claims.
TEST_F(ClientTest, ReserveAgainAfterRelease) {
    auto q = queue();
    auto o = on(q);
    o.max_attempts = 2;
    std::int64_t id = client.push("n", {}, o);
    auto first = client.reserve_one({q}, 10s);
    ASSERT_TRUE(first.has_value());
    EXPECT_FALSE(first->deadline.has_value());
    EXPECT_FALSE(first->last_attempt());
    ASSERT_TRUE(client.release(first->id, first->token, 0ms, "try again"));

    auto second = client.reserve_one({q}, 10s);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->id, id);
    EXPECT_EQ(second->attempts, 2);
    EXPECT_NE(second->token, first->token);
    EXPECT_EQ(second->last_error, "try again");
    EXPECT_TRUE(second->last_attempt());
}

// reserve() with ReserveOptions: lease, worker name, and nothing when the queue is empty.
TEST_F(ClientTest, ReserveWithOptions) {
    auto q = queue();
    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.lease = 2min;
    ro.worker = "w-opts";
    ro.max_jobs = 5;
    EXPECT_TRUE(client.reserve(ro).empty());

    (void)client.push("a", {}, on(q));
    (void)client.push("b", {}, on(q));
    TimePoint t0 = server_now();
    auto jobs = client.reserve(ro);
    TimePoint t1 = server_now();
    ASSERT_EQ(jobs.size(), 2u);
    for (const auto& j : jobs) {
        EXPECT_TRUE(between(j.reserved_until, t0 + 2min, t1 + 2min));
        EXPECT_EQ(job_col(j.id, "reserved_by"), "w-opts");
    }
    EXPECT_NE(jobs[0].token, jobs[1].token);
}

// A batch claim comes in claim order: priority, then available_at, then id; max_jobs limits it.
TEST_F(ClientTest, ReserveBatchOrder) {
    auto q = queue();
    auto prio = [&](int p) {
        auto o = on(q);
        o.priority = p;
        return o;
    };
    std::int64_t a = client.push("a", {}, prio(0));
    std::int64_t b = client.push("b", {}, prio(5));
    std::int64_t c = client.push("c", {}, prio(0));
    std::int64_t d = client.push("d", {}, prio(5));
    std::int64_t e = client.push("e", {}, prio(-1));
    // c became due a minute before the others.
    sql("UPDATE queue_jobs SET available_at = available_at - interval '1 minute' WHERE id = " + std::to_string(c));

    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.lease = 1min;
    ro.max_jobs = 3;
    auto first = client.reserve(ro);
    ASSERT_EQ(first.size(), 3u);
    EXPECT_EQ(first[0].id, b);
    EXPECT_EQ(first[1].id, d);
    EXPECT_EQ(first[2].id, c);  // earlier available_at than a
    ro.max_jobs = 10;
    auto rest = client.reserve(ro);
    ASSERT_EQ(rest.size(), 2u);
    EXPECT_EQ(rest[0].id, a);
    EXPECT_EQ(rest[1].id, e);
}

// Several queues are taken in precedence order.
TEST_F(ClientTest, ReserveQueuesInPrecedenceOrder) {
    auto qa = queue();
    auto qb = queue();
    auto o = on(qa);
    o.priority = 100;
    std::int64_t a = client.push("a", {}, o);
    std::int64_t b1 = client.push("b1", {}, on(qb));
    std::int64_t b2 = client.push("b2", {}, on(qb));
    jobqueue::ReserveOptions ro;
    ro.queues = {qb, qa};
    ro.max_jobs = 3;
    auto jobs = client.reserve(ro);
    ASSERT_EQ(jobs.size(), 3u);
    EXPECT_EQ(jobs[0].id, b1);
    EXPECT_EQ(jobs[1].id, b2);
    EXPECT_EQ(jobs[2].id, a);
    EXPECT_EQ(jobs[2].queue, qa);
}

// Names with commas, quotes, braces and spaces reach the server intact.
TEST_F(ClientTest, ReserveOddQueueNames) {
    auto base = queue();
    std::string odd = base + " ,{\"x\"}\\";
    queues_.push_back(odd);
    std::int64_t id = client.push("n", {}, on(odd));
    EXPECT_EQ(job_col(id, "queue"), odd);
    auto job = client.reserve_one({base, odd});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->id, id);
    EXPECT_EQ(job->queue, odd);
}

// ================================================================== complete

TEST_F(ClientTest, CompleteThenCompleteAgain) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_FALSE(client.complete(job->id, job->token + 1000000));  // not the claim's token
    EXPECT_TRUE(job_exists(id));
    EXPECT_TRUE(client.complete(job->id, job->token));
    EXPECT_FALSE(job_exists(id));
    EXPECT_FALSE(client.complete(*job));
    EXPECT_FALSE(client.complete(123456789012LL, 1));
}

// A token stays valid after its lease ran out as long as nobody re-claimed the job.
TEST_F(ClientTest, CompleteAfterLeaseExpiryWithoutReclaim) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    auto job = client.reserve_one({q}, 1s);
    ASSERT_TRUE(job.has_value());
    client.execute("SET jobqueue.clock_offset = '1 hour'");
    EXPECT_TRUE(client.complete(*job));
}

// A re-claim fences out the old token.
TEST_F(ClientTest, CompleteWithStaleTokenAfterReclaim) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    auto old = client.reserve_one({q}, 1s);
    ASSERT_TRUE(old.has_value());
    Client other;
    other.execute("SET jobqueue.clock_offset = '1 hour'");
    auto fresh = other.reserve_one({q}, 1h);
    ASSERT_TRUE(fresh.has_value());
    EXPECT_EQ(fresh->id, old->id);
    EXPECT_EQ(fresh->attempts, 2);
    EXPECT_FALSE(client.complete(*old));
    EXPECT_FALSE(client.extend(old->id, old->token, 1min));
    EXPECT_FALSE(client.release(old->id, old->token, 0ms));
    EXPECT_FALSE(client.fail(old->id, old->token, "x"));
    EXPECT_TRUE(job_exists(old->id));
    EXPECT_TRUE(other.complete(*fresh));
}

// complete_many completes only current (id, token) pairs, returning them in the order given.
TEST_F(ClientTest, CompleteManyOnlyCurrentPairs) {
    auto q = queue();
    for (int i = 0; i < 3; ++i) (void)client.push("n", {{"i", i}}, on(q));
    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.max_jobs = 3;
    auto jobs = client.reserve(ro);
    ASSERT_EQ(jobs.size(), 3u);
    // Make jobs[1]'s token stale: release it and claim it again.
    ASSERT_TRUE(client.release(jobs[1].id, jobs[1].token, 0ms));
    auto again = client.reserve_one({q});
    ASSERT_TRUE(again.has_value());
    ASSERT_EQ(again->id, jobs[1].id);

    std::vector<jobqueue::Claim> claims = {{jobs[2].id, jobs[2].token},
                                           {jobs[1].id, jobs[1].token},
                                           {jobs[0].id, jobs[0].token}};
    auto done = client.complete_many(claims);
    EXPECT_EQ(done, (std::vector<std::int64_t>{jobs[2].id, jobs[0].id}));
    EXPECT_FALSE(job_exists(jobs[0].id));
    EXPECT_TRUE(job_exists(jobs[1].id));
    EXPECT_FALSE(job_exists(jobs[2].id));
    // Again: nothing left to complete among them but the re-claimed one with its new token.
    EXPECT_TRUE(client.complete_many(claims).empty());
    EXPECT_EQ(client.complete_many({{again->id, again->token}}), (std::vector<std::int64_t>{again->id}));
    EXPECT_TRUE(client.complete_many({}).empty());
}

// =================================================================== release

// Release with a delay: due later, error recorded, claim cleared, attempts kept.
TEST_F(ClientTest, ReleaseWithDelay) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    TimePoint t0 = server_now();
    EXPECT_TRUE(client.release(id, job->token, 10min, "upstream 503"));
    TimePoint t1 = server_now();
    EXPECT_TRUE(between(job_time(id, "available_at"), t0 + 10min, t1 + 10min));
    EXPECT_EQ(job_col(id, "last_error"), "upstream 503");
    EXPECT_EQ(job_col(id, "attempts"), "1");
    EXPECT_TRUE(job_null(id, "reserved_until"));
    EXPECT_TRUE(job_null(id, "token"));
    EXPECT_EQ(client.pending(q), 0);
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    // The old token is dead.
    EXPECT_FALSE(client.release(id, job->token, 0ms));
    EXPECT_FALSE(client.complete(*job));
}

// Release with delay 0: due at once.
TEST_F(ClientTest, ReleaseNow) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_TRUE(client.release(id, job->token, 0ms));
    EXPECT_EQ(job_col(id, "last_error"), "");
    EXPECT_EQ(client.pending(q), 1);
}

// Release without a delay: the server's backoff, 10 s x [0.5, 1.0] after the first attempt.
TEST_F(ClientTest, ReleaseWithBackoff) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    TimePoint t0 = server_now();
    EXPECT_TRUE(client.release(id, job->token, std::nullopt, "flaky"));
    TimePoint t1 = server_now();
    EXPECT_TRUE(between(job_time(id, "available_at"), t0 + 5s, t1 + 10s));
    EXPECT_EQ(job_col(id, "last_error"), "flaky");
    EXPECT_EQ(client.pending(q), 0);
}

// Release of a job on its last attempt moves it to the failed table (true).
TEST_F(ClientTest, ReleaseOnLastAttemptFails) {
    auto q = queue();
    auto o = on(q);
    o.max_attempts = 1;
    std::int64_t id = client.push("n", {}, o);
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_TRUE(job->last_attempt());
    EXPECT_TRUE(client.release(id, job->token, 0ms, "gave up"));
    EXPECT_FALSE(job_exists(id));
    auto f = failed_row(client, id);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->error, "gave up");
}

// release_many releases the current pairs only, with the given delay and error.
TEST_F(ClientTest, ReleaseMany) {
    auto q = queue();
    for (int i = 0; i < 3; ++i) (void)client.push("n", {}, on(q));
    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.max_jobs = 3;
    auto jobs = client.reserve(ro);
    ASSERT_EQ(jobs.size(), 3u);
    ASSERT_TRUE(client.complete(jobs[2]));

    TimePoint t0 = server_now();
    auto released = client.release_many({{jobs[1].id, jobs[1].token}, {jobs[0].id, jobs[0].token},
                                         {jobs[2].id, jobs[2].token}},
                                        1h, "batch error");
    TimePoint t1 = server_now();
    EXPECT_EQ(released, (std::vector<std::int64_t>{jobs[1].id, jobs[0].id}));
    for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(between(job_time(jobs[i].id, "available_at"), t0 + 1h, t1 + 1h));
        EXPECT_EQ(job_col(jobs[i].id, "last_error"), "batch error");
        EXPECT_TRUE(job_null(jobs[i].id, "token"));
    }
    EXPECT_EQ(client.pending(q), 0);

    // Without a delay: the backoff, so not due now either.
    client.execute("SET jobqueue.clock_offset = '2 hours'");
    auto again = client.reserve(ro);
    ASSERT_EQ(again.size(), 2u);
    auto backoff = client.release_many({{again[0].id, again[0].token}, {again[1].id, again[1].token}});
    EXPECT_EQ(backoff.size(), 2u);
    EXPECT_EQ(client.pending(q), 0);
    EXPECT_EQ(job_col(again[0].id, "last_error"), "");
}

// ====================================================================== fail

// fail moves the job to the failed table with the error; failed() shows the row.
TEST_F(ClientTest, FailMovesToFailedTable) {
    auto q = queue();
    auto o = on(q);
    o.priority = 3;
    o.max_attempts = 5;
    nlohmann::json payload = {{"k", "v"}};
    std::int64_t id = client.push("charge", payload, o);
    TimePoint created = job_time(id, "created_at");
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    TimePoint t0 = server_now();
    EXPECT_TRUE(client.fail(id, job->token, "card declined"));
    TimePoint t1 = server_now();
    EXPECT_FALSE(job_exists(id));
    EXPECT_FALSE(client.fail(id, job->token, "again"));

    auto f = failed_row(client, id);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->id, id);
    EXPECT_EQ(f->queue, q);
    EXPECT_EQ(f->name, "charge");
    EXPECT_EQ(f->payload, payload);
    EXPECT_EQ(f->priority, 3);
    EXPECT_EQ(f->attempts, 1);
    EXPECT_EQ(f->max_attempts, 5);
    EXPECT_EQ(f->error, "card declined");
    EXPECT_TRUE(between(f->failed_at, t0, t1));
    EXPECT_EQ(to_micros(f->created_at), to_micros(created));
}

// fail without an error keeps the job's last error.
TEST_F(ClientTest, FailWithoutErrorKeepsLastError) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    ASSERT_TRUE(client.release(id, job->token, 0ms, "first problem"));
    job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_TRUE(client.fail(job->id, job->token));
    auto f = failed_row(client, id);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->error, "first problem");
}

TEST_F(ClientTest, FailMany) {
    auto q = queue();
    for (int i = 0; i < 3; ++i) (void)client.push("n", {{"i", i}}, on(q));
    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.max_jobs = 3;
    auto jobs = client.reserve(ro);
    ASSERT_EQ(jobs.size(), 3u);
    ASSERT_TRUE(client.release(jobs[0].id, jobs[0].token, 1h));  // jobs[0]'s token is now stale
    auto failed = client.fail_many({{jobs[0].id, jobs[0].token}, {jobs[2].id, jobs[2].token},
                                    {jobs[1].id, jobs[1].token}},
                                   "bulk failure");
    EXPECT_EQ(failed, (std::vector<std::int64_t>{jobs[2].id, jobs[1].id}));
    EXPECT_TRUE(job_exists(jobs[0].id));
    for (int i : {1, 2}) {
        EXPECT_FALSE(job_exists(jobs[i].id));
        auto f = failed_row(client, jobs[i].id);
        ASSERT_TRUE(f.has_value());
        EXPECT_EQ(f->error, "bulk failure");
        EXPECT_EQ(f->payload, (nlohmann::json{{"i", i}}));
    }
    EXPECT_FALSE(failed_exists(jobs[0].id));
}

// ==================================================================== extend

TEST_F(ClientTest, ExtendMovesReservedUntil) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q}, 10s);
    ASSERT_TRUE(job.has_value());
    TimePoint t0 = server_now();
    EXPECT_TRUE(client.extend(id, job->token, 1h));
    TimePoint t1 = server_now();
    EXPECT_TRUE(between(job_time(id, "reserved_until"), t0 + 1h, t1 + 1h));
    EXPECT_FALSE(client.extend(id, job->token + 1000000, 1h));
    // Past the original lease the job is still held.
    client.execute("SET jobqueue.clock_offset = '30 minutes'");
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    EXPECT_TRUE(client.complete(*job));
}

// ================================================================= reporting

// pending counts due jobs of one queue, or of all queues.
TEST_F(ClientTest, Pending) {
    auto qa = queue();
    auto qb = queue();
    EXPECT_EQ(client.pending(qa), 0);
    // Lock the table against other sessions' writes so the total is exact.
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_jobs IN SHARE ROW EXCLUSIVE MODE");
    std::int64_t all0 = client.pending();
    (void)client.push("n", {}, on(qa));
    (void)client.push("n", {}, on(qa));
    auto delayed = on(qa);
    delayed.delay = 1h;
    (void)client.push("n", {}, delayed);
    (void)client.push("n", {}, on(qb));
    EXPECT_EQ(client.pending(qa), 2);
    EXPECT_EQ(client.pending(qb), 1);
    EXPECT_EQ(client.pending(), all0 + 3);
    EXPECT_EQ(client.pending(std::nullopt), all0 + 3);
    client.execute("COMMIT");
    // A held job is not pending.
    auto job = client.reserve_one({qa});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(client.pending(qa), 1);
}

// stats partitions each queue's backlog; expired leases count as pending.
TEST_F(ClientTest, Stats) {
    auto base = queue();
    std::string qa = base + "_a", qb = base + "_b";
    queues_.push_back(qa);
    queues_.push_back(qb);
    auto prio = [&](int p) {
        auto o = on(qa);
        o.priority = p;
        return o;
    };
    (void)client.push("pending", {}, prio(0));
    auto delayed = prio(0);
    delayed.delay = 5h;
    (void)client.push("delayed", {}, delayed);
    std::int64_t short_lease = client.push("held1", {}, prio(10));
    std::int64_t long_lease = client.push("held2", {}, prio(9));
    auto j1 = client.reserve_one({qa}, 1h);
    auto j2 = client.reserve_one({qa}, 10h);
    ASSERT_TRUE(j1 && j2);
    ASSERT_EQ(j1->id, short_lease);
    ASSERT_EQ(j2->id, long_lease);
    (void)client.push("other", {}, on(qb));

    auto find = [&](const std::vector<jobqueue::QueueStats>& all, const std::string& q) -> std::ptrdiff_t {
        for (size_t i = 0; i < all.size(); ++i)
            if (all[i].queue == q) return static_cast<std::ptrdiff_t>(i);
        return -1;
    };
    auto s = client.stats();
    auto ia = find(s, qa), ib = find(s, qb);
    ASSERT_GE(ia, 0);
    ASSERT_GE(ib, 0);
    EXPECT_LT(ia, ib);  // ordered by queue
    EXPECT_EQ(s[ia].pending, 1);
    EXPECT_EQ(s[ia].delayed, 1);
    EXPECT_EQ(s[ia].reserved, 2);
    EXPECT_EQ(s[ia].total, 4);
    EXPECT_EQ(s[ib].pending, 1);
    EXPECT_EQ(s[ib].total, 1);
    for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].queue, s[i].queue);

    client.execute("SET jobqueue.clock_offset = '2 hours'");
    s = client.stats();
    ia = find(s, qa);
    ASSERT_GE(ia, 0);
    EXPECT_EQ(s[ia].pending, 2);
    EXPECT_EQ(s[ia].delayed, 1);
    EXPECT_EQ(s[ia].reserved, 1);
    EXPECT_EQ(s[ia].total, 4);
}

// queues() lists settings beside the backlog.
TEST_F(ClientTest, QueuesShowSettings) {
    auto base = queue();
    std::string with_jobs = base + "_jobs", with_settings = base + "_set";
    queues_.push_back(with_jobs);
    queues_.push_back(with_settings);
    (void)client.push("n", {}, on(with_jobs));
    auto delayed = on(with_jobs);
    delayed.delay = 1h;
    (void)client.push("n", {}, delayed);
    client.pause(with_settings);
    client.set_default_lease(with_settings, 90s);
    client.set_notify(with_settings, false);

    auto find = [&](const std::string& q) -> std::optional<jobqueue::QueueInfo> {
        for (auto& info : client.queues())
            if (info.stats.queue == q) return info;
        return std::nullopt;
    };
    auto a = find(with_jobs);
    ASSERT_TRUE(a.has_value());
    EXPECT_FALSE(a->paused);
    EXPECT_FALSE(a->default_lease.has_value());
    EXPECT_TRUE(a->notify);
    EXPECT_EQ(a->stats.pending, 1);
    EXPECT_EQ(a->stats.delayed, 1);
    EXPECT_EQ(a->stats.reserved, 0);
    EXPECT_EQ(a->stats.total, 2);

    auto b = find(with_settings);
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(b->paused);
    ASSERT_TRUE(b->default_lease.has_value());
    EXPECT_EQ(b->default_lease->count(), 90000);
    EXPECT_FALSE(b->notify);
    EXPECT_EQ(b->stats.total, 0);
    EXPECT_EQ(b->stats.pending, 0);

    client.resume(with_settings);
    client.set_default_lease(with_settings, std::nullopt);
    client.set_notify(with_settings, true);
    b = find(with_settings);
    ASSERT_TRUE(b.has_value());
    EXPECT_FALSE(b->paused);
    EXPECT_FALSE(b->default_lease.has_value());
    EXPECT_TRUE(b->notify);

    auto all = client.queues();
    for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].stats.queue, all[i].stats.queue);
}

// =============================================================== browsing (1.4)

namespace {
std::optional<jobqueue::QueueOverview> overview_of(Client& c, const std::string& q, std::optional<int> cap = {}) {
    for (auto& row : c.overview(cap))
        if (row.queue == q) return row;
    return std::nullopt;
}
}  // namespace

// overview() counts each state of a queue, its failed rows and its oldest
// pending job, and stops counting at the cap.
TEST_F(ClientTest, OverviewCountsEveryState) {
    auto q = queue();
    auto doomed = on(q);
    doomed.max_attempts = 1;
    doomed.priority = 9;
    (void)client.push("doomed", {}, doomed);
    auto d = client.reserve_one({q}, 1h);
    ASSERT_TRUE(d);
    ASSERT_TRUE(client.fail(d->id, d->token, "no"));
    auto held = on(q);
    held.priority = 5;
    (void)client.push("held", {}, held);
    ASSERT_TRUE(client.reserve_one({q}, 1h));
    TimePoint before = server_now();
    (void)client.push("p1", {}, on(q));
    (void)client.push("p2", {}, on(q));
    auto later = on(q);
    later.delay = 1h;
    (void)client.push("later", {}, later);
    client.pause(q);

    auto o = overview_of(client, q);
    ASSERT_TRUE(o.has_value());
    EXPECT_TRUE(o->paused);
    EXPECT_EQ(o->pending, 2);
    EXPECT_EQ(o->delayed, 1);
    EXPECT_EQ(o->reserved, 1);
    EXPECT_EQ(o->failed, 1);
    EXPECT_FALSE(o->counts_capped);
    EXPECT_TRUE(o->estimates);  // the extension (1.5) estimates past the cap
    EXPECT_FALSE(o->pending_estimate || o->delayed_estimate || o->reserved_estimate || o->failed_estimate);
    ASSERT_TRUE(o->oldest_pending_at.has_value());
    EXPECT_TRUE(between(*o->oldest_pending_at, before, server_now()));

    // past the cap: the count stops there, and the pending jobs are estimated
    auto capped = overview_of(client, q, 1);
    ASSERT_TRUE(capped.has_value());
    EXPECT_TRUE(capped->counts_capped);
    EXPECT_EQ(capped->pending, 1);
    ASSERT_TRUE(capped->pending_estimate.has_value());
    EXPECT_GE(*capped->pending_estimate, 2);
    EXPECT_FALSE(capped->failed_estimate.has_value());
    EXPECT_THROW((void)client.overview(0), jobqueue::InvalidArgument);
}

// jobs_page() pages a queue by id, filters by state, and says who holds a job.
TEST_F(ClientTest, JobsPageByKeysetAndState) {
    auto q = queue();
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(client.push("n" + std::to_string(i), {}, on(q)));
    auto keyed = on(q);
    keyed.unique_key = q + "_key";
    keyed.delay = 1h;
    std::int64_t delayed = client.push("keyed", {}, keyed);
    jobqueue::JobsPageOptions first;
    first.max_rows = 2;
    auto page = client.jobs_page(q, first);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, ids[0]);
    EXPECT_EQ(page[1].id, ids[1]);
    EXPECT_EQ(page[0].state, "pending");
    EXPECT_EQ(page[0].name, "n0");
    jobqueue::JobsPageOptions next = first;
    next.after_id = page[1].id;
    page = client.jobs_page(q, next);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, ids[2]);
    EXPECT_EQ(page[1].id, ids[3]);

    auto claimed = client.reserve_one({q}, 1h, "page-worker");
    ASSERT_TRUE(claimed);
    jobqueue::JobsPageOptions reserved;
    reserved.state = "reserved";
    page = client.jobs_page(q, reserved);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, claimed->id);
    EXPECT_EQ(page[0].reserved_by, "page-worker");
    ASSERT_TRUE(page[0].reserved_until.has_value());
    EXPECT_EQ(*page[0].reserved_until, claimed->reserved_until);

    jobqueue::JobsPageOptions waiting;
    waiting.state = "delayed";
    page = client.jobs_page(q, waiting);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, delayed);
    EXPECT_EQ(page[0].unique_key, q + "_key");
    EXPECT_FALSE(page[0].reserved_by.has_value());

    jobqueue::JobsPageOptions bad;
    bad.state = "sleeping";
    EXPECT_THROW((void)client.jobs_page(q, bad), jobqueue::InvalidArgument);
}

// job() shows a live job and a failed one in full, and nothing for an unknown id.
TEST_F(ClientTest, JobLiveAndFailed) {
    auto q = queue();
    nlohmann::json payload = {{"html", "<script>x</script>"}, {"n", 1}};
    std::int64_t live = client.push("live", payload, on(q));
    auto d = client.job(live);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->summary.id, live);
    EXPECT_EQ(d->summary.state, "pending");
    EXPECT_EQ(d->queue, q);
    EXPECT_EQ(d->payload, payload);
    EXPECT_TRUE(d->summary.available_at.has_value());
    EXPECT_FALSE(d->failed_at.has_value());

    auto doomed = on(q);
    doomed.max_attempts = 1;
    doomed.priority = 9;
    std::int64_t dead = client.push("dead", {}, doomed);
    auto claim = client.reserve_one({q}, 1h);
    ASSERT_TRUE(claim && claim->id == dead);
    ASSERT_TRUE(client.fail(claim->id, claim->token, "it broke"));
    d = client.job(dead);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->summary.state, "failed");
    EXPECT_EQ(d->last_error, "it broke");
    EXPECT_TRUE(d->failed_at.has_value());
    EXPECT_EQ(d->summary.attempts, 1);

    EXPECT_FALSE(client.job(-1).has_value());
}

// leases() lists who holds which job.
TEST_F(ClientTest, LeasesNameTheirWorker) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto claim = client.reserve_one({q}, 1h, q + "_worker");
    ASSERT_TRUE(claim);
    std::optional<jobqueue::Lease> mine;
    for (auto& lease : client.leases(1000))
        if (lease.id == id) mine = lease;
    ASSERT_TRUE(mine.has_value());
    EXPECT_EQ(mine->worker, q + "_worker");
    EXPECT_EQ(mine->queue, q);
    EXPECT_EQ(mine->name, "n");
    EXPECT_EQ(mine->attempts, 1);
    EXPECT_EQ(mine->reserved_until, claim->reserved_until);
}

// =============================================================== counters (1.4)

namespace {
std::optional<jobqueue::QueueCounters> counters_of(Client& c, const std::string& q) {
    for (auto& row : c.counters())
        if (row.queue == q) return row;
    return std::nullopt;
}
}  // namespace

// counters() reads queue_counters(): what this test did to its queue, and
// nothing it did not (the test cluster preloads the library).
TEST_F(ClientTest, CountersCountWhatHappened) {
    auto q = queue();
    EXPECT_FALSE(counters_of(client, q).has_value());
    for (int i = 0; i < 4; ++i) (void)client.push("n", {}, on(q));
    auto a = client.reserve_one({q}, 1h);
    auto b = client.reserve_one({q}, 1h);
    auto c = client.reserve_one({q}, 1h);
    ASSERT_TRUE(a && b && c);
    ASSERT_TRUE(client.complete(*a));
    ASSERT_TRUE(client.fail(b->id, b->token, "no"));
    ASSERT_TRUE(client.release(c->id, c->token, 0ms));
    EXPECT_EQ(client.retry_failed(b->id), 1);
    auto counted = counters_of(client, q);
    ASSERT_TRUE(counted.has_value());
    EXPECT_EQ(counted->pushed, 4);
    EXPECT_EQ(counted->claimed, 3);
    EXPECT_EQ(counted->completed, 1);
    EXPECT_EQ(counted->failed, 1);
    EXPECT_EQ(counted->released, 1);
    EXPECT_EQ(counted->retried, 1);
    EXPECT_EQ(counted->expired, 0);
}

// reset_counters() starts this database's counters from zero.
TEST_F(ClientTest, ResetCounters) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    ASSERT_TRUE(counters_of(client, q).has_value());
    client.reset_counters();
    auto after = counters_of(client, q);
    EXPECT_TRUE(!after || after->pushed == 0);
    (void)client.push("n", {}, on(q));
    after = counters_of(client, q);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->pushed, 1);
}

// =============================================================== failed jobs

// failed_count counts the failed table's rows.
TEST_F(ClientTest, FailedCount) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    (void)client.push("n", {}, on(q));
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_failed_jobs IN SHARE ROW EXCLUSIVE MODE");
    std::int64_t n0 = client.failed_count();
    EXPECT_EQ(n0, std::stoll(sql_value(client.connection(), "SELECT count(*) FROM queue_failed_jobs")));
    auto a = client.reserve_one({q});
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(client.fail(a->id, a->token, "x"));
    EXPECT_EQ(client.failed_count(), n0 + 1);
    auto b = client.reserve_one({q});
    ASSERT_TRUE(b.has_value());
    ASSERT_TRUE(client.fail(b->id, b->token, "y"));
    EXPECT_EQ(client.failed_count(), n0 + 2);
    client.execute("COMMIT");
}

// failed(limit): newest first, at most limit rows.
TEST_F(ClientTest, FailedNewestFirstWithLimit) {
    auto q = queue();
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(client.push("n", {{"i", i}}, on(q)));
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_failed_jobs IN SHARE ROW EXCLUSIVE MODE");
    for (int i = 0; i < 3; ++i) {
        auto j = client.reserve_one({q});
        ASSERT_TRUE(j.has_value());
        ASSERT_EQ(j->id, ids[i]);
        ASSERT_TRUE(client.fail(j->id, j->token, "e" + std::to_string(i)));
    }
    // The table is locked: nobody else's rows can come between.
    auto two = client.failed(2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].id, ids[2]);
    EXPECT_EQ(two[1].id, ids[1]);
    EXPECT_EQ(two[0].error, "e2");
    EXPECT_EQ(two[0].payload, (nlohmann::json{{"i", 2}}));
    EXPECT_GE(to_micros(two[0].failed_at), to_micros(two[1].failed_at));
    auto one = client.failed(1);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].id, ids[2]);
    auto dflt = client.failed();
    EXPECT_EQ(static_cast<std::int64_t>(dflt.size()), std::min<std::int64_t>(50, client.failed_count()));
    client.execute("COMMIT");
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.failed(0); }, "22023"));
}

// failed(limit, queue) only shows that queue's rows; failed_job(id) fetches one row.
TEST_F(ClientTest, FailedOfOneQueueAndById) {
    auto q = queue();
    auto other = queue();
    std::int64_t a = client.push("a", {}, on(q));
    std::int64_t b = client.push("b", {}, on(other));
    std::int64_t c = client.push("c", {}, on(q));
    for (const auto& name : {q, other, q}) {
        auto j = client.reserve_one({name});
        ASSERT_TRUE(j.has_value());
        ASSERT_TRUE(client.fail(j->id, j->token, "err " + j->name));
    }
    auto mine = client.failed(10, q);
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[0].id, c);
    EXPECT_EQ(mine[1].id, a);
    auto theirs = client.failed(10, other);
    ASSERT_EQ(theirs.size(), 1u);
    EXPECT_EQ(theirs[0].id, b);
    EXPECT_EQ(client.failed(1, q).size(), 1u);

    auto row = client.failed_job(b);
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->id, b);
    EXPECT_EQ(row->queue, other);
    EXPECT_EQ(row->name, "b");
    EXPECT_EQ(row->error, "err b");
    EXPECT_FALSE(client.failed_job(987654321098LL).has_value());
    ASSERT_EQ(client.retry_failed(b), 1);
    EXPECT_FALSE(client.failed_job(b).has_value());
}

// retry_failed(id) puts the job back under its id: attempts 0, new max_attempts, due now.
TEST_F(ClientTest, RetryFailedOne) {
    auto q = queue();
    auto o = on(q);
    o.priority = 3;
    o.max_attempts = 5;
    o.unique_key = "retry-key";
    std::int64_t id = client.push("n", {{"p", 1}}, o);
    TimePoint created = job_time(id, "created_at");
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    ASSERT_TRUE(client.fail(id, job->token, "broken"));
    ASSERT_FALSE(job_exists(id));

    EXPECT_EQ(client.retry_failed(id, 7), 1);
    EXPECT_FALSE(failed_exists(id));
    ASSERT_TRUE(job_exists(id));
    EXPECT_EQ(job_col(id, "attempts"), "0");
    EXPECT_EQ(job_col(id, "max_attempts"), "7");
    EXPECT_EQ(job_col(id, "priority"), "3");
    EXPECT_EQ(job_col(id, "last_error"), "");
    EXPECT_TRUE(job_null(id, "unique_key"));
    EXPECT_EQ(to_micros(job_time(id, "created_at")), to_micros(created));
    EXPECT_EQ(client.pending(q), 1);
    auto again = client.reserve_one({q});
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->id, id);
    EXPECT_EQ(again->attempts, 1);
    EXPECT_EQ(again->max_attempts, 7);
    EXPECT_EQ(again->payload, (nlohmann::json{{"p", 1}}));

    EXPECT_EQ(client.retry_failed(id), 0);  // no longer failed
}

// retry_failed() without an id requeues every failed job.
TEST_F(ClientTest, RetryFailedAll) {
    auto q = queue();
    std::int64_t a = client.push("n", {}, on(q));
    std::int64_t b = client.push("n", {}, on(q));
    for (int i = 0; i < 2; ++i) {
        auto j = client.reserve_one({q});
        ASSERT_TRUE(j.has_value());
        ASSERT_TRUE(client.fail(j->id, j->token, "x"));
    }
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_failed_jobs IN SHARE ROW EXCLUSIVE MODE");
    std::int64_t n = std::stoll(sql_value(client.connection(), "SELECT count(*) FROM queue_failed_jobs"));
    ASSERT_GE(n, 2);
    EXPECT_EQ(client.retry_failed(), n);
    EXPECT_EQ(client.failed_count(), 0);
    EXPECT_EQ(client.pending(q), 2);
    EXPECT_EQ(sql_value(client.connection(), "SELECT max_attempts FROM queue_jobs WHERE id = " + std::to_string(a)),
              "3");
    EXPECT_EQ(sql_value(client.connection(), "SELECT attempts FROM queue_jobs WHERE id = " + std::to_string(b)), "0");
    client.execute("ROLLBACK");  // leave other sessions' failed jobs alone
}

TEST_F(ClientTest, ForgetFailedById) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    std::int64_t keep = client.push("n", {}, on(q));
    for (int i = 0; i < 2; ++i) {
        auto j = client.reserve_one({q});
        ASSERT_TRUE(j.has_value());
        ASSERT_TRUE(client.fail(j->id, j->token, "x"));
    }
    EXPECT_EQ(client.forget_failed(id), 1);
    EXPECT_FALSE(failed_exists(id));
    EXPECT_TRUE(failed_exists(keep));
    EXPECT_EQ(client.forget_failed(id), 0);
}

// forget_failed_before deletes the rows that failed before the given time.
TEST_F(ClientTest, ForgetFailedBefore) {
    auto q = queue();
    std::int64_t old_id = client.push("n", {}, on(q));
    std::int64_t new_id = client.push("n", {}, on(q));
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_failed_jobs IN SHARE ROW EXCLUSIVE MODE");
    auto old_job = client.reserve_one({q});
    ASSERT_TRUE(old_job.has_value());
    ASSERT_EQ(old_job->id, old_id);
    client.execute("SET LOCAL jobqueue.clock_offset = '-3650 days'");
    ASSERT_TRUE(client.fail(old_job->id, old_job->token, "long ago"));
    client.execute("SET LOCAL jobqueue.clock_offset = '0'");
    auto new_job = client.reserve_one({q});
    ASSERT_TRUE(new_job.has_value());
    ASSERT_TRUE(client.fail(new_job->id, new_job->token, "just now"));

    TimePoint cutoff = server_now() - std::chrono::hours(24 * 365 * 5);
    std::int64_t older = std::stoll(sql_value(
        client.connection(), "SELECT count(*) FROM queue_failed_jobs WHERE failed_at < '" + jobqueue::format_time(cutoff) + "'"));
    ASSERT_GE(older, 1);
    EXPECT_EQ(client.forget_failed_before(cutoff), older);
    EXPECT_EQ(sql_value(client.connection(),
                        "SELECT count(*) FROM queue_failed_jobs WHERE id = " + std::to_string(old_id)),
              "0");
    EXPECT_EQ(sql_value(client.connection(),
                        "SELECT count(*) FROM queue_failed_jobs WHERE id = " + std::to_string(new_id)),
              "1");
    client.execute("ROLLBACK");
}

TEST_F(ClientTest, ForgetAllFailed) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    auto j = client.reserve_one({q});
    ASSERT_TRUE(j.has_value());
    ASSERT_TRUE(client.fail(j->id, j->token, "x"));
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_failed_jobs IN SHARE ROW EXCLUSIVE MODE");
    std::int64_t n = client.failed_count();
    ASSERT_GE(n, 1);
    EXPECT_EQ(client.forget_all_failed(), n);
    EXPECT_EQ(client.failed_count(), 0);
    EXPECT_TRUE(client.failed().empty());
    client.execute("ROLLBACK");  // leave other sessions' failed jobs alone
}

// ============================================================ administration

TEST_F(ClientTest, CancelPendingDelayedHeldAndForced) {
    auto q = queue();
    auto keyed = on(q);
    keyed.unique_key = "cancel-key";
    std::int64_t pending_id = client.push("n", {}, keyed);
    auto delayed = on(q);
    delayed.delay = 1h;
    std::int64_t delayed_id = client.push("n", {}, delayed);
    std::int64_t held_id = client.push("n", {}, on(q));

    EXPECT_TRUE(client.cancel(pending_id));
    EXPECT_FALSE(job_exists(pending_id));
    EXPECT_FALSE(client.cancel(pending_id));  // gone
    // Its unique key is free again.
    EXPECT_NE(client.push("n", {}, keyed), pending_id);

    EXPECT_TRUE(client.cancel(delayed_id));
    EXPECT_FALSE(job_exists(delayed_id));

    auto job = client.reserve_one({q});  // held_id was due before the re-pushed job
    ASSERT_TRUE(job.has_value());
    ASSERT_EQ(job->id, held_id);
    EXPECT_FALSE(client.cancel(held_id));
    EXPECT_TRUE(job_exists(held_id));
    EXPECT_TRUE(client.cancel(held_id, true));
    EXPECT_FALSE(job_exists(held_id));
    EXPECT_FALSE(client.complete(*job));
    EXPECT_FALSE(client.cancel(987654321098LL));
}

// A held job whose lease ran out is not running any more: cancel takes it.
TEST_F(ClientTest, CancelExpiredLease) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q}, 1s);
    ASSERT_TRUE(job.has_value());
    client.execute("SET jobqueue.clock_offset = '1 hour'");
    EXPECT_TRUE(client.cancel(id));
    EXPECT_FALSE(job_exists(id));
}

TEST_F(ClientTest, ClearDeletesEveryJobOfTheQueue) {
    auto q = queue();
    auto other = queue();
    (void)client.push("n", {}, on(q));
    auto delayed = on(q);
    delayed.delay = 1h;
    (void)client.push("n", {}, delayed);
    (void)client.push("n", {}, on(q));
    auto held = client.reserve_one({q});
    ASSERT_TRUE(held.has_value());
    (void)client.push("n", {}, on(other));
    EXPECT_EQ(client.clear(q), 3);
    EXPECT_EQ(jobs_in(q), 0);
    EXPECT_EQ(jobs_in(other), 1);
    EXPECT_FALSE(client.complete(*held));
    EXPECT_EQ(client.clear(q), 0);
}

TEST_F(ClientTest, PauseAndResume) {
    auto q = queue();
    auto other = queue();
    std::int64_t id = client.push("n", {}, on(q));
    std::int64_t other_id = client.push("n", {}, on(other));
    client.pause(q);
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    EXPECT_TRUE(job_exists(id));
    // Other queues are not affected, also in the same claim.
    auto got = client.reserve_one({q, other});
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id, other_id);
    client.pause(q);  // twice is fine
    EXPECT_FALSE(client.reserve_one({q}).has_value());
    client.resume(q);
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->id, id);
}

// A string holding a NUL byte is refused before it reaches libpq, which
// would cut it at the NUL: pausing "q\0 other" must not pause q, and
// clearing it must not clear q (InvalidArgument, 22021, naming the argument).
TEST_F(ClientTest, NulByteInAStringIsRefused) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    std::string cut = q + std::string("\0 (a different queue)", 22);
    ASSERT_EQ(cut.size(), q.size() + 22);
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { client.pause(cut); }, "22021"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.clear(cut); }, "22021"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push(cut, {}, on(q)); }, "22021"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { (void)client.push("n", {}, on(cut)); }, "22021"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { client.execute(std::string("SELECT 1\0; SELECT 2", 19)); }, "22021"));
    try {
        client.pause(cut);
    } catch (const jobqueue::InvalidArgument& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("argument $1 of jobqueue_pause contains a NUL byte"), std::string::npos) << what;
    }
    // nothing happened to q: not paused, its job still there, nothing else pushed
    EXPECT_EQ(sql("SELECT count(*) FROM queue_settings WHERE queue = " + lit(q) + " AND paused"), "0");
    EXPECT_TRUE(job_exists(id));
    EXPECT_EQ(jobs_in(q), 1);
    // and the connection is still good
    client.pause(q);
    EXPECT_EQ(sql("SELECT count(*) FROM queue_settings WHERE queue = " + lit(q) + " AND paused"), "1");
}

// A reserve without a lease uses the queue's default lease (60 s without one).
TEST_F(ClientTest, SetDefaultLease) {
    auto q = queue();
    auto plain = queue();
    client.set_default_lease(q, 5min);
    (void)client.push("n", {}, on(q));
    (void)client.push("n", {}, on(q));
    (void)client.push("n", {}, on(plain));

    TimePoint t0 = server_now();
    auto job = client.reserve_one({q});
    TimePoint t1 = server_now();
    ASSERT_TRUE(job.has_value());
    EXPECT_TRUE(between(job->reserved_until, t0 + 5min, t1 + 5min));

    t0 = server_now();
    auto explicit_lease = client.reserve_one({q}, 20s);
    t1 = server_now();
    ASSERT_TRUE(explicit_lease.has_value());
    EXPECT_TRUE(between(explicit_lease->reserved_until, t0 + 20s, t1 + 20s));

    t0 = server_now();
    auto dflt = client.reserve_one({plain});
    t1 = server_now();
    ASSERT_TRUE(dflt.has_value());
    EXPECT_TRUE(between(dflt->reserved_until, t0 + 60s, t1 + 60s));

    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { client.set_default_lease(q, 500ms); }, "22023"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { client.set_default_lease(q, 25h); }, "22023"));
}

// With notify off a queue sends no wake-ups; on again, it does.
TEST_F(ClientTest, SetNotify) {
    auto quiet = queue();
    auto loud = queue();
    Client listener;
    listen_and_drain(listener);
    client.set_notify(quiet, false);
    (void)client.push("n", {}, on(quiet));
    (void)client.push("n", {}, on(loud));
    // Notifications arrive in commit order: the first of ours must be loud.
    EXPECT_EQ(next_wakeup(listener, {quiet, loud}), loud);
    client.set_notify(quiet, true);
    (void)client.push("n", {}, on(quiet));
    EXPECT_EQ(next_wakeup(listener, {quiet, loud}), quiet);
}

// ================================================================== wake-ups

TEST_F(ClientTest, WaitTimesOutWithNothing) {
    Client listener;
    // Another session's wake-up may come in; within a few rounds one wait must time out.
    bool timed_out = false;
    for (int i = 0; i < 20 && !timed_out; ++i) timed_out = !listener.wait(200ms).has_value();
    EXPECT_TRUE(timed_out);
}

TEST_F(ClientTest, WaitReturnsTheQueueOfAPushFromAnotherConnection) {
    auto q = queue();
    Client listener;
    listen_and_drain(listener);  // LISTEN now
    Client producer;
    (void)producer.push("n", {}, on(q));
    EXPECT_EQ(next_wakeup(listener, {q}), q);
}

// A notification that arrived before wait() is returned at once.
TEST_F(ClientTest, WaitReturnsEarlierNotification) {
    auto q = queue();
    Client listener;
    listen_and_drain(listener);
    Client producer;
    (void)producer.push("n", {}, on(q));
    // Make sure the notification reached the listener's socket: a round trip on it.
    (void)listener.pending(q);
    EXPECT_EQ(next_wakeup(listener, {q}, 5s), q);
}

// A rolled-back push wakes nobody (the later committed push is the first wake-up).
TEST_F(ClientTest, WaitIgnoresRolledBackPush) {
    auto rolled_back = queue();
    auto committed = queue();
    Client listener;
    listen_and_drain(listener);
    Client producer;
    producer.execute("BEGIN");
    (void)producer.push("n", {}, on(rolled_back));
    producer.execute("ROLLBACK");
    (void)producer.push("n", {}, on(committed));
    EXPECT_EQ(next_wakeup(listener, {rolled_back, committed}), committed);
    EXPECT_EQ(jobs_in(rolled_back), 0);
}

// Delayed pushes and pushes of a held unique key wake nobody; one per queue per transaction.
TEST_F(ClientTest, WaitOnlyForJobsDueNow) {
    auto q = queue();
    auto marker = queue();
    auto keyed = on(q);
    keyed.unique_key = "wake-key";
    (void)client.push("n", {}, keyed);  // before LISTEN
    Client listener;
    listen_and_drain(listener);
    Client producer;
    auto delayed = on(q);
    delayed.delay = 1h;
    (void)producer.push("n", {}, delayed);
    (void)producer.push("n", {}, keyed);  // existing holder: no wake-up
    (void)producer.push("n", {}, on(marker));
    EXPECT_EQ(next_wakeup(listener, {q, marker}), marker);

    producer.execute("BEGIN");
    for (int i = 0; i < 3; ++i) (void)producer.push("n", {}, on(q));
    producer.execute("COMMIT");
    (void)producer.push("n", {}, on(marker));
    EXPECT_EQ(next_wakeup(listener, {q, marker}), q);
    EXPECT_EQ(next_wakeup(listener, {q, marker}), marker);
}

// A release with delay 0 and a retry of a failed job wake workers.
TEST_F(ClientTest, WaitForReleaseAndRetry) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    Client listener;
    listen_and_drain(listener);
    ASSERT_TRUE(client.release(id, job->token, 0ms));
    EXPECT_EQ(next_wakeup(listener, {q}), q);
    job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    ASSERT_TRUE(client.fail(id, job->token, "x"));
    EXPECT_EQ(client.retry_failed(id), 1);
    EXPECT_EQ(next_wakeup(listener, {q}), q);
}

// ======================================================= borrowed connections

// A push on a borrowed connection joins the application's transaction: rollback.
TEST_F(ClientTest, BorrowedPushRollsBackWithTheApplication) {
    auto q = queue();
    ConnPtr app = connect_env();
    sql_value(app.get(), "BEGIN");
    {
        Client borrowed = Client::borrow(app.get());
        EXPECT_FALSE(borrowed.owns_connection());
        EXPECT_EQ(borrowed.connection(), app.get());
        std::int64_t id = borrowed.push("n", {{"x", 1}}, on(q));
        EXPECT_GT(id, 0);
        EXPECT_EQ(sql_value(app.get(), "SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q)), "1");
        EXPECT_EQ(jobs_in(q), 0);  // not visible outside before commit
    }
    sql_value(app.get(), "ROLLBACK");
    EXPECT_EQ(jobs_in(q), 0);
    EXPECT_EQ(PQstatus(app.get()), CONNECTION_OK);  // the Client did not close it
}

// ... and commit.
TEST_F(ClientTest, BorrowedPushCommitsWithTheApplication) {
    auto q = queue();
    ConnPtr app = connect_env();
    sql_value(app.get(), "BEGIN");
    std::int64_t id = 0;
    {
        Client borrowed = Client::borrow(app.get());
        id = borrowed.push("n", {{"x", 1}}, on(q));
        (void)borrowed.push("m", {}, on(q));
        EXPECT_EQ(jobs_in(q), 0);
    }
    sql_value(app.get(), "COMMIT");
    EXPECT_EQ(jobs_in(q), 2);
    EXPECT_EQ(job_col(id, "name"), "n");
    EXPECT_EQ(client.pending(q), 2);
    // The connection still works for the application.
    EXPECT_EQ(sql_value(app.get(), "SELECT 1"), "1");
}

// A connection may be borrowed again and again (one Client per transaction is
// the natural use): the statements another Client prepared on it are reused,
// and the application's transaction is never aborted by a duplicate PREPARE.
TEST_F(ClientTest, BorrowTwice) {
    auto q = queue();
    ConnPtr app = connect_env();
    { (void)Client::borrow(app.get()).push("n", {}, on(q)); }
    { (void)Client::borrow(app.get()).push("n", {}, on(q)); }
    EXPECT_EQ(jobs_in(q), 2);

    sql_value(app.get(), "BEGIN");
    { (void)Client::borrow(app.get()).push("n", {}, on(q)); }
    { (void)Client::borrow(app.get()).push("n", {}, on(q)); }
    EXPECT_EQ(PQtransactionStatus(app.get()), PQTRANS_INTRANS);
    sql_value(app.get(), "COMMIT");
    EXPECT_EQ(jobs_in(q), 4);
}

TEST_F(ClientTest, BorrowedCannotReconnect) {
    ConnPtr app = connect_env();
    Client borrowed = Client::borrow(app.get());
    EXPECT_TRUE(borrowed.healthy());
    EXPECT_THROW(borrowed.reconnect(), jobqueue::ConnectionError);
}

// ==================================================================== errors

// Bad arguments raise InvalidArgument with the server's SQLSTATE, and change nothing.
TEST_F(ClientTest, BadArgumentsRaiseInvalidArgument) {
    auto q = queue();
    auto o = on(q);
    o.delay = -1s;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push("n", {}, o); }, "22023"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push("", {}, on(q)); }, "22023"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { (void)client.push("n", {}, on(std::string(65, 'q'))); }, "54000"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push("n", {}, on("")); }, "22023"));
    o = on(q);
    o.max_attempts = 0;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.push("n", {}, o); }, "22023"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { (void)client.push(std::string(201, 'n'), {}, on(q)); }, "54000"));
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { (void)client.push("n", {{"big", std::string(1024 * 1024 + 10, 'x')}}, on(q)); }, "54000"));

    jobqueue::ReserveOptions ro;
    ro.queues = {q};
    ro.max_jobs = 0;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.reserve(ro); }, "22023"));
    ro.max_jobs = 10001;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.reserve(ro); }, "22023"));
    ro.max_jobs = 1;
    ro.lease = 500ms;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.reserve(ro); }, "22023"));
    ro.lease = 25h;
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.reserve(ro); }, "22023"));
    ro.lease.reset();
    ro.queues = {""};
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>([&] { (void)client.reserve(ro); }, "22023"));

    // NULL for an argument without a default (only reachable through SQL).
    EXPECT_TRUE(throws_with_state<jobqueue::InvalidArgument>(
        [&] { client.execute("SELECT queue_delete(NULL, 1)"); }, "22004"));

    EXPECT_EQ(jobs_in(q), 0);
    // The connection is still usable after the errors.
    EXPECT_TRUE(client.healthy());
    EXPECT_GT(client.push("n", {}, on(q)), 0);
}

// An error inside a transaction block leaves it aborted until ROLLBACK; the client then works again.
TEST_F(ClientTest, ErrorInsideTransactionBlock) {
    auto q = queue();
    client.execute("BEGIN");
    (void)client.push("n", {}, on(q));
    EXPECT_THROW((void)client.push("", {}, on(q)), jobqueue::InvalidArgument);
    EXPECT_THROW((void)client.pending(q), jobqueue::Error);  // 25P02: transaction aborted
    client.execute("ROLLBACK");
    EXPECT_EQ(client.pending(q), 0);
}

// A read-only transaction of the caller's own refuses a push with 25006, as
// a standby does; but the server is no standby (in_hot_standby is off), so
// it is an ordinary error and the connection stays (standby_test.cpp has
// the standby's side).
TEST_F(ClientTest, ReadOnlyTransactionIsNotAStandby) {
    auto q = queue();
    client.execute("BEGIN READ ONLY");
    try {
        (void)client.push("n", {}, on(q));
        ADD_FAILURE() << "a push in a read-only transaction succeeded";
    } catch (const jobqueue::ConnectionError& e) {
        ADD_FAILURE() << "taken for a lost connection: " << e.what();
    } catch (const jobqueue::Error& e) {
        EXPECT_EQ(e.sqlstate(), "25006") << e.what();
    }
    EXPECT_TRUE(client.healthy());
    client.execute("ROLLBACK");
    EXPECT_GT(client.push("n", {}, on(q)), 0);
}

// A role without a tier gets PermissionDenied; with the producer tier it can push but not reserve.
TEST_F(ClientTest, PermissionDenied) {
    auto q = queue();
    std::string role = "jq_client_test_role_" + std::to_string(getpid());
    sql("SET client_min_messages = warning");
    sql("DROP ROLE IF EXISTS " + role);
    sql("CREATE ROLE " + role + " NOLOGIN");
    struct DropRole {
        ClientTest* t;
        std::string role;
        ~DropRole() {
            try {
                t->sql("DROP OWNED BY " + role);
                t->sql("DROP ROLE " + role);
            } catch (...) {
            }
        }
    } drop{this, role};

    (void)client.pending(q);  // loads the extension's library, so its settings are known
    client.execute("SET ROLE " + role);
    EXPECT_TRUE(throws_with_state<jobqueue::PermissionDenied>([&] { (void)client.push("n", {}, on(q)); }, "42501"));
    EXPECT_TRUE(throws_with_state<jobqueue::PermissionDenied>([&] { (void)client.reserve_one({q}); }, "42501"));
    EXPECT_TRUE(throws_with_state<jobqueue::PermissionDenied>(
        [&] { client.execute("SET jobqueue.clock_offset = '1 hour'"); }, "42501"));
    EXPECT_EQ(jobs_in(q), 0);

    sql("SELECT queue_grant(" + lit(role) + ", 'producer')");
    EXPECT_GT(client.push("n", {}, on(q)), 0);
    EXPECT_EQ(client.pending(q), 1);
    EXPECT_TRUE(throws_with_state<jobqueue::PermissionDenied>([&] { (void)client.reserve_one({q}); }, "42501"));
    EXPECT_TRUE(throws_with_state<jobqueue::PermissionDenied>([&] { (void)client.failed(1); }, "42501"));
    client.execute("RESET ROLE");
    EXPECT_TRUE(client.reserve_one({q}).has_value());
}

// Under REPEATABLE READ a claim of a job changed since the snapshot fails with 40001.
TEST_F(ClientTest, SerializationFailureIsRetryable) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    client.execute("BEGIN ISOLATION LEVEL REPEATABLE READ");
    EXPECT_EQ(client.pending(q), 1);  // takes the snapshot
    {
        Client other;
        auto job = other.reserve_one({q});
        ASSERT_TRUE(job.has_value());
        ASSERT_TRUE(other.release(job->id, job->token, 0ms));  // due again, but changed
    }
    EXPECT_TRUE(throws_with_state<jobqueue::RetryableError>([&] { (void)client.reserve_one({q}); }, "40001"));
    client.execute("ROLLBACK");
    // Retried, it works.
    EXPECT_TRUE(client.reserve_one({q}).has_value());
}

// ================================================================ connections

// A connection killed by the server: the next call throws ConnectionError,
// healthy() is false, reconnect() restores the client.
TEST_F(ClientTest, KilledConnectionThenReconnect) {
    auto q = queue();
    (void)client.push("n", {}, on(q));  // some statements already prepared
    EXPECT_TRUE(client.healthy());
    EXPECT_TRUE(client.owns_connection());
    int pid = PQbackendPID(client.connection());
    ASSERT_TRUE(sql_bool("SELECT pg_terminate_backend(" + std::to_string(pid) + ")"));
    for (int i = 0; i < 1000 && sql_bool("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = " +
                                         std::to_string(pid) + ")");
         ++i)
        std::this_thread::sleep_for(10ms);

    EXPECT_THROW((void)client.pending(q), jobqueue::ConnectionError);
    EXPECT_FALSE(client.healthy());
    EXPECT_THROW((void)client.pending(q), jobqueue::ConnectionError);  // still broken, fails at once

    client.reconnect();
    EXPECT_TRUE(client.healthy());
    EXPECT_NE(PQbackendPID(client.connection()), pid);
    EXPECT_EQ(client.pending(q), 1);
    EXPECT_GT(client.push("n", {}, on(q)), 0);  // re-prepared on the new connection
    EXPECT_EQ(client.pending(q), 2);
}

// A write sent outside a transaction block whose connection dies before the
// answer has an unknown outcome: InDoubtError.
TEST_F(ClientTest, WriteKilledWhileRunningIsInDoubt) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());

    ConnPtr locker = connect_env();
    sql_value(locker.get(), "BEGIN");
    sql_value(locker.get(), "SELECT id FROM queue_jobs WHERE id = " + std::to_string(id) + " FOR UPDATE");

    Client worker;
    int pid = PQbackendPID(worker.connection());
    std::exception_ptr error;
    std::atomic<bool> returned{false};
    bool result = false;
    std::thread t([&] {
        error = thrown_by([&] { result = worker.complete(*job); });
        returned = true;
    });
    bool blocked = false;
    for (int i = 0; i < 3000 && !blocked && !returned; ++i) {
        blocked = sql_bool("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = " + std::to_string(pid) +
                           " AND wait_event_type = 'Lock')");
        if (!blocked) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(blocked);
    sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
    t.join();
    sql_value(locker.get(), "ROLLBACK");

    ASSERT_TRUE(error) << "complete() returned " << result;
    try {
        std::rethrow_exception(error);
    } catch (const jobqueue::InDoubtError& e) {
        EXPECT_FALSE(e.sqlstate().empty());
    } catch (const jobqueue::Error& e) {
        ADD_FAILURE() << "threw " << typeid(e).name() << " (" << e.sqlstate() << "): " << e.what();
    }
    EXPECT_FALSE(worker.healthy());
    // The job was not completed (the kill came first); its claim still stands.
    EXPECT_TRUE(job_exists(id));
    EXPECT_TRUE(client.complete(*job));
}

// The same inside a transaction block: nothing committed, so a plain ConnectionError.
TEST_F(ClientTest, WriteKilledInsideTransactionIsConnectionError) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto job = client.reserve_one({q});
    ASSERT_TRUE(job.has_value());

    ConnPtr locker = connect_env();
    sql_value(locker.get(), "BEGIN");
    sql_value(locker.get(), "SELECT id FROM queue_jobs WHERE id = " + std::to_string(id) + " FOR UPDATE");

    Client worker;
    worker.execute("BEGIN");
    int pid = PQbackendPID(worker.connection());
    std::exception_ptr error;
    std::atomic<bool> returned{false};
    std::thread t([&] {
        error = thrown_by([&] { (void)worker.complete(*job); });
        returned = true;
    });
    bool blocked = false;
    for (int i = 0; i < 3000 && !blocked && !returned; ++i) {
        blocked = sql_bool("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = " + std::to_string(pid) +
                           " AND wait_event_type = 'Lock')");
        if (!blocked) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(blocked);
    sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
    t.join();
    sql_value(locker.get(), "ROLLBACK");

    ASSERT_TRUE(error);
    try {
        std::rethrow_exception(error);
    } catch (const jobqueue::InDoubtError& e) {
        ADD_FAILURE() << "InDoubtError inside a transaction block: " << e.what();
    } catch (const jobqueue::ConnectionError& e) {
        EXPECT_FALSE(e.sqlstate().empty());
    } catch (const jobqueue::Error& e) {
        ADD_FAILURE() << "threw " << typeid(e).name() << " (" << e.sqlstate() << "): " << e.what();
    }
    EXPECT_TRUE(job_exists(id));
}

// A COMMIT whose answer is lost is in doubt. The commit is held up by a
// deferred trigger waiting on an advisory lock, then the session is killed.
TEST_F(ClientTest, CommitKilledIsInDoubt) {
    auto q = queue();
    Client worker;
    worker.execute(
        "CREATE FUNCTION pg_temp.jq_wait_lock() RETURNS trigger LANGUAGE plpgsql AS "
        "$$BEGIN PERFORM pg_advisory_xact_lock(727272); RETURN NULL; END$$");
    worker.execute("CREATE TEMP TABLE jq_commit_gate (x int)");
    worker.execute(
        "CREATE CONSTRAINT TRIGGER jq_gate AFTER INSERT ON jq_commit_gate DEFERRABLE INITIALLY DEFERRED "
        "FOR EACH ROW EXECUTE FUNCTION pg_temp.jq_wait_lock()");
    sql("SELECT pg_advisory_lock(727272)");
    struct Unlock {
        ClientTest* t;
        ~Unlock() {
            try {
                t->sql("SELECT pg_advisory_unlock(727272)");
            } catch (...) {
            }
        }
    } unlock{this};

    worker.execute("BEGIN");
    (void)worker.push("n", {}, on(q));
    worker.execute("INSERT INTO jq_commit_gate VALUES (1)");
    int pid = PQbackendPID(worker.connection());
    std::exception_ptr error;
    std::atomic<bool> returned{false};
    std::thread t([&] {
        error = thrown_by([&] { worker.execute("COMMIT"); });
        returned = true;
    });
    bool blocked = false;
    for (int i = 0; i < 3000 && !blocked && !returned; ++i) {
        blocked = sql_bool("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = " + std::to_string(pid) +
                           " AND wait_event_type = 'Lock')");
        if (!blocked) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(blocked);
    sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
    t.join();

    ASSERT_TRUE(error);
    try {
        std::rethrow_exception(error);
    } catch (const jobqueue::InDoubtError& e) {
        EXPECT_FALSE(e.sqlstate().empty());
    } catch (const jobqueue::Error& e) {
        ADD_FAILURE() << "threw " << typeid(e).name() << " (" << e.sqlstate() << "): " << e.what();
    }
    EXPECT_EQ(jobs_in(q), 0);  // this time it did not commit
}

// ==================================================================== schema

// ClientOptions.schema qualifies every call: it works whatever the search_path.
TEST_F(ClientTest, SchemaOption) {
    auto q = queue();
    jobqueue::ClientOptions options;
    options.schema = "public";
    Client qualified(options);
    qualified.execute("SET search_path = pg_catalog");
    std::int64_t id = qualified.push("n", {{"s", 1}}, on(q));
    EXPECT_EQ(qualified.pending(q), 1);
    auto job = qualified.reserve_one({q});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->id, id);
    EXPECT_TRUE(qualified.complete(*job));
    (void)qualified.stats();
    (void)qualified.queues();

    // Unqualified, the same session cannot find the functions.
    Client plain;
    plain.execute("SET search_path = pg_catalog");
    try {
        (void)plain.push("n", {}, on(q));
        ADD_FAILURE() << "push found queue_push outside the search_path";
    } catch (const jobqueue::Error& e) {
        EXPECT_EQ(e.sqlstate(), "42883");
    }

    // After a reconnect the schema still applies.
    qualified.reconnect();
    qualified.execute("SET search_path = pg_catalog");
    EXPECT_EQ(qualified.pending(q), 0);

    // A borrowed connection with a schema.
    ConnPtr app = connect_env();
    sql_value(app.get(), "SET search_path = pg_catalog");
    EXPECT_GT(Client::borrow(app.get(), "public").push("n", {}, on(q)), 0);
    EXPECT_EQ(jobs_in(q), 1);
}

TEST_F(ClientTest, SchemaThatDoesNotExist) {
    jobqueue::ClientOptions options;
    options.schema = "no_such_schema";
    Client c(options);
    try {
        (void)c.pending();
        ADD_FAILURE() << "pending() worked in a missing schema";
    } catch (const jobqueue::Error& e) {
        EXPECT_EQ(e.sqlstate(), "3F000");
    }
}

// A Client from a conninfo string.
TEST_F(ClientTest, ConninfoConstructor) {
    auto q = queue();
    std::string conninfo = std::string("dbname=") + PQdb(admin_.get());
    Client c(conninfo);
    EXPECT_TRUE(c.owns_connection());
    EXPECT_GT(c.push("n", {}, on(q)), 0);
    EXPECT_EQ(c.pending(q), 1);
}

// Clients move: the moved-to one keeps the connection.
TEST_F(ClientTest, MoveKeepsTheConnection) {
    auto q = queue();
    Client a;
    (void)a.push("n", {}, on(q));
    PGconn* conn = a.connection();
    Client b(std::move(a));
    EXPECT_EQ(b.connection(), conn);
    EXPECT_EQ(b.pending(q), 1);
    Client c;
    c = std::move(b);
    EXPECT_EQ(c.connection(), conn);
    EXPECT_EQ(c.pending(q), 1);
}
