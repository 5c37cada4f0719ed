// The fabric's links (Fabric::Impl's LinkTable): each link's effective capacity (nominal rate x
// efficiency x speed factor; 0 while down), its down intervals, the bytes credited to it, the
// adaptive-routing load on it, and which links changed since the last rate recomputation.
// Invariant (check()): capacity(l) equals state(l).capacity() for every link (a dense copy, 8 bytes
// a link, because the solves and shortcuts read the capacity of every shared link they visit), and
// a link is marked dirty exactly when it is in dirty() (one byte a link: every start that shares
// marks its shared links, and the 40-byte LinkState of a link seldom stays in cache).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/sim/fabric_params.h"
#include "topology/topology.h"

namespace megasim::backend {

struct LinkState {
  double nominal_bytes_per_s = 0;  // nominal rate x efficiency
  double speed_factor = 1;
  bool up = true;
  std::uint32_t down_epoch = 0;  // tells apart successive down intervals for failure detection
  double carried = 0;            // bytes of finished route segments
  double segment_weight = 0;     // sum of weights of the active segments (adaptive routing load)
  [[nodiscard]] double capacity() const { return up ? nominal_bytes_per_s * speed_factor : 0.0; }
};

class LinkTable {
 public:
  // Every link of `topo` up at full speed: its nominal Gb/s as bytes/s times the achievable
  // fraction for its kind (params.nvlink_efficiency, network_efficiency).
  LinkTable(const topo::Topology& topo, const FabricParams& params);

  [[nodiscard]] std::size_t size() const { return links_.size(); }
  [[nodiscard]] const LinkState& state(topo::LinkId l) const { return links_[l.index()]; }
  // Effective capacity now, bytes/s.
  [[nodiscard]] double capacity(topo::LinkId l) const { return capacity_[l.index()]; }

  void set_up(topo::LinkId l, bool up);
  void set_speed_factor(topo::LinkId l, double factor);
  // Starts a new down interval of the link; returns its number (a detection checks it is current).
  std::uint32_t begin_down_interval(topo::LinkId l) { return ++links_[l.index()].down_epoch; }

  void credit(topo::LinkId l, double bytes) { links_[l.index()].carried += bytes; }
  // The adaptive-routing load: weights of the active segments on the link. Dropping keeps an idle
  // link's load exactly 0 despite rounding.
  void add_segment_weight(topo::LinkId l, double weight) { links_[l.index()].segment_weight += weight; }
  void drop_segment_weight(topo::LinkId l, double weight);
  [[nodiscard]] double segment_weight(topo::LinkId l) const { return links_[l.index()].segment_weight; }

  // The links changed since clear_dirty(), each once, in the order first marked.
  void mark_dirty(topo::LinkId l) {
    std::uint8_t& dirty = dirty_[l.index()];
    if (dirty != 0) return;
    dirty = 1;
    dirty_links_.push_back(l);
  }
  [[nodiscard]] std::span<const topo::LinkId> dirty() const { return dirty_links_; }
  void clear_dirty();

  // The first broken invariant, or "".
  [[nodiscard]] std::string check() const;

 private:
  void refresh(topo::LinkId l) { capacity_[l.index()] = links_[l.index()].capacity(); }

  std::vector<LinkState> links_;
  std::vector<double> capacity_;     // by link: links_[l].capacity()
  std::vector<std::uint8_t> dirty_;  // by link: in dirty_links_
  std::vector<topo::LinkId> dirty_links_;
};

}  // namespace megasim::backend
