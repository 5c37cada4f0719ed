#include "scenarios/studies/topology_cache.h"

namespace megasim::scenarios {

std::shared_ptr<const topo::Topology> TopologyCache::get(const topo::ClusterParams& params) {
  // Built under the lock: a second thread asking for the same cluster waits for the first build
  // rather than repeating it.
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const std::shared_ptr<const topo::Topology>& t : kept_) {
    if (t->params() == params) return t;
  }
  auto built = std::make_shared<const topo::Topology>(topo::Topology::build(params));
  if (kept_.size() == kKept) kept_.pop_front();
  kept_.push_back(built);
  return built;
}

}  // namespace megasim::scenarios
