// listen_address.cpp: parsing --listen, telling loopback addresses.
#include "listen_address.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <stdexcept>

namespace jobqueue::dashboard {

ListenAddress parse_listen_address(const std::string& text) {
    ListenAddress out;
    std::string port;
    if (!text.empty() && text.front() == '[') {
        std::size_t close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
            throw std::invalid_argument("--listen: an IPv6 address is written [ADDRESS]:PORT");
        out.host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        std::size_t colon = text.rfind(':');
        if (colon == std::string::npos || text.find(':') != colon)
            throw std::invalid_argument("--listen must be HOST:PORT (an IPv6 address in brackets: [::1]:7070)");
        out.host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (out.host.empty()) throw std::invalid_argument("--listen: the host is missing (0.0.0.0 for every address)");
    if (port.empty() || port.size() > 5) throw std::invalid_argument("--listen: the port must be 1 to 65535");
    for (char c : port)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            throw std::invalid_argument("--listen: the port must be 1 to 65535");
    out.port = std::stoi(port);
    if (out.port < 1 || out.port > 65535) throw std::invalid_argument("--listen: the port must be 1 to 65535");
    return out;
}

bool is_loopback(const std::string& host) {
    if (host == "localhost") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
    return false;
}

}  // namespace jobqueue::dashboard
