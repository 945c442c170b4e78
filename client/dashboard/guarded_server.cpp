// guarded_server.cpp: the reader of request heads and the request threads
// behind it (see guarded_server.hpp for why httplib alone is not enough).
#include "guarded_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jobqueue::dashboard {

using SteadyClock = std::chrono::steady_clock;

namespace {

thread_local bool close_requested = false;

int millis_until(SteadyClock::time_point at) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - SteadyClock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60000));
}

bool wait_for(int sock, short events, std::chrono::milliseconds timeout) {
    pollfd p{sock, events, 0};
    int rc;
    do {
        rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    return rc > 0;
}

// An answer written by the reader itself, best effort (the socket may be
// full, the client gone): a small JSON error like the dashboard's others.
void answer_and_close(int sock, int status, const char* reason, const char* message) {
    std::string body = std::string("{\"error\":\"") + message + "\",\"sqlstate\":\"\",\"database_unreachable\":false}";
    std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                       "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)::send(sock, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    // what the client sent already is read and dropped (1 MiB at most, no
    // waiting): closing with unread bytes resets the connection, and a
    // client still sending could miss the answer
    char sink[16384];
    for (std::size_t dropped = 0; dropped < 1024 * 1024;) {
        ssize_t n = ::recv(sock, sink, sizeof(sink), MSG_DONTWAIT);
        if (n <= 0) break;
        dropped += static_cast<std::size_t>(n);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
}

void close_socket(int sock) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
}

void address_of(int sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int rc = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                  : ::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
    ip.clear();
    port = 0;
    if (rc != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
        port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
        port = ntohs(a->sin6_port);
    }
    ip = text;
}

}  // namespace

// One client connection: its socket and the bytes read from it that httplib
// has not taken yet (a head read by the reader, a read ahead of a line).
struct GuardedServer::Connection {
    int sock;
    std::string buffer;
    std::size_t taken = 0;  // bytes of buffer already handed to httplib
    SteadyClock::time_point deadline;
    std::size_t served = 0;  // requests answered on it
    bool got_bytes = false;  // since its head wait began

    std::size_t pending() const { return buffer.size() - taken; }
    void compact() {
        buffer.erase(0, taken);
        taken = 0;
    }
};

namespace {

// httplib's view of a connection on a request thread: the bytes already
// read first, then the socket, each read and write bounded by io_timeout.
// (httplib_compat::Stream maps these operations to the Stream of the
// cpp-httplib version built with.)
class ConnectionStream : public httplib_compat::Stream<> {
public:
    // reads end at read_deadline whatever their own timeout says
    ConnectionStream(GuardedServer::Connection& c, std::chrono::milliseconds timeout,
                     SteadyClock::time_point read_deadline)
        : c_(c), timeout_(timeout), read_deadline_(read_deadline), started_(SteadyClock::now()) {}

    ssize_t read(char* ptr, size_t size) override {
        // a refused request's body is never read: its answer is written and
        // the connection ends (cpp-httplib 0.41 would read and drop it first)
        if (close_requested) return -1;
        if (c_.pending() == 0) {
            if (!wait_for(c_.sock, POLLIN, read_timeout())) return -1;
            c_.buffer.resize(4096);
            c_.taken = 0;
            ssize_t n;
            do {
                n = ::recv(c_.sock, c_.buffer.data(), c_.buffer.size(), 0);
            } while (n < 0 && errno == EINTR);
            c_.buffer.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
            if (n <= 0) return n;
        }
        std::size_t n = std::min(size, c_.pending());
        std::memcpy(ptr, c_.buffer.data() + c_.taken, n);
        c_.taken += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, size_t size) override {
        if (!wait_for(c_.sock, POLLOUT, timeout_)) return -1;
        ssize_t n;
        do {
            n = ::send(c_.sock, ptr, size, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        return n;
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(c_.sock, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(c_.sock, false, ip, port); }
    socket_t socket() const override { return c_.sock; }

protected:
    bool buffered() const override { return c_.pending() > 0; }
    bool await_readable() const override { return buffered() || wait_for(c_.sock, POLLIN, read_timeout()); }
    bool await_writable() const override { return wait_for(c_.sock, POLLOUT, timeout_); }
    std::chrono::milliseconds age() const override {
        return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started_);
    }

private:
    std::chrono::milliseconds read_timeout() const {
        return std::min(timeout_, std::chrono::milliseconds(millis_until(read_deadline_)));
    }

    GuardedServer::Connection& c_;
    std::chrono::milliseconds timeout_;
    SteadyClock::time_point read_deadline_;
    SteadyClock::time_point started_;
};

// The request threads: a fixed number, each taking the oldest task. Shut
// down, they still run every task given before, and those that these tasks
// give, then end. (The dashboard's own rather than httplib's ThreadPool,
// which is not alike in every cpp-httplib version: see httplib_compat.hpp.)
class RequestThreads {
public:
    explicit RequestThreads(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) threads_.emplace_back([this] { run(); });
    }
    ~RequestThreads() { shutdown(); }

    void add(std::function<void()> task) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            tasks_.push_back(std::move(task));
        }
        wake_.notify_one();
    }

