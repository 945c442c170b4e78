// commit_cutter.cpp: the COMMIT-answer-losing proxy of the live tests.
#include "commit_cutter.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace jobqueue::testing {

namespace {

// A simple-query message holding exactly "COMMIT": 'Q', length 11, text, NUL.
const std::string commit_message("Q\0\0\0\x0b" "COMMIT\0", 12);

std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

CommitCutter::CommitCutter() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) throw std::runtime_error("commit cutter: socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 16) != 0)
        throw std::runtime_error("commit cutter: bind/listen");
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

CommitCutter::~CommitCutter() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& t : connections_)
        if (t.joinable()) t.join();
}

std::string CommitCutter::conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " sslmode=disable";
}

int CommitCutter::connect_server() const {
    const std::string host = env_or("PGHOST", "/var/run/postgresql");
    const int port = std::stoi(env_or("PGPORT", "5432"));
    if (host[0] == '/') {
        int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::string path = host + "/.s.PGSQL." + std::to_string(port);
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ::close(fd);
            return -1;
        }
        return fd;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

bool CommitCutter::take_arm() {
    int left = armed_.load();
    while (left > 0 && !armed_.compare_exchange_weak(left, left - 1)) {
    }
    return left > 0;
}

void CommitCutter::accept_loop() {
    while (!stop_) {
        pollfd pfd{listen_fd_, POLLIN, 0};
        if (::poll(&pfd, 1, 100) <= 0) continue;
        int client_fd = ::accept(listen_fd_, nullptr, nullptr);
        if (client_fd < 0) continue;
        std::lock_guard<std::mutex> lock(mutex_);
        connections_.emplace_back([this, client_fd] { pass_through(client_fd); });
    }
}

// Copies bytes both ways until either side closes or the proxy stops; the
// client's bytes are searched for a COMMIT (also one split across reads).
void CommitCutter::pass_through(int client_fd) {
    int server_fd = connect_server();
    if (server_fd < 0) {
        ::close(client_fd);
        return;
    }
    std::string seen;  // the client's last bytes, for a COMMIT split across reads
    char buffer[65536];
    bool cut = false;
    while (!stop_ && !cut) {
        pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
        if (::poll(fds, 2, 100) <= 0) continue;
        if (fds[0].revents != 0) {
            ssize_t n = ::recv(client_fd, buffer, sizeof buffer, 0);
            if (n <= 0 || !write_all(server_fd, buffer, static_cast<std::size_t>(n))) break;
            seen.append(buffer, static_cast<std::size_t>(n));
            if (seen.find(commit_message) != std::string::npos) {
                if (take_arm()) {
                    ++cuts_;
                    cut = true;
                    break;
                }
                seen.clear();
            }
            // keep less than one message: a COMMIT already looked at is never found again
            if (seen.size() >= commit_message.size()) seen.erase(0, seen.size() - commit_message.size() + 1);
        }
        if (fds[1].revents != 0) {
            ssize_t n = ::recv(server_fd, buffer, sizeof buffer, 0);
            if (n <= 0 || !write_all(client_fd, buffer, static_cast<std::size_t>(n))) break;
        }
    }
    ::close(client_fd);
    // the server has the COMMIT: give it time to commit before it sees the close
    if (cut) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::close(server_fd);
}

}  // namespace jobqueue::testing
