// The max-min solve of the part of the fabric a change can affect (Fabric::Impl's RegionSolver):
// the exact re-solve of the region around the dirty links (fabric_local_solve.cc explains it,
// fabric_region_build.cc builds its problem), or the whole connected component of the dirty links
// (fabric_region_solver.cc). It owns all their scratch: the stamps of the links, pair groups and
// flows taken in, the region's records, the max-min problem and solver, and the solved flows with
// their new rates, which the caller applies (it does not apply them itself).
// It reads the link capacities and dirty marks, the flows and who shares which link; it writes only
// the flows' bottleneck hints (the region checks find bottlenecks) and leaves the dirty marks to the
// caller to clear.
// Invariant (check()): the stamps of the current solve name exactly the last solve's links, pair
// groups and flows, each link or pair group at its local number there, and none is ahead of it; one
// rate per solved flow.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/sim/fabric_flow_table.h"
#include "backend/sim/fabric_link_lists.h"
#include "backend/sim/fabric_link_table.h"
#include "backend/sim/fabric_sharing_index.h"
#include "backend/sim/fabric_slot_stamps.h"
#include "backend/sim/max_min.h"

namespace megasim::backend {

// One link of a region solve (fabric_local_solve.cc): a shared link, or a pair group standing for
// its links. Everything a round reads and writes about the link, in one record.
struct RegionLink {
  topo::LinkId link;                  // the shared link; invalid for a pair group
  std::int32_t pair = -1;             // the pair group; -1 for a real link
  std::uint32_t inside = 0;           // how many of its flows are in R
  std::uint32_t inside_unsolved = 0;  // real link: R's flows there with rate <= 0
  double capacity = 0;                // its capacity now (a pair group: its smallest cap)
  double inside_load = 0;             // real link: load of R's flows at their current rates
  double outside_load = 0;            // load of the flows outside R, current rates
  double outside_max = 0;             // their largest rate, or a bound on it (outside_fastest)
  double r_load = 0;                  // load of R's flows at their new rates
  double r_max = 0;                   // their largest new rate
  bool outside_max_exact = true;      // outside_max is the exact largest, not a bound
  bool changed = false;               // some R flow on the link changes rate
  double residual = 0;                // its capacity less the outside load (build_problem)
  static constexpr std::uint32_t kFolded = 0xFFFFFFFFu;
  std::uint32_t problem_link = kFolded;  // its link in the max-min problem, or kFolded into a flow's cap
  // What the outside flows' checks read of the link (its R flows and their loads and largest rate)
  // as of the last round's checks: a round in which these are the same gives the same verdicts.
  bool checked = false;  // a round has checked with the link in the region
  bool checked_changed = false;
  std::uint32_t checked_inside = 0;
  double checked_r_load = 0;
  double checked_r_max = 0;
};

class RegionSolver {
 public:
  // All three outlive the solver.
  RegionSolver(const LinkTable& links, FlowTable& flows, SharingIndex& sharing);

  // Solves the region around links.dirty() into solved_flows() / rates(); false when the whole
  // component must be solved instead (then what it leaves is scratch). After `patience_rounds`
  // rounds it gives up once it has solved more usages than the last component solve.
  bool solve_region(int patience_rounds);
  // Solves the connected component of links.dirty() into solved_flows() / rates().
  void solve_component();

  // The flows of the last solve, by slot, and their new rates (rates()[i] is solved_flows()[i]'s).
  [[nodiscard]] std::span<const std::uint32_t> solved_flows() const { return flows_in_; }
  [[nodiscard]] std::span<const double> rates() const { return rates_; }
  // Rounds the region solves ran in all, and the most any ran (counting those that gave up).
  [[nodiscard]] std::uint64_t region_rounds() const { return region_rounds_; }
  [[nodiscard]] std::uint64_t deepest_region_rounds() const { return deepest_region_rounds_; }

  // The first broken invariant, or "" (fabric_region_solver.cc).
  [[nodiscard]] std::string check() const;

 private:
  // Per flow of R, in the order of flows_in_, recorded as it joins (none of it changes during the
  // solve): its region links and weights (shared links, then pair groups at weight 1), in
  // usages_[usage_begin_[i] .. usage_begin_[i + 1]); its rate before the solve; its cap from the
  // links it crosses alone.
  struct RegionUsage {
    std::uint32_t local;
    double weight;
  };
  enum class Solved : std::uint8_t { kNone, kRegion, kComponent };

  // Starts a solve: stamps of links, pair groups and flows from earlier solves stop matching.
  void next_epoch();
  // fabric_region_build.cc: R's links and flows, and the max-min problem of a round.
  bool add_link(topo::LinkId l);
  bool add_pair(std::uint32_t pair);
  std::uint32_t append(topo::LinkId l, std::int32_t pair, double capacity);
  bool add_flow(std::uint32_t slot);
  bool build_problem();
  // fabric_local_solve.cc: the rounds and their checks.
  bool start_region();
  // The largest current rate among the flows outside R on real region link `local`: a bound when
  // that is at most `limit`, else exact (scanned once per round).
  double outside_fastest(std::uint32_t local, double limit);
  void region_loads();
  [[nodiscard]] bool saturated(std::uint32_t local) const {
    const RegionLink& r = region_[local];
    return r.outside_load + r.r_load >= r.capacity * (1 - kRateTolerance);
  }
  bool check_flow(std::size_t index);
  bool outside_flow_keeps_bottleneck(std::uint32_t slot);
  void check_outside_flows();
  [[nodiscard]] std::string check_region() const;  // check() of a region solve

  const LinkTable& links_;
  FlowTable& flows_;
  SharingIndex& sharing_;

  std::uint32_t epoch_ = 0;
  std::vector<LinkMark> link_mark_;  // by link: stamped with epoch_ while in the solve
  std::vector<LinkMark> pair_mark_;  // by pair group id, likewise (grown as ids are)
  SlotStamps taken_;                 // the flows in the solve (in R)
  SlotStamps checked_;               // outside flows checked in the current round
  Solved solved_ = Solved::kNone;

  std::vector<RegionLink> region_;  // by local number (LinkMark::local)
  std::vector<RegionUsage> usages_;
  std::vector<std::uint32_t> usage_begin_{0};
  std::vector<double> old_rates_;
  std::vector<double> caps_;
  std::vector<std::uint32_t> joining_;  // flows to add to R after a failed check
  std::vector<topo::LinkId> bfs_stack_;

  MaxMinSolver solver_;
  MaxMinProblem problem_;
  std::vector<std::uint32_t> flows_in_;  // the flows solved, by slot
  std::vector<double> rates_;            // theirs, in that order
  std::size_t component_usages_ = 0;     // of the last component solve
  std::uint64_t region_rounds_ = 0;
  std::uint64_t deepest_region_rounds_ = 0;
};

}  // namespace megasim::backend
