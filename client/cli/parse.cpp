// parse.cpp: durations and times given on the command line.
#include "parse.hpp"

#include <date/date.h>

#include <cmath>
#include <sstream>

namespace jobqueue::cli {

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& option) {
    size_t end = 0;
    double number = 0;
    try {
        number = std::stod(text, &end);
    } catch (const std::exception&) {
        throw UsageError(option + ": not a duration: \"" + text + "\" (examples: 250ms, 30s, 5m, 2h, 1d)");
    }
    std::string unit = text.substr(end);
    double scale;
    if (unit.empty() || unit == "s") scale = 1000;
    else if (unit == "ms") scale = 1;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else if (unit == "d") scale = 86'400'000;
    else throw UsageError(option + ": unknown unit in \"" + text + "\" (use ms, s, m, h or d)");
    if (!std::isfinite(number) || number < 0)
        throw UsageError(option + ": must not be negative: \"" + text + "\"");
    double millis = number * scale;
    if (millis > 100.0 * 365 * 86'400'000) throw UsageError(option + ": too long: \"" + text + "\"");
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(millis)));
}

std::string duration_text(std::chrono::milliseconds span) {
    auto ms = span.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

namespace {

// The forms parse_time takes, tried in order; each must consume the whole
// text. %z reads +hh[mm], %Ez +hh[:mm]; "Z" (either case) becomes +00:00 first.
const char* const kTimeForms[] = {"%F",        "%F %R",      "%F %T",       "%F %R %z",
                                  "%F %T %z",  "%F %R %Ez",  "%F %T %Ez"};

std::optional<TimePoint> parse_iso8601(std::string text) {
    // one spelling for the date/time separator and for UTC
    if (text.size() > 10 && (text[10] == 'T' || text[10] == 't')) text[10] = ' ';
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (!text.empty() && (text.back() == 'Z' || text.back() == 'z')) {
        text.pop_back();
        while (!text.empty() && text.back() == ' ') text.pop_back();
        if (text.size() > 10) text += " +00:00";
    }
    for (const char* form : kTimeForms) {
        std::istringstream in(text);
        date::sys_time<std::chrono::microseconds> t;
        std::chrono::minutes offset{0};
        in >> date::parse(form, t, offset);
        if (in && in.peek() == std::char_traits<char>::eof())
            return std::chrono::time_point_cast<Clock::duration>(t);
    }
    return std::nullopt;
}

bool looks_like_a_date(const std::string& text) {
    return text.size() >= 10 && text[4] == '-' && text[7] == '-';
}

}  // namespace

TimePoint parse_time(const std::string& text, const std::string& option, bool future) {
    if (!looks_like_a_date(text)) {
        // Not a date: a duration counted from now ("7d", "90m", "30").
        auto span = parse_duration(text, option);
        return future ? Clock::now() + span : Clock::now() - span;
    }
    auto t = parse_iso8601(text);
    if (!t) throw UsageError(option + ": not a valid time: \"" + text + "\"");
    return *t;
}

}  // namespace jobqueue::cli
