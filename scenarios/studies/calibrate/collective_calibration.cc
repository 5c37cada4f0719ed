#include "scenarios/studies/calibrate/collective_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using backend::HostLink;

constexpr const char* kKey = "calibrate.collectives";
constexpr std::size_t kUnknowns = 3;  // base, NVLink step, network step
using Vector = std::array<double, kUnknowns>;
using Matrix = std::array<Vector, kUnknowns>;

// Solves the k x k system a x = b (Gaussian elimination with partial pivoting); false when singular.
bool solve(Matrix a, Vector b, std::size_t k, Vector& x) {
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < k; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (std::abs(a[pivot][c]) < 1e-12) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (std::size_t r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = k; c-- > 0;) {
    double sum = b[c];
    for (std::size_t j = c + 1; j < k; ++j) sum -= a[c][j] * x[j];
    x[c] = sum / a[c][c];
  }
  return true;
}

struct Row {
  Vector a{};
  double y = 0;
};

// min |A x - y|^2 over x >= 0 with x_j = 0 for unknowns outside `present`: the least-squares
// solution over each subset of the present unknowns, the feasible one with the smallest residual
// (for a convex problem that is the constrained optimum).
Vector non_negative_least_squares(const std::vector<Row>& rows, const std::array<bool, kUnknowns>& present) {
  Vector best{};
  double best_residual = std::numeric_limits<double>::infinity();
  for (unsigned mask = (1U << kUnknowns); mask-- > 0;) {
    std::array<std::size_t, kUnknowns> vars{};
    std::size_t k = 0;
    bool allowed = true;
    for (std::size_t j = 0; j < kUnknowns; ++j) {
      if ((mask & (1U << j)) == 0) continue;
      allowed = allowed && present[j];
      vars[k++] = j;
    }
    if (!allowed) continue;
    Matrix normal{};
    Vector rhs{};
    for (const Row& row : rows) {
      for (std::size_t p = 0; p < k; ++p) {
        for (std::size_t q = 0; q < k; ++q) normal[p][q] += row.a[vars[p]] * row.a[vars[q]];
        rhs[p] += row.a[vars[p]] * row.y;
      }
    }
    Vector solution{};
    if (k > 0 && !solve(normal, rhs, k, solution)) continue;
    Vector x{};
    bool feasible = true;
    for (std::size_t p = 0; p < k; ++p) {
      x[vars[p]] = solution[p];
      feasible = feasible && solution[p] >= 0;
    }
    if (!feasible) continue;
    double residual = 0;
    for (const Row& row : rows) {
      double predicted = 0;
      for (std::size_t j = 0; j < kUnknowns; ++j) predicted += row.a[j] * x[j];
      residual += (predicted - row.y) * (predicted - row.y);
    }
    // Ties go to the larger subset (enumerated first).
    if (residual < best_residual * (1 - 1e-12)) {
      best_residual = residual;
      best = x;
    }
  }
  return best;
}

std::optional<double> link_busbw(const std::vector<LinkOpFit>& fits, HostLink link) {
  double sum = 0;
  int n = 0;
  for (const LinkOpFit& f : fits) {
    if (f.link != link || f.op == models::CollectiveOp::kSendRecv) continue;
    sum += f.large_busbw_bytes_per_s;
    ++n;
  }
  return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

}  // namespace

LineFit fit_line(std::span<const backend::LinkPoint> points) {
  double largest = 0;
  for (const backend::LinkPoint& p : points) {
    if (!(p.seconds > 0) || !std::isfinite(p.seconds)) {
      throw sim::ConfigError(kKey, fmt::format("a time of {} s", p.seconds), "measured times > 0");
    }
    largest = std::max(largest, p.bus_bytes());
  }
  // Weighted sums with w = 1/t^2 and x in units of the largest bus bytes (conditioning).
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (const backend::LinkPoint& p : points) {
    const double w = 1 / (p.seconds * p.seconds);
    const double x = largest > 0 ? p.bus_bytes() / largest : 0;
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swt += w * p.seconds;
    swxt += w * x * p.seconds;
  }
  const double det = sw * swxx - swx * swx;
  if (points.size() < 2 || !(det > 1e-12 * sw * swxx)) {
    throw sim::ConfigError(kKey, fmt::format("{} sizes", points.size()), "two or more distinct message sizes");
  }
  const double slope = (sw * swxt - swx * swt) / det;  // seconds per `largest` bus bytes
  LineFit fit;
  fit.latency_s = (swt * swxx - swx * swxt) / det;
  fit.bus_bytes_per_s = slope > 0 ? largest / slope : 0;
  return fit;
}

