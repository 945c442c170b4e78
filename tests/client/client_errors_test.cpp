// client_errors_test.cpp: live tests of jobqueue::Client:
// errors: each failure mapped to its exception and SQLSTATE.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
