// The cpu calibration measured in rounds (scenarios/cpu_calibration_rounds.h) on the made-up
// machine of cpu_calibration_test_util.h: what a round records, and that the calibration of the
// rounds' medians is, question by question, the calibration of the median round; so a burst of load
// in a minority of the rounds does not reach it.
#include "scenarios/cpu_calibration_rounds.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "models/collective.h"
#include "models/compute_cost.h"
#include "scenarios/cpu_calibration.h"
#include "scenarios/loader.h"
#include "tests/scenarios/cpu_calibration_test_util.h"

namespace megasim::scenarios {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's names

// The made-up machine with every GEMM, memory-bound op and collective `factor` times slower (a
// loaded machine), and the ping-pong and small all-reduce as slow.
struct Slowdown {
  double gemm = 1;
  double memory = 1;
  double collective = 1;
  double links = 1;
};

CpuCalibrationProbe slowed_probe(const Slowdown& f) {
  CpuCalibrationProbe p = fake_probe();
  p.gemm_seconds = [f](const models::GemmShape& s) { return fake_gemm_s(s) * f.gemm; };
  p.memory_op_seconds = [f](double bytes) { return fake_memory_s(bytes) * f.memory; };
  p.op_overhead_s = [f] { return kOverheadS * f.memory; };
  p.collective_seconds = [f](models::GroupKind, models::CollectiveOp op, double bytes) {
    return fake_dp_s(op, bytes) * f.collective;
  };
  p.links.p2p_latency_s *= f.links;
  p.links.p2p_bytes_per_s /= f.links;
  p.links.allreduce_small_s *= f.links;
  return p;
}

// One round of the probe, recorded.
CpuProbeRound record_round(const Scenario& s, const CpuCalibrationProbe& probe) {
  CpuProbeRound round;
  run_cpu_calibration(s, recording_probe(probe, round));
  return round;
}

class Rounds : public ::testing::TestWithParam<bool> {};  // data parallel (DP 2) or PP 2

TEST_P(Rounds, ARoundRecordsEveryAnswerInCallOrderAndChangesNothing) {
  const Scenario s = load_scenario_text(tiny_scenario(GetParam()));
  const models::Workload w = workload_of(s);
  CpuProbeRound round;
  const CpuCalibrationReport recorded = run_cpu_calibration(s, recording_probe(fake_probe(), round));
  EXPECT_EQ(to_calibration_toml(recorded), to_calibration_toml(run_cpu_calibration(s, fake_probe())));
  // The study's order: the op overhead, every distinct product, every distinct memory-bound op,
  // then every distinct collective (and, when they all reduce, an all-gather of each one's size).
  std::vector<CpuProbeAnswer> expected = {{CpuProbeQuestion::kOpOverhead, 0, kOverheadS}};
  for (const CpuOpMeasurement& m : plan_products(w)) {
    expected.push_back({CpuProbeQuestion::kGemm, models::gemm_flops(m.shape), fake_gemm_s(m.shape)});
  }
  for (const CpuOpMeasurement& m : plan_memory_ops(w)) {
    expected.push_back({CpuProbeQuestion::kMemoryOp, m.bytes, fake_memory_s(m.bytes)});
  }
  const std::vector<CpuCollectiveMeasurement> collectives = plan_collectives(w);
  for (const CpuCollectiveMeasurement& c : collectives) {
    expected.push_back({CpuProbeQuestion::kCollective, c.bytes, fake_dp_s(c.op, c.bytes)});
  }
  if (GetParam()) {  // DP 2 with the distributed optimizer: a reduce-scatter and an all-gather
    ASSERT_EQ(collectives.size(), 2U);
  } else {
    EXPECT_TRUE(collectives.empty()) << "PP 2 has no collective over two or more ranks";
  }
  ASSERT_EQ(round.answers.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(round.answers[i].question, expected[i].question) << i;
    EXPECT_EQ(round.answers[i].size, expected[i].size) << i;
    EXPECT_DOUBLE_EQ(round.answers[i].seconds, expected[i].seconds) << i;
  }
  EXPECT_EQ(round.links.p2p_bytes_per_s, kP2pRate);
  EXPECT_EQ(round.links.allreduce_small_s, kSmallAllReduceS);
}

TEST_P(Rounds, TheMedianOfThreeRoundsIsTheMiddleRoundsCalibration) {
  const Scenario s = load_scenario_text(tiny_scenario(GetParam()));
  const std::vector<double> factors = {1.0, 3.0, 1.25};  // the median: 1.25
  std::vector<CpuProbeRound> rounds;
  for (const double f : factors) rounds.push_back(record_round(s, slowed_probe({f, f, f, f})));
  const CpuCalibrationReport median = run_cpu_calibration(s, median_probe(fake_probe(), rounds));
  const CpuCalibrationReport middle = run_cpu_calibration(s, slowed_probe({1.25, 1.25, 1.25, 1.25}));
  EXPECT_EQ(to_calibration_toml(median), to_calibration_toml(middle));
  EXPECT_NE(to_calibration_toml(median), to_calibration_toml(run_cpu_calibration(s, fake_probe())));
}

// Each question's median is taken on its own: a round slowed on its GEMMs only and another on its
// memory-bound ops and collectives only leave the quiet rounds' calibration unchanged.
TEST_P(Rounds, ABurstInOneRoundOfThreeDoesNotReachTheCalibration) {
  const Scenario s = load_scenario_text(tiny_scenario(GetParam()));
  std::vector<CpuProbeRound> rounds = {
      record_round(s, slowed_probe({2.0, 1.0, 1.0, 1.0})),
      record_round(s, fake_probe()),
      record_round(s, slowed_probe({1.0, 2.0, 2.0, 2.0})),
  };
  const CpuCalibrationReport median = run_cpu_calibration(s, median_probe(fake_probe(), rounds));
  EXPECT_EQ(to_calibration_toml(median), to_calibration_toml(run_cpu_calibration(s, fake_probe())));
  EXPECT_EQ(median.links.p2p_bytes_per_s, kP2pRate);
  EXPECT_EQ(median.links.allreduce_small_s, kSmallAllReduceS);
}

TEST_P(Rounds, AMedianProbeAskedAnotherQuestionIsAnInternalError) {
  const Scenario pp = load_scenario_text(tiny_scenario(false));
  const Scenario dp = load_scenario_text(tiny_scenario(true));
  const std::vector<CpuProbeRound> rounds = {record_round(GetParam() ? dp : pp, fake_probe())};
  EXPECT_DEATH(run_cpu_calibration(GetParam() ? pp : dp, median_probe(fake_probe(), rounds)),
               "another question|more than the rounds answered");
}

INSTANTIATE_TEST_SUITE_P(CpuCalibrationRounds, Rounds, ::testing::Bool(), plan_name);

TEST(CpuCalibrationRounds, RoundsThatAskedInDifferentOrdersAreAnInternalError) {
  const Scenario s = load_scenario_text(tiny_scenario(true));
  std::vector<CpuProbeRound> rounds = {record_round(s, fake_probe()), record_round(s, fake_probe())};
  std::swap(rounds[1].answers[1], rounds[1].answers[2]);
  EXPECT_DEATH(median_probe(fake_probe(), rounds), "different orders");
}

}  // namespace
}  // namespace megasim::scenarios
