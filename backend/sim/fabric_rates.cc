// Batched max-min recomputation over the changed region or component (the RegionSolver solves it,
// fabric_region_solver.h), the new rates applied, and the scheduling they drive: completions and
// stall timeouts.
#include <algorithm>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "backend/sim/fabric_impl.h"
#include "backend/sim/max_min.h"
#include "sim/error.h"

namespace megasim::backend {

// One recomputation per instant: it is queued behind the events already scheduled for now, so
// every flow start, completion and link change of this instant is solved together.
void Fabric::Impl::request_recompute() {
  if (recompute_pending) return;
  recompute_pending = true;
  recompute_event = sim.schedule_at(sim.now(), [this] { recompute(); });
}

void Fabric::Impl::recompute() {
  recompute_pending = false;
  ++recomputations;
  if (params.region_solve && solver.solve_region(params.region_patience_rounds)) {
    ++region_recomputations;
  } else {
    solver.solve_component();
  }
  links.clear_dirty();
  const std::span<const std::uint32_t> solved = solver.solved_flows();
  const std::span<const double> rates = solver.rates();
  for (std::size_t i = 0; i < solved.size(); ++i) apply_rate(solved[i], rates[i]);
  if (recompute_observer) recompute_observer();
}

// When `remaining` bytes (per lane) at `rate` bytes/s from now are done: the ceiling of the exact
// time. A positive rate so small that the flow would end past the simulator's horizon (146 years:
// sim/time.h) is not a stall the job could wait out but inputs that ask for the impossible (a link
// speed, efficiency or slowdown off by many orders of magnitude): SimTimeError names them.
sim::SimTime Fabric::Impl::completion_time(double remaining, double rate) const {
  const double seconds = std::max(0.0, remaining) / rate;
  if (seconds <= sim::kMaxSimSeconds) {
    const sim::SimTime ns = sim::ceil_from_seconds(seconds);
    if (ns <= sim::kMaxSimTime - sim.now()) return sim.now() + ns;
  }
  sim::throw_time_error(fmt::format("a flow's end ({:g} bytes per lane at {:g} B/s; check cluster.nic_gbps, "
                                    "cluster.switch_port_gbps, cluster.nvlink_gbytes_per_s, the fabric "
                                    "efficiencies and stragglers.slow_links, slow_nics)",
                                    remaining, rate),
                        sim::to_seconds(sim.now()) + seconds);
}

// Gives the flow its new rate: settles its progress at the old rate and reschedules its completion.
// Changes below 1e-12 relative are rounding noise of the solve and keep the old rate and event.
void Fabric::Impl::apply_rate(std::uint32_t slot, double rate) {
  FlowState& f = flows[slot];
  if (f.rate >= 0 && std::abs(rate - f.rate) <= 1e-12 * f.rate) return;
  settle(f);
  f.rate = rate;
  sharing.on_rate_change(f, rate);
  sim.cancel(f.completion);
  f.completion = {};
  if (rate > 0) {
    const FlowId id = f.id;
    f.completion = sim.schedule_at(completion_time(f.remaining, rate), [this, slot, id] {
      MEGASIM_ASSERT(flows[slot].active && flows[slot].id == id, "completion of a finished flow");
      complete(slot);
    });
    sim.cancel(f.stall_check);
    f.stall_check = {};
  } else if (params.stall_timeout_ns > 0 && !f.stall_reported && !sim.is_pending(f.stall_check)) {
    const FlowId id = f.id;
    f.stall_check = sim.schedule_after(params.stall_timeout_ns, [this, slot, id] { on_stall_check(slot, id); });
  }
}

// Runs stall_timeout_ns after the flow's rate dropped to 0; any positive rate since cancels it.
void Fabric::Impl::on_stall_check(std::uint32_t slot, FlowId id) {
  FlowState& f = flows[slot];
  MEGASIM_ASSERT(f.active && f.id == id && f.rate <= 0, "stall check of a moving or finished flow");
  f.stall_reported = true;
  if (stall_callback) stall_callback(id);
}

std::string Fabric::Impl::check_rates() const {
  MaxMinProblem all;
  std::vector<std::int64_t> local(links.size(), -1);
  std::vector<double> current;
  for (const FlowState& f : flows.all()) {
    if (!f.active) continue;
    for (const Usage& u : f.usages) {
      std::int64_t& index = local[u.link.index()];
      if (index < 0) index = all.add_link(links.state(u.link).capacity());
      all.add_usage(static_cast<std::uint32_t>(index), u.weight);
    }
    all.end_flow();
    current.push_back(std::max(0.0, f.rate));
  }
  if (std::string broken = check_state(); !broken.empty()) return broken;
  return check_max_min(all, current, 1e-9);
}

}  // namespace megasim::backend
