// request_head.hpp: the limits on a request head (request line and header
// lines) that the dashboard enforces before httplib parses it, and how the
// bytes received so far are judged against them (guarded_server.hpp).
#pragma once

#include <chrono>
#include <cstddef>

namespace jobqueue::dashboard {

struct HeadLimits {
    std::chrono::milliseconds head_timeout{10000};  // the whole request head, from its first wait
    std::size_t max_head_bytes = 64 * 1024;          // request line and headers
    std::size_t max_header_lines = 100;              // header lines after the request line
    std::size_t max_waiting = 512;                   // connections waiting for their head
    std::chrono::seconds io_timeout{5};              // each read of a body, each write
    std::chrono::seconds body_timeout{30};           // every read of one request's body together
};

// A head still coming, a complete head (the bytes may go on with a body or
// the next request), or one over the limits (431).
enum class HeadState { incomplete, complete, too_large };

// httplib reads a head line by line up to "\n"; the head ends at the first
// line after the request line that is exactly "\r\n" (its read_headers
// skips a bare "\n" line), and that is what is looked for here.
HeadState judge_head(const char* data, std::size_t size, const HeadLimits& limits);

}  // namespace jobqueue::dashboard
