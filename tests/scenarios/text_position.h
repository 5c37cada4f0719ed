// "SOURCE:LINE:COLUMN" of a byte offset in a text, counted independently of the readers under test
// (line and column 1-based, the column in bytes), for the expected errors of the JSON tests.
#pragma once

#include <cstddef>
#include <string>

namespace megasim::scenarios::testing {

inline std::string text_position(const std::string& source, const std::string& text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace megasim::scenarios::testing
