// guarded_server.hpp: cpp-httplib's Server with a request head read by the
// dashboard itself, under a deadline and a size cap, before a request takes
// one of the threads that serve requests.
//
// Why not httplib alone: Debian's cpp-httplib (0.11) bounds each read of a
// request (set_read_timeout), not the whole head, and keeps no count of
// header lines: a client that sends one header line every few seconds holds
// a request thread for as long as it likes, eight such clients hold all of
// them, and a head of millions of short lines is kept in memory whole (its
// limits, CPPHTTPLIB_HEADER_MAX_LENGTH and CPPHTTPLIB_REQUEST_URI_MAX_LENGTH,
// are per line, and fixed when the library was compiled). So:
//
//   accept (httplib's loop)
//     -> one reader thread polls every connection whose head is not complete
//        yet: the whole head must arrive within head_timeout (else 408 and
//        closed), in at most max_head_bytes and max_header_lines (else 431
//        and closed); at most max_waiting such connections (the oldest is
//        closed first);
//     -> a complete head goes to the pool of request threads, where httplib
//        parses and routes it (process_request) from the bytes already read;
//        a body must then come within body_timeout in all (io_timeout for
//        each read and each write);
//     -> a connection kept alive goes back to the reader for its next head,
//        so an idle connection holds no request thread either.
// A request refused before its body was read (no credentials, a bad Host)
// ends its connection (close_after_this_request), so whoever has not
// authenticated holds a request thread only for the time of that refusal.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "httplib_compat.hpp"
#include "request_head.hpp"

namespace jobqueue::dashboard {

// (httplib_compat::Server: httplib::Server with process_request called alike
// on every cpp-httplib version)
class GuardedServer : public httplib_compat::Server {
public:
    GuardedServer(HeadLimits limits, std::size_t threads);
    ~GuardedServer() override;

    // Called from a handler (the pre-routing one, on a refusal): the
    // connection ends after this answer, whatever the client asked for.
    static void close_after_this_request();

    struct Connection;
    class Dispatcher;

private:
    // Called by httplib's accept loop with each accepted socket (through the
    // task queue, which runs it at once): hands it to the reader.
    bool process_and_close_socket(socket_t sock) override;
    // One request of conn, on a request thread; whether the connection may
    // carry another.
    bool serve_one(Connection& conn, bool last);

    HeadLimits limits_;
    std::size_t threads_;
    Dispatcher* dispatcher_ = nullptr;  // set while listen_after_bind runs
};

}  // namespace jobqueue::dashboard
