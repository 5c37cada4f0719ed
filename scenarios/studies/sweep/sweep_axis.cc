// Parsing of `--vary section.key=...` (sweep_study.h, parse_sweep_axis): lists and integer ranges.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/keys.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/sweep/sweep_study.h"
#include "sim/error.h"
#include "sim/repeats.h"

namespace megasim::scenarios {
namespace {

constexpr std::string_view kValid =
    "v1,v2,... or, for an integer key, a..b (a, 2a, 4a, ... and b) or a..b:s (a, a+s, ... up to b)";

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

bool parse_int(std::string_view text, std::int64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string> split_list(const std::string& key, std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (item.empty()) throw sim::ConfigError(key, quoted(text), "a list with no empty item: " + std::string(kValid));
    out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// a..b or a..b:s on an integer key; `range` is the text after '='.
std::vector<std::string> expand_range(const KeySpec& spec, std::string_view range, std::size_t dots) {
  const std::string key = spec.full_name();
  if (spec.type != ValueType::kInt) {
    throw sim::ConfigError(key, quoted(range), "a list v1,v2,... (ranges a..b only for integer keys)");
  }
  const std::string_view after = range.substr(dots + 2);
  const std::size_t colon = after.find(':');
  std::int64_t a = 0, b = 0, step = 0;
  const bool stepped = colon != std::string_view::npos;
  if (!parse_int(range.substr(0, dots), a) || !parse_int(after.substr(0, colon), b) ||
      (stepped && !parse_int(after.substr(colon + 1), step))) {
    throw sim::ConfigError(key, quoted(range), std::string(kValid) + ", with integers a, b and s");
  }
  if (a > b || (stepped ? step < 1 : a < 1)) {
    throw sim::ConfigError(key, quoted(range),
                           stepped ? "a non-empty range a..b:s with a <= b and s >= 1"
                                   : "a non-empty doubling range a..b with 1 <= a <= b");
  }
  std::vector<std::string> out;
  std::int64_t x = a;
  while (true) {
    if (out.size() >= kMaxSweepAxisValues) {
      throw sim::ConfigError(key, quoted(range),
                             "a range of at most " + std::to_string(kMaxSweepAxisValues) + " values");
    }
    out.push_back(std::to_string(x));
    const std::int64_t gap = stepped ? step : x;  // x >= 1 when doubling
    if (x == b || gap > b - x) break;
    x += gap;
  }
  if (!stepped && x != b) out.push_back(std::to_string(b));
  return out;
}

}  // namespace

SweepAxis parse_sweep_axis(std::string_view spec) {
  const std::size_t eq = spec.find('=');
  const std::string_view lhs = spec.substr(0, eq);
  const std::size_t dot = lhs.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot == 0 || dot + 1 == lhs.size()) {
    throw sim::ConfigError("--vary", quoted(spec), "section.key=" + std::string(kValid));
  }
  const KeySpec& key = find_key(lhs.substr(0, dot), lhs.substr(dot + 1));
  SweepAxis axis;
  axis.key = key.full_name();
  const std::string_view rhs = spec.substr(eq + 1);
  // Strings may contain ".." (relative paths): for them it is part of a value, never a range.
  const std::size_t dots = key.type == ValueType::kString ? std::string_view::npos : rhs.find("..");
  axis.values = dots == std::string_view::npos ? split_list(axis.key, rhs) : expand_range(key, rhs, dots);
  if (axis.values.size() > kMaxSweepAxisValues) {
    throw sim::ConfigError(axis.key, quoted(rhs), "at most " + std::to_string(kMaxSweepAxisValues) + " values");
  }
  // Each value goes through `--set`'s parser now, so a bad one is refused before any simulation; a
  // value given twice (as parsed: 8 and 08 are one value) is refused, not swept twice or merged.
  Scenario scratch;
  std::vector<Value> parsed;
  for (const std::string& v : axis.values) {
    apply_override(scratch, axis.key + "=" + v);
    parsed.push_back(key.get(scratch));
  }
  if (const std::optional<std::size_t> k = sim::first_repeat(parsed)) {
    throw sim::ConfigError(axis.key, quoted(rhs), "each value at most once (" + axis.values[*k] + " is listed twice)");
  }
  return axis;
}

}  // namespace megasim::scenarios
