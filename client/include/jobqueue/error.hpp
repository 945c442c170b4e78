// jobqueue/error.hpp: the exceptions every jobqueue call may throw.
//
// All derive from jobqueue::Error and carry the SQLSTATE of the server's
// error ("" when there is none, e.g. a client-side check).
#pragma once

#include <stdexcept>
#include <string>

namespace jobqueue {

class Error : public std::runtime_error {
public:
    Error(const std::string& message, std::string sqlstate = "")
        : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}

    // The five-character SQLSTATE, or "" for errors raised by the client.
    [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }

private:
    std::string sqlstate_;
};

// The connection could not be made or was lost (class 08, or no answer),
// or it reaches a standby, which refused a write (25006 from a server in hot
// standby): either way, reconnect (libpq picks the primary among its hosts
// with target_session_attrs=read-write); a standby's refusal wrote nothing.
class ConnectionError : public Error {
public:
    using Error::Error;
};

// A bad argument: SQLSTATE class 22 (22023, 22004, 22007, ...) or 54000,
// or a client-side check.
class InvalidArgument : public Error {
public:
    using Error::Error;
};

// 42501: the role lacks the tier the call needs (see queue_grant).
class PermissionDenied : public Error {
public:
    using Error::Error;
};

// 40001 or 40P01: retry the transaction.
class RetryableError : public Error {
public:
    using Error::Error;
};

// The connection was lost while a commit was in flight: the work may or
// may not have committed. The job may run again (at-least-once).
class InDoubtError : public ConnectionError {
public:
    using ConnectionError::ConnectionError;
};

// Throws the exception class that matches sqlstate.
[[noreturn]] void throw_error(const std::string& message, const std::string& sqlstate);

}  // namespace jobqueue
