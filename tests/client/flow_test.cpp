// flow_test.cpp: the client's flow-control calls (extension 1.5) against a
// live server: concurrency keys and their limits, rate limits, the
// unique-key modes, jobs that wait for other jobs, and a worker on a
// rate-limited queue.
//
// As client_fixture.hpp: the standard PG* environment (a superuser in database
// postgres), queues of each test's own, deleted with their limits at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::testing::lit;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;

namespace {

std::vector<std::int64_t> ids_of(const std::vector<jobqueue::Job>& jobs) {
    std::vector<std::int64_t> ids;
    for (const auto& j : jobs) ids.push_back(j.id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

class FlowTest : public ::testing::Test {
public:
    void TearDown() override {
        for (const auto& q : queues_) {
            sql("DELETE FROM queue_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_failed_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_settings WHERE queue = " + lit(q));
            sql("SELECT queue_concurrency_remove(queue, key_prefix) FROM queue_concurrency_list() WHERE queue = " +
                lit(q));
            sql("SELECT queue_rate_limit_remove(" + lit(q) + ")");
        }
    }

    std::string queue() {
        queues_.push_back(unique_queue("fq"));
        return queues_.back();
    }

    jobqueue::PushOptions on(const std::string& q, const std::optional<std::string>& key = {}) {
        jobqueue::PushOptions o;
        o.queue = q;
        o.concurrency_key = key;
        return o;
    }

    std::string sql(const std::string& s) { return sql_value(s); }
    std::int64_t sql_int(const std::string& s) { return std::stoll(sql(s)); }
    std::string job_col(std::int64_t id, const std::string& column) {
        return sql("SELECT " + column + " FROM queue_jobs WHERE id = " + std::to_string(id));
    }

    std::vector<jobqueue::Job> claim(const std::string& q, int n) {
        jobqueue::ReserveOptions o;
        o.queues = {q};
        o.max_jobs = n;
        return client.reserve(o);
    }

    Client client;

private:
    std::vector<std::string> queues_;
};

}  // namespace

// ======================================================================== concurrency keys

// A key without a limit of its own runs one job at a time; the next one
// runs once the first is done. The key is stored with the job.
TEST_F(FlowTest, OneJobOfAKeyAtATime) {
    auto q = queue();
    auto a = client.push("n", {}, on(q, "account:1"));
    auto b = client.push("n", {}, on(q, "account:1"));
    auto other = client.push("n", {}, on(q, "account:2"));
    EXPECT_EQ(job_col(a, "concurrency_key"), "account:1");

    auto first = claim(q, 10);
    EXPECT_EQ(ids_of(first), (std::vector<std::int64_t>{a, other}));
    EXPECT_TRUE(claim(q, 10).empty());
    for (const auto& job : first) ASSERT_TRUE(client.complete(job));
    auto second = claim(q, 10);
    EXPECT_EQ(ids_of(second), (std::vector<std::int64_t>{b}));
}

// A job holds its key's slot until it leaves the queue: when its lease runs
// out it is claimed again, and the key's other job still waits.
TEST_F(FlowTest, ExpiredLeaseKeepsTheSlotForItsJob) {
    auto q = queue();
    auto a = client.push("n", {}, on(q, "k"));
    (void)client.push("n", {}, on(q, "k"));
    jobqueue::ReserveOptions o;
    o.queues = {q};
    o.max_jobs = 10;
    o.lease = 1s;
    auto held = client.reserve(o);
    ASSERT_EQ(ids_of(held), (std::vector<std::int64_t>{a}));
    client.execute("SET jobqueue.clock_offset = '5 seconds'");
    auto again = claim(q, 10);
    client.execute("RESET jobqueue.clock_offset");
    EXPECT_EQ(ids_of(again), (std::vector<std::int64_t>{a}));
    EXPECT_FALSE(client.complete(held.front()));  // the stale token is fenced
}

// A limit per key prefix: the longest prefix that matches wins; '' is every
// key of the queue. Listed by concurrency_limits, removed once.
TEST_F(FlowTest, LimitsByPrefix) {
    auto q = queue();
    client.set_concurrency(q, "", 3);
    client.set_concurrency(q, "tenant:", 2);
    for (int i = 0; i < 5; ++i) {
        (void)client.push("n", {}, on(q, "tenant:1"));
        (void)client.push("n", {}, on(q, "import"));
    }
    auto claimed = claim(q, 20);
    int tenant = 0, import = 0;
    for (const auto& job : claimed) (job_col(job.id, "concurrency_key") == "tenant:1" ? tenant : import)++;
    EXPECT_EQ(tenant, 2);
    EXPECT_EQ(import, 3);

    std::set<std::pair<std::string, int>> limits;
    for (const auto& l : client.concurrency_limits())
        if (l.queue == q) limits.insert({l.key_prefix, l.max_running});
    EXPECT_EQ(limits, (std::set<std::pair<std::string, int>>{{"", 3}, {"tenant:", 2}}));

    auto keys = client.concurrency_keys(q);
    ASSERT_EQ(keys.size(), 2u);
    for (const auto& k : keys) {
        EXPECT_EQ(k.queue, q);
        if (k.key == "tenant:1") {
            EXPECT_EQ(k.max_running, 2);
            EXPECT_EQ(k.running, 2);
            EXPECT_EQ(k.waiting, 3);
        } else {
            EXPECT_EQ(k.key, "import");
            EXPECT_EQ(k.max_running, 3);
            EXPECT_EQ(k.running, 3);
            EXPECT_EQ(k.waiting, 2);
        }
    }
    auto blocked = client.blocked(q);
    ASSERT_EQ(blocked.size(), 1u);
    EXPECT_EQ(blocked[0].waiting_for_key, 5);
    EXPECT_EQ(blocked[0].waiting_for_parents, 0);

    EXPECT_TRUE(client.remove_concurrency(q, "tenant:"));
    EXPECT_FALSE(client.remove_concurrency(q, "tenant:"));
}

// The server judges the limit: zero or less is refused as a bad value.
TEST_F(FlowTest, BadLimitIsInvalidArgument) {
    auto q = queue();
    EXPECT_THROW(client.set_concurrency(q, "", 0), jobqueue::InvalidArgument);
    EXPECT_THROW(client.set_rate_limit(q, 0, 1s), jobqueue::InvalidArgument);
}

// ======================================================================== unique-key modes

// replace: a pending job holding the key takes the new payload and run-at;
// a held one stays as it is, and its id is returned.
TEST_F(FlowTest, OnDuplicateReplace) {
    auto q = queue();
    auto o = on(q);
    o.unique_key = "report-" + q;
    o.delay = 1h;
    auto id = client.push("report", {{"v", 1}}, o);
    o.on_duplicate = jobqueue::OnDuplicate::replace;
    o.delay.reset();
    EXPECT_EQ(client.push("report", {{"v", 2}}, o), id);
    EXPECT_EQ(nlohmann::json::parse(job_col(id, "payload")), (nlohmann::json{{"v", 2}}));
    EXPECT_EQ(client.pending(q), 1);  // due now, no longer in an hour

    auto held = claim(q, 1);
    ASSERT_EQ(held.size(), 1u);
    EXPECT_EQ(client.push("report", {{"v", 3}}, o), id);
    EXPECT_EQ(nlohmann::json::parse(job_col(id, "payload")), (nlohmann::json{{"v", 2}}));
}

// debounce: every push postpones the job to now + delay; without a delay
// it is refused.
TEST_F(FlowTest, OnDuplicateDebounce) {
    auto q = queue();
    auto o = on(q);
    o.unique_key = "debounce-" + q;
    o.on_duplicate = jobqueue::OnDuplicate::debounce;
    o.delay = 10s;
    auto id = client.push("n", {{"v", 1}}, o);
    auto first = sql_int("SELECT (extract(epoch from available_at) * 1000000)::int8 FROM queue_jobs WHERE id = " +
                         std::to_string(id));
    client.execute("SET jobqueue.clock_offset = '5 seconds'");
    EXPECT_EQ(client.push("n", {{"v", 2}}, o), id);
    client.execute("RESET jobqueue.clock_offset");
    auto second = sql_int("SELECT (extract(epoch from available_at) * 1000000)::int8 FROM queue_jobs WHERE id = " +
                          std::to_string(id));
    EXPECT_GE(second - first, 5'000'000);
    EXPECT_EQ(nlohmann::json::parse(job_col(id, "payload")), (nlohmann::json{{"v", 2}}));
    o.delay.reset();
    EXPECT_THROW((void)client.push("n", {}, o), jobqueue::InvalidArgument);
}

// ======================================================================== dependencies

// A child runs only after its parents completed; queue_blocked counts it
// meanwhile.
TEST_F(FlowTest, AfterWaitsForEveryParent) {
    auto q = queue();
    auto p1 = client.push("parent", {}, on(q));
    auto p2 = client.push("parent", {}, on(q));
    auto o = on(q);
    o.after = {p1, p2};
    auto child = client.push("child", {}, o);
    EXPECT_EQ(job_col(child, "flow"), "parents");

    auto parents = claim(q, 10);
    EXPECT_EQ(ids_of(parents), (std::vector<std::int64_t>{p1, p2}));
    auto blocked = client.blocked(q);
    ASSERT_EQ(blocked.size(), 1u);
    EXPECT_EQ(blocked[0].waiting_for_parents, 1);
    ASSERT_TRUE(client.complete(parents[0]));
    EXPECT_TRUE(claim(q, 10).empty());
    ASSERT_TRUE(client.complete(parents[1]));
    auto next = claim(q, 10);
    EXPECT_EQ(ids_of(next), (std::vector<std::int64_t>{child}));
}

// A parent that fails to the failed table fails its child (after_failed
// fail, the default), whose error names the parent; with run the child runs.
TEST_F(FlowTest, AfterFailedFailOrRun) {
    auto q = queue();
    auto po = on(q);
    po.max_attempts = 1;
    auto parent = client.push("parent", {}, po);
    auto o = on(q);
    o.after = {parent};
    auto failing = client.push("child", {}, o);
    o.after_failed = jobqueue::AfterFailed::run;
    auto running = client.push("child", {}, o);

    auto held = claim(q, 10);
    ASSERT_EQ(ids_of(held), (std::vector<std::int64_t>{parent}));
    ASSERT_TRUE(client.fail(held[0].id, held[0].token, "broken"));
    auto failed = client.failed_job(failing);
    ASSERT_TRUE(failed.has_value());
    EXPECT_NE(failed->error.find(std::to_string(parent)), std::string::npos) << failed->error;
    EXPECT_EQ(ids_of(claim(q, 10)), (std::vector<std::int64_t>{running}));
}

// An unknown parent is refused (22023) and nothing is pushed.
TEST_F(FlowTest, AfterUnknownIdIsInvalidArgument) {
    auto q = queue();
    auto o = on(q);
    o.after = {sql_int("SELECT coalesce(max(id), 0) + 1000000 FROM queue_jobs")};
    EXPECT_THROW((void)client.push("n", {}, o), jobqueue::InvalidArgument);
    EXPECT_EQ(sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q)), 0);
}

