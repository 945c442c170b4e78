// table.cpp: aligned text tables for people.
#include "table.hpp"

#include <algorithm>

namespace jobqueue::cli {

namespace {
// Display width, counting a UTF-8 sequence as one column.
size_t width_of(const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)), right_(headers_.size(), false) {}

Table& Table::align_right(std::vector<size_t> columns) {
    for (size_t c : columns)
        if (c < right_.size()) right_[c] = true;
    return *this;
}

Table& Table::row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    rows_.push_back(std::move(cells));
    return *this;
}

void Table::print(std::ostream& out) const {
    std::vector<size_t> widths;
    for (const auto& h : headers_) widths.push_back(width_of(h));
    for (const auto& r : rows_)
        for (size_t c = 0; c < r.size(); ++c) widths[c] = std::max(widths[c], width_of(r[c]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c) {
            std::string pad(widths[c] - width_of(cells[c]), ' ');
            if (c) text += "  ";
            text += right_[c] ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
        }
        out << text << "\n";
    };
    line(headers_);
    std::vector<std::string> rule;
    for (size_t w : widths) rule.push_back(std::string(w, '-'));
    line(rule);
    for (const auto& r : rows_) line(r);
}

std::string one_line(const std::string& text, size_t width) {
    std::string first = text.substr(0, text.find('\n'));
    bool cut = first.size() < text.size();
    if (width_of(first) > width) {
        size_t keep = 0, seen = 0;
        while (keep < first.size() && seen < width - 3) {
            ++keep;
            while (keep < first.size() && (first[keep] & 0xC0) == 0x80) ++keep;
            ++seen;
        }
        first = first.substr(0, keep);
        cut = true;
    }
    return cut ? first + "..." : first;
}

}  // namespace jobqueue::cli
