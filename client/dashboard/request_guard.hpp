// request_guard.hpp: what every request must pass before the dashboard
// looks at it, decided from its method, path and headers alone (the HTTP
// server calls this before it reads a body).
//
//   1. Host: a dashboard bound to a loopback address answers only requests
//      that name a loopback host (DNS rebinding, see cross_site.hpp); given
//      --allow-host names (required on another address without
//      credentials), only requests naming a loopback host or one of them.
//   2. Credentials, when configured: 401 without them.
//   3. Actions (/api/actions/...): POST only (405), never in read-only mode
//      (403), only from the dashboard's own page: same origin and the
//      page's token in X-Jobqueue-Token (403), and a JSON body (415), which
//      a plain HTML form of another site cannot send.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "auth.hpp"

namespace jobqueue::dashboard {

constexpr const char* kActionPrefix = "/api/actions/";
constexpr const char* kTokenHeader = "X-Jobqueue-Token";

struct GuardSettings {
    bool loopback_only = true;  // the dashboard is bound to a loopback address
    std::vector<std::string> allowed_hosts;  // --allow-host: Host names accepted besides loopback ones
    bool read_only = false;
    std::optional<Credentials> credentials;
    std::string page_token;  // the per-process token the page carries
};

// The headers of a request that the guard reads ("" when absent).
struct RequestFacts {
    std::string method;
    std::string path;
    std::string host;
    std::string origin;
    std::string referer;
    std::string authorization;
    std::string token;  // X-Jobqueue-Token
    std::string content_type;
};

struct Rejection {
    int status;
    std::string message;
};

// Nothing when the request may go on.
std::optional<Rejection> check_request(const RequestFacts& request, const GuardSettings& settings);

// Whether path is an action's.
bool is_action_path(const std::string& path);

}  // namespace jobqueue::dashboard
