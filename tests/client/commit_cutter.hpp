// commit_cutter.hpp: a TCP proxy to the test server that loses the answer
// to a COMMIT.
//
// Clients connect to conninfo(); each connection is passed through to the
// server of the PG* environment (its unix socket when PGHOST is a
// directory). Once armed, the first connection that sends a simple-query
// COMMIT has it passed on, and is then cut on the client's side at once and
// on the server's side a moment later: the server commits, the client never
// hears so (libpq reports the connection lost during COMMIT: in doubt).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jobqueue::testing {

class CommitCutter {
public:
    CommitCutter();  // listens on 127.0.0.1, a free port
    ~CommitCutter();
    CommitCutter(const CommitCutter&) = delete;
    CommitCutter& operator=(const CommitCutter&) = delete;

    // host and port of the proxy (user and database from the PG* environment).
    [[nodiscard]] std::string conninfo() const;
    // Cut the connections of the next `count` COMMITs.
    void arm(int count) { armed_ = count; }
    // How many COMMITs were cut.
    [[nodiscard]] int cuts() const { return cuts_; }

private:
    void accept_loop();
    void pass_through(int client_fd);
    int connect_server() const;
    // Uses up one armed cut; false when none is left.
    bool take_arm();

    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> armed_{0};
    std::atomic<int> cuts_{0};
    std::thread acceptor_;
    std::mutex mutex_;
    std::vector<std::thread> connections_;
};

}  // namespace jobqueue::testing
