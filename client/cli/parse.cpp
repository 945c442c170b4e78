// parse.cpp: durations and times given on the command line.
#include "parse.hpp"

#include <cctype>
#include <cmath>
#include <ctime>
#include <regex>

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

TimePoint parse_time(const std::string& text, const std::string& option, bool future) {
    static const std::regex iso(
        R"(^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}(?:\.\d{1,6})?))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$)");
    std::smatch m;
    if (!std::regex_match(text, m, iso)) {
        // Not a date: a duration counted from now ("7d", "90m", "30").
        auto span = parse_duration(text, option);
        return future ? Clock::now() + span : Clock::now() - span;
    }
    auto number = [&](int i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
    std::tm tm{};
    tm.tm_year = number(1) - 1900;
    tm.tm_mon = number(2) - 1;
    tm.tm_mday = number(3);
    tm.tm_hour = number(4);
    tm.tm_min = number(5);
    double second = m[6].matched ? std::stod(m[6].str()) : 0.0;
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        second >= 60)
        throw UsageError(option + ": not a valid time: \"" + text + "\"");
    long offset = 0;
    if (m[7].matched && m[7].str() != "Z" && m[7].str() != "z") {
        std::string zone = m[7].str();
        std::string digits;
        for (char c : zone.substr(1))
            if (c != ':') digits += c;
        int hours = std::stoi(digits.substr(0, 2));
        int minutes = digits.size() > 2 ? std::stoi(digits.substr(2)) : 0;
        offset = (hours * 3600L + minutes * 60L) * (zone[0] == '-' ? -1 : 1);
    }
    std::time_t seconds = timegm(&tm) - offset;
    return Clock::from_time_t(seconds) +
           std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(std::llround(second * 1e6)));
}

}  // namespace jobqueue::cli
