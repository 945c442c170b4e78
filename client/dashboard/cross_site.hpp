// cross_site.hpp: what keeps other web sites from acting through a
// browser that can reach the dashboard.
//
// An action must come from the dashboard's own page: its Origin (or, when a
// browser sends none, its Referer) names the host the request was sent to,
// and it carries the token the page was served with (a page of another
// origin cannot read it). A dashboard on a loopback address also checks the
// Host header itself: a DNS-rebinding page (evil.example resolving to
// 127.0.0.1) is same-origin with itself, but its requests name its own
// host, not a loopback one.
#pragma once

#include <string>
#include <vector>

namespace jobqueue::dashboard {

// Whether the Origin header, or when it is empty the Referer header, names
// `host` (the request's Host header, "name:port"), over http or https.
// "null" origins, other hosts, other ports and missing headers all fail.
bool same_origin(const std::string& host, const std::string& origin, const std::string& referer);

// Whether a Host header names a loopback host: localhost, 127.0.0.0/8 or
// [::1], with or without a port.
bool loopback_host_header(const std::string& host);

// Whether a Host header names a loopback host or one of `allowed` (names or
// addresses as given to --allow-host, compared without the port and without
// regard to case; an IPv6 address without brackets).
bool allowed_host_header(const std::string& host, const std::vector<std::string>& allowed);

}  // namespace jobqueue::dashboard
