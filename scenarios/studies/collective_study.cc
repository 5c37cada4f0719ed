#include "scenarios/studies/collective_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "backend/sim/collective_runner.h"
#include "backend/sim/fabric.h"
#include "models/parallel_groups.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/config/units.h"
#include "sim/enum_names.h"
#include "sim/error.h"
#include "sim/rng.h"
#include "sim/simulator.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

constexpr sim::EnumNames<GroupScope, 4> kScopeNames{{
    {"single", GroupScope::kSingle},
    {"tp", GroupScope::kTensor},
    {"dp", GroupScope::kData},
    {"pp", GroupScope::kPipeline},
}};

// Rank lists of the groups the request asks for (ranks are GPUs under contiguous placement).
std::vector<std::vector<std::int64_t>> requested_groups(const Scenario& s, const CollectiveRequest& r) {
  if (r.scope == GroupScope::kSingle) {
    const std::int64_t n = r.group_gpus == 0 ? s.cluster.gpus : r.group_gpus;
    if (n > s.cluster.gpus || n < 1) {
      throw sim::ConfigError("--gpus", std::to_string(n),
                             "between 1 and the cluster size cluster.gpus = " + std::to_string(s.cluster.gpus));
    }
    std::vector<std::int64_t> all(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    return {all};
  }
  const std::int64_t tp = s.plan.tensor_model_parallel_size;
  if (s.cluster.gpus_per_server % tp != 0) {
    throw sim::ConfigError("plan.tensor_model_parallel_size", std::to_string(tp),
                           "a divisor of cluster.gpus_per_server = " + std::to_string(s.cluster.gpus_per_server) +
                               " (a TP group stays inside one server)");
  }
  const models::ParallelLayout layout = models::make_layout(s.cluster.gpus, tp, s.plan.pipeline_model_parallel_size);
  const models::GroupKind kind = r.scope == GroupScope::kTensor ? models::GroupKind::kTensor
                                 : r.scope == GroupScope::kData ? models::GroupKind::kData
                                                                : models::GroupKind::kPipeline;
  return models::groups(layout, kind);
}

CollectiveTiming timing_of(const backend::CollectiveResult& r) {
  return CollectiveTiming{r.time_s, r.algbw_gbytes_per_s, r.busbw_gbytes_per_s};
}

void write_timing(JsonWriter& w, const CollectiveTiming& t) {
  w.field("time_s", t.time_s).field("algbw_gbytes_per_s", t.algbw_gbytes_per_s);
  w.field("busbw_gbytes_per_s", t.busbw_gbytes_per_s);
}

}  // namespace

GroupScope parse_group_scope(std::string_view text, std::string_view key) {
  return sim::parse_enum(kScopeNames, text, key);
}

std::string_view to_string(GroupScope scope) {
  return sim::enum_name(kScopeNames, scope);
}

