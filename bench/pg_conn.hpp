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
        const auto r = exec_prepared(name, params);
        return PQntuples(r.get()) > 0 && PQnfields(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
    }

    // First row of a prepared statement's result, all columns.
    std::vector<std::string> row(const std::string& name, const std::vector<std::string>& params = {}) {
        const auto r = exec_prepared(name, params);
        std::vector<std::string> out;
        if (PQntuples(r.get()) > 0)
            for (int c = 0; c < PQnfields(r.get()); ++c) out.emplace_back(PQgetvalue(r.get(), 0, c));
        return out;
    }

    // A one-off statement without parameters; first column of the first row.
    std::string query(const std::string& sql) { return check(PQexec(conn_.get(), sql.c_str()), sql); }

private:
    using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

    // The result of a prepared statement (text parameters), or an exception.
    Result exec_prepared(const std::string& name, const std::vector<std::string>& params) {
        std::vector<const char*> values;
        for (const auto& p : params) values.push_back(p.c_str());
        Result r(PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()),
                                values.empty() ? nullptr : values.data(), nullptr, nullptr, 0),
                 PQclear);
        ensure_ok(r.get(), name);
        return r;
    }
    static void ensure_ok(PGresult* r, const std::string& what) {
        const auto st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
            throw std::runtime_error(what + ": " + PQresultErrorMessage(r));
    }
    static std::string check(PGresult* r, const std::string& what) {
        Result guard(r, PQclear);
        ensure_ok(r, what);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) return PQgetvalue(r, 0, 0);
        return "";
    }

    std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

}  // namespace bench
