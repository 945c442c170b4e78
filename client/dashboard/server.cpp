// server.cpp: the routes of the dashboard and the checks around them.
//
// Every request passes check_request (request_guard.hpp) before anything
// else; every answer carries the security headers below. Reads and actions
// borrow a Client from the pool; a connection that was cut while it sat idle
// (a server restart) fails its first statement before anything ran, and the
// request is then tried once more on a new connection, so a page recovers
// without showing an error for it.
#include "server.hpp"

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "actions.hpp"
#include "api.hpp"
#include "assets.hpp"
#include "client_pool.hpp"
#include "guarded_server.hpp"
#include "http_errors.hpp"
#include "metrics.hpp"
#include "request_guard.hpp"
#include "sampler.hpp"
#include "secrets.hpp"

namespace jobqueue::dashboard {

namespace {

// What the page may do, and nothing else: scripts, styles and requests of
// its own origin only, no inline script (so a payload that slipped into
// the page as markup still could not run), no framing.
const char* const kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

httplib::Headers security_headers() {
    return {
        {"Content-Security-Policy", kContentSecurityPolicy},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "same-origin"},
        {"Cross-Origin-Resource-Policy", "same-origin"},
        {"Cache-Control", "no-store"},
    };
}

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    // "replace": invalid UTF-8 in a payload or an error must not stop the answer
    res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ErrorAnswer& answer) { send_json(res, answer.status, answer.body); }

// A query parameter, or none when it is absent or empty.
std::optional<std::string> param(const httplib::Request& req, const char* name) {
    if (!req.has_param(name)) return std::nullopt;
    std::string value = req.get_param_value(name);
    if (value.empty()) return std::nullopt;
    return value;
}

std::optional<std::int64_t> integer_param(const httplib::Request& req, const char* name) {
    auto text = param(req, name);
    if (!text) return std::nullopt;
    std::size_t used = 0;
    long long value = 0;
    try {
        value = std::stoll(*text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text->size()) throw BadRequest(std::string("\"") + name + "\" must be an integer");
    return value;
}

int limit_param(const httplib::Request& req, int fallback, int most) {
    auto value = integer_param(req, "limit");
    if (!value) return fallback;
    if (*value < 1 || *value > most)
        throw BadRequest("\"limit\" must be 1 to " + std::to_string(most));
    return static_cast<int>(*value);
}

std::string index_page(const std::string& token, bool read_only) {
    const Asset* asset = find_asset("/index.html");
    if (asset == nullptr) throw std::logic_error("index.html is not embedded");
    std::string page(reinterpret_cast<const char*>(asset->data), asset->size);
    auto replace = [&](const std::string& placeholder, const std::string& value) {
        std::size_t at = page.find(placeholder);
        if (at == std::string::npos) throw std::logic_error("index.html lacks " + placeholder);
        page.replace(at, placeholder.size(), value);
    };
    replace("__JOBQUEUE_TOKEN__", token);  // hex: nothing to escape
    replace("__JOBQUEUE_READ_ONLY__", read_only ? "true" : "false");
    return page;
}

}  // namespace

struct DashboardServer::Impl {
    DashboardConfig config;
    GuardSettings guard;
    ClientPool pool;
    CounterSampler sampler;
    GuardedServer http;
    std::string index;

    explicit Impl(DashboardConfig c)
        : config(std::move(c)),
          pool(config.client, config.connections + 1,  // one more for the sampler
               config.statement_timeout, config.statement_timeout),
          sampler(pool, config.sample_interval, config.sample_history),
          http(HeadLimits{}, config.http_threads) {
        guard.loopback_only = is_loopback(config.listen.host);
        guard.allowed_hosts = config.allowed_hosts;
        guard.read_only = config.read_only;
        guard.credentials = config.credentials;
        guard.page_token = random_hex(32);
        index = index_page(guard.page_token, config.read_only);
        install();
    }

