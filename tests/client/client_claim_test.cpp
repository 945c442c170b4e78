// client_claim_test.cpp: live tests of jobqueue::Client:
// claims and their completion: reserve, complete, release, fail and extend,
// fenced by the token.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
