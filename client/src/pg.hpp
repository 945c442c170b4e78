// pg.hpp (internal): move-only RAII owners for libpq handles, how one
// statement is sent (named or unnamed), and the conversions between C++
// values and PostgreSQL text formats.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobqueue/job.hpp"

namespace jobqueue::pg {

struct ResultDeleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

struct ConnDeleter {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;

// ---- sending a statement
//
// Named: prepared once per connection (PQprepare), then executed by name
// (PQexecPrepared): the server parses and plans the SQL once. The statement
// lives in the server session, so every call must reach the same session.
// Unnamed: the SQL travels with every call (PQexecParams: parse, bind and
// execute in one round trip) and nothing outlives the call, which is what a
// transaction-pooling pooler needs. bench/statements.cpp measures the cost.
struct Sent {
    ResultPtr result;  // null when libpq had no memory
    // false when the call failed before anything ran (preparing it failed)
    bool executed = true;
};

// Named statements prepared on one connection, by name.
class PreparedStatements {
public:
    // adopt_existing: the connection is the application's, and an earlier
    // user may have prepared the same statement on it already: reuse it
    // (a second PREPARE would fail with 42P05 and abort its transaction).
    Sent run(PGconn* conn, const char* name, const std::string& sql, const std::vector<const char*>& values,
             bool adopt_existing);
    // The connection was replaced: nothing is prepared on the new one.
    void forget() { names_.clear(); }

private:
    std::set<std::string> names_;
};

Sent run_unnamed(PGconn* conn, const std::string& sql, const std::vector<const char*>& values);

// Whether conn reaches the server through a pooler: a pooler hands out
// cancel keys of its own, so the backend pid libpq was told at login is not
// the pid of the server process that runs the queries. Nothing when it
// cannot tell (the connection's transaction is aborted, or it is broken).
std::optional<bool> behind_pooler(PGconn* conn);

// Text forms of parameters.
std::string interval_text(std::chrono::milliseconds span);
std::string array_text(const std::vector<std::string>& values);
std::string int_array_text(const std::vector<std::int64_t>& values);

// An optional argument: its text form, or SQL NULL when it is empty, so
// that the SQL function's own default applies.
using Param = std::optional<std::string>;
Param param(const std::optional<std::string>& value);
Param param(const std::optional<int>& value);
Param param(const std::optional<std::int64_t>& value);
Param param(const std::optional<bool>& value);
Param param(const std::optional<std::chrono::milliseconds>& value);
Param param(const std::optional<TimePoint>& value);
// A list of names; an empty list is NULL too.
Param param(const std::vector<std::string>& values);

// Parsers of result fields (text format).
std::int64_t to_int(const char* text);
std::vector<std::int64_t> int_array(const char* text);
// A time sent as microseconds since the epoch (see the client's queries).
TimePoint micros_time(const char* text);
// An interval sent as milliseconds.
std::chrono::milliseconds millis(const char* text);

}  // namespace jobqueue::pg
