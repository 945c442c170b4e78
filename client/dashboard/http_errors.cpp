// http_errors.cpp: HTTP statuses for the client's errors.
#include "http_errors.hpp"

namespace jobqueue::dashboard {

namespace {

// The client's messages start with "jobqueue: ", which the page does not
// need; libpq's span lines ("...failed: ...\n\tIs the server running"),
// which become one.
std::string bare(const std::string& message) {
    const std::string prefix = "jobqueue: ";
    std::string text = message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
    std::string out;
    bool blank = false;
    for (char c : text) {
        if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
            blank = !out.empty();
            continue;
        }
        if (blank) out += ' ';
        blank = false;
        out += c;
    }
    return out;
}

int status_for(const std::string& sqlstate) {
    if (sqlstate == "42501") return 403;
    if (sqlstate.rfind("22", 0) == 0 || sqlstate == "54000") return 400;
    if (sqlstate == "55000") return 409;
    if (sqlstate == "57014") return 504;
    return 500;
}

}  // namespace

ErrorAnswer error_answer(const std::string& message, const std::string& sqlstate, bool connection_lost) {
    std::string text = bare(message);
    if (connection_lost) text = "database unreachable: " + text;
    return {connection_lost ? 503 : status_for(sqlstate),
            {{"error", text}, {"sqlstate", sqlstate}, {"database_unreachable", connection_lost}}};
}

}  // namespace jobqueue::dashboard
