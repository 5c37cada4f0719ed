#include "fabric_workloads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "fabric_test_util.h"
#include "sim/rng.h"

namespace megasim::backend::testing {

Workload random_workload(std::uint64_t seed) {
  sim::Rng rng(seed);
  Workload w;
  for (int i = 0; i < 120; ++i) {
    FlowSpec spec;
    const auto lanes = 1 + rng.uniform_int(3);
    for (std::uint64_t l = 0; l < lanes; ++l) {
      const auto src = static_cast<std::int32_t>(rng.uniform_int(64));
      const auto dst = static_cast<std::int32_t>((static_cast<std::uint64_t>(src) + 1 + rng.uniform_int(63)) % 64);
      spec.lanes.push_back({topo::GpuId(src), topo::GpuId(dst), static_cast<std::uint32_t>(l)});
    }
    spec.bytes_per_lane = 1e7 + 1e8 * rng.uniform01();
    w.specs.push_back(std::move(spec));
    w.starts.push_back(static_cast<sim::SimTime>(rng.uniform_int(20 * sim::kMillisecond)));
  }
  return w;
}

Workload ring_workload(std::uint64_t seed) {
  Workload w = random_workload(seed);
  sim::Rng rng(seed + 1);
  for (int ring = 0; ring < 4; ++ring) {
    std::vector<std::int32_t> members;
    for (int i = 0; i < 16; ++i) members.push_back(static_cast<std::int32_t>(rng.uniform_int(64)));
    std::ranges::sort(members);
    members.erase(std::unique(members.begin(), members.end()), members.end());
    for (std::uint32_t channel = 0; channel < 2; ++channel) {
      FlowSpec spec;
      for (std::size_t i = 0; i < members.size(); ++i) {
        spec.lanes.push_back({topo::GpuId(members[i]), topo::GpuId(members[(i + 1) % members.size()]),
                              static_cast<std::uint32_t>(100 + 2 * ring) + channel});
      }
      spec.bytes_per_lane = 2e8 + 2e8 * rng.uniform01();
      w.specs.push_back(std::move(spec));
      w.starts.push_back(static_cast<sim::SimTime>(rng.uniform_int(4 * sim::kMillisecond)));
    }
  }
  return w;
}

RunResult run(const Workload& w, FabricParams params) {
  params.qps_per_connection = 2;
  params.failure_detection_ns = 5 * sim::kMillisecond;
  Bed bed(small_cluster(64), params);
  RunResult r;
  r.first_usage.resize(w.specs.size());
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) r.violations.push_back(v);
    for (std::size_t l = 0; l < bed.topo.num_links(); ++l) {
      const topo::LinkId id(static_cast<std::int32_t>(l));
      if (bed.fabric.link_load_bytes_per_s(id) > bed.fabric.link_capacity_bytes_per_s(id) * (1 + 1e-9) + 1e-3) {
        r.violations.push_back("link over capacity");
      }
    }
  });
  const topo::LinkId uplink = bed.topo.up_links(bed.topo.tor_of(topo::GpuId(0)))[1];
  bed.sim.schedule_at(5 * sim::kMillisecond, [&] { bed.fabric.set_link_down(uplink); });
  bed.sim.schedule_at(35 * sim::kMillisecond, [&] { bed.fabric.set_link_up(uplink); });
  bed.fabric.schedule_cable_flap(bed.topo.nic_up(topo::GpuId(5)), 8 * sim::kMillisecond, 12 * sim::kMillisecond);
  for (std::size_t i = 0; i < w.specs.size(); ++i) {
    bed.sim.schedule_at(w.starts[i], [&, i] {
      const FlowId id = bed.fabric.start_flow(w.specs[i]);
      r.first_usage[i] = bed.fabric.flow_usage(id);
    });
    for (const FlowLane& lane : w.specs[i].lanes) {
      if (bed.topo.server_of(lane.src) != bed.topo.server_of(lane.dst))
        r.network_lane_bytes += w.specs[i].bytes_per_lane;
      if (bed.topo.server_of(lane.src) != bed.topo.server_of(lane.dst) &&
          bed.topo.tor_of(lane.src) != bed.topo.tor_of(lane.dst))
        r.cross_tor_lane_bytes += w.specs[i].bytes_per_lane;
    }
  }
  bed.sim.run();
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
  r.records = bed.fabric.completed_flows();
  r.skipped = bed.fabric.skipped_recomputations();
  r.solves = bed.fabric.rate_recomputations();
  r.region_solves = bed.fabric.region_recomputations();
  r.region_rounds = bed.fabric.region_rounds();
  r.deepest_region_rounds = bed.fabric.deepest_region_rounds();
  for (std::int64_t g = 0; g < bed.topo.num_gpus(); ++g) {
    r.nic_up_carried += bed.fabric.link_bytes_carried(bed.topo.nic_up(topo::GpuId(static_cast<std::int32_t>(g))));
  }
  for (const topo::NodeId tor : bed.topo.nodes_of(topo::NodeKind::kTor)) {
    for (const topo::LinkId l : bed.topo.up_links(tor)) r.tor_up_carried += bed.fabric.link_bytes_carried(l);
  }
  return r;
}

RunResult expect_region_solve_exact(const Workload& w, FabricParams params, const std::string& context) {
  RunResult region = run(w, params);
  EXPECT_TRUE(region.violations.empty()) << context << ": " << region.violations.front();
  params.region_solve = false;
  const RunResult component = run(w, params);
  EXPECT_EQ(component.region_solves, 0u) << context;
  EXPECT_EQ(region.records.size(), w.specs.size()) << context;
  EXPECT_EQ(region.records.size(), component.records.size()) << context;
  for (std::size_t i = 0; i < std::min(region.records.size(), component.records.size()); ++i) {
    EXPECT_EQ(region.records[i].id, component.records[i].id) << context << " flow " << i;
    EXPECT_NEAR(static_cast<double>(region.records[i].end), static_cast<double>(component.records[i].end), 2.0)
        << context << " flow " << i;
  }
  return region;
}

RunResult expect_region_solve_exact(const Workload& w, Routing routing, const std::string& context) {
  FabricParams params;
  params.routing = routing;
  return expect_region_solve_exact(w, params, context);
}

}  // namespace megasim::backend::testing
