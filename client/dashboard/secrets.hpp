// secrets.hpp: the dashboard's random token and the comparison of secrets.
#pragma once

#include <cstddef>
#include <string>

namespace jobqueue::dashboard {

// `bytes` random bytes from the kernel (getrandom), as lower-case hex.
// Throws std::runtime_error when the kernel has none to give.
std::string random_hex(std::size_t bytes);

// Whether a and b are equal, in a time that depends on their lengths only,
// never on where they first differ: a secret compared with == leaks, byte
// by byte, how much of a guess was right.
bool constant_time_equal(const std::string& a, const std::string& b) noexcept;

}  // namespace jobqueue::dashboard
