// Example producer: signs up users and queues their welcome e-mails in the
// same transaction, so a user row and its e-mail job exist together or not
// at all.
//
//   jobqueue_example_producer [COUNT]     (connection from the PG* environment)
#include <libpq-fe.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "jobqueue/jobqueue.hpp"

namespace {

void exec(PGconn* conn, const std::string& sql) {
    PGresult* r = PQexec(conn, sql.c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    std::string message = PQresultErrorMessage(r);
    PQclear(r);
    if (!ok) throw std::runtime_error(sql + ": " + message);
}

}  // namespace

int main(int argc, char** argv) {
    int count = argc > 1 ? std::atoi(argv[1]) : 10;
    PGconn* conn = PQconnectdb("");
    if (PQstatus(conn) != CONNECTION_OK) {
        std::cerr << "cannot connect: " << PQerrorMessage(conn);
        PQfinish(conn);
        return 3;
    }
    try {
        exec(conn, "CREATE TABLE IF NOT EXISTS example_users (id serial PRIMARY KEY, email text NOT NULL)");
        // The queue client borrows the application's connection...
        jobqueue::Client queue = jobqueue::Client::borrow(conn);
        for (int i = 0; i < count; ++i) {
            std::string email = "user" + std::to_string(i) + "@example.com";
            exec(conn, "BEGIN");
            exec(conn, "INSERT INTO example_users (email) VALUES ('" + email + "')");
            // ...so the push is part of the same transaction as the INSERT.
            auto id = queue.push("send_email", {{"to", email}, {"template", "welcome"}},
                                 jobqueue::PushOptions{"email"});
            exec(conn, "COMMIT");
            std::cout << "signed up " << email << ", e-mail job " << id << "\n";
        }
    } catch (const std::exception& e) {
        std::cerr << "producer: " << e.what() << "\n";
        PQfinish(conn);
        return 2;
    }
    PQfinish(conn);
    return 0;
}
