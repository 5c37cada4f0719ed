// The sweep's evaluation and ranking (sweep_study.h): a pool of threads pulls accepted candidates
// by index and writes each result into its own slot, and the confirmation keeps the rows of its
// sequential rule, so the order of completion never reaches the report.
#include "scenarios/studies/sweep/sweep_study.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "models/flops.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/thread_pool.h"

namespace megasim::scenarios {
namespace {

// Ranked: rows simulated in full, faster first; then screened rows by their screens; then rejected
// rows; ties and rejected rows by key.
bool ranks_before(const SweepRow& a, const SweepRow& b) {
  const SweepStatus sa = a.candidate.status;
  const SweepStatus sb = b.candidate.status;
  if (sa != sb) return sa < sb;
  const bool figures = sa == SweepStatus::kSimulated || sa == SweepStatus::kScreened;
  if (figures && a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return key_less(a.candidate, b.candidate);
}

// The first error by row (rows are in key order).
void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// rows[todo[i]] = evaluate(base, rows[todo[i]].candidate, topologies) for every i on `threads` threads,
// the costliest first so that no long simulation starts last while the other threads idle.
void evaluate_all(const Scenario& base, std::vector<SweepRow>& rows, std::vector<std::size_t> todo, unsigned threads,
                  SweepRow (*evaluate)(const Scenario&, const SweepCandidate&, TopologyCache&),
                  TopologyCache& topologies, std::string_view phase, const SweepProgress& progress) {
  std::stable_sort(todo.begin(), todo.end(), [&rows](std::size_t a, std::size_t b) {
    return estimated_cost(rows[a].candidate) > estimated_cost(rows[b].candidate);
  });
  std::vector<std::exception_ptr> errors(rows.size());
  std::mutex progress_mutex;
  std::size_t done = 0;
  try {
    // After an error no new simulation starts; the first error by row is the one reported.
    for_each_index(
        todo.size(), threads,
        [&](std::size_t i) {
          const std::size_t row = todo[i];
          try {
            rows[row] = evaluate(base, rows[row].candidate, topologies);
          } catch (...) {
            errors[row] = std::current_exception();
          }
          {
            const std::lock_guard<std::mutex> lock(progress_mutex);
            ++done;
            if (progress) progress(phase, done, todo.size());
          }
          if (errors[row]) std::rethrow_exception(errors[row]);
        },
        true);
  } catch (...) {
    rethrow_first(errors);
  }
}

// The confirmation of screened rows on `threads` threads: each takes the next row the confirmation
// hands out, simulates it in full and records it, until none is handed out.
std::vector<SweepRow> confirm(const Scenario& base, std::vector<SweepRow> screened, std::size_t confirm_top,
                              unsigned threads, TopologyCache& topologies, const SweepProgress& progress) {
  SweepConfirmation confirmation(std::move(screened), confirm_top);
  std::vector<std::pair<std::size_t, std::exception_ptr>> failures;  // by row index
  std::mutex mutex;  // guards the confirmation, the failures and the progress count
  bool failed = false;
  std::size_t done = 0;
  run_on_threads(threads, [&] {
    std::size_t index = 0;
    SweepCandidate candidate;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      const std::optional<std::size_t> next = failed ? std::nullopt : confirmation.next();
      if (!next) return false;
      index = *next;
      candidate = confirmation.candidate(index);
    }
    try {
      SweepRow full = evaluate_sweep_candidate(base, candidate, topologies);
      const std::lock_guard<std::mutex> lock(mutex);
      confirmation.record(index, std::move(full));
      ++done;
      if (progress) progress("simulated in full", done, done + confirmation.remaining());
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex);
      failures.emplace_back(index, std::current_exception());
      failed = true;
    }
    return true;
  });
  if (!failures.empty()) {
    std::rethrow_exception(std::min_element(failures.begin(), failures.end(), [](const auto& a, const auto& b) {
                             return a.first < b.first;
                           })->second);
  }
  return confirmation.rows();
}

}  // namespace

double estimated_cost(const SweepCandidate& c) {
  return static_cast<double>(c.gpus / c.tp) * static_cast<double>(c.num_microbatches * c.virtual_stages);
}

namespace {

// A row with the figures of a report.
// Accepted by the enumeration: to simulate (kSimulated), or screened already.
bool accepted(const SweepCandidate& c) {
  return c.status == SweepStatus::kSimulated || c.status == SweepStatus::kScreened;
}

SweepRow unevaluated(const SweepCandidate& candidate) {
  SweepRow row;
  row.candidate = candidate;
  return row;
}

SweepRow row_of(const SweepCandidate& candidate, SweepStatus status, const IterationReport& r) {
  SweepRow row;
  row.candidate = candidate;
  row.candidate.status = status;
  row.iteration_time_s = r.iteration_time_s;
  row.tokens_per_s = r.tokens_per_s;
  row.mfu = r.mfu;
  row.hfu = r.hfu;
  row.breakdown = r.mean;
  return row;
}

}  // namespace

SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate, TopologyCache& topologies) {
  if (!accepted(candidate)) return unevaluated(candidate);
  const Scenario s = candidate_scenario(base, candidate);
  RunOptions options;
  options.straggler_whatifs = false;
  options.topology = topologies.get(effective_cluster(s));
  const RunResult run = run_iteration_study(s, options);
  return row_of(candidate, SweepStatus::kSimulated, run.report);
}

SweepRow screen_sweep_candidate(const Scenario& base, const SweepCandidate& candidate, TopologyCache& topologies) {
  if (!accepted(candidate)) return unevaluated(candidate);
  const Scenario s = candidate_scenario(base, candidate);
  const ScreenResult screen = screen_iteration_study(s, topologies.get(effective_cluster(s)));
  if (!screen.one_replica) return row_of(candidate, SweepStatus::kSimulated, screen.report);
  SweepRow row = row_of(candidate, SweepStatus::kScreened, screen.report);
  row.screen_tokens_per_s = row.tokens_per_s;
  return row;
}

// Alone, a candidate's topology is built for it (the cache dies with the call).
SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate) {
  TopologyCache own;
  return evaluate_sweep_candidate(base, candidate, own);
}

SweepRow screen_sweep_candidate(const Scenario& base, const SweepCandidate& candidate) {
  TopologyCache own;
  return screen_sweep_candidate(base, candidate, own);
}

SweepReport make_sweep_report(const SweepOptions& options, std::vector<SweepRow> rows) {
  SweepReport report;
  for (const SweepAxis& axis : options.vary) report.varied_keys.push_back(axis.key);
  report.flop_convention = std::string(models::kFlopConvention);
  report.confirm_top = options.confirm_top;
  for (const SweepRow& row : rows) {
    switch (row.candidate.status) {
      case SweepStatus::kSimulated:
        ++report.simulated;
        if (row.screen_tokens_per_s > 0 &&
            row.tokens_per_s > row.screen_tokens_per_s * (1 + SweepReport::kBoundTolerance)) {
          ++report.bound_violations;
          report.largest_bound_excess =
              std::max(report.largest_bound_excess, row.tokens_per_s / row.screen_tokens_per_s - 1);
        }
        break;
      case SweepStatus::kScreened:
        ++report.screened;
        break;
      case SweepStatus::kOutOfMemory:
        ++report.out_of_memory;
        break;
      case SweepStatus::kInvalid:
        ++report.invalid;
        break;
    }
  }
  report.rows = std::move(rows);
  std::stable_sort(report.rows.begin(), report.rows.end(), ranks_before);
  return report;
}

SweepOptions with_searched_parallelism(const Scenario& base, SweepOptions options) {
  const auto varied = [&](const char* key) {
    return std::any_of(options.vary.begin(), options.vary.end(), [key](const SweepAxis& a) { return a.key == key; });
  };
  constexpr const char* kCpKey = "plan.context_parallel_size";
  if (base.plan.context_parallel_size > 1 && !varied(kCpKey)) {
    SweepAxis axis{kCpKey, {}};
    for (std::int64_t cp = 1; cp <= base.cluster.gpus && cp <= kMaxSearchedContextParallel; cp *= 2) {
      if (base.model.seq_length % (2 * cp) == 0) axis.values.push_back(std::to_string(cp));
    }
    options.vary.push_back(std::move(axis));
  }
  constexpr const char* kEpKey = "plan.expert_model_parallel_size";
  if (base.model.num_experts > 0 && !varied(kEpKey)) {
    SweepAxis axis{kEpKey, {}};
    for (std::int64_t ep = 1; ep <= base.model.num_experts && ep <= base.cluster.gpus; ++ep) {
      if (base.model.num_experts % ep == 0) axis.values.push_back(std::to_string(ep));
    }
    options.vary.push_back(std::move(axis));
  }
  return options;
}

SweepReport run_sweep_study(const Scenario& base, const SweepOptions& requested, unsigned threads,
                            const SweepProgress& progress) {
  const auto wall_start = std::chrono::steady_clock::now();
  const SweepOptions options = with_searched_parallelism(base, requested);
  std::vector<SweepCandidate> candidates = enumerate_sweep(base, options);
  std::vector<SweepRow> rows(candidates.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].status == SweepStatus::kSimulated) todo.push_back(i);
    rows[i].candidate = std::move(candidates[i]);
  }
  const unsigned pool = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  TopologyCache topologies;
  if (options.confirm_top == 0) {
    evaluate_all(base, rows, todo, pool, &evaluate_sweep_candidate, topologies, "simulated in full", progress);
  } else {
    evaluate_all(base, rows, todo, pool, &screen_sweep_candidate, topologies, "screened", progress);
    rows = confirm(base, std::move(rows), options.confirm_top, pool, topologies, progress);
  }
  SweepReport report = make_sweep_report(options, std::move(rows));
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

}  // namespace megasim::scenarios
