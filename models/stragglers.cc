#include "models/stragglers.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "sim/error.h"
#include "sim/repeats.h"

namespace megasim::models {
namespace {

void require(bool ok, const char* key, double value, const char* valid) {
  if (!ok) throw sim::ConfigError(key, fmt::format("{}", value), valid);
}

bool finite_at_least(double x, double lowest) {
  return std::isfinite(x) && x >= lowest;
}

}  // namespace

bool StragglerParams::active() const {
  if (!enabled) return false;
  return slow_host_fraction > 0 || !slow_hosts.empty() || !slow_gpus.empty() || !slow_nics.empty() ||
         !slow_links.empty() || jitter_cv > 0 || (gc_period_s > 0 && gc_pause_s > 0) || seq_length_cv > 0 ||
         (drifts() && uptime_h > 0);
}

void validate(const StragglerParams& p) {
  require(finite_at_least(p.slow_host_fraction, 0) && p.slow_host_fraction <= 1, "stragglers.slow_host_fraction",
          p.slow_host_fraction, "a fraction of the servers, 0 to 1");
  require(finite_at_least(p.slow_host_factor, 1), "stragglers.slow_host_factor", p.slow_host_factor,
          "a compute multiplier >= 1 (1.1: 10% slower)");
  require(finite_at_least(p.slow_host_factor_stddev, 0), "stragglers.slow_host_factor_stddev",
          p.slow_host_factor_stddev, "a standard deviation >= 0");
  require(finite_at_least(p.jitter_cv, 0) && p.jitter_cv <= 10, "stragglers.jitter_cv", p.jitter_cv,
          "a coefficient of variation from 0 to 10");
  require(finite_at_least(p.gc_period_s, 0), "stragglers.gc_period_s", p.gc_period_s, "seconds >= 0 (0: no pauses)");
  require(finite_at_least(p.gc_pause_s, 0), "stragglers.gc_pause_s", p.gc_pause_s, "seconds >= 0");
  if (p.gc_pause_s > 0) {
    require(p.gc_period_s > p.gc_pause_s, "stragglers.gc_period_s", p.gc_period_s,
            "a period longer than stragglers.gc_pause_s when pauses are on");
  }
  require(finite_at_least(p.seq_length_cv, 0) && p.seq_length_cv <= 10, "stragglers.seq_length_cv", p.seq_length_cv,
          "a coefficient of variation from 0 to 10");
  require(finite_at_least(p.drift_per_hour, 0) && p.drift_per_hour <= 1, "stragglers.drift_per_hour", p.drift_per_hour,
          "a slowdown growth per hour of uptime from 0 to 1 (0.001: 0.1% slower each hour)");
  require(finite_at_least(p.drift_host_fraction, 0) && p.drift_host_fraction <= 1, "stragglers.drift_host_fraction",
          p.drift_host_fraction, "a fraction of the servers, 0 to 1");
  require(finite_at_least(p.drift_cv, 0) && p.drift_cv <= 10, "stragglers.drift_cv", p.drift_cv,
          "a coefficient of variation from 0 to 10");
  require(finite_at_least(p.uptime_h, 0) && p.uptime_h <= 24 * 3650, "stragglers.uptime_h", p.uptime_h,
          "hours since the job started, 0 to 87600");
  if (p.whatif_replaced_hosts < 0) {
    throw sim::ConfigError("stragglers.whatif_replaced_hosts", std::to_string(p.whatif_replaced_hosts),
                           "a number of hosts >= 0");
  }
  static_cast<void>(parse_factor_list(p.slow_hosts, "stragglers.slow_hosts"));
  static_cast<void>(parse_factor_list(p.slow_gpus, "stragglers.slow_gpus"));
  static_cast<void>(parse_factor_list(p.slow_nics, "stragglers.slow_nics"));
  static_cast<void>(parse_factor_list(p.slow_links, "stragglers.slow_links"));
}

std::vector<std::pair<std::int64_t, double>> parse_factor_list(const std::string& text, const std::string& key) {
  std::vector<std::pair<std::int64_t, double>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? text.size() : comma + 1;
    const std::size_t colon = item.find(':');
    const char* valid = "comma-separated id:factor pairs with ids >= 0 and factors >= 1, e.g. \"3:1.2,17:1.1\"";
    if (colon == std::string::npos) throw sim::ConfigError(key, text, valid);
    const std::string id_text = item.substr(0, colon);
    const std::string factor_text = item.substr(colon + 1);
    char* end = nullptr;
    const long long id = std::strtoll(id_text.c_str(), &end, 10);
    if (id_text.empty() || *end != '\0' || id < 0) throw sim::ConfigError(key, text, valid);
    const double factor = std::strtod(factor_text.c_str(), &end);
    if (factor_text.empty() || *end != '\0' || !finite_at_least(factor, 1)) throw sim::ConfigError(key, text, valid);
    out.emplace_back(static_cast<std::int64_t>(id), factor);
  }
  std::vector<std::int64_t> ids;
  for (const auto& [id, factor] : out) ids.push_back(id);
  if (const std::optional<std::size_t> k = sim::first_repeat(ids)) {
    throw sim::ConfigError(key, text,
                           "each id at most once (" + std::to_string(ids[*k]) +
                               " is listed twice: give one factor per id; factors of one id do not compound)");
  }
  return out;
}

std::pair<double, double> lognormal_parameters(double mean, double cv) {
  const double sigma2 = std::log1p(cv * cv);
  return {std::log(mean) - sigma2 / 2, std::sqrt(sigma2)};
}

double sequence_length_factor(double r, double attention_share) {
  return (1 - attention_share) * r + attention_share * r * r;
}

}  // namespace megasim::models
