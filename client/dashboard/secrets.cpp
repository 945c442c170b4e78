// secrets.cpp: random tokens from getrandom(2), constant-time comparison.
#include "secrets.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace jobqueue::dashboard {

std::string random_hex(std::size_t bytes) {
    std::vector<unsigned char> buffer(bytes);
    std::size_t filled = 0;
    while (filled < bytes) {
        ssize_t n = getrandom(buffer.data() + filled, bytes - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
        }
        filled += static_cast<std::size_t>(n);
    }
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes * 2);
    for (unsigned char b : buffer) {
        out += digits[b >> 4];
        out += digits[b & 0x0f];
    }
    return out;
}

bool constant_time_equal(const std::string& a, const std::string& b) noexcept {
    // Every byte of the longer string is looked at whatever the contents;
    // a length difference makes the result false without an early return.
    const std::size_t n = a.size() > b.size() ? a.size() : b.size();
    unsigned char difference = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < n; ++i) {
        unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        difference |= static_cast<unsigned char>(x ^ y);
    }
    return difference == 0;
}

}  // namespace jobqueue::dashboard
