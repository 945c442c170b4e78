// connection_log.hpp (internal): one line per outage of a worker's server.
//
// A worker's threads (dispatcher, heartbeat, completer) each have their own
// connection, and when the server goes away (a restart, a failover to a
// standby) every one of them finds out, at its own moment, and retries until
// the server is back. What people need in the log is one line when the
// server went away and one when it came back, not one per thread, per job
// or per retry:
//
//   jobqueue worker: connection lost (<the first error>); reconnecting
//   jobqueue worker: reconnected after 2.4 s
//
// An outage begins with the first failure seen by any thread and ends when
// every thread that failed during it has succeeded again. A thread whose
// connection was opened before an outage that has already ended may find
// it broken only now (it had nothing to do meanwhile): that is the same
// outage, noticed late, and reopening its connection is not logged; if
// reopening fails too, the server is gone again, which is a new outage.
// For that, connections are tagged with the generation (the number of
// outages begun) at the moment they were opened.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace jobqueue {

class ConnectionLog {
public:
    using Generation = std::uint64_t;
    // Where the lines go (the worker writes them to stderr).
    using Sink = std::function<void(const std::string& line)>;

    explicit ConnectionLog(Sink sink);

    // The tag of a connection opened now.
    [[nodiscard]] Generation generation() const;
    // The calling thread's call, or its attempt to connect, failed with a
    // lost connection; opened: the tag of the connection it used (for an
    // attempt to connect: generation() before the attempt).
    void lost(const std::string& error, Generation opened);
    // The calling thread's call succeeded.
    void working();

private:
    const Sink sink_;
    mutable std::mutex mutex_;
    Generation generation_ = 0;
    bool outage_ = false;
    std::atomic<bool> in_outage_{false};  // outage_, read without the lock by working()
    std::chrono::steady_clock::time_point began_;
    std::set<std::thread::id> down_;  // threads that failed during the outage and have not succeeded since
};

}  // namespace jobqueue
