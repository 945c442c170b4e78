// test_support.cpp: helpers of the live client tests.
#include "test_support.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace jobqueue::testing {

std::string unique_queue(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return prefix + "_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
}

std::string lit(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += '\'';
        out += c;
    }
    return out + "'";
}

std::string sql_value(PGconn* conn, const std::string& sql) {
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn, sql.c_str()), &PQclear);
    auto status = PQresultStatus(r.get());
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
    if (status != PGRES_TUPLES_OK || PQntuples(r.get()) == 0 || PQnfields(r.get()) == 0) return "";
    return PQgetvalue(r.get(), 0, 0);
}

std::string sql_value(const std::string& sql) {
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(""), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect: ") + PQerrorMessage(conn.get()));
    return sql_value(conn.get(), sql);
}

bool restart_server(const std::string& mode) {
    const char* command = std::getenv("JQ_RESTART_COMMAND");
    if (command == nullptr || *command == '\0') return false;
    std::string full = std::string(command) + " " + mode;
    return std::system(full.c_str()) == 0;
}

}  // namespace jobqueue::testing
