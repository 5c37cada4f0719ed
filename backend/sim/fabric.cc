// Fabric's public surface and parameters; the machinery lives in the fabric_*.cc files (see
// fabric_impl.h for the map).
#include "backend/sim/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "backend/sim/fabric_impl.h"
#include "sim/enum_names.h"
#include "sim/error.h"

namespace megasim::backend {

namespace {
constexpr sim::EnumNames<Routing, 3> kRoutingNames{{
    {"ecmp", Routing::kEcmp},
    {"spray", Routing::kSpray},
    {"adaptive", Routing::kAdaptive},
}};
}  // namespace

std::string_view to_string(Routing r) {
  return sim::enum_name(kRoutingNames, r);
}

Routing parse_routing(std::string_view text, std::string_view key) {
  return sim::parse_enum(kRoutingNames, text, key);
}

namespace {

void check_fraction(double value, const char* key) {
  if (!(value > 0 && value <= 1)) throw sim::ConfigError(key, fmt::format("{}", value), "a fraction in (0, 1]");
}

}  // namespace

void validate(const FabricParams& params) {
  if (params.routing != Routing::kEcmp && params.routing != Routing::kSpray && params.routing != Routing::kAdaptive) {
    throw sim::ConfigError("fabric.routing", fmt::format("{}", static_cast<int>(params.routing)),
                           "one of ecmp, spray, adaptive");
  }
  if (params.qps_per_connection < 1) {
    throw sim::ConfigError("fabric.qps_per_connection", fmt::format("{}", params.qps_per_connection),
                           "an integer >= 1");
  }
  check_fraction(params.nvlink_efficiency, "fabric.nvlink_efficiency");
  check_fraction(params.network_efficiency, "fabric.network_efficiency");
  if (params.failure_detection_ns < 0) {
    throw sim::ConfigError("fabric.failure_detection_s",
                           fmt::format("{}", sim::to_seconds(params.failure_detection_ns)), "a duration >= 0 s");
  }
  if (params.stall_timeout_ns < 0) {
    throw sim::ConfigError("fabric.stall_timeout_s", fmt::format("{}", sim::to_seconds(params.stall_timeout_ns)),
                           "a duration >= 0 s (0 disables the check)");
  }
  if (params.region_patience_rounds < 0) {
    throw sim::ConfigError("fabric.region_patience_rounds", fmt::format("{}", params.region_patience_rounds),
                           "an integer >= 0");
  }
}

Fabric::Fabric(sim::Simulator& sim, const topo::Topology& topo, FabricParams params)
    : impl_(std::make_unique<Impl>(sim, topo, params)) {}
Fabric::~Fabric() = default;

FlowId Fabric::start_flow(const FlowSpec& spec) {
  return impl_->start_flow(spec);
}
void Fabric::set_link_down(topo::LinkId link) {
  impl_->set_link_down(link);
}
void Fabric::set_link_failed(topo::LinkId link) {
  impl_->set_link_failed(link);
}
void Fabric::set_link_up(topo::LinkId link) {
  impl_->set_link_up(link);
}
void Fabric::set_link_speed_factor(topo::LinkId link, double factor) {
  impl_->set_speed_factor(link, factor);
}

void Fabric::schedule_cable_flap(topo::LinkId link, sim::SimTime at, sim::SimTime duration) {
  MEGASIM_ASSERT(at >= impl_->sim.now() && duration >= 0, "cable flap must be in the future");
  const topo::LinkId reverse = impl_->topo.link(link).reverse;
  Impl* impl = impl_.get();
  impl->track_link_event(impl->sim.schedule_at(at, [impl, link, reverse] {
    impl->set_link_down(link);
    impl->set_link_down(reverse);
  }));
  impl->track_link_event(
      impl->sim.schedule_at(sim::add_time(at, duration, "a cable flap's end"), [impl, link, reverse] {
        impl->set_link_up(link);
        impl->set_link_up(reverse);
      }));
}

void Fabric::on_stall_timeout(std::function<void(FlowId)> callback) {
  impl_->stall_callback = std::move(callback);
}
void Fabric::on_rates_recomputed(std::function<void()> observer) {
  impl_->recompute_observer = std::move(observer);
}

std::size_t Fabric::active_flows() const {
  return impl_->flows.active();
}

std::size_t Fabric::stalled_flows() const {
  std::size_t n = 0;
  for (const FlowState& f : impl_->flows.all()) n += f.active && f.rate <= 0 ? 1 : 0;
  return n;
}

std::optional<FlowLane> Fabric::first_stalled_lane() const {
  for (const FlowState& f : impl_->flows.all()) {
    if (f.active && f.rate <= 0) return lanes_of(f).front().lane;
  }
  return std::nullopt;
}

double Fabric::flow_rate_bytes_per_s(FlowId id) const {
  const FlowState* f = impl_->flows.find(id);
  return f == nullptr ? 0.0 : std::max(0.0, f->rate);
}

double Fabric::flow_remaining_bytes(FlowId id) const {
  const FlowState* f = impl_->flows.find(id);
  return f == nullptr ? 0.0 : impl_->remaining_now(*f);
}

std::vector<LinkUse> Fabric::flow_usage(FlowId id) const {
  std::vector<LinkUse> out;
  if (const FlowState* f = impl_->flows.find(id)) {
    for (const Usage& u : f->usages) out.push_back({u.link, u.weight});
  }
  return out;
}

double Fabric::link_capacity_bytes_per_s(topo::LinkId link) const {
  return impl_->links.capacity(link);
}

double Fabric::link_load_bytes_per_s(topo::LinkId link) const {
  double load = 0;
  for (const LinkFlowEntry& e : impl_->sharing.flows_on(link)) {
    const FlowState& f = impl_->flows[e.slot];
    load += f.usages[e.usage].weight * std::max(0.0, f.rate);
  }
  return load;
}

double Fabric::link_bytes_carried(topo::LinkId link) const {
  double carried = impl_->route_cache.with_pending_bytes(link, impl_->links.state(link).carried);
  for (const LinkFlowEntry& e : impl_->sharing.flows_on(link)) {
    const FlowState& f = impl_->flows[e.slot];
    const double done = f.bytes_per_lane - impl_->remaining_now(f) - f.done_at_route_change;
    carried += f.usages[e.usage].weight * done;
  }
  return carried;
}

std::uint64_t Fabric::completed_flow_count() const {
  return impl_->completed;
}

const std::vector<FlowRecord>& Fabric::completed_flows() const {
  return impl_->records;
}
std::uint64_t Fabric::skipped_recomputations() const {
  return impl_->skipped_recomputations;
}

std::uint64_t Fabric::region_recomputations() const {
  return impl_->region_recomputations;
}

std::uint64_t Fabric::region_rounds() const {
  return impl_->solver.region_rounds();
}

std::uint64_t Fabric::deepest_region_rounds() const {
  return impl_->solver.deepest_region_rounds();
}

std::uint64_t Fabric::rate_recomputations() const {
  return impl_->recomputations;
}
const topo::Topology& Fabric::topology() const {
  return impl_->topo;
}
const FabricParams& Fabric::params() const {
  return impl_->params;
}
std::string Fabric::check_rates() const {
  return impl_->check_rates();
}

}  // namespace megasim::backend
