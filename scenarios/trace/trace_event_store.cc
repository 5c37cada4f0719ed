#include "scenarios/trace/trace_event_store.h"

#include <algorithm>

namespace megasim::scenarios {

void EventsByPid::add(std::int64_t pid, const TraceEvent& event) {
  if (!open_.empty() && pid != open_pid_) seal();
  open_pid_ = pid;
  open_.push_back(event);
  ++added_;
}

void EventsByPid::seal() {
  if (open_.empty()) return;
  if (!runs_.empty() && blocks_[runs_.back().block] == open_) {
    runs_.push_back({open_pid_, runs_.back().block});
  } else {
    blocks_.emplace_back(open_.begin(), open_.end());
    runs_.push_back({open_pid_, blocks_.size() - 1});
  }
  open_.clear();  // keeps its capacity for the next run
}

void EventsByPid::finish() {
  seal();
  open_.shrink_to_fit();
  // Stable: a pid's runs stay in file order.
  std::stable_sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.pid < b.pid; });
}

std::vector<const std::vector<TraceEvent>*> EventsByPid::events_of(std::int64_t pid) const {
  std::vector<const std::vector<TraceEvent>*> out;
  const auto first =
      std::lower_bound(runs_.begin(), runs_.end(), pid, [](const Run& r, std::int64_t p) { return r.pid < p; });
  for (auto it = first; it != runs_.end() && it->pid == pid; ++it) out.push_back(&blocks_[it->block]);
  return out;
}

std::size_t EventsByPid::stored() const {
  std::size_t n = 0;
  for (const std::vector<TraceEvent>& block : blocks_) n += block.size();
  return n;
}

}  // namespace megasim::scenarios
