// client_wakeup_test.cpp: live tests of jobqueue::Client:
// wake-ups: wait() and the notifications of pushes.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