CollectiveReport run_collective_study(const Scenario& s, const CollectiveRequest& r) {
  const auto wall_start = std::chrono::steady_clock::now();
  const topo::Topology topology = topo::Topology::build(effective_cluster(s));
  const auto rank_groups = requested_groups(s, r);
  // One group of the first GPUs has no plan; the groups of a plan follow its placement policy.
  topo::Placement placement = topo::contiguous_placement(topology, s.cluster.gpus);
  if (r.scope != GroupScope::kSingle) {
    const std::int64_t tp = s.plan.tensor_model_parallel_size, pp = s.plan.pipeline_model_parallel_size;
    placement = plan_placement(s, topology, tp, s.cluster.gpus / (tp * pp), pp);
  }

  backend::FabricParams fabric_params = s.fabric;
  fabric_params.ecmp.seed = sim::RngStreams(s.seed).stream_seed("fabric.ecmp");
  sim::Simulator simulator;
  backend::Fabric fabric(simulator, topology, fabric_params);
  backend::CollectiveRunner runner(simulator, fabric, s.collective);

  std::vector<backend::CollectiveResult> results(rank_groups.size());
  for (std::size_t g = 0; g < rank_groups.size(); ++g) {
    backend::CollectiveJob job;
    for (const std::int64_t rank : rank_groups[g]) job.members.push_back(placement[static_cast<std::size_t>(rank)]);
    job.plan = std::make_shared<const models::CollectivePlan>(
        models::plan_collective(r.op, r.algorithm, r.bytes, backend::servers_of(topology, job.members), s.collective));
    runner.start(job, [&results, g](const backend::CollectiveResult& done) { results[g] = done; });
  }
  simulator.run();

  CollectiveReport report;
  report.op = std::string(models::to_string(r.op));
  report.algo = std::string(models::to_string(r.algorithm));
  report.routing = std::string(backend::to_string(s.fabric.routing));
  report.scope = std::string(to_string(r.scope));
  report.bytes = r.bytes;
  report.cluster_gpus = s.cluster.gpus;
  report.group_size = static_cast<std::int64_t>(rank_groups.front().size());
  report.groups = static_cast<std::int64_t>(rank_groups.size());
  const auto by_time = [](const auto& a, const auto& b) { return a.time_s < b.time_s; };
  const auto slowest = std::max_element(results.begin(), results.end(), by_time);
  report.slowest_group = slowest - results.begin();
  report.slowest = timing_of(*slowest);
  report.fastest = timing_of(*std::min_element(results.begin(), results.end(), by_time));
  double total = 0;
  for (const auto& x : results) total += x.time_s;
  report.mean_time_s = total / static_cast<double>(results.size());
  report.flows = fabric.completed_flows().size();
  report.rate_recomputations = fabric.rate_recomputations();
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

std::string to_text(const CollectiveReport& r) {
  std::string out = fmt::format("# megasim collective: {} {} over {} ({} routing)\n", r.op, r.algo,
                                counted(r.group_size, "GPU"), r.routing);
  if (r.groups > 1) {
    out += fmt::format("# {} {} groups of {} on {}, run at once; the slowest group is reported\n", r.groups, r.scope,
                       counted(r.group_size, "rank"), counted(r.cluster_gpus, "GPU"));
  }
  out += fmt::format("# {:>14} {:>12} {:>8} {:>14} {:>12} {:>12}\n", "size(B)", "size", "gpus", "time(us)",
                     "algbw(GB/s)", "busbw(GB/s)");
  out += fmt::format("  {:>14.0f} {:>12} {:>8} {:>14.2f} {:>12.2f} {:>12.2f}\n", r.bytes, format_bytes(r.bytes),
                     r.group_size, r.slowest.time_s * 1e6, r.slowest.algbw_gbytes_per_s, r.slowest.busbw_gbytes_per_s);
  if (r.groups > 1) {
    out += fmt::format("# slowest group {}; fastest {:.2f} us, mean {:.2f} us\n", r.slowest_group,
                       r.fastest.time_s * 1e6, r.mean_time_s * 1e6);
  }
  out += fmt::format("# simulated {}, {} in {:.3f} s\n", counted(r.flows, "flow"),
                     counted(r.rate_recomputations, "rate recomputation"), r.wall_time_s);
  return out;
}

std::string to_json(const CollectiveReport& r, bool include_wall_time) {
  JsonWriter w;
  w.begin_object();
  // "gpus" echoes the request: the group size for one group, the cluster size for --group.
  const std::int64_t gpus = r.scope == "single" ? r.group_size : r.cluster_gpus;
  w.field("op", r.op).field("bytes", r.bytes).field("gpus", gpus).field("algo", r.algo);
  w.field("routing", r.routing);
  write_timing(w, r.slowest);
  w.field("scope", r.scope).field("cluster_gpus", r.cluster_gpus).field("group_size", r.group_size);
  w.field("groups", r.groups);
  w.field("slowest_group", r.slowest_group);
  w.key("fastest").begin_object();
  write_timing(w, r.fastest);
  w.end_object();
  w.field("mean_time_s", r.mean_time_s).field("flows", r.flows).field("rate_recomputations", r.rate_recomputations);
  if (include_wall_time) w.field("wall_time_s", r.wall_time_s);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
