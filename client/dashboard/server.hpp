// server.hpp: `jobqueue dashboard`'s HTTP server (cpp-httplib): the page,
// its JSON endpoints, its actions and /metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth.hpp"
#include "jobqueue/client.hpp"
#include "listen_address.hpp"

namespace jobqueue::dashboard {

struct DashboardConfig {
    ListenAddress listen;
    bool read_only = false;
    std::optional<Credentials> credentials;
    // Host header names accepted besides loopback ones (--allow-host); when
    // given, or when bound to a loopback address, every other Host gets 403.
    std::vector<std::string> allowed_hosts;
    ClientOptions client;
    // Each statement of the dashboard's connections is cut after this long.
    std::chrono::milliseconds statement_timeout{5000};
    std::size_t connections = 4;   // database connections at most
    std::size_t http_threads = 8;  // requests served at once (a browser keeps up to 6 connections open)
    std::chrono::milliseconds sample_interval{2000};  // readings of the counters for the chart
    std::size_t sample_history = 300;                 // readings kept (10 minutes at 2 s)
};

class DashboardServer {
public:
    explicit DashboardServer(DashboardConfig config);
    ~DashboardServer();
    DashboardServer(const DashboardServer&) = delete;
    DashboardServer& operator=(const DashboardServer&) = delete;

    // Binds the listening socket; throws std::runtime_error when it cannot.
    void bind();
    // Serves until stop() (call bind() first). Returns false when the
    // server stopped on an error of its own.
    bool run();
    // Makes run() return, from any thread; before run() has started
    // listening it does nothing (call it again).
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jobqueue::dashboard
