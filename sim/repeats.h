// Lists a user writes (straggler ids, sweep values, checkpoint intervals, trace ranks) name each
// item once: a repeat is a typo, and acting on it twice (factors that compound, a sweep point run
// twice) or once (a silent merge) both hide it. Every such list is checked with first_repeat, and
// its caller throws sim::ConfigError naming the list and the item.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace megasim::sim {

// The index of the first item equal to an earlier one (in list order), or nullopt when all differ.
// O(n log n): items are compared with < and ==.
template <class T>
std::optional<std::size_t> first_repeat(const std::vector<T>& items) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return items[a] < items[b]; });
  std::optional<std::size_t> first;
  for (std::size_t k = 1; k < order.size(); ++k) {
    // In a run of equal items the stable sort keeps list order, so order[k] repeats order[k - 1].
    if (items[order[k]] == items[order[k - 1]] && (!first || order[k] < *first)) first = order[k];
  }
  return first;
}

}  // namespace megasim::sim
