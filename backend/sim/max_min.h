// Weighted max-min fair rate allocation by progressive filling (Bertsekas & Gallager, "Data
// Networks", §6.5.2), the bandwidth-sharing model of the flow-level fabric.
//
// A problem is a set of links with capacities and a set of flows; flow f crosses link l with weight
// w(f,l) > 0 (bytes on l per byte of the flow, e.g. 1/qps for one of qps queue pairs). Every flow
// gets one rate r_f. The allocation is feasible when sum_f w(f,l) * r_f <= c_l on every link, and
// max-min fair when every flow has a bottleneck: a saturated link on which no other flow has a
// higher rate. Raising all unfrozen flows at one common rate until a link saturates, freezing the
// flows on it, and repeating gives exactly that allocation.
//
// Layout: the flows' link usages are stored flat (CSR: flow f's usages are
// entries[flow_begin[f] .. flow_begin[f+1])) so a problem of 100k flows costs a handful of vectors,
// and clear() keeps their memory for the next solve.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/sim/level_queue.h"

namespace megasim::backend {

// One link crossed by a flow. `link` is an index into the problem's capacities (local to the
// problem: the fabric numbers the links of the component it solves).
struct MaxMinEntry {
  std::uint32_t link;
  double weight;  // > 0
};

struct MaxMinProblem {
  std::vector<double> capacities;            // bytes/s per link, >= 0
  std::vector<std::uint32_t> flow_begin{0};  // num_flows + 1 offsets into entries
  std::vector<MaxMinEntry> entries;

  [[nodiscard]] std::size_t num_links() const { return capacities.size(); }
  [[nodiscard]] std::size_t num_flows() const { return flow_begin.size() - 1; }
  [[nodiscard]] std::span<const MaxMinEntry> usages(std::size_t flow) const {
    return {entries.data() + flow_begin[flow], entries.data() + flow_begin[flow + 1]};
  }

  // Empties the problem, keeping the allocated memory.
  void clear();
  // Appends a link; returns its index.
  std::uint32_t add_link(double capacity_bytes_per_s);
  // Appends a usage to the flow being built; end_flow() closes it (it must have >= 1 usage).
  void add_usage(std::uint32_t link, double weight) { entries.push_back({link, weight}); }
  void end_flow();
};

// Solves problems, reusing its working memory between calls (one solver per fabric). Complexity
// O((sum of flow path lengths + links) * log links).
class MaxMinSolver {
 public:
  // Sets rates[f] (resized to num_flows) to flow f's max-min fair rate in bytes/s. A flow crossing
  // a link of capacity 0 gets rate 0. Precondition (asserted): every flow has at least one usage,
  // every weight is > 0 and finite, every capacity is >= 0 and finite, every link index is valid.
  void solve(const MaxMinProblem& problem, std::vector<double>& rates);

 private:
  struct LinkFlow {
    std::uint32_t flow;
    double weight;
  };
  struct LinkState {
    double remaining;        // capacity not yet used by frozen flows
    double weight_sum;       // sum of the weights of the unfrozen flows
    std::uint32_t unfrozen;  // number of unfrozen usages
    std::uint32_t cursor;    // fill position while building the link -> flows lists
    bool folded;             // crossed by one flow: part of that flow's virtual link
  };
  static constexpr std::uint32_t kNoLink = 0xFFFFFFFFu;
  void build_link_lists(const MaxMinProblem& problem);
  std::size_t freeze_link(const MaxMinProblem& problem, std::uint32_t link, double level, std::vector<double>& rates);
  [[nodiscard]] double level_of(std::uint32_t link);
  [[nodiscard]] bool never_binds(std::uint32_t link, double level) const;
  bool duplicate_pair(std::uint32_t link);

  std::vector<std::uint32_t> link_begin_;  // CSR of the transposed problem: link -> flows
  std::vector<LinkFlow> link_flows_;
  std::vector<LinkState> links_;
  std::vector<std::uint8_t> frozen_;       // per flow
  std::vector<std::uint32_t> virtual_of_;  // per flow: its virtual link, or kNoLink
  struct Pair {                            // a two-flow link constraint seen in this solve (duplicate_pair)
    std::uint32_t other;
    double weight;
    double other_weight;
    std::uint32_t link;
    std::uint32_t next;
  };
  std::vector<std::uint32_t> pair_head_;  // per first flow: its pairs, a list through Pair::next
  std::vector<Pair> pairs_;
  LevelQueue queue_;
};

// Convenience: a fresh solver for one problem.
std::vector<double> solve_max_min(const MaxMinProblem& problem);

// Checks that `rates` is a feasible max-min fair allocation of `problem`, with relative
// `tolerance` (e.g. 1e-9): every link's load is <= capacity * (1 + tolerance) (+ an absolute
// tolerance * max capacity to absorb rounding near zero), and every flow has a link with load >=
// capacity * (1 - tolerance) on which no flow's rate exceeds its own by more than the tolerance.
// Returns a description of the first violation, or an empty string when the allocation is fine.
std::string check_max_min(const MaxMinProblem& problem, std::span<const double> rates, double tolerance);

}  // namespace megasim::backend
