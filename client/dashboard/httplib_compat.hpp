// httplib_compat.hpp: the one place where the dashboard copes with the
// cpp-httplib versions it is built with.
//
// Why: GuardedServer (guarded_server.cpp) works below httplib's usual API (a
// task queue of its own, Server::process_request, a Stream of its own), and
// those parts changed between the versions that Debian ships as
// libcpp-httplib-dev: 0.11.4 (Debian 12, bookworm), 0.18.7 (Debian 13,
// trixie), 0.41.0 (sid):
//
//   TaskQueue::enqueue   0.11 returns void. 0.18 and 0.41 return bool: true
//                        when the queue took the task, false when it refused
//                        it (a ThreadPool that is shut down, or whose queue
//                        limit is reached), and the listen loop then closes
//                        the accepted socket itself.
//   Server::process_request
//                        0.11: (strm, close_connection, connection_closed,
//                        setup_request), and it asks strm for the remote and
//                        local address. 0.18 and 0.41: the caller passes
//                        them, (strm, remote_addr, remote_port, local_addr,
//                        local_port, close_connection, ...), which httplib's
//                        own caller takes from the socket; 0.41 adds a last
//                        `bool* websocket_upgraded = nullptr` (no WebSocket
//                        route here).
//   Stream               0.11 and 0.18: is_readable() and is_writable() wait
//                        until the socket is readable or writable. 0.41:
//                        is_readable() only says whether bytes are buffered
//                        (never waits: a body without Content-Length is
//                        looked for with it), wait_readable() and
//                        wait_writable() wait, and duration() (milliseconds
//                        since the stream began) is required.
//   ThreadPool           not used: 0.18's is defined in the header, and its
//                        threads call OpenSSL's OPENSSL_thread_stop() (Debian
//                        builds httplib with OpenSSL), while cpp-httplib.pc
//                        names openssl only in Requires.private: the tool did
//                        not link. 0.41's adds threads on demand and refuses
//                        tasks once shut down. GuardedServer has request
//                        threads of its own (RequestThreads).
//   an unread body       0.41 reads and drops a request body that no handler
//                        read, after the answer. The dashboard's refusals
//                        (close_after_this_request) must not wait for a
//                        body, so ConnectionStream reads nothing once the
//                        request was refused (as 0.11 and 0.18 never do).
//
// The first three are detected at compile time from httplib's own
// declarations (no version numbers: a version in between is handled by what
// it declares), and only this file names them; the last two are done alike
// on every version.
#pragma once

#include <httplib.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace jobqueue::dashboard::httplib_compat {

// What TaskQueue::enqueue returns: void or bool.
using EnqueueResult = decltype(std::declval<httplib::TaskQueue&>().enqueue(std::declval<std::function<void()>>()));

// A task queue's enqueue saying that it took the task (and so the socket):
// true where enqueue returns bool (`return static_cast<void>(true);` where
// it returns void).
inline EnqueueResult task_taken() {
    return static_cast<EnqueueResult>(true);
}

namespace detail {

template <class S, class = void>
struct waits_by_name : std::false_type {};
// 0.41's Stream: wait_readable() and wait_writable() wait, is_readable() does not
template <class S>
struct waits_by_name<S, std::void_t<decltype(&S::wait_readable)>> : std::true_type {};

// What each version's Stream needs, in the dashboard's terms.
template <class Base>
class StreamOps : public Base {
protected:
    // bytes read already and not taken yet
    virtual bool buffered() const = 0;
    // buffered, or the socket readable within the read timeout
    virtual bool await_readable() const = 0;
    // the socket writable within the write timeout
    virtual bool await_writable() const = 0;
    // since the stream began
    virtual std::chrono::milliseconds age() const = 0;
};

}  // namespace detail

// httplib::Stream in the dashboard's terms: a stream derives from Stream<>
// and defines the operations of detail::StreamOps (and read, write, the
// addresses and socket, which every version names alike).
template <class Base = httplib::Stream, bool = detail::waits_by_name<Base>::value>
class Stream;

// 0.11, 0.18
template <class Base>
class Stream<Base, false> : public detail::StreamOps<Base> {
public:
    bool is_readable() const override { return this->await_readable(); }
    bool is_writable() const override { return this->await_writable(); }
};

// 0.41
template <class Base>
class Stream<Base, true> : public detail::StreamOps<Base> {
public:
    bool is_readable() const override { return this->buffered(); }
    bool wait_readable() const override { return this->await_readable(); }
    bool wait_writable() const override { return this->await_writable(); }
    std::time_t duration() const override { return static_cast<std::time_t>(this->age().count()); }
};

// httplib::Server with one request served the same way on every version.
class Server : public httplib::Server {
protected:
    // One request from strm (of a connection accepted by this server), as
    // httplib's own connection loop serves it: whether the answer was
    // written; connection_closed is set when the request asked for the
    // connection to end.
    bool serve_request(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
        return serve_request_on(*this, strm, close_connection, connection_closed);
    }

private:
    // whether process_request takes the addresses (0.18 on)
    template <class S>
    static auto takes_addresses(S& s, int)
        -> decltype(s.process_request(std::declval<httplib::Stream&>(), std::string(), 0, std::string(), 0, false,
                                      std::declval<bool&>(), nullptr),
                    std::true_type());
    template <class S>
    static std::false_type takes_addresses(S&, long);

    template <class S>
    static bool serve_request_on(S& self, httplib::Stream& strm, bool close_connection, bool& connection_closed) {
        if constexpr (decltype(takes_addresses(self, 0))::value) {
            // what 0.11's process_request asked the stream itself
            std::string remote_addr, local_addr;
            int remote_port = 0, local_port = 0;
            strm.get_remote_ip_and_port(remote_addr, remote_port);
            strm.get_local_ip_and_port(local_addr, local_port);
            return self.process_request(strm, remote_addr, remote_port, local_addr, local_port, close_connection,
                                        connection_closed, nullptr);
        } else {
            return self.process_request(strm, close_connection, connection_closed, nullptr);
        }
    }
};

}  // namespace jobqueue::dashboard::httplib_compat