    // Runs `work` with a borrowed client and answers its JSON, or the error.
    template <typename Work>
    void with_client(httplib::Response& res, Work&& work) {
        try {
            nlohmann::json body;
            {
                auto client = pool.acquire();
                try {
                    body = work(*client);
                } catch (const InDoubtError&) {
                    throw;  // it may have run: never twice
                } catch (const ConnectionError&) {
                    if (client.fresh()) throw;
                    // the idle connection was cut since its last use: nothing ran; once more, new
                    auto again = pool.acquire_fresh();
                    body = work(*again);
                }
            }
            send_json(res, 200, body);
        } catch (const BadRequest& e) {
            send_json(res, 400, {{"error", e.what()}, {"sqlstate", ""}, {"database_unreachable", false}});
        } catch (const PoolBusy& e) {
            auto answer = error_answer(e.what(), "", false);
            answer.status = 503;
            send_error(res, answer);
        } catch (const ConnectionError& e) {
            send_error(res, error_answer(e.what(), e.sqlstate(), true));
        } catch (const Error& e) {
            send_error(res, error_answer(e.what(), e.sqlstate(), false));
        }
    }

    void install() {
        http.set_default_headers(security_headers());
        // GuardedServer reads each request head itself (10 s for the whole
        // head, 64 KiB, 100 header lines) and bounds each later read and
        // write by 5 s; its threads serve config.http_threads requests at once
        http.set_keep_alive_max_count(100);
        http.set_payload_max_length(256 * 1024);

        http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            RequestFacts facts{req.method,
                               req.path,
                               req.get_header_value("Host"),
                               req.get_header_value("Origin"),
                               req.get_header_value("Referer"),
                               req.get_header_value("Authorization"),
                               req.get_header_value(kTokenHeader),
                               req.get_header_value("Content-Type")};
            auto rejection = check_request(facts, guard);
            if (!rejection) return httplib::Server::HandlerResponse::Unhandled;
            if (rejection->status == 401) res.set_header("WWW-Authenticate", challenge(*guard.credentials));
            if (rejection->status == 405) res.set_header("Allow", "POST");
            // the body was not read: the connection cannot carry another
            // request; and whoever was refused holds no request thread longer
            res.set_header("Connection", "close");
            GuardedServer::close_after_this_request();
            send_json(res, rejection->status,
                      {{"error", rejection->message}, {"sqlstate", ""}, {"database_unreachable", false}});
            return httplib::Server::HandlerResponse::Handled;
        });
        http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "internal error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = std::string("internal error: ") + e.what();
            } catch (...) {
            }
            send_json(res, 500, {{"error", what}, {"sqlstate", ""}, {"database_unreachable", false}});
        });
        http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
            if (res.body.empty())
                send_json(res, res.status,
                          {{"error", res.status == 404 ? "not found" : "HTTP status " + std::to_string(res.status)},
                           {"sqlstate", ""},
                           {"database_unreachable", false}});
        });

        install_page();
        install_reads();
        install_actions();
        install_metrics();
    }

    void install_page() {
        http.Get("/", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(index, "text/html; charset=utf-8");
        });
        // browsers ask for it by themselves; there is none
        http.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
        http.Get("/assets/(.+)", [](const httplib::Request& req, httplib::Response& res) {
            const Asset* asset = find_asset("/" + req.matches[1].str());
            if (asset == nullptr || std::string(asset->path) == "/index.html") {
                res.status = 404;
                return;
            }
            res.set_content(reinterpret_cast<const char*>(asset->data), asset->size, content_type_of(asset->path));
        });
    }

    void install_reads() {
        http.Get("/api/overview", [this](const httplib::Request&, httplib::Response& res) {
            with_client(res, [this](Client& client) {
                auto body = overview_json(client, Clock::now());
                body["connection"] = connection_json(client);
                body["read_only"] = config.read_only;
                nlohmann::json rates = nlohmann::json::array();
                for (const auto& point : sampler.rates())
                    rates.push_back({std::chrono::duration<double>(point.at.time_since_epoch()).count(),
                                     point.pushed_per_second, point.completed_per_second});
                body["rates"] = std::move(rates);
                body["rate_interval_seconds"] = std::chrono::duration<double>(sampler.interval()).count();
                auto problem = sampler.problem();
                body["counters"] = {{"available", !problem},
                                    {"error", problem ? nlohmann::json(problem->message) : nlohmann::json()},
                                    {"sqlstate", problem ? nlohmann::json(problem->sqlstate) : nlohmann::json()}};
                return body;
            });
        });
        http.Get("/api/jobs", [this](const httplib::Request& req, httplib::Response& res) {
            with_client(res, [&](Client& client) {
                auto queue = param(req, "queue");
                if (!queue) throw BadRequest("\"queue\" is required");
                return queue_jobs_json(client, *queue, param(req, "state"), integer_param(req, "after"),
                                       limit_param(req, 50, 500));
            });
        });
        http.Get("/api/job", [this](const httplib::Request& req, httplib::Response& res) {
            with_client(res, [&](Client& client) -> nlohmann::json {
                auto id = integer_param(req, "id");
                if (!id) throw BadRequest("\"id\" is required");
                auto job = job_json(client, *id);
                return {{"job", job ? *job : nlohmann::json()}};
            });
        });
        http.Get("/api/failed", [this](const httplib::Request& req, httplib::Response& res) {
            with_client(res, [&](Client& client) {
                return failed_json(client, param(req, "queue"), limit_param(req, 100, static_cast<int>(kMaxActionIds)));
            });
        });
        http.Get("/api/schedules", [this](const httplib::Request&, httplib::Response& res) {
            with_client(res, [](Client& client) { return schedules_json(client); });
        });
        http.Get("/api/workers", [this](const httplib::Request&, httplib::Response& res) {
            with_client(res, [](Client& client) { return workers_json(client, Clock::now()); });
        });
    }

    void install_actions() {
        // check_request has already refused every method but POST and every
        // request not from the page, before the body was read.
        http.Post("/api/actions/([a-z_]+)", [this](const httplib::Request& req, httplib::Response& res) {
            auto found = actions().find(req.matches[1].str());
            if (found == actions().end()) {
                send_json(res, 404, {{"error", "no such action"}, {"sqlstate", ""}, {"database_unreachable", false}});
                return;
            }
            nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
            if (!body.is_object()) {
                send_json(res, 400,
                          {{"error", "the body must be a JSON object"}, {"sqlstate", ""}, {"database_unreachable", false}});
                return;
            }
            with_client(res, [&](Client& client) { return found->second(client, body); });
        });
    }

    void install_metrics() {
        http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
            MetricsSnapshot snapshot;
            try {
                auto client = pool.acquire();
                try {
                    snapshot = metrics_snapshot(*client);
                } catch (const ConnectionError&) {
                    if (client.fresh()) throw;
                    auto again = pool.acquire_fresh();
                    snapshot = metrics_snapshot(*again);
                }
            } catch (const ConnectionError&) {
                snapshot = MetricsSnapshot{};  // jobqueue_up 0
            } catch (const Error& e) {
                // the database answered but refused: a failed scrape, which Prometheus shows as up == 0
                res.status = error_answer(e.what(), e.sqlstate(), false).status;
                res.set_content(std::string("jobqueue dashboard: ") + e.what() + " (SQLSTATE " + e.sqlstate() + ")\n",
                                "text/plain; charset=utf-8");
                return;
            } catch (const PoolBusy& e) {
                res.status = 503;
                res.set_content(std::string("jobqueue dashboard: ") + e.what() + "\n", "text/plain; charset=utf-8");
                return;
            }
            res.set_content(render_metrics(snapshot, Clock::now()), "text/plain; version=0.0.4; charset=utf-8");
        });
    }
};

DashboardServer::DashboardServer(DashboardConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

DashboardServer::~DashboardServer() { stop(); }

void DashboardServer::bind() {
    const auto& listen = impl_->config.listen;
    errno = 0;
    if (!impl_->http.bind_to_port(listen.host, listen.port)) {
        std::string reason = errno ? std::strerror(errno) : "the address is taken or not this machine's";
        throw std::runtime_error("cannot listen on " + listen.host + ":" + std::to_string(listen.port) + ": " + reason);
    }
}

bool DashboardServer::run() {
    impl_->sampler.start();
    bool ok = impl_->http.listen_after_bind();
    impl_->sampler.stop();
    return ok;
}

// The sampler is stopped by run() once the listen loop ended (and by its
// own destructor), never here: stop() may race with run() starting it.
void DashboardServer::stop() {
    if (impl_) impl_->http.stop();
}

}  // namespace jobqueue::dashboard
