// prometheus.hpp: the Prometheus text exposition format (version 0.0.4):
// "# HELP" and "# TYPE" lines, then the samples of each family.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jobqueue::dashboard {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Collects metric families and writes them as text.
class PrometheusText {
public:
    // Starts a family: type is "counter" or "gauge". Its samples follow.
    void family(const std::string& name, const std::string& type, const std::string& help);
    void sample(const std::string& name, const Labels& labels, std::int64_t value);
    void sample(const std::string& name, const Labels& labels, double value);

    [[nodiscard]] const std::string& text() const noexcept { return text_; }

private:
    void sample_line(const std::string& name, const Labels& labels, const std::string& value);
    std::string text_;
};

// A label value as the format wants it between double quotes: backslash,
// double quote and line feed escaped (\\, \", \n).
std::string escape_label_value(const std::string& value);
// HELP text: backslash and line feed escaped.
std::string escape_help(const std::string& help);
// A sample value: integers exactly, others in the shortest form that reads
// back as the same double; NaN and infinities as the format spells them.
std::string format_value(double value);

}  // namespace jobqueue::dashboard