std::int64_t ring_steps(models::CollectiveOp op, std::int64_t n) {
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      return 2 * (n - 1);
    case models::CollectiveOp::kSendRecv:
      return 1;
    default:
      return n - 1;
  }
}

StepLatencies fit_step_latencies(std::span<const LinkOpFit> fits) {
  if (fits.empty()) throw sim::ConfigError(kKey, "(none)", "measurements over at least one link");
  std::vector<Row> rows;
  std::array<bool, kUnknowns> present{true, false, false};
  for (const LinkOpFit& f : fits) {
    const std::size_t step = f.link == HostLink::kIntraNode ? 1 : 2;
    present[step] = true;
    Row row;
    row.a[0] = 1;
    row.a[step] = static_cast<double>(f.steps);
    row.y = f.small.latency_s;
    rows.push_back(row);
  }
  const Vector x = non_negative_least_squares(rows, present);
  StepLatencies out;
  out.base_s = x[0];
  if (present[1]) out.nvlink_step_s = x[1];
  if (present[2]) out.net_step_s = x[2];
  return out;
}

CollectiveCalibration calibrate_collectives(const backend::LinkMeasurements& measured, double nvlink_line_bytes_per_s,
                                            double nic_line_bytes_per_s) {
  if (!(nvlink_line_bytes_per_s > 0)) {
    throw sim::ConfigError("cluster.nvlink_gbytes_per_s", fmt::format("{}", nvlink_line_bytes_per_s / 1e9), "> 0");
  }
  if (!(nic_line_bytes_per_s > 0)) {
    throw sim::ConfigError("cluster.nic_gbps", fmt::format("{}", nic_line_bytes_per_s * 8 / 1e9), "> 0");
  }
  CollectiveCalibration c;
  c.measured = measured;
  c.nvlink_line_bytes_per_s = nvlink_line_bytes_per_s;
  c.nic_line_bytes_per_s = nic_line_bytes_per_s;
  // Per link and op, in measuring order.
  std::vector<std::vector<backend::LinkPoint>> series;
  for (const backend::LinkPoint& p : measured.points) {
    auto same = [&](const std::vector<backend::LinkPoint>& s) {
      return s.front().link == p.link && s.front().op == p.op;
    };
    const auto found = std::find_if(series.begin(), series.end(), same);
    if (found == series.end()) {
      series.push_back({p});
    } else {
      found->push_back(p);
    }
  }
  for (std::vector<backend::LinkPoint>& s : series) {
    std::sort(s.begin(), s.end(),
              [](const backend::LinkPoint& a, const backend::LinkPoint& b) { return a.bytes < b.bytes; });
    std::vector<backend::LinkPoint> small;
    for (const backend::LinkPoint& p : s) {
      if (p.bytes <= kSmallMessageBytes) small.push_back(p);
    }
    if (small.size() < 2)
      small.assign(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2, s.size())));
    LinkOpFit f;
    f.link = s.front().link;
    f.op = s.front().op;
    f.ranks = s.front().ranks;
    f.steps = ring_steps(f.op, f.ranks);
    f.small = fit_line(small);
    f.largest_bytes = s.back().bytes;
    f.large_busbw_bytes_per_s = s.back().busbw_bytes_per_s();
    c.fits.push_back(f);
  }
  c.intra_node_busbw_bytes_per_s = link_busbw(c.fits, HostLink::kIntraNode);
  c.inter_node_busbw_bytes_per_s = link_busbw(c.fits, HostLink::kInterNode);
  if (c.intra_node_busbw_bytes_per_s) {
    const double e = *c.intra_node_busbw_bytes_per_s / nvlink_line_bytes_per_s;
    c.nvlink_capped = e > 1;
    c.nvlink_efficiency = std::min(1.0, e);
  }
  if (c.inter_node_busbw_bytes_per_s) {
    const double e = *c.inter_node_busbw_bytes_per_s / nic_line_bytes_per_s;
    c.network_capped = e > 1;
    c.network_efficiency = std::min(1.0, e);
  }
  c.latencies = fit_step_latencies(c.fits);
  c.base_latency_ns = std::llround(c.latencies.base_s * 1e9);
  if (c.latencies.nvlink_step_s) c.nvlink_step_latency_ns = std::llround(*c.latencies.nvlink_step_s * 1e9);
  if (c.latencies.net_step_s) c.net_step_latency_ns = std::llround(*c.latencies.net_step_s * 1e9);
  return c;
}

}  // namespace megasim::scenarios
