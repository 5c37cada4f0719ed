// FlowTable: flow records by slot, slot reuse and the id -> slot map.
#include "backend/sim/fabric_flow_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace megasim::backend {

std::uint32_t FlowTable::allocate() {
  if (!free_.empty()) {
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  flows_.emplace_back();
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

FlowId FlowTable::activate(std::uint32_t slot) {
  MEGASIM_ASSERT(slot_of_id_.size() < static_cast<std::size_t>(INT32_MAX), "too many flows");
  FlowState& f = flows_[slot];
  f.id = FlowId(static_cast<std::int32_t>(slot_of_id_.size()));
  slot_of_id_.push_back(static_cast<std::int32_t>(slot));
  f.active = true;
  return f.id;
}

void FlowTable::release(std::uint32_t slot) {
  FlowState& f = flows_[slot];
  f.active = false;
  slot_of_id_[f.id.index()] = -1;
  free_.push_back(slot);
}

std::string FlowTable::check() const {
  std::vector<std::uint8_t> free(flows_.size(), 0);
  for (const std::uint32_t slot : free_) {
    if (slot >= flows_.size() || free[slot] != 0 || flows_[slot].active)
      return fmt::format("slot {}: free but taken, or freed twice", slot);
    free[slot] = 1;
  }
  std::size_t active = 0;
  for (std::uint32_t slot = 0; slot < flows_.size(); ++slot) {
    const FlowState& f = flows_[slot];
    if (!f.active) {
      if (free[slot] == 0) return fmt::format("slot {}: neither active nor free", slot);
      continue;
    }
    ++active;
    if (!f.id.valid() || f.id.index() >= slot_of_id_.size() ||
        slot_of_id_[f.id.index()] != static_cast<std::int32_t>(slot))
      return fmt::format("flow {}: its id does not map to its slot", f.id.value);
  }
  const auto mapped = std::ranges::count_if(slot_of_id_, [](std::int32_t s) { return s >= 0; });
  if (static_cast<std::size_t>(mapped) != active) return "completed flows' ids still map to slots";
  return "";
}

}  // namespace megasim::backend
