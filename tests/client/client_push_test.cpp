// client_push_test.cpp: live tests of jobqueue::Client:
// push() and push_many(): the rows they write and the options they pass on.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
