// parse.hpp: the CLI's readers (and writer) of durations and times.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include "jobqueue/job.hpp"

namespace jobqueue::cli {

// Thrown for input the user must correct (exit status 1).
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "250ms", "30s", "5m", "2h", "1d", or a plain number of seconds ("1.5").
// Negative durations are refused. option names the flag in the error.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& option);

// A duration as parse_duration reads it back: "90s", "1500ms".
std::string duration_text(std::chrono::milliseconds span);

// An ISO 8601 time ("2030-01-31", "2030-01-31 12:00", "2030-01-31T12:00:00Z",
// "...+02:00"; UTC when no zone is given), or a duration counted from now:
// into the future when future is true, else into the past ("7d" = 7 days ago).
TimePoint parse_time(const std::string& text, const std::string& option, bool future);

}  // namespace jobqueue::cli
