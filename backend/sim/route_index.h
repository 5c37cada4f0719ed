// The fabric's route cache index: a lane's identity -> the cached route of flows whose first lane it
// is. Open addressing with linear probing in a power-of-two table kept at most half full, so a
// lookup costs one memory access where std::unordered_map costs two dependent ones (bucket, node);
// a large iteration looks up a route for every one of its hundreds of thousands of transfers.
// Entries are only added, replaced, or all cleared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace megasim::backend {

struct CachedRoute;

// A lane's identity for the route cache: its QPs' 5-tuples are a function of it.
struct LaneKey {
  std::int32_t src;
  std::int32_t dst;
  std::uint32_t connection;
  bool operator==(const LaneKey&) const = default;
};

class RouteIndex {
 public:
  // The route under `key`, or null.
  [[nodiscard]] CachedRoute* find(const LaneKey& key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.route == nullptr) return nullptr;
      if (s.key == key) return s.route;
    }
  }

  // Inserts, or replaces the route under `key`. route must not be null.
  void assign(const LaneKey& key, CachedRoute* route) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot& s = probe(key);
    if (s.route == nullptr) ++size_;
    s = {key, route};
  }

  void clear() {
    slots_.clear();
    size_ = 0;
  }

  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  struct Slot {
    LaneKey key{};
    CachedRoute* route = nullptr;  // null: empty
  };

  [[nodiscard]] std::size_t home(const LaneKey& k) const {
    std::uint64_t h = static_cast<std::uint32_t>(k.src);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(k.dst);
    h = h * 0x9E3779B97F4A7C15ull ^ k.connection;
    h *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(h >> 32) & (slots_.size() - 1);
  }

  // The slot holding `key`, or the empty slot where it goes.
  Slot& probe(const LaneKey& key) {
    std::size_t i = home(key);
    while (slots_[i].route != nullptr && !(slots_[i].key == key)) i = (i + 1) & (slots_.size() - 1);
    return slots_[i];
  }

  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : 2 * slots_.size());
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.route != nullptr) probe(s.key) = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace megasim::backend