    void shutdown() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (auto& t : threads_) t.join();
        threads_.clear();
    }

private:
    void run() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
                if (tasks_.empty()) return;  // stopping, and nothing left
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            task();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;  // last: the others exist before a thread starts
};

}  // namespace

// httplib's task queue, made when its listen loop starts and shut down when
// it ends: the reader thread and the request threads. Its enqueue runs the
// accept loop's task at once (process_and_close_socket, which only hands
// the socket over).
class GuardedServer::Dispatcher : public httplib::TaskQueue {
public:
    Dispatcher(GuardedServer& server) : server_(server), workers_(server.threads_) {
        if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
        reader_ = std::thread([this] { read_heads(); });
    }
    ~Dispatcher() override {
        ::close(wake_[0]);
        ::close(wake_[1]);
    }

    // (the task queue's answer differs between cpp-httplib versions: see
    // httplib_compat.hpp; the socket is taken here in any case)
    httplib_compat::EnqueueResult enqueue(std::function<void()> fn) override {
        fn();
        return httplib_compat::task_taken();
    }

    void shutdown() override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake();
        reader_.join();
        workers_.shutdown();
        server_.dispatcher_ = nullptr;  // httplib deletes this queue next
    }

    // A connection waits for its (next) head: at the reader, or straight to
    // a request thread when that head is in its buffer already (pipelined).
    void wait_for_head(std::unique_ptr<Connection> c) {
        c->compact();
        c->deadline = SteadyClock::now() + server_.limits_.head_timeout;
        c->got_bytes = c->pending() > 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stopping_) {
                close_socket(c->sock);
                return;
            }
            if (judge_head(c->buffer.data(), c->buffer.size(), server_.limits_) == HeadState::incomplete) {
                incoming_.push_back(std::move(c));
                c = nullptr;
            }
        }
        if (c)
            dispatch(std::move(c));
        else
            wake();
    }

