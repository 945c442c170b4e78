// client_connection_test.cpp: live tests of jobqueue::Client:
// connections: borrowed ones (the application's transaction), killed ones,
// the schema option, the conninfo constructor, moves.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

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
