// request_guard.cpp: the checks every request passes, in order.
#include "request_guard.hpp"

#include <cctype>

#include "cross_site.hpp"
#include "secrets.hpp"

namespace jobqueue::dashboard {

namespace {

// "application/json", with or without parameters ("; charset=utf-8").
bool json_content_type(const std::string& value) {
    std::string type = value.substr(0, value.find(';'));
    while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) type.pop_back();
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return type == "application/json";
}

}  // namespace

bool is_action_path(const std::string& path) { return path.rfind(kActionPrefix, 0) == 0; }

std::optional<Rejection> check_request(const RequestFacts& r, const GuardSettings& s) {
    if ((s.loopback_only || !s.allowed_hosts.empty()) && !allowed_host_header(r.host, s.allowed_hosts)) {
        std::string names;
        for (const auto& a : s.allowed_hosts) names += ", " + a;
        return Rejection{403, "this dashboard answers requests for localhost" +
                                  (names.empty() ? std::string(" only") : names) + " (Host: " + r.host + ")"};
    }
    if (s.credentials && !authorized(*s.credentials, r.authorization))
        return Rejection{401, "credentials required"};
    if (!is_action_path(r.path)) return std::nullopt;
    if (r.method != "POST") return Rejection{405, "actions are POST requests"};
    if (s.read_only) return Rejection{403, "the dashboard is read-only"};
    if (!same_origin(r.host, r.origin, r.referer))
        return Rejection{403, "cross-site request refused: Origin or Referer must be this dashboard"};
    if (s.page_token.empty() || !constant_time_equal(r.token, s.page_token))
        return Rejection{403, "cross-site request refused: the page's token is missing or wrong"};
    if (!json_content_type(r.content_type)) return Rejection{415, "actions take a JSON body (application/json)"};
    return std::nullopt;
}

}  // namespace jobqueue::dashboard
