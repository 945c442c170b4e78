// http_errors.hpp: how a failure becomes an HTTP answer the page shows:
// the server's message and SQLSTATE, with a status that says whose fault
// it is.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace jobqueue::dashboard {

struct ErrorAnswer {
    int status;
    nlohmann::json body;  // {error, sqlstate, database_unreachable}
};

// 503 for a lost or missing database connection (the page's banner:
// "database unreachable: ..."), 403 for 42501, 400 for bad values (class
// 22, 54000), 409 for a wrong state (55000), 504 for a statement cut by
// statement_timeout (57014), 500 for the rest.
ErrorAnswer error_answer(const std::string& message, const std::string& sqlstate, bool connection_lost);

}  // namespace jobqueue::dashboard