// push_many sends the same options as keys of each job.
TEST_F(FlowTest, PushManyWithFlowOptions) {
    auto q = queue();
    auto parent = client.push("parent", {}, on(q));
    jobqueue::NewJob a{"a", nlohmann::json::object(), on(q, "k")};
    jobqueue::NewJob b{"b", nlohmann::json::object(), on(q, "k")};
    b.options.after = {parent};
    b.options.after_failed = jobqueue::AfterFailed::run;
    auto ids = client.push_many({a, b});
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(job_col(ids[0], "concurrency_key"), "k");
    EXPECT_EQ(job_col(ids[1], "flow"), "parents");
}

// ======================================================================== rate limits

// At most max_claims claims per period (a burst of max_claims, then one
// every period / max_claims): the rest wait for the next slot, which
// rate_limits, rate_limit_next and rate_limit_wait report.
TEST_F(FlowTest, RateLimitCapsClaims) {
    auto q = queue();
    client.set_rate_limit(q, 2, 1h);
    for (int i = 0; i < 5; ++i) (void)client.push("n", {}, on(q));
    EXPECT_FALSE(client.rate_limit_next(q).has_value());
    EXPECT_EQ(claim(q, 5).size(), 2u);
    EXPECT_TRUE(claim(q, 5).empty());

    bool listed = false;
    for (const auto& l : client.rate_limits())
        if (l.queue == q) {
            listed = true;
            EXPECT_EQ(l.max_claims, 2);
            EXPECT_EQ(l.per, std::chrono::milliseconds(1h));
            EXPECT_TRUE(l.next_slot.has_value());
        }
    EXPECT_TRUE(listed);
    EXPECT_TRUE(client.rate_limit_next(q).has_value());
    auto wait = client.rate_limit_wait({q});
    ASSERT_TRUE(wait.has_value());
    EXPECT_GT(*wait, 25min);
    EXPECT_LE(*wait, std::chrono::milliseconds(30min));
    // an unlimited queue beside it has a slot now: no wait
    EXPECT_FALSE(client.rate_limit_wait({q, queue()}).has_value());

    EXPECT_TRUE(client.remove_rate_limit(q));
    EXPECT_FALSE(client.remove_rate_limit(q));
    EXPECT_EQ(claim(q, 5).size(), 3u);
}

