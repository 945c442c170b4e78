// listen_address.hpp: the dashboard's --listen HOST:PORT.
#pragma once

#include <string>

namespace jobqueue::dashboard {

struct ListenAddress {
    std::string host = "127.0.0.1";  // an IP address ("::1" without brackets) or a name
    int port = 7070;
};

// "127.0.0.1:7070", "0.0.0.0:8080", "[::1]:7070", "localhost:7070". The
// port is required (1-65535). Throws std::invalid_argument.
ListenAddress parse_listen_address(const std::string& text);

// Whether binding to host keeps the dashboard on this machine: 127.0.0.0/8,
// ::1 or "localhost". Everything else (0.0.0.0, ::, a LAN address, a name)
// may be reachable from elsewhere.
bool is_loopback(const std::string& host);

}  // namespace jobqueue::dashboard
