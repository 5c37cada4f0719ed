// The sweep's evaluation and ranking (sweep_study.h): a pool of threads pulls accepted candidates
// by index and writes each result into its own slot, so the order of completion never reaches the
// report.
#include "scenarios/sweep_study.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "models/flops.h"
#include "scenarios/run_study.h"

namespace megasim::scenarios {
namespace {

// Ranked: faster first, then by key. Rejected rows keep key order after the simulated ones.
bool ranks_before(const SweepRow& a, const SweepRow& b) {
  const bool sa = a.candidate.status == SweepStatus::kSimulated;
  const bool sb = b.candidate.status == SweepStatus::kSimulated;
  if (sa != sb) return sa;
  if (sa && a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  if (a.candidate.status != b.candidate.status) return a.candidate.status < b.candidate.status;
  return key_less(a.candidate, b.candidate);
}

// Runs evaluate_sweep_candidate for rows[todo[i]] on `threads` threads (the caller's included),
// the costliest first so that no long simulation starts last while the other threads idle.
void simulate_all(const Scenario& base, std::vector<SweepRow>& rows, std::vector<std::size_t> todo, unsigned threads,
                  const SweepProgress& progress) {
  std::stable_sort(todo.begin(), todo.end(), [&rows](std::size_t a, std::size_t b) {
    return estimated_cost(rows[a].candidate) > estimated_cost(rows[b].candidate);
  });
  std::vector<std::exception_ptr> errors(rows.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};  // after an error no new simulation starts
  std::mutex progress_mutex;
  std::size_t done = 0;
  const auto worker = [&] {
    for (std::size_t i = next++; i < todo.size() && !failed; i = next++) {
      const std::size_t row = todo[i];
      try {
        rows[row] = evaluate_sweep_candidate(base, rows[row].candidate);
      } catch (...) {
        errors[row] = std::current_exception();
        failed = true;
      }
      const std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (progress) progress(done, todo.size());
    }
  };
  const std::size_t helpers = std::min<std::size_t>(threads, todo.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < helpers; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {  // rows are in key order here
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

double estimated_cost(const SweepCandidate& c) {
  return static_cast<double>(c.gpus / c.tp) * static_cast<double>(c.num_microbatches * c.virtual_stages);
}

SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate) {
  SweepRow row;
  row.candidate = candidate;
  if (candidate.status != SweepStatus::kSimulated) return row;
  const RunResult run = run_iteration_study(candidate_scenario(base, candidate), /*record_flows=*/false, {},
                                            /*straggler_whatifs=*/false);
  const IterationReport& r = run.report;
  row.iteration_time_s = r.iteration_time_s;
  row.tokens_per_s = r.tokens_per_s;
  row.mfu = r.mfu;
  row.hfu = r.hfu;
  row.breakdown = r.mean;
  return row;
}

SweepReport make_sweep_report(const SweepOptions& options, std::vector<SweepRow> rows) {
  SweepReport report;
  for (const SweepAxis& axis : options.vary) report.varied_keys.push_back(axis.key);
  report.flop_convention = std::string(models::kFlopConvention);
  for (const SweepRow& row : rows) {
    switch (row.candidate.status) {
      case SweepStatus::kSimulated:
        ++report.simulated;
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

SweepReport run_sweep_study(const Scenario& base, const SweepOptions& options, unsigned threads,
                            const SweepProgress& progress) {
  const auto wall_start = std::chrono::steady_clock::now();
  std::vector<SweepCandidate> candidates = enumerate_sweep(base, options);
  std::vector<SweepRow> rows(candidates.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].status == SweepStatus::kSimulated) todo.push_back(i);
    rows[i].candidate = std::move(candidates[i]);
  }
  const unsigned pool = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  simulate_all(base, rows, todo, pool, progress);
  SweepReport report = make_sweep_report(options, std::move(rows));
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

}  // namespace megasim::scenarios
