// The priority queue of the max-min solver: (level, link) entries popped in order of level, then
// link index, so that ties pop deterministically. Most entries are the links' initial levels, known
// up front: they are sorted once (sequential memory access) instead of heap-popped one by one
// (a random walk down the tree per pop). Entries pushed later (re-keyed links) go into a 4-ary heap
// (four 16-byte children per cache line), and pop() takes the smaller of the two heads.
// bench/max_min_bench.cc compares it with one binary heap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace megasim::backend {

class LevelQueue {
 public:
  struct Entry {
    double level;
    std::uint32_t link;
  };

  void clear() {
    sorted_.clear();
    next_ = 0;
    v_.clear();
  }
  [[nodiscard]] bool empty() const { return next_ == sorted_.size() && v_.empty(); }
  // Adds an initial entry; call sort_initial() once after the last one, before any push or pop.
  void append_initial(Entry e) { sorted_.push_back(e); }
  void sort_initial() {
    std::sort(sorted_.begin(), sorted_.end(), [](const Entry& a, const Entry& b) { return before(a, b); });
  }
  void push(Entry e) {
    v_.push_back(e);
    sift_up(v_.size() - 1);
  }
  // Precondition: !empty().
  Entry pop() {
    if (v_.empty() || (next_ < sorted_.size() && before(sorted_[next_], v_.front()))) return sorted_[next_++];
    const Entry top = v_.front();
    v_.front() = v_.back();
    v_.pop_back();
    if (!v_.empty()) sift_down(0);
    return top;
  }

 private:
  static constexpr std::size_t kArity = 4;
  static bool before(const Entry& a, const Entry& b) {
    return a.level != b.level ? a.level < b.level : a.link < b.link;
  }
  void sift_up(std::size_t i) {
    const Entry e = v_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!before(e, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  void sift_down(std::size_t i) {
    const Entry e = v_[i];
    const std::size_t n = v_.size();
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      const std::size_t last = std::min(first + kArity, n);
      std::size_t best = first;
      for (std::size_t c = first + 1; c < last; ++c) {
        if (before(v_[c], v_[best])) best = c;
      }
      if (!before(v_[best], e)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = e;
  }

  std::vector<Entry> sorted_;
  std::size_t next_ = 0;
  std::vector<Entry> v_;  // the 4-ary heap of pushed entries
};

}  // namespace megasim::backend
