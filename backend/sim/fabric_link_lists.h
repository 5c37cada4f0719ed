// Per-link records of the Fabric: who crosses a link (its lone flow, or a list of
// entries while two or more flows share it) with the list's totals, the pair groups that two flows
// sharing links with equal weights form, the multiset of caps of the links a flow crosses alone and
// a link's stamp in a recomputation. Kept by the SharingIndex (fabric_sharing_index.h).
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include <boost/container/small_vector.hpp>

namespace megasim::backend {

// The caps (capacity / weight) of the links a flow crosses alone, as a multiset of few values.
class PrivateCaps {
  double smallest_ = std::numeric_limits<double>::infinity();  // first: min() is what most readers want

 public:
  struct Entry {
    double cap;
    std::uint32_t count;
  };
  // Inline room for two values (a NIC's and a switch port's cap): a pair group's, a route's and a
  // flow's caps then sit in their owner's cache lines rather than on the heap.
  boost::container::small_vector<Entry, 2> entries;
  void add(double cap);
  void remove(double cap);  // precondition: present
  void clear();
  [[nodiscard]] bool empty() const { return entries.empty(); }
  [[nodiscard]] double min() const { return smallest_; }  // +infinity when empty
};

// Two flows that cross some links together and alone, with the same weight on each (the two NCCL
// channels of a ring on its NIC cables). On such a link w (r_a + r_b) <= c is the only constraint,
// so all of them act as one link of the pair: r_a + r_b <= the smallest cap (c / w) among them. A
// group lives while the pair has at least one such link.
struct PairGroup {
  std::uint32_t a = 0;  // flow slots, a < b
  std::uint32_t b = 0;
  PrivateCaps caps;  // one entry per link of the pair
  bool active = false;
  [[nodiscard]] std::uint32_t partner(std::uint32_t slot) const { return slot == a ? b : a; }
  // Whether this id is the live group of `slot` (ids are reused).
  [[nodiscard]] bool has(std::uint32_t slot) const { return active && (a == slot || b == slot); }
};

// A flow's entry in a link's flow list, with copies of its weight there and its current rate so
// that scans of a shared link (its load, its fastest flow) read one compact array, and the most it
// can ever put on the link, so that whether the link can bind is read from the list alone.
struct LinkFlowEntry {
  std::uint32_t slot;   // flow slot
  std::uint32_t usage;  // index into that flow's usages
  double weight;        // = flows[slot].usages[usage].weight
  double rate;          // = flows[slot].rate (-1 until the first solve) while the link binds and is
                        // shared; a paired or slack link's entries are not kept current (read the flows)
  double bound_load;    // = weight x flows[slot].rate_bound: its load here at the fastest it can run
};

inline constexpr std::uint32_t kNoSlot = UINT32_MAX;  // no flow slot

// The flows of a link two or more flows cross: most such links carry two or three (a ring's two
// channels and a transfer on a NIC cable), which the list holds inline. Aligned to cache lines, so
// that a list (120 bytes) spans two lines rather than two or three.
struct alignas(64) LinkFlowList : boost::container::small_vector<LinkFlowEntry, 3> {
  using boost::container::small_vector<LinkFlowEntry, 3>::small_vector;
};

// Whether a link crossed by the flows of `list` can bind any of them: only if their loads at the
// fastest each can run exceed its capacity. A link that cannot (two transfers, each held to its
// 200 Gb/s NIC, on a 400 Gb/s switch port) is a redundant constraint of max-min fairness, so its
// flows treat it as a link they cross alone (fabric_sharing.cc). Summed in list order, so the answer
// is a function of the list's history (deterministic).
inline bool list_can_bind(std::span<const LinkFlowEntry> list, double capacity) {
  double bound_load = 0;
  for (const LinkFlowEntry& e : list) bound_load += e.bound_load;
  return bound_load > capacity;
}

// Who crosses a link, in 8 bytes of one dense array. Most links carry one flow at a time (the NIC
// cables and switch ports of a pipeline transfer), and a flow enters and leaves every link of its
// route, so the lone flow is kept here, and a list of entries exists only while two or more flows
// share the link. The lists come from a pool that reuses the most recently freed first, so the few
// links shared at any moment keep their lists in cache: entering or leaving a link touches one
// word of an array that stays in cache, not a list scattered over the heap.
struct LinkOccupant {
  static constexpr std::uint32_t kListed = kNoSlot - 1;  // the flows are in flow_lists[usage]
  std::uint32_t slot = kNoSlot;                          // the lone flow, kNoSlot (none) or kListed
  std::uint32_t usage = 0;                               // the lone flow's usage of the link, or its list
};

// Sums over the flows of a shared link, kept with its list (same pool index) so that the region solve
// reads one record per link instead of scanning the list. Recounted from the entries whenever the
// link's flows change (so rounding cannot build up) and updated as its flows' rates change.
struct SharedTotals {
  double load = 0;             // sum of weight x max(0, rate)
  double fastest = 0;          // >= every flow's rate: raised as rates rise, exact after a recount
  std::uint32_t flows = 0;     // entries in the list
  std::uint32_t unsolved = 0;  // flows with rate <= 0 (not yet solved, or stalled)
};

// Whether a listed link's flows classify it as binding (paired or shared) or slack (each crosses it
// as if alone); kept with the list (same pool index) and changed only with the flows' usages.
enum class ListClass : std::uint8_t { kSlack, kBinding };

// Whether a link's list is a pair: exactly two flows, with the same weight there (fabric_sharing.cc).
inline bool is_pair_list(std::span<const LinkFlowEntry> list) {
  return list.size() == 2 && list[0].weight == list[1].weight;
}
inline bool is_pair_list(const LinkFlowList& list) {
  return is_pair_list({list.data(), list.size()});
}

// The flows on one link as entries (SharingIndex::flows_on): the shared list, or one entry made
// from the lone flow. Holds that entry itself, so references into it live as long as the view.
class LinkFlowsView {
 public:
  LinkFlowsView() = default;
  explicit LinkFlowsView(std::span<const LinkFlowEntry> listed) : listed_(listed) {}
  explicit LinkFlowsView(const LinkFlowEntry& lone) : lone_(lone), has_lone_(true) {}
  [[nodiscard]] const LinkFlowEntry* begin() const { return has_lone_ ? &lone_ : listed_.data(); }
  [[nodiscard]] const LinkFlowEntry* end() const { return begin() + size(); }
  [[nodiscard]] std::size_t size() const { return has_lone_ ? 1 : listed_.size(); }
  [[nodiscard]] const LinkFlowEntry& operator[](std::size_t i) const { return begin()[i]; }
  [[nodiscard]] const LinkFlowEntry& front() const { return *begin(); }
  [[nodiscard]] const LinkFlowEntry& back() const { return end()[-1]; }

 private:
  std::span<const LinkFlowEntry> listed_;
  LinkFlowEntry lone_{};
  bool has_lone_ = false;
};

// A link's stamp in the current recomputation: whether it is in the problem being built (epoch) and
// its index there. Kept apart from LinkState, 8 bytes a link, because a solve looks up every link of
// every flow it touches.
struct LinkMark {
  std::uint32_t epoch = 0;
  std::uint32_t local = 0;
};

}  // namespace megasim::backend
