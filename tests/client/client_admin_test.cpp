// client_admin_test.cpp: live tests of jobqueue::Client:
// administration: cancel, clear, pause and resume, queue settings, a NUL
// byte in a string refused.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
