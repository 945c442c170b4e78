// client_failed_test.cpp: live tests of jobqueue::Client:
// the failed jobs: counting, listing, retrying and forgetting them.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
