// utf8.cpp: UTF-8 checks and counts, in characters as the server counts.
#include "utf8.hpp"

namespace jobqueue::utf8 {

namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid sequence starting at s[i], or 0 when there is none.
std::size_t sequence_at(const unsigned char* s, std::size_t n, std::size_t i) {
    unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                                            : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (len == 0 || c == 0 || i + len > n) return 0;
    for (std::size_t k = 1; k < len; ++k)
        if (!continuation(s[i + k])) return 0;
    unsigned char d = len > 1 ? s[i + 1] : 0;
    if (len == 3 && ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F))) return 0;  // overlong, surrogates
    if (len == 4 && ((c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F))) return 0;  // overlong, > U+10FFFF
    return len;
}

}  // namespace

std::string valid(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (std::size_t i = 0; i < text.size();) {
        std::size_t len = sequence_at(s, text.size(), i);
        if (len > 0) {
            out.append(text, i, len);
            i += len;
        } else {
            out += '?';
            ++i;
        }
    }
    return out;
}

std::size_t length(const std::string& text) {
    std::size_t count = 0;
    for (char c : text)
        if (!continuation(static_cast<unsigned char>(c))) ++count;
    return count;
}

std::string prefix(const std::string& text, std::size_t max_chars) {
    std::size_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (continuation(static_cast<unsigned char>(text[i]))) continue;
        if (seen == max_chars) return text.substr(0, i);
        ++seen;
    }
    return text;
}

}  // namespace jobqueue::utf8