private:
    void wake() {
        char b = 1;
        (void)!::write(wake_[1], &b, 1);
    }

    // A head is complete (or over the limits): to a request thread, or the
    // 431 answer.
    void dispatch(std::unique_ptr<Connection> c) {
        if (judge_head(c->buffer.data(), c->buffer.size(), server_.limits_) == HeadState::too_large) {
            const HeadLimits& l = server_.limits_;
            std::string why = "the request head is too large (at most " + std::to_string(l.max_head_bytes / 1024) +
                              " KiB and " + std::to_string(l.max_header_lines) + " header lines)";
            answer_and_close(c->sock, 431, "Request Header Fields Too Large", why.c_str());
            return;
        }
        auto* raw = c.release();
        workers_.add([this, raw] {
            std::unique_ptr<Connection> conn(raw);
            bool stopping;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                stopping = stopping_;
            }
            if (server_.serve_one(*conn, stopping))
                wait_for_head(std::move(conn));
            else
                close_socket(conn->sock);
        });
    }

    // The reader thread: polls every connection waiting for its head until
    // the head is complete, too large, or late.
    void read_heads() {
        std::vector<std::unique_ptr<Connection>> waiting;
        std::vector<pollfd> fds;
        const HeadLimits& limits = server_.limits_;
        for (;;) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                for (auto& c : incoming_) waiting.push_back(std::move(c));
                incoming_.clear();
                if (stopping_) break;
            }
            // the oldest go first when too many wait
            if (waiting.size() > limits.max_waiting) {
                std::sort(waiting.begin(), waiting.end(),
                          [](const auto& a, const auto& b) { return a->deadline < b->deadline; });
                std::size_t excess = waiting.size() - limits.max_waiting;
                for (std::size_t i = 0; i < excess; ++i)
                    answer_and_close(waiting[i]->sock, 503, "Service Unavailable",
                                     "too many connections are waiting for their request head");
                waiting.erase(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(excess));
            }
            auto next = SteadyClock::now() + std::chrono::seconds(60);
            fds.assign(1, pollfd{wake_[0], POLLIN, 0});
            for (const auto& c : waiting) {
                fds.push_back(pollfd{c->sock, POLLIN, 0});
                next = std::min(next, c->deadline);
            }
            int rc = ::poll(fds.data(), fds.size(), millis_until(next));
            if (rc < 0 && errno != EINTR) break;
            if (fds[0].revents) {
                char drain[64];
                while (::read(wake_[0], drain, sizeof(drain)) > 0) {
                }
            }
            auto now = SteadyClock::now();
            std::vector<std::unique_ptr<Connection>> still;
            for (std::size_t i = 0; i < waiting.size(); ++i) {
                auto& c = waiting[i];
                if (rc > 0 && fds[i + 1].revents != 0) {
                    // read no more than the head may hold: memory stays bounded
                    std::size_t room = limits.max_head_bytes + 1 - std::min(limits.max_head_bytes, c->pending());
                    std::size_t old = c->buffer.size();
                    c->buffer.resize(old + std::min<std::size_t>(room, 16384));
                    ssize_t n = ::recv(c->sock, c->buffer.data() + old, c->buffer.size() - old, MSG_DONTWAIT);
                    c->buffer.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
                    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                        close_socket(c->sock);
                        continue;
                    }
                    if (n > 0) c->got_bytes = true;
                    if (judge_head(c->buffer.data(), c->buffer.size(), limits) != HeadState::incomplete) {
                        dispatch(std::move(c));
                        continue;
                    }
                }
                if (now >= c->deadline) {
                    if (c->got_bytes)
                        answer_and_close(c->sock, 408, "Request Timeout",
                                         "the request head did not arrive in time");
                    else
                        close_socket(c->sock);  // an idle kept-alive connection
                    continue;
                }
                still.push_back(std::move(c));
            }
            waiting.swap(still);
        }
        for (auto& c : waiting) close_socket(c->sock);
    }

    GuardedServer& server_;
    RequestThreads workers_;
    std::thread reader_;
    int wake_[2] = {-1, -1};
    std::mutex mutex_;
    std::vector<std::unique_ptr<Connection>> incoming_;
    bool stopping_ = false;
};

GuardedServer::GuardedServer(HeadLimits limits, std::size_t threads) : limits_(limits), threads_(threads) {
    new_task_queue = [this] {
        dispatcher_ = new Dispatcher(*this);
        return dispatcher_;
    };
}

GuardedServer::~GuardedServer() = default;

void GuardedServer::close_after_this_request() { close_requested = true; }

bool GuardedServer::process_and_close_socket(socket_t sock) {
    auto c = std::make_unique<Connection>();
    c->sock = sock;
    if (dispatcher_ == nullptr) {
        close_socket(sock);
        return false;
    }
    dispatcher_->wait_for_head(std::move(c));
    return true;
}

bool GuardedServer::serve_one(Connection& conn, bool last) {
    // the head is in already: what is still read is its body, which must
    // come within body_timeout in all (a body sent a byte at a time holds a
    // request thread no longer than that)
    ConnectionStream stream(conn, limits_.io_timeout, SteadyClock::now() + limits_.body_timeout);
    close_requested = false;
    bool closed = false;
    ++conn.served;
    bool close = last || conn.served >= keep_alive_max_count_;
    bool ok = serve_request(stream, close, closed);
    return ok && !close && !closed && !close_requested;
}

}  // namespace jobqueue::dashboard
