// LinkTable: link capacities, down intervals, credited bytes, adaptive load and dirty marks.
#include "backend/sim/fabric_link_table.h"

#include <fmt/format.h>

#include <cmath>

namespace megasim::backend {

LinkTable::LinkTable(const topo::Topology& topo, const FabricParams& params)
    : links_(topo.num_links()), capacity_(topo.num_links()), dirty_(topo.num_links(), 0) {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const topo::LinkId id(static_cast<std::int32_t>(i));
    const topo::Link& l = topo.link(id);
    const double efficiency = l.kind == topo::LinkKind::kNvLink ? params.nvlink_efficiency : params.network_efficiency;
    links_[i].nominal_bytes_per_s = l.capacity_gbps * 1e9 / 8 * efficiency;
    refresh(id);
  }
}

void LinkTable::set_up(topo::LinkId l, bool up) {
  links_[l.index()].up = up;
  refresh(l);
}

void LinkTable::set_speed_factor(topo::LinkId l, double factor) {
  links_[l.index()].speed_factor = factor;
  refresh(l);
}

void LinkTable::drop_segment_weight(topo::LinkId l, double weight) {
  double& w = links_[l.index()].segment_weight;
  w -= weight;
  if (std::abs(w) < 1e-12) w = 0;
}

void LinkTable::clear_dirty() {
  for (const topo::LinkId l : dirty_links_) dirty_[l.index()] = 0;
  dirty_links_.clear();
}

std::string LinkTable::check() const {
  for (std::size_t l = 0; l < links_.size(); ++l) {
    if (capacity_[l] != links_[l].capacity()) return fmt::format("link {}: stale capacity copy", l);
  }
  std::size_t marked = 0;
  for (const std::uint8_t d : dirty_) marked += d;
  if (marked != dirty_links_.size()) return "dirty marks out of step with the dirty links";
  for (const topo::LinkId l : dirty_links_) {
    if (dirty_[l.index()] == 0) return fmt::format("link {}: dirty but not marked", l.value);
  }
  return "";
}

}  // namespace megasim::backend
