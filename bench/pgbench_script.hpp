// bench/pgbench_script.hpp: the SQL statements of one of bench/scripts/*.sql,
// so that the C++ load generator runs exactly what the pgbench scenarios run.
//
// A pgbench script here is a list of statements, each ending with ";" or
// with "\gset" (which stores the result's columns in variables); lines of
// meta-commands (\if, \endif, ...) are dropped.  The variables :id and
// :token, set by a previous \gset, become the parameters $1 and $2.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

inline std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

inline void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
}

inline std::vector<std::string> read_pgbench_script(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::vector<std::string> statements;
    std::string current, line;
    auto finish = [&](std::string text) {
        current += text;
        std::string sql = trim(current);
        current.clear();
        if (sql.empty()) return;
        replace_all(sql, ":id", "$1");
        replace_all(sql, ":token", "$2");
        statements.push_back(sql);
    };
    while (std::getline(in, line)) {
        const std::string t = trim(line);
        if (t.empty()) continue;
        if (t[0] == '\\') continue;  // a meta-command line (\if, \endif)
        const std::string gset = "\\gset";
        if (t.size() >= gset.size() && t.compare(t.size() - gset.size(), gset.size(), gset) == 0) {
            finish(t.substr(0, t.size() - gset.size()));
        } else if (t.back() == ';') {
            finish(t.substr(0, t.size() - 1));
        } else {
            current += t + "\n";
        }
    }
    if (!trim(current).empty()) throw std::runtime_error(path + ": statement without ';' or \\gset at the end");
    return statements;
}

}  // namespace bench
