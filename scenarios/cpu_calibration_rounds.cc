#include "scenarios/cpu_calibration_rounds.h"

#include <cstddef>
#include <memory>
#include <utility>

#include "models/compute_cost.h"
#include "sim/error.h"
#include "sim/stats.h"

namespace megasim::scenarios {
namespace {

using Q = CpuProbeQuestion;

// The rounds' answers by question, and the index of the next question, shared by the median
// probe's functions.
struct Replay {
  std::vector<CpuProbeAnswer> questions;     // the first round's, for the order check
  std::vector<std::vector<double>> seconds;  // [question][round]
  std::size_t next = 0;

  double answer(CpuProbeQuestion question, double size) {
    MEGASIM_ASSERT(next < questions.size(), "the median probe was asked more than the rounds answered");
    MEGASIM_ASSERT(questions[next].question == question && questions[next].size == size,
                   "the median probe was asked another question than the rounds answered");
    return sim::percentile(seconds[next++], 50);
  }
};

bool same_question(const CpuProbeAnswer& a, const CpuProbeAnswer& b) {
  return a.question == b.question && a.size == b.size;
}

bool same_job(const CpuLinkMeasurement& a, const CpuLinkMeasurement& b) {
  return a.ranks == b.ranks && a.hosts == b.hosts && a.ranks_per_host == b.ranks_per_host &&
         a.allreduce_small_ranks == b.allreduce_small_ranks && a.allreduce_small_bytes == b.allreduce_small_bytes;
}

double median_of(const std::vector<CpuProbeRound>& rounds, double CpuLinkMeasurement::*field) {
  std::vector<double> values;
  values.reserve(rounds.size());
  for (const CpuProbeRound& r : rounds) values.push_back(r.links.*field);
  return sim::percentile(values, 50);
}

}  // namespace

CpuCalibrationProbe recording_probe(const CpuCalibrationProbe& probe, CpuProbeRound& round) {
  round.links = probe.links;
  const auto record = [&round](CpuProbeQuestion question, double size, double seconds) {
    round.answers.push_back({question, size, seconds});
    return seconds;
  };
  CpuCalibrationProbe out = probe;
  out.gemm_seconds = [record, f = probe.gemm_seconds](const models::GemmShape& shape) {
    return record(Q::kGemm, models::gemm_flops(shape), f(shape));
  };
  out.memory_op_seconds = [record, f = probe.memory_op_seconds](double bytes) {
    return record(Q::kMemoryOp, bytes, f(bytes));
  };
  out.op_overhead_s = [record, f = probe.op_overhead_s] { return record(Q::kOpOverhead, 0, f()); };
  out.collective_seconds = [record, f = probe.collective_seconds](models::GroupKind group, models::CollectiveOp op,
                                                                  double bytes) {
    return record(Q::kCollective, bytes, f(group, op, bytes));
  };
  if (probe.host_collective_seconds) {
    out.host_collective_seconds = [record, f = probe.host_collective_seconds](backend::HostLink link,
                                                                              models::CollectiveOp op, double bytes) {
      return record(Q::kHostCollective, bytes, f(link, op, bytes));
    };
  }
  return out;
}

CpuCalibrationProbe median_probe(const CpuCalibrationProbe& like, std::vector<CpuProbeRound> rounds) {
  MEGASIM_ASSERT(!rounds.empty(), "a calibration of no rounds");
  const CpuProbeRound& first = rounds.front();
  auto replay = std::make_shared<Replay>();
  replay->questions = first.answers;
  replay->seconds.resize(first.answers.size());
  for (const CpuProbeRound& r : rounds) {
    MEGASIM_ASSERT(same_job(r.links, first.links), "calibration rounds of different jobs");
    MEGASIM_ASSERT(r.answers.size() == first.answers.size(), "calibration rounds that asked different questions");
    for (std::size_t q = 0; q < r.answers.size(); ++q) {
      MEGASIM_ASSERT(same_question(r.answers[q], first.answers[q]), "calibration rounds asked in different orders");
      replay->seconds[q].push_back(r.answers[q].seconds);
    }
  }
  CpuCalibrationProbe out;
  out.device = like.device;
  out.memory_gbytes_per_rank = like.memory_gbytes_per_rank;
  out.links = first.links;
  for (double CpuLinkMeasurement::*field :
       {&CpuLinkMeasurement::p2p_latency_s, &CpuLinkMeasurement::p2p_bytes_per_s,
        &CpuLinkMeasurement::inter_p2p_latency_s, &CpuLinkMeasurement::inter_p2p_bytes_per_s,
        &CpuLinkMeasurement::allreduce_small_s}) {
    out.links.*field = median_of(rounds, field);
  }
  out.gemm_seconds = [replay](const models::GemmShape& shape) {
    return replay->answer(Q::kGemm, models::gemm_flops(shape));
  };
  out.memory_op_seconds = [replay](double bytes) { return replay->answer(Q::kMemoryOp, bytes); };
  out.op_overhead_s = [replay] { return replay->answer(Q::kOpOverhead, 0); };
  out.collective_seconds = [replay](models::GroupKind, models::CollectiveOp, double bytes) {
    return replay->answer(Q::kCollective, bytes);
  };
  out.host_collective_seconds = [replay](backend::HostLink, models::CollectiveOp, double bytes) {
    return replay->answer(Q::kHostCollective, bytes);
  };
  return out;
}

}  // namespace megasim::scenarios
