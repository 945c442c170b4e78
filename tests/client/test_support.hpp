// test_support.hpp: what the live client tests share.
//
// The server comes from the standard PG* environment (scripts/test.sh starts
// a throwaway cluster and exports it). Every test uses queue names of its
// own, so tests never see each other's jobs.
#pragma once

#include <libpq-fe.h>

#include <string>

#include "jobqueue/jobqueue.hpp"

namespace jobqueue::testing {

// A queue name unique to this process and call ("<prefix>_<pid>_<n>").
std::string unique_queue(const std::string& prefix);

// s as an SQL string literal ('...', quotes doubled).
std::string lit(const std::string& s);

// Runs SQL on a fresh superuser connection and returns the first column of
// the first row ("" when there is none). Throws std::runtime_error on error.
std::string sql_value(const std::string& sql);

// The same on a given connection.
std::string sql_value(PGconn* conn, const std::string& sql);

// Restarts the test cluster (mode: fast or immediate) with the command in
// JQ_RESTART_COMMAND; returns false when no such command is set.
bool restart_server(const std::string& mode);

}  // namespace jobqueue::testing
