// pg.hpp (internal): move-only RAII owners for libpq handles and the
// conversions between C++ values and PostgreSQL text formats.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
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
