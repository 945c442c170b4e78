// cli_parse_test.cpp: the command line's readers of durations and times.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "parse.hpp"

using namespace std::chrono_literals;
using jobqueue::Clock;
using jobqueue::TimePoint;
using jobqueue::cli::parse_duration;
using jobqueue::cli::parse_time;
using jobqueue::cli::UsageError;

namespace {

// The time as format_time writes it (ISO 8601 UTC, microseconds).
std::string iso(const std::string& text) { return jobqueue::format_time(parse_time(text, "--t", true)); }

}  // namespace

TEST(ParseDuration, UnitsAndPlainSeconds) {
    EXPECT_EQ(parse_duration("250ms", "--d"), 250ms);
    EXPECT_EQ(parse_duration("30s", "--d"), 30s);
    EXPECT_EQ(parse_duration("5m", "--d"), 5min);
    EXPECT_EQ(parse_duration("2h", "--d"), 2h);
    EXPECT_EQ(parse_duration("1d", "--d"), 24h);
    EXPECT_EQ(parse_duration("1.5", "--d"), 1500ms);
    EXPECT_EQ(parse_duration("0", "--d"), 0ms);
}

TEST(ParseDuration, RefusesWhatIsNotOne) {
    for (const char* bad : {"soon", "5y", "-5s", "", "inf", "1e20d"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parse_duration(bad, "--d"), UsageError);
    }
    try {
        parse_duration("5y", "--lease");
        ADD_FAILURE();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--lease"), std::string::npos) << e.what();
    }
}

TEST(DurationText, ReadsBackAsTheSameDuration) {
    for (std::chrono::milliseconds d : {0ms, 1500ms, 60000ms, 90000ms}) EXPECT_EQ(parse_duration(jobqueue::cli::duration_text(d), "--d"), d);
    EXPECT_EQ(jobqueue::cli::duration_text(60s), "60s");
    EXPECT_EQ(jobqueue::cli::duration_text(1500ms), "1500ms");
}

TEST(ParseTime, Iso8601Forms) {
    EXPECT_EQ(iso("2030-01-31"), "2030-01-31T00:00:00.000000Z");
    EXPECT_EQ(iso("2030-01-31 12:00"), "2030-01-31T12:00:00.000000Z");
    EXPECT_EQ(iso("2030-01-31T12:00"), "2030-01-31T12:00:00.000000Z");
    EXPECT_EQ(iso("2030-01-31T12:00Z"), "2030-01-31T12:00:00.000000Z");
    EXPECT_EQ(iso("2030-01-31T12:00:05Z"), "2030-01-31T12:00:05.000000Z");
    EXPECT_EQ(iso("2030-01-31t12:00:05z"), "2030-01-31T12:00:05.000000Z");
    EXPECT_EQ(iso("2030-01-31T12:00:05.25Z"), "2030-01-31T12:00:05.250000Z");
    EXPECT_EQ(iso("2030-01-31T12:00:05.123456Z"), "2030-01-31T12:00:05.123456Z");
}

TEST(ParseTime, ZonesAreTurnedIntoUtc) {
    EXPECT_EQ(iso("2030-01-31T12:00+02:00"), "2030-01-31T10:00:00.000000Z");
    EXPECT_EQ(iso("2030-01-31T12:00:00-0130"), "2030-01-31T13:30:00.000000Z");
    EXPECT_EQ(iso("2030-01-31 00:30+01"), "2030-01-30T23:30:00.000000Z");
    EXPECT_EQ(iso("2030-01-31 12:00 +00:00"), "2030-01-31T12:00:00.000000Z");
}

TEST(ParseTime, RefusesInvalidDates) {
    for (const char* bad : {"2030-13-01", "2030-02-30", "2030-01-31T25:00", "2030-01-31T12:61", "2030-01-31 12",
                            "2030-01-31T12:00+2:00x", "2030-01-31 junk"}) {
        SCOPED_TRACE(bad);
        EXPECT_THROW(parse_time(bad, "--t", true), UsageError);
    }
}

// Not a date: a duration counted from now, forward or back.
TEST(ParseTime, DurationsCountFromNow) {
    auto before = Clock::now();
    auto later = parse_time("1h", "--t", true);
    auto earlier = parse_time("7d", "--t", false);
    auto after = Clock::now();
    EXPECT_GE(later, before + 1h);
    EXPECT_LE(later, after + 1h);
    EXPECT_GE(earlier, before - 7 * 24h);
    EXPECT_LE(earlier, after - 7 * 24h);
    EXPECT_THROW(parse_time("soon", "--t", true), UsageError);
}
