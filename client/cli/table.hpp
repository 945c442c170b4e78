// table.hpp: aligned text tables for people.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace jobqueue::cli {

class Table {
public:
    explicit Table(std::vector<std::string> headers);
    // Columns whose index is listed here are right-aligned (numbers).
    Table& align_right(std::vector<size_t> columns);
    Table& row(std::vector<std::string> cells);
    void print(std::ostream& out) const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
    std::vector<bool> right_;
};

// The first line of text, cut to width characters with "..." when longer.
std::string one_line(const std::string& text, size_t width);

}  // namespace jobqueue::cli
