// prometheus.cpp: writing the text exposition format.
#include "prometheus.hpp"

#include <charconv>
#include <cmath>

namespace jobqueue::dashboard {

std::string escape_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string escape_help(const std::string& help) {
    std::string out;
    for (char c : help) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

void PrometheusText::family(const std::string& name, const std::string& type, const std::string& help) {
    text_ += "# HELP " + name + " " + escape_help(help) + "\n";
    text_ += "# TYPE " + name + " " + type + "\n";
}

void PrometheusText::sample_line(const std::string& name, const Labels& labels, const std::string& value) {
    text_ += name;
    if (!labels.empty()) {
        text_ += '{';
        bool first = true;
        for (const auto& [label, label_value] : labels) {
            if (!first) text_ += ',';
            first = false;
            text_ += label + "=\"" + escape_label_value(label_value) + "\"";
        }
        text_ += '}';
    }
    text_ += ' ' + value + '\n';
}

void PrometheusText::sample(const std::string& name, const Labels& labels, std::int64_t value) {
    sample_line(name, labels, std::to_string(value));
}

void PrometheusText::sample(const std::string& name, const Labels& labels, double value) {
    sample_line(name, labels, format_value(value));
}

}  // namespace jobqueue::dashboard
