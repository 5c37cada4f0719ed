#include "backend/sim/peer_collective_times.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "backend/sim/collective_runner.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

std::size_t widest_phase(const models::CollectivePlan& plan) {
  std::size_t widest = 0;
  for (const models::CommPhase& phase : plan.phases) widest = std::max(widest, phase.channels.size());
  return widest;
}

}  // namespace

PeerCollectiveTimes::PeerCollectiveTimes(const topo::Topology& topo, FabricParams fabric,
                                         models::CollectiveParams params, std::size_t max_flows)
    : topo_(topo), fabric_(std::move(fabric)), params_(std::move(params)), max_flows_(max_flows) {
  MEGASIM_ASSERT(max_flows_ >= 1, "a play of peer groups holds at least one flow");
}

std::size_t PeerCollectiveTimes::add_set(std::vector<std::vector<topo::GpuId>> groups) {
  Set set;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const bool added = set.index.emplace(groups[i], i).second;
    MEGASIM_ASSERT(added, "a set of peer groups lists each group once");
  }
  set.groups = std::move(groups);
  sets_.push_back(std::move(set));
  return sets_.size() - 1;
}

sim::SimTime PeerCollectiveTimes::time_ns(std::size_t set, const std::vector<topo::GpuId>& gpus,
                                          models::CollectiveOp op, double bytes) {
  MEGASIM_ASSERT(set < sets_.size(), "no such set of peer groups");
  const auto found = sets_[set].index.find(gpus);
  MEGASIM_ASSERT(found != sets_[set].index.end(), "the group is not one of its set's peers");
  auto times = times_.find({set, op, bytes});
  if (times == times_.end()) times = times_.emplace(std::tuple{set, op, bytes}, play(sets_[set], op, bytes)).first;
  return times->second[found->second];
}

std::vector<sim::SimTime> PeerCollectiveTimes::play(const Set& set, models::CollectiveOp op, double bytes) const {
  std::vector<CollectiveJob> jobs;
  jobs.reserve(set.groups.size());
  for (const std::vector<topo::GpuId>& gpus : set.groups) {
    CollectiveJob job;
    job.members = gpus;
    job.plan = std::make_shared<const models::CollectivePlan>(
        models::plan_collective(op, models::CollectiveAlgorithm::kRing, bytes, servers_of(topo_, gpus), params_));
    jobs.push_back(std::move(job));
  }
  std::vector<sim::SimTime> out;
  out.reserve(jobs.size());
  for (std::size_t begin = 0; begin < jobs.size();) {
    std::size_t end = begin, flows = 0;
    while (end < jobs.size() && (end == begin || flows + widest_phase(*jobs[end].plan) <= max_flows_)) {
      flows += widest_phase(*jobs[end].plan);
      ++end;
    }
    const std::span<const CollectiveJob> window(jobs.data() + begin, end - begin);
    for (const CollectiveResult& r : run_concurrently(topo_, fabric_, params_, window)) {
      out.push_back(r.end_ns - r.start_ns);
    }
    begin = end;
  }
  return out;
}

}  // namespace megasim::backend
