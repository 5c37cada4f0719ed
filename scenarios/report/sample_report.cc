#include "scenarios/report/sample_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "scenarios/config/plural.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

void write_spread(JsonWriter& w, std::string_view name, const SampleSpread& spread, const std::vector<double>& values) {
  w.key(name).begin_object();
  w.field("median", spread.median).field("p5", spread.p5).field("p95", spread.p95);
  w.key("values").begin_array();
  for (const double v : values) w.value(v);
  w.end_array().end_object();
}

}  // namespace

double sample_quantile(std::vector<double> values, double q) {
  MEGASIM_ASSERT(!values.empty() && q >= 0 && q <= 1, "a quantile in [0, 1] of at least one value");
  std::ranges::sort(values);
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

std::string to_text(const SampleReport& s) {
  std::string out =
      fmt::format("over {} (simulation seeds drawn from the scenario's):\n", counted(s.seeds.size(), "sample"));
  out += fmt::format("  iteration time  median {:.4f} s, 5th-95th percentile {:.4f} - {:.4f} s\n",
                     s.iteration_time.median, s.iteration_time.p5, s.iteration_time.p95);
  out += fmt::format("  MFU             median {:.2f}%, 5th-95th percentile {:.2f} - {:.2f}%\n",
                     100 * s.mfu_spread.median, 100 * s.mfu_spread.p5, 100 * s.mfu_spread.p95);
  return out;
}

void write_json(JsonWriter& w, const SampleReport& s) {
  w.begin_object();
  w.field("count", static_cast<std::int64_t>(s.seeds.size()));
  w.key("seeds").begin_array();
  for (const std::uint64_t seed : s.seeds) w.value(seed);
  w.end_array();
  write_spread(w, "iteration_time_s", s.iteration_time, s.iteration_time_s);
  write_spread(w, "mfu", s.mfu_spread, s.mfu);
  w.end_object();
}

}  // namespace megasim::scenarios
