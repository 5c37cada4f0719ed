// The sweep's confirmation (sweep_study.h, "Screen and confirmation"): hands out screened rows for
// full simulation, those the rule always simulates costliest first and then the rest in the order of
// their screens, and keeps the rows of the sequential rule.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "scenarios/studies/sweep/sweep_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

bool screened(const SweepRow& row) {
  return row.candidate.status == SweepStatus::kScreened;
}

// Inserts x into a list kept in descending order.
void insert_descending(std::vector<double>& xs, double x) {
  xs.insert(std::upper_bound(xs.begin(), xs.end(), x, std::greater<>()), x);
}

// The k-th largest of a descending list (k >= 1): the bound a screen must reach; -inf while the list
// is shorter than k.
double kth_best(const std::vector<double>& descending, std::size_t k) {
  return descending.size() < k ? -std::numeric_limits<double>::infinity() : descending[k - 1];
}

std::string screened_reason(const SweepRow& row, std::size_t confirm_top, double bound) {
  return fmt::format(
      "screened: at most {:.6g} tokens/s with replica 0 standing for all replicas, below the {} plans of its point "
      "simulated in full at {:.6g} tokens/s or more",
      row.screen_tokens_per_s, confirm_top, bound);
}

}  // namespace

SweepConfirmation::SweepConfirmation(std::vector<SweepRow> screened_rows, std::size_t confirm_top)
    : screened_(std::move(screened_rows)), full_(screened_.size()), confirm_top_(confirm_top) {
  MEGASIM_ASSERT(confirm_top_ >= 1, "a confirmation certifies at least one plan a point");
  std::size_t points = 0;
  for (const SweepRow& row : screened_) points = std::max(points, row.candidate.point + 1);
  full_by_point_.resize(points);
  for (std::size_t i = 0; i < screened_.size(); ++i) {
    const SweepRow& row = screened_[i];
    if (screened(row)) {
      order_.push_back(i);
    } else if (row.candidate.status == SweepStatus::kSimulated) {  // the screen simulated it in full
      insert_descending(full_by_point_[row.candidate.point], row.tokens_per_s);
    }
  }
  std::sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
    const SweepRow& x = screened_[a];
    const SweepRow& y = screened_[b];
    if (x.screen_tokens_per_s != y.screen_tokens_per_s) return x.screen_tokens_per_s > y.screen_tokens_per_s;
    return key_less(x.candidate, y.candidate);
  });
  handed_.assign(order_.size(), false);
  // The first confirm_top of a point in screen order, less those the screen simulated in full, come
  // before any bound of theirs is known: the rule simulates them whatever the results. Handing them
  // out costliest first lets the longest simulation start at once rather than behind shorter ones.
  std::vector<std::size_t> known;  // per point: rows handed out or full before this one
  for (const std::vector<double>& full : full_by_point_) known.push_back(full.size());
  for (std::size_t k = 0; k < order_.size(); ++k) {
    std::size_t& n = known[screened_[order_[k]].candidate.point];
    if (n < confirm_top_) {
      always_.push_back(k);
      ++n;
    }
  }
  std::stable_sort(always_.begin(), always_.end(), [this](std::size_t a, std::size_t b) {
    return estimated_cost(screened_[order_[a]].candidate) > estimated_cost(screened_[order_[b]].candidate);
  });
}

double SweepConfirmation::bound_to_beat(std::size_t point) const {
  return kth_best(full_by_point_[point], confirm_top_);
}

std::optional<std::size_t> SweepConfirmation::next() {
  if (always_cursor_ < always_.size()) {
    const std::size_t k = always_[always_cursor_++];
    handed_[k] = true;
    ++in_flight_;
    return order_[k];
  }
  for (; cursor_ < order_.size(); ++cursor_) {
    if (handed_[cursor_]) continue;
    const SweepRow& row = screened_[order_[cursor_]];
    if (row.screen_tokens_per_s >= bound_to_beat(row.candidate.point)) {
      handed_[cursor_] = true;
      ++in_flight_;
      return order_[cursor_++];
    }
  }
  return std::nullopt;
}

void SweepConfirmation::record(std::size_t index, SweepRow full) {
  MEGASIM_ASSERT(index < full_.size() && screened(screened_[index]) && !full_[index].has_value(),
                 "a full simulation recorded for a row that was not handed out");
  MEGASIM_ASSERT(full.candidate.status == SweepStatus::kSimulated, "a confirmation records full simulations");
  MEGASIM_ASSERT(in_flight_ > 0, "more rows recorded than handed out");
  --in_flight_;
  insert_descending(full_by_point_[full.candidate.point], full.tokens_per_s);
  full.screen_tokens_per_s = screened_[index].screen_tokens_per_s;
  full_[index] = std::move(full);
}

std::size_t SweepConfirmation::remaining() const {
  std::size_t left = in_flight_;
  for (std::size_t k = cursor_; k < order_.size(); ++k) {
    if (handed_[k]) continue;
    const SweepRow& row = screened_[order_[k]];
    if (row.screen_tokens_per_s >= bound_to_beat(row.candidate.point)) ++left;
  }
  return left;
}

std::vector<SweepRow> SweepConfirmation::rows() const {
  MEGASIM_ASSERT(in_flight_ == 0, "the confirmation's rows were asked for with simulations still running");
  std::vector<SweepRow> out = screened_;
  // The sequential rule, point by point: walk the screens in order, simulate while the screen can
  // reach the point's top; the first that cannot stops the point.
  std::vector<std::vector<double>> full_by_point(full_by_point_.size());
  std::vector<bool> stopped(full_by_point_.size(), false);
  for (const SweepRow& row : screened_) {
    if (row.candidate.status == SweepStatus::kSimulated)
      insert_descending(full_by_point[row.candidate.point], row.tokens_per_s);
  }
  const auto bound = [&](std::size_t point) { return kth_best(full_by_point[point], confirm_top_); };
  std::vector<std::size_t> left_screened;
  for (const std::size_t i : order_) {
    const std::size_t point = screened_[i].candidate.point;
    if (!stopped[point] && screened_[i].screen_tokens_per_s < bound(point)) stopped[point] = true;
    if (stopped[point]) {
      left_screened.push_back(i);
      continue;
    }
    MEGASIM_ASSERT(full_[i].has_value(), "the confirmation skipped a plan that could reach its point's top");
    out[i] = *full_[i];
    insert_descending(full_by_point[point], full_[i]->tokens_per_s);
  }
  for (const std::size_t i : left_screened) {
    out[i].candidate.reason = screened_reason(out[i], confirm_top_, bound(out[i].candidate.point));
  }
  return out;
}

}  // namespace megasim::scenarios
