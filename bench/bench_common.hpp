// bench/bench_common.hpp: small helpers shared by the benchmark's C++ programs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

using Steady = std::chrono::steady_clock;

inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now().time_since_epoch()).count();
}

// Nearest-rank percentile of sorted values (0 for none).
inline double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    std::size_t rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

}  // namespace bench
