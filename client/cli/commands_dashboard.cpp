// commands_dashboard.cpp: `jobqueue dashboard`, a web page and /metrics.
//
// Credentials come from a file (--auth-file) or the environment
// (JOBQUEUE_DASHBOARD_AUTH), never from an argument, which any user of the
// machine can read in ps.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "server.hpp"

namespace jobqueue::cli {

namespace {

struct DashboardCommand {
    std::string listen = "127.0.0.1:7070";
    std::string auth_file;
    bool read_only = false;
    bool insecure_no_auth = false;
    std::vector<std::string> allow_hosts;
    std::string statement_timeout = "5s";
    int connections = 4;
};

// The credentials, from --auth-file, else JOBQUEUE_DASHBOARD_AUTH, else none.
std::optional<dashboard::Credentials> read_credentials(const std::string& auth_file) {
    std::string text, origin;
    if (!auth_file.empty()) {
        std::ifstream in(auth_file);
        if (!in) throw UsageError("--auth-file: cannot read " + auth_file);
        std::stringstream content;
        content << in.rdbuf();
        text = content.str();
        origin = "--auth-file " + auth_file;
        struct stat info {};
        if (stat(auth_file.c_str(), &info) == 0 && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
            std::cerr << "jobqueue: warning: " << auth_file
                      << " is readable by other users of this machine (chmod 600 it)\n";
    } else if (const char* env = std::getenv("JOBQUEUE_DASHBOARD_AUTH"); env != nullptr && *env != '\0') {
        text = env;
        origin = "JOBQUEUE_DASHBOARD_AUTH";
    } else {
        return std::nullopt;
    }
    try {
        return dashboard::parse_credentials(text);
    } catch (const std::invalid_argument& e) {
        throw UsageError(origin + ": " + e.what());
    }
}

std::string listen_url(const dashboard::ListenAddress& a) {
    bool v6 = a.host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port) + "/";
}

// Serves until SIGINT or SIGTERM (or until the server fails by itself).
void serve(dashboard::DashboardServer& server) {
    std::atomic<bool> ended{false};
    bool failed = false;
    std::thread http([&] {
        failed = !server.run();
        ended = true;
        kill(getpid(), SIGTERM);  // wakes the sigwait below when the server failed by itself
    });
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    int taken = 0;
    sigwait(&signals, &taken);
    // httplib's stop() does nothing before its listen loop has started: a
    // signal right after start must not be lost, so stop until it ended.
    while (!ended) {
        server.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    http.join();
    if (failed) throw std::runtime_error("the HTTP server stopped on an error");
}

void run_dashboard(const Context& context, const DashboardCommand& o) {
    dashboard::DashboardConfig config;
    try {
        config.listen = dashboard::parse_listen_address(o.listen);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    config.read_only = o.read_only;
    config.credentials = read_credentials(o.auth_file);
    config.client = context.client_options();
    config.statement_timeout = parse_duration(o.statement_timeout, "--statement-timeout");
    if (config.statement_timeout.count() < 1) throw UsageError("--statement-timeout must be at least 1ms");
    if (o.connections < 1 || o.connections > 64) throw UsageError("--connections must be 1 to 64");
    config.connections = static_cast<std::size_t>(o.connections);
    // a database host that drops packets must not hold a connection attempt for minutes
    auto connect_seconds = std::max<long long>(2, config.statement_timeout.count() / 1000);
    setenv("PGCONNECT_TIMEOUT", std::to_string(connect_seconds).c_str(), 0);

    config.allowed_hosts = o.allow_hosts;
    for (const auto& h : o.allow_hosts)
        if (h.empty() || h.find_first_of(" /@\t") != std::string::npos)
            throw UsageError("--allow-host: \"" + h + "\" is not a host name or address");
    // Another address than loopback without credentials: whoever reaches it
    // sees every payload, and a web page anywhere can reach it through DNS
    // rebinding. Only on request, and then only for the Host names given.
    if (!dashboard::is_loopback(config.listen.host) && !config.credentials) {
        if (!o.insecure_no_auth)
            throw UsageError("--listen " + o.listen +
                             " is not a loopback address: give credentials (--auth-file FILE or "
                             "JOBQUEUE_DASHBOARD_AUTH), or --insecure-no-auth with --allow-host NAME");
        if (o.allow_hosts.empty())
            throw UsageError("--insecure-no-auth needs --allow-host NAME: the Host names (or addresses) "
                             "this dashboard is reached by");
        std::cerr << "jobqueue: warning: the dashboard listens on " << o.listen
                  << " without credentials: whoever reaches it sees every payload"
                  << (config.read_only ? "" : " and can act on the queues")
                  << " (give --auth-file FILE or JOBQUEUE_DASHBOARD_AUTH)\n";
    }

    // Block the stop signals before any thread starts, so that every thread
    // inherits the mask and serve() alone takes them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    dashboard::DashboardServer server(config);
    server.bind();
    try {
        Client probe(config.client);
    } catch (const Error& e) {
        std::cerr << "jobqueue: warning: the database is not reachable yet (" << e.what()
                  << "); the page will say so until it is\n";
    }
    std::cerr << "jobqueue dashboard on " << listen_url(config.listen)
              << (config.read_only ? " (read-only)" : "")
              << (config.credentials ? " (credentials required)" : "") << "; metrics at /metrics\n";
    serve(server);
}

}  // namespace

void add_dashboard_command(CLI::App& app, Context& context) {
    auto* command = app.add_subcommand("dashboard", "Serve a web page of the queues, and Prometheus metrics");
    auto o = std::make_shared<DashboardCommand>();
    command->add_option("--listen", o->listen,
                        "HOST:PORT to listen on (default 127.0.0.1:7070; another address than loopback needs "
                        "credentials, or --insecure-no-auth)");
    command->add_flag("--read-only", o->read_only, "Show no actions and refuse every action request (403)");
    command->add_option("--auth-file", o->auth_file,
                        "File holding \"basic USER:PASSWORD\" or \"bearer TOKEN\" (else env JOBQUEUE_DASHBOARD_AUTH); "
                        "requests without them get 401");
    command->add_flag("--insecure-no-auth", o->insecure_no_auth,
                      "Listen on an address other than loopback without credentials (needs --allow-host)");
    command->add_option("--allow-host", o->allow_hosts,
                        "A Host name or address the dashboard answers to besides localhost (repeatable; "
                        "requests naming another host get 403)")
        ->allow_extra_args(false);
    command->add_option("--statement-timeout", o->statement_timeout,
                        "Longest a statement of the dashboard may run (default 5s)");
    command->add_option("--connections", o->connections, "Database connections at most (default 4)");
    command->footer(
        "Example:\n  jobqueue dashboard                       # http://127.0.0.1:7070/\n"
        "  jobqueue dashboard --read-only --listen 0.0.0.0:7070 --auth-file /etc/jobqueue/dashboard.auth\n"
        "  jobqueue dashboard --listen 0.0.0.0:7070 --insecure-no-auth --allow-host jobs.internal "
        "--allow-host 10.0.0.5\n");
    command->callback([&context, o] { run_dashboard(context, *o); });
}

}  // namespace jobqueue::cli
