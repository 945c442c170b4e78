// bench/pg_conn.hpp: one libpq connection with prepared statements, for the
// benchmark's load generator (connection from the PG* environment).
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

class PgConn {
public:
    PgConn() : conn_(PQconnectdb(""), PQfinish) {
        if (PQstatus(conn_.get()) != CONNECTION_OK)
            throw std::runtime_error(std::string("connect: ") + PQerrorMessage(conn_.get()));
    }

    void prepare(const std::string& name, const std::string& sql, int nparams) {
        check(PQprepare(conn_.get(), name.c_str(), sql.c_str(), nparams, nullptr), "prepare " + name);
    }

    // Runs a prepared statement; returns the first column of the first row
    // ("" when no row), throwing on an error.
    std::string run(const std::string& name, const std::vector<std::string>& params = {}) {
        std::vector<const char*> values;
        for (const auto& p : params) values.push_back(p.c_str());
        PGresult* r = PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()),
                                     values.empty() ? nullptr : values.data(), nullptr, nullptr, 0);
        return check(r, name);
    }

    // First row of a prepared statement's result, all columns.
    std::vector<std::string> row(const std::string& name, const std::vector<std::string>& params = {}) {
        std::vector<const char*> values;
        for (const auto& p : params) values.push_back(p.c_str());
        PGresult* r = PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()),
                                     values.empty() ? nullptr : values.data(), nullptr, nullptr, 0);
        std::unique_ptr<PGresult, decltype(&PQclear)> guard(r, PQclear);
        ensure_ok(r, name);
        std::vector<std::string> out;
        if (PQntuples(r) > 0)
            for (int c = 0; c < PQnfields(r); ++c) out.emplace_back(PQgetvalue(r, 0, c));
        return out;
    }

    // A one-off statement without parameters; first column of the first row.
    std::string query(const std::string& sql) { return check(PQexec(conn_.get(), sql.c_str()), sql); }

private:
    static void ensure_ok(PGresult* r, const std::string& what) {
        const auto st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
            throw std::runtime_error(what + ": " + PQresultErrorMessage(r));
    }
    static std::string check(PGresult* r, const std::string& what) {
        std::unique_ptr<PGresult, decltype(&PQclear)> guard(r, PQclear);
        ensure_ok(r, what);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) return PQgetvalue(r, 0, 0);
        return "";
    }

    std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

}  // namespace bench
