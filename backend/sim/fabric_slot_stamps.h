// A set of flow slots emptied in O(1): a slot is in it while its stamp is the set's current one.
// The removal shortcut's neighbours seen (fabric_removal.cc) and the region solve's flows taken in
// and checked (fabric_local_solve.cc) are such sets, cleared once per use instead of per slot.
// Invariant (check()): no slot's stamp is ahead of the current one, so a cleared set holds none.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace megasim::backend {

class SlotStamps {
 public:
  // Empties the set and makes room for slots 0 .. slots-1.
  void clear(std::size_t slots) {
    if (++stamp_ == 0) {  // wrapped: clear the stamps so none matches by accident
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
    stamps_.resize(slots, 0);
  }
  [[nodiscard]] bool contains(std::uint32_t slot) const { return stamps_[slot] == stamp_; }
  void insert(std::uint32_t slot) { stamps_[slot] = stamp_; }
  // Inserts the slot; false when it was in the set already.
  bool insert_new(std::uint32_t slot) {
    if (stamps_[slot] == stamp_) return false;
    stamps_[slot] = stamp_;
    return true;
  }
  // How many slots are in the set (a scan: for checks).
  [[nodiscard]] std::size_t count() const { return static_cast<std::size_t>(std::ranges::count(stamps_, stamp_)); }

  // The first broken invariant, or "".
  [[nodiscard]] std::string check() const {
    for (std::size_t slot = 0; slot < stamps_.size(); ++slot) {
      if (stamps_[slot] > stamp_) return "slot " + std::to_string(slot) + ": stamped ahead of its set";
    }
    return "";
  }

 private:
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamps_;  // by slot
};

}  // namespace megasim::backend
