// cross_site.cpp: Origin, Referer and Host checks.
#include "cross_site.hpp"

#include <cctype>

#include "listen_address.hpp"

namespace jobqueue::dashboard {

namespace {

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// "scheme://authority" of an origin or URL, or "" when it has none we take.
std::string origin_of(const std::string& url) {
    std::string text = lower(url);
    for (const char* scheme : {"http://", "https://"}) {
        std::string prefix = scheme;
        if (text.rfind(prefix, 0) != 0) continue;
        std::size_t end = text.find_first_of("/?#", prefix.size());
        std::string authority = text.substr(prefix.size(), end == std::string::npos ? std::string::npos
                                                                                     : end - prefix.size());
        // user information in a URL ("http://a@b/") names another host than it seems to
        if (authority.empty() || authority.find('@') != std::string::npos) return "";
        return authority;
    }
    return "";
}

}  // namespace

bool same_origin(const std::string& host, const std::string& origin, const std::string& referer) {
    if (host.empty()) return false;
    const std::string& claimed = origin.empty() ? referer : origin;
    std::string authority = origin_of(claimed);
    return !authority.empty() && authority == lower(host);
}

// The host of a Host header, lower case, without its port and brackets;
// "" when the header is malformed (a port that is not a number, an open
// bracket).
std::string host_of_header(const std::string& host) {
    std::string name = lower(host);
    if (!name.empty() && name.front() == '[') {
        std::size_t close = name.find(']');
        if (close == std::string::npos) return "";
        std::string rest = name.substr(close + 1);
        if (!rest.empty() && (rest[0] != ':' || rest.size() == 1)) return "";
        for (std::size_t i = 1; i < rest.size(); ++i)
            if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return "";
        return name.substr(1, close - 1);
    }
    std::size_t colon = name.find(':');
    if (colon != std::string::npos) {
        if (colon + 1 == name.size()) return "";
        for (std::size_t i = colon + 1; i < name.size(); ++i)
            if (!std::isdigit(static_cast<unsigned char>(name[i]))) return "";
        name = name.substr(0, colon);
    }
    return name;
}

bool loopback_host_header(const std::string& host) {
    std::string name = host_of_header(host);
    if (name.empty()) return false;
    if (!host.empty() && host.front() == '[') return name == "::1";
    return name == "localhost" || is_loopback(name);
}

bool allowed_host_header(const std::string& host, const std::vector<std::string>& allowed) {
    if (loopback_host_header(host)) return true;
    std::string name = host_of_header(host);
    if (name.empty()) return false;
    for (const auto& a : allowed) {
        std::string want = lower(a);
        if (want.size() > 2 && want.front() == '[' && want.back() == ']') want = want.substr(1, want.size() - 2);
        if (!want.empty() && want == name) return true;
    }
    return false;
}

}  // namespace jobqueue::dashboard
