// pg.cpp: conversions between C++ values and PostgreSQL's text formats.
#include "pg.hpp"

#include <stdexcept>

#include "jobqueue/error.hpp"

namespace jobqueue::pg {

std::string interval_text(std::chrono::milliseconds span) {
    return std::to_string(span.count()) + " milliseconds";
}

// Every element quoted, so names with commas, braces or spaces survive.
std::string array_text(const std::vector<std::string>& values) {
    std::string out = "{";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ',';
        out += '"';
        for (char c : values[i]) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

std::string int_array_text(const std::vector<std::int64_t>& values) {
    std::string out = "{";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(values[i]);
    }
    return out + "}";
}

Param param(const std::optional<std::string>& value) { return value; }

Param param(const std::optional<int>& value) {
    return value ? Param(std::to_string(*value)) : std::nullopt;
}

Param param(const std::optional<std::int64_t>& value) {
    return value ? Param(std::to_string(*value)) : std::nullopt;
}

Param param(const std::optional<bool>& value) {
    return value ? Param(*value ? "true" : "false") : std::nullopt;
}

Param param(const std::optional<std::chrono::milliseconds>& value) {
    return value ? Param(interval_text(*value)) : std::nullopt;
}

Param param(const std::optional<TimePoint>& value) {
    return value ? Param(format_time(*value)) : std::nullopt;
}

Param param(const std::vector<std::string>& values) {
    return values.empty() ? std::nullopt : Param(array_text(values));
}

std::int64_t to_int(const char* text) {
    try {
        return std::stoll(text);
    } catch (const std::exception&) {
        throw Error(std::string("jobqueue: not an integer from the server: ") + text);
    }
}

std::vector<std::int64_t> int_array(const char* text) {
    std::vector<std::int64_t> out;
    std::string s(text);
    if (s.size() < 2 || s.front() != '{' || s.back() != '}')
        throw Error("jobqueue: not an integer array from the server: " + s);
    std::string item;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
        if (s[i] == ',') {
            out.push_back(to_int(item.c_str()));
            item.clear();
        } else {
            item += s[i];
        }
    }
    if (!item.empty()) out.push_back(to_int(item.c_str()));
    return out;
}

TimePoint micros_time(const char* text) {
    return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(to_int(text))));
}

std::chrono::milliseconds millis(const char* text) {
    return std::chrono::milliseconds(to_int(text));
}

}  // namespace jobqueue::pg
