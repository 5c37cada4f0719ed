#include "cli/numeric_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace megasim::cli {

CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const std::string range = fmt::format("a base-10 integer from {} to {}", min, max);
  return CLI::Validator(
      [min, max, range](const std::string& text) {
        std::int64_t x = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
        // A leading zero would be octal to CLI11's conversion ("010" is 8): refused, not misread.
        const std::size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
        const bool octal = text.size() > digits + 1 && text[digits] == '0';
        const bool whole = ec == std::errc() && end == text.data() + text.size() && !text.empty() && !octal;
        return whole && x >= min && x <= max ? std::string() : text + ": want " + range;
      },
      fmt::format("INT in [{}, {}]", min, max));
}

CLI::Validator number_in(double min, double max) {
  const std::string range = fmt::format("a number from {} to {}", min, max);
  return CLI::Validator(
      [min, max, range](const std::string& text) {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        const bool whole = !text.empty() && end == text.c_str() + text.size() && std::isfinite(x);
        return whole && x >= min && x <= max ? std::string() : text + ": want " + range;
      },
      fmt::format("NUMBER in [{}, {}]", min, max));
}

}  // namespace megasim::cli
