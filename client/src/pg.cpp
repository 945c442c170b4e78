// pg.cpp: sending statements, and conversions between C++ values and
// PostgreSQL's text formats.
#include "pg.hpp"

#include <stdexcept>

#include "jobqueue/error.hpp"

namespace jobqueue::pg {

namespace {

bool succeeded(const PGresult* r) {
    ExecStatusType status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    return status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK;
}

}  // namespace

Sent PreparedStatements::run(PGconn* conn, const char* name, const std::string& sql,
                             const std::vector<const char*>& values, bool adopt_existing) {
    if (!names_.count(name) && adopt_existing) {
        const char* lookup[2] = {name, sql.c_str()};
        ResultPtr r(PQexecParams(conn,
                                 "SELECT 1 FROM pg_catalog.pg_prepared_statements WHERE name = $1 AND statement = $2",
                                 2, nullptr, lookup, nullptr, nullptr, 0));
        if (r && PQresultStatus(r.get()) == PGRES_TUPLES_OK && PQntuples(r.get()) == 1) names_.insert(name);
    }
    if (!names_.count(name)) {
        ResultPtr r(PQprepare(conn, name, sql.c_str(), static_cast<int>(values.size()), nullptr));
        if (!succeeded(r.get())) return {std::move(r), false};
        names_.insert(name);
    }
    return {ResultPtr(PQexecPrepared(conn, name, static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0)),
            true};
}

Sent run_unnamed(PGconn* conn, const std::string& sql, const std::vector<const char*>& values) {
    return {ResultPtr(PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                   nullptr, 0)),
            true};
}

std::optional<bool> behind_pooler(PGconn* conn) {
    if (PQtransactionStatus(conn) == PQTRANS_INERROR) return std::nullopt;
    ResultPtr r(PQexec(conn, "SELECT pg_catalog.pg_backend_pid()"));
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1) return std::nullopt;
    return std::stoll(PQgetvalue(r.get(), 0, 0)) != PQbackendPID(conn);
}

std::string interval_text(std::chrono::milliseconds span) {
    return std::to_string(span.count()) + " milliseconds";
}

// Every element quoted, so names with commas, braces or spaces survive.
std::string array_text(const std::vector<std::string>& values) {
    std::string out = "{";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ',';
        out += '"';
        for (char c : values[i]) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

std::string int_array_text(const std::vector<std::int64_t>& values) {
    std::string out = "{";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(values[i]);
    }
    return out + "}";
}

Param param(const std::optional<std::string>& value) { return value; }

Param param(const std::optional<int>& value) {
    return value ? Param(std::to_string(*value)) : std::nullopt;
}

Param param(const std::optional<std::int64_t>& value) {
    return value ? Param(std::to_string(*value)) : std::nullopt;
}

Param param(const std::optional<bool>& value) {
    return value ? Param(*value ? "true" : "false") : std::nullopt;
}

Param param(const std::optional<std::chrono::milliseconds>& value) {
    return value ? Param(interval_text(*value)) : std::nullopt;
}

Param param(const std::optional<TimePoint>& value) {
    return value ? Param(format_time(*value)) : std::nullopt;
}

Param param(const std::vector<std::string>& values) {
    return values.empty() ? std::nullopt : Param(array_text(values));
}

std::int64_t to_int(const char* text) {
    try {
        return std::stoll(text);
    } catch (const std::exception&) {
        throw Error(std::string("jobqueue: not an integer from the server: ") + text);
    }
}

std::vector<std::int64_t> int_array(const char* text) {
    std::vector<std::int64_t> out;
    std::string s(text);
    if (s.size() < 2 || s.front() != '{' || s.back() != '}')
        throw Error("jobqueue: not an integer array from the server: " + s);
    std::string item;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
        if (s[i] == ',') {
            out.push_back(to_int(item.c_str()));
            item.clear();
        } else {
            item += s[i];
        }
    }
    if (!item.empty()) out.push_back(to_int(item.c_str()));
    return out;
}

TimePoint micros_time(const char* text) {
    return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(to_int(text))));
}

std::chrono::milliseconds millis(const char* text) {
    return std::chrono::milliseconds(to_int(text));
}

}  // namespace jobqueue::pg