// A worker on a rate-limited queue sleeps until the next slot, neither
// claiming in vain nor waiting a whole poll interval: with 3 claims per
// second and a 30 s poll interval, 12 jobs are done well within 10 s (a
// worker that waited for its poll interval after an empty claim would run 3),
// in few transactions (a worker claiming in a loop would make thousands).
TEST_F(FlowTest, WorkerWaitsForTheNextRateSlot) {
    auto q = queue();
    client.set_rate_limit(q, 3, 1s);
    for (int i = 0; i < 12; ++i) (void)client.push("n", {}, on(q));
    jobqueue::WorkerOptions wo;
    wo.queues = {q};
    wo.threads = 2;
    wo.poll_interval = 30s;
    wo.wait_in_server = false;  // claims return at once: only the rate check keeps it from spinning
    wo.use_notify = false;
    wo.tick_interval = 0ms;
    std::atomic<int> ran{0};
    const auto xacts_before =
        sql_int("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()");
    {
        jobqueue::Worker worker(wo);
        worker.on("n", [&](const jobqueue::Job&) { ++ran; });
        worker.start();
        auto until = std::chrono::steady_clock::now() + 10s;
        while (ran < 12 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
        worker.stop();
    }
    EXPECT_EQ(ran, 12);
    sql("SELECT pg_stat_force_next_flush()");
    std::this_thread::sleep_for(1100ms);  // the statistics of other sessions reach shared memory within a second
    const auto xacts =
        sql_int("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()") -
        xacts_before;
    // 4 rate periods: a claim, a rate check and a few completions each, not a loop of claims
    EXPECT_LT(xacts, 200) << "transactions while the worker ran";
}
