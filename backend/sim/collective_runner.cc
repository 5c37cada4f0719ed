#include "backend/sim/collective_runner.h"

#include <utility>

#include "sim/error.h"

namespace megasim::backend {

namespace {
constexpr std::uint64_t kCommunicators = (1ULL << 32) / models::kMaxConnectionsPerCollective;
}  // namespace

struct CollectiveRunner::Running {
  CollectiveJob job;
  std::function<void(const CollectiveResult&)> on_done;
  std::uint64_t communicator = 0;
  sim::SimTime start = 0;
  std::size_t phase = 0;    // index of the phase running (or next to run)
  std::size_t pending = 0;  // flows of the running phase not yet complete
};

std::uint32_t fabric_connection(std::uint64_t communicator, std::uint32_t channel_connection) {
  MEGASIM_ASSERT(channel_connection < models::kMaxConnectionsPerCollective, "channel connection out of range");
  return static_cast<std::uint32_t>(communicator * models::kMaxConnectionsPerCollective + channel_connection);
}

CollectiveRunner::CollectiveRunner(sim::Simulator& sim, Fabric& fabric, models::CollectiveParams params)
    : sim_(sim), fabric_(fabric), params_(params) {
  models::validate(params_);
}

CollectiveRunner::~CollectiveRunner() = default;

void CollectiveRunner::start(CollectiveJob job, std::function<void(const CollectiveResult&)> on_done) {
  MEGASIM_ASSERT(job.plan != nullptr, "a collective job without a plan");
  MEGASIM_ASSERT(static_cast<std::int64_t>(job.members.size()) == job.plan->group_size,
                 "collective job needs one GPU per member of its plan");
  std::size_t slot = running_.size();
  if (free_.empty()) {
    running_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Running& r = running_[slot];
  // Fresh communicators count down from the top of the 2^22 that fit in a 32-bit connection number,
  // away from the small ids callers give their groups.
  r.communicator = job.communicator >= 0 ? static_cast<std::uint64_t>(job.communicator)
                                         : kCommunicators - 1 - (next_private_communicator_++ % kCommunicators);
  r.job = std::move(job);
  r.on_done = std::move(on_done);
  r.start = sim_.now();
  r.phase = 0;
  r.pending = 0;
  ++active_;
  sim_.schedule_after(r.job.plan->base_latency_ns, [this, slot] { start_phase(slot); });
}

void CollectiveRunner::start_phase(std::size_t slot) {
  Running& r = running_[slot];
  if (r.phase == r.job.plan->phases.size()) {
    finish(slot);
    return;
  }
  const models::CommPhase& phase = r.job.plan->phases[r.phase];
  r.pending = 0;
  for (const models::CommChannel& channel : phase.channels) r.pending += channel.edges.empty() ? 0U : 1U;
  if (r.pending == 0) {
    ++r.phase;
    sim_.schedule_after(models::phase_latency_ns(phase, params_), [this, slot] { start_phase(slot); });
    return;
  }
  const std::vector<topo::GpuId>& gpus = r.job.members;
  for (const models::CommChannel& channel : phase.channels) {
    if (channel.edges.empty()) continue;
    FlowSpec spec;
    spec.lanes.reserve(channel.edges.size());
    const std::uint32_t connection = fabric_connection(r.communicator, channel.connection);
    for (const models::CommEdge& e : channel.edges) {
      const topo::GpuId src = gpus[static_cast<std::size_t>(e.src)], dst = gpus[static_cast<std::size_t>(e.dst)];
      MEGASIM_ASSERT(src != dst, "collective edge between two members on one GPU");
      spec.lanes.push_back(FlowLane{src, dst, connection});
    }
    spec.bytes_per_lane = channel.bytes_per_edge;
    spec.add_path_latency = false;  // the step latencies stand for the per-hop costs
    spec.on_complete = [this, slot](FlowId) { on_flow_done(slot); };
    fabric_.start_flow(std::move(spec));
  }
}

void CollectiveRunner::on_flow_done(std::size_t slot) {
  Running& r = running_[slot];
  MEGASIM_ASSERT(r.pending > 0, "flow completion without a pending flow");
  if (--r.pending > 0) return;
  const sim::SimTime tail = models::phase_latency_ns(r.job.plan->phases[r.phase], params_);
  ++r.phase;
  sim_.schedule_after(tail, [this, slot] { start_phase(slot); });
}

void CollectiveRunner::finish(std::size_t slot) {
  Running& r = running_[slot];
  CollectiveResult result;
  result.start_ns = r.start;
  result.end_ns = sim_.now();
  result.time_s = sim::to_seconds(result.end_ns - result.start_ns);
  if (result.time_s > 0) {
    result.algbw_gbytes_per_s = r.job.plan->bytes / result.time_s * 1e-9;
    result.busbw_gbytes_per_s =
        result.algbw_gbytes_per_s * models::bus_bandwidth_factor(r.job.plan->op, r.job.plan->group_size);
  }
  auto on_done = std::move(r.on_done);
  r.job = CollectiveJob{};  // release the plan; the slot is reused by later collectives
  r.on_done = nullptr;
  free_.push_back(slot);
  --active_;
  if (on_done) on_done(result);
}

std::vector<std::int64_t> servers_of(const topo::Topology& topo, std::span<const topo::GpuId> gpus) {
  std::vector<std::int64_t> out;
  out.reserve(gpus.size());
  for (const topo::GpuId g : gpus) out.push_back(topo.server_of(g).value);
  return out;
}

std::vector<CollectiveResult> run_concurrently(const topo::Topology& topo, const FabricParams& fabric_params,
                                               const models::CollectiveParams& params,
                                               std::span<const CollectiveJob> jobs) {
  sim::Simulator sim;
  Fabric fabric(sim, topo, fabric_params);
  CollectiveRunner runner(sim, fabric, params);
  std::vector<CollectiveResult> results(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    CollectiveJob job = jobs[i];
    if (job.communicator < 0) job.communicator = static_cast<std::int64_t>(i);
    runner.start(std::move(job), [&results, i](const CollectiveResult& done) { results[i] = done; });
  }
  sim.run();
  MEGASIM_ASSERT(runner.active() == 0, "a collective did not finish");
  return results;
}

}  // namespace megasim::backend
