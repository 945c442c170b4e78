// request_head.cpp: judging the bytes of a request head against its limits.
#include "request_head.hpp"

#include <cstring>

namespace jobqueue::dashboard {

HeadState judge_head(const char* data, std::size_t size, const HeadLimits& limits) {
    std::size_t at = 0, lines = 0;
    bool request_line = true;
    while (at < size) {
        const void* nl = std::memchr(data + at, '\n', size - at);
        if (nl == nullptr) break;
        std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1;
        if (end > limits.max_head_bytes) return HeadState::too_large;
        if (request_line) {
            request_line = false;
        } else {
            if (end - at == 2 && data[at] == '\r') return HeadState::complete;
            if (++lines > limits.max_header_lines) return HeadState::too_large;
        }
        at = end;
    }
    return size >= limits.max_head_bytes ? HeadState::too_large : HeadState::incomplete;
}

}  // namespace jobqueue::dashboard
