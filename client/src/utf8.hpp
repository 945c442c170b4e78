// utf8.hpp (internal): text as the server counts it, in UTF-8 characters.
#pragma once

#include <cstddef>
#include <string>

namespace jobqueue::utf8 {

// The text with every byte that is not part of a valid UTF-8 sequence
// replaced by '?': the server refuses invalid UTF-8 (22021).
std::string valid(const std::string& text);

// How many characters (code points) text holds; a stray continuation byte
// does not start one.
std::size_t length(const std::string& text);

// The first max_chars characters of text, never cutting a character.
std::string prefix(const std::string& text, std::size_t max_chars);

}  // namespace jobqueue::utf8
