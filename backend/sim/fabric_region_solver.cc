// RegionSolver: its stamps, the solve of the whole connected component of the dirty links, and
// check(). The region solve is in fabric_local_solve.cc and fabric_region_build.cc.
#include "backend/sim/fabric_region_solver.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace megasim::backend {

RegionSolver::RegionSolver(const LinkTable& links, FlowTable& flows, SharingIndex& sharing)
    : links_(links), flows_(flows), sharing_(sharing), link_mark_(links.size()) {}

void RegionSolver::next_epoch() {
  if (++epoch_ == 0) {  // wrapped: clear the stamps so none matches the new epoch by accident
    for (LinkMark& m : link_mark_) m.epoch = 0;
    for (LinkMark& m : pair_mark_) m.epoch = 0;
    epoch_ = 1;
  }
  taken_.clear(flows_.slots());
}

// The flows and links reachable from the dirty links (the only part whose max-min rates can have
// changed), the links numbered locally in the problem, solved at once.
void RegionSolver::solve_component() {
  next_epoch();
  solved_ = Solved::kComponent;
  problem_.clear();
  flows_in_.clear();
  bfs_stack_.clear();
  const auto visit_link = [this](topo::LinkId l) {
    LinkMark& m = link_mark_[l.index()];
    if (m.epoch == epoch_) return;
    m.epoch = epoch_;
    m.local = problem_.add_link(links_.capacity(l));
    bfs_stack_.push_back(l);
  };
  for (const topo::LinkId l : links_.dirty()) visit_link(l);
  while (!bfs_stack_.empty()) {
    const topo::LinkId l = bfs_stack_.back();
    bfs_stack_.pop_back();
    for (const LinkFlowEntry& e : sharing_.flows_on(l)) {
      if (!taken_.insert_new(e.slot)) continue;
      flows_in_.push_back(e.slot);
      for (const Usage& u : flows_[e.slot].usages) visit_link(u.link);
    }
  }
  for (const std::uint32_t slot : flows_in_) {
    for (const Usage& u : flows_[slot].usages) problem_.add_usage(link_mark_[u.link.index()].local, u.weight);
    problem_.end_flow();
  }
  component_usages_ = problem_.entries.size();
  solver_.solve(problem_, rates_);
}

std::string RegionSolver::check() const {
  for (const std::string& broken : {taken_.check(), checked_.check()}) {
    if (!broken.empty()) return broken;
  }
  for (const std::vector<LinkMark>* marks : {&link_mark_, &pair_mark_}) {
    for (const LinkMark& m : *marks) {
      if (m.epoch > epoch_) return "region solver: a link or pair group stamped ahead of the solve";
    }
  }
  if (solved_ == Solved::kNone) return "";
  if (rates_.size() != flows_in_.size()) return "region solver: not one rate per solved flow";
  if (taken_.count() != flows_in_.size()) return "region solver: its flows are not the ones stamped";
  for (const std::uint32_t slot : flows_in_) {
    if (!taken_.contains(slot)) return fmt::format("region solver: solved flow in slot {} not stamped", slot);
  }
  if (solved_ == Solved::kRegion) return check_region();
  std::vector<std::uint8_t> numbered(problem_.num_links(), 0);  // a component: its links, each once
  std::size_t stamped = 0;
  for (const LinkMark& m : link_mark_) {
    if (m.epoch != epoch_) continue;
    ++stamped;
    if (m.local >= numbered.size() || numbered[m.local]++ != 0)
      return "region solver: component links not numbered once each";
  }
  if (stamped != numbered.size()) return "region solver: component links not all stamped";
  return "";
}

std::string RegionSolver::check_region() const {
  std::size_t stamped = 0;
  for (std::uint32_t l = 0; l < link_mark_.size(); ++l) {
    const LinkMark& m = link_mark_[l];
    if (m.epoch != epoch_) continue;
    ++stamped;
    if (m.local >= region_.size() || region_[m.local].link != topo::LinkId(static_cast<std::int32_t>(l)) ||
        region_[m.local].pair >= 0)
      return fmt::format("region solver: link {} not at its local number", l);
  }
  for (std::uint32_t pair = 0; pair < pair_mark_.size(); ++pair) {
    const LinkMark& m = pair_mark_[pair];
    if (m.epoch != epoch_) continue;
    ++stamped;
    if (m.local >= region_.size() || region_[m.local].pair != static_cast<std::int32_t>(pair))
      return fmt::format("region solver: pair group {} not at its local number", pair);
  }
  if (stamped != region_.size()) return "region solver: region links not all stamped";
  if (usage_begin_.size() != flows_in_.size() + 1 || old_rates_.size() != flows_in_.size() ||
      caps_.size() != flows_in_.size())
    return "region solver: per-flow records not one per flow";
  return "";
}

}  // namespace megasim::backend
