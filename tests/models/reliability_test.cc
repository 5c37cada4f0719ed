// Reliability parameters: the defaults reproduce the public counts they were transcribed from, the
// failure processes of an inventory, bad values named by key, and the checkpoint closed forms.
#include "models/reliability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "models/checkpoint_theory.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// Llama 3's cluster as the defaults assume it: 16,384 GPUs in 2,048 hosts, one NIC per GPU, and the
// cables and switches of a MegaScale-style Clos of that size.
ClusterInventory llama3_cluster() {
  ClusterInventory inv;
  inv.gpus = 16384;
  inv.hosts = 2048;
  inv.nics = 16384;
  inv.cables = {16384, 8192, 8192};
  inv.switches = {256, 256, 1024};
  inv.hosts_per_tor = 64;
  return inv;
}

double expected_in(const std::vector<FailureProcess>& processes, double hours, bool flaps) {
  double n = 0;
  for (const FailureProcess& p : processes) {
    if ((p.effect == FailureEffect::kFlap) == flaps) n += p.rate_per_s * hours * 3600;
  }
  return n;
}

// Over Llama 3's 54 days the default rates give back its 419 interruptions, and per component the
// rows they were summed from.
TEST(Reliability, DefaultsGiveBackLlama3sInterruptions) {
  const std::vector<FailureProcess> processes = failure_processes(FailureParams{}, llama3_cluster());
  const double hours = 54 * 24;
  EXPECT_NEAR(expected_in(processes, hours, false), 419, 0.01);
  std::array<double, kComponentCount> by_component{};
  for (const FailureProcess& p : processes) {
    if (p.effect != FailureEffect::kFlap)
      by_component[static_cast<std::size_t>(p.component)] += p.rate_per_s * hours * 3600;
  }
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kGpu)], 148 + 19 + 17 + 6 + 6, 0.01);
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kHbm)], 72, 0.01);
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kHost)], 32 + 3 + 3 + 2 + 2 + 2 + 2, 0.01);
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kNic)], 7, 0.01);
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kLink)] +
                  by_component[static_cast<std::size_t>(Component::kSwitch)],
              35, 0.01);
  EXPECT_NEAR(by_component[static_cast<std::size_t>(Component::kSoftware)], 54 + 2 + 7, 0.01);
  // Flaps: ByteRobust's InfiniBand/CUDA error ratio times the GPU failures.
  EXPECT_NEAR(expected_in(processes, hours, true), 196.0 * 1599 / 19968, 0.01);
}

TEST(Reliability, ProcessesOfAnInventory) {
  FailureParams p;
  p.gpu_mtbf_h = 1000;
  p.nic_mtbf_h = 0;  // never
  p.rate_scale = 2;
  ClusterInventory inv;
  inv.gpus = 16;
  inv.hosts = 2;
  inv.nics = 16;
  inv.cables = {16, 8, 0};
  inv.switches = {2, 2, 0};
  inv.hosts_per_tor = 2;
  const std::vector<FailureProcess> processes = failure_processes(p, inv);
  const auto find = [&](std::string_view name) -> const FailureProcess* {
    for (const FailureProcess& f : processes) {
      if (f.name == name) return &f;
    }
    return nullptr;
  };
  ASSERT_NE(find("gpu"), nullptr);
  EXPECT_DOUBLE_EQ(find("gpu")->rate_per_s, 16 * 2 / (1000 * 3600.0));
  EXPECT_EQ(find("gpu")->evicted_hosts, 1);
  EXPECT_EQ(find("nic"), nullptr);
  EXPECT_EQ(find("link.agg_core"), nullptr);  // no such cables
  EXPECT_EQ(find("switch.tor")->evicted_hosts, 2);
  EXPECT_EQ(find("switch.tor")->effect, FailureEffect::kFailJob);
  EXPECT_EQ(find("switch.agg")->effect, FailureEffect::kDamage);
  EXPECT_EQ(find("link.nic")->effect, FailureEffect::kFailJob);
  EXPECT_EQ(find("link.tor_agg")->effect, FailureEffect::kDamage);
  EXPECT_EQ(find("software")->evicted_hosts, 0);
  EXPECT_EQ(find("flap.nic")->effect, FailureEffect::kFlap);
  EXPECT_DOUBLE_EQ(comm_init_s(RecoveryParams{}, 12288), 30.0);
}

template <typename Params>
std::string thrown_key(const Params& p) {
  try {
    validate(p);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

TEST(Reliability, BadValuesNameTheirKey) {
  FailureParams f;
  EXPECT_EQ(thrown_key(f), "(no error)");
  f.host_mtbf_h = std::nan("");
  EXPECT_EQ(thrown_key(f), "failures.host_mtbf_h");
  RecoveryParams r;
  EXPECT_EQ(thrown_key(r), "(no error)");
  r.diagnosis_s = -1;
  EXPECT_EQ(thrown_key(r), "recovery.diagnosis_s");
  CheckpointParams c;
  EXPECT_EQ(thrown_key(c), "(no error)");
  c.upload_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(thrown_key(c), "checkpoint.upload_s");
  EXPECT_THROW(parse_detection("pager", "recovery.detection"), sim::ConfigError);
  EXPECT_EQ(parse_flap_durations("fixed", "k"), FlapDurations::kFixed);
}

TEST(CheckpointTheory, YoungDalyAndTheExactOptimum) {
  EXPECT_DOUBLE_EQ(young_interval_s(10, 20000), 632.45553203367592);  // sqrt(400,000)
  // Daly for delta << M: Young's interval, corrected by a few percent.
  const double delta = 30, m = 4 * 3600.0;
  const double daly = daly_interval_s(delta, m);
  EXPECT_NEAR(daly, std::sqrt(2 * delta * m) * (1 + std::sqrt(delta / (2 * m)) / 3 + delta / (18 * m)) - delta, 1e-9);
  EXPECT_NEAR(optimal_interval_exponential_s(delta, m), daly, 1e-5 * daly);
  EXPECT_DOUBLE_EQ(daly_interval_s(3 * m, m), m);  // delta >= 2M
  // The optimum is a maximum of the closed form.
  const double best = optimal_interval_exponential_s(delta, m);
  const double e = expected_ettr_exponential(best, delta, 300, m);
  EXPECT_GT(e, expected_ettr_exponential(0.9 * best, delta, 300, m));
  EXPECT_GT(e, expected_ettr_exponential(1.1 * best, delta, 300, m));
}

// Limits of ETTR = lambda tau e^{-lambda R} / (e^{lambda (tau + delta)} - 1): free checkpoints and
// restarts with intervals much shorter than the MTBF approach 1; without failures the save cost
// alone remains, tau / (tau + delta).
TEST(CheckpointTheory, ClosedFormLimits) {
  EXPECT_NEAR(expected_ettr_exponential(1, 0, 0, 1e9), 1.0, 1e-8);
  EXPECT_NEAR(expected_ettr_exponential(600, 10, 0, 1e12), 600.0 / 610, 1e-8);
  // One failure per MTBF costs tau/2 of work plus R on average, to first order.
  const double tau = 600, r = 900, m = 1e6;
  EXPECT_NEAR(expected_ettr_exponential(tau, 0, r, m), 1 - (tau / 2 + r) / m, 1e-6);
}

}  // namespace
}  // namespace megasim::models
