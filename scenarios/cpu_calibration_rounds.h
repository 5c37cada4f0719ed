// The cpu calibration (cpu_calibration.h) measured in rounds, for `megasim validate --backend cpu`:
// one round of every probe before each validated iteration, so that the calibration and the
// iterations it predicts see the same machine (a shared host's load comes and goes; a calibration
// taken minutes earlier describes another machine state). A round records the probe's answers in
// the order run_cpu_calibration asks for them (the same questions in the same order for one
// scenario: the plan's ops, then its collectives); the combined calibration replays, for each
// question, the median of its answers over the rounds, so that every derived figure (peak, points,
// bandwidths, reduction rate, latencies) is computed from medians exactly as one calibration is
// computed from its own measurements.
#pragma once

#include <cstdint>
#include <vector>

#include "scenarios/cpu_calibration.h"

namespace megasim::scenarios {

// One answer of a probe: which function was asked, about what (a product's FLOPs, an op's or a
// collective's bytes; 0 for the op overhead), and the seconds it answered.
enum class CpuProbeQuestion : std::uint8_t { kGemm, kMemoryOp, kOpOverhead, kCollective, kHostCollective };
struct CpuProbeAnswer {
  CpuProbeQuestion question = CpuProbeQuestion::kGemm;
  double size = 0;
  double seconds = 0;
};

struct CpuProbeRound {
  CpuLinkMeasurement links;             // the round's ping-pong and small all-reduce
  std::vector<CpuProbeAnswer> answers;  // in the order the probe's functions were called
};

// A probe that answers as `probe` does and appends each answer to `round.answers`; its links are
// `probe.links`, which are also copied into `round.links`. `round` must outlive the returned probe.
CpuCalibrationProbe recording_probe(const CpuCalibrationProbe& probe, CpuProbeRound& round);

// A probe that answers its k-th question with the median of the rounds' k-th answers, and whose
// links hold each field's median over the rounds (counts from the first round); device and memory
// per rank are `like`'s. Preconditions (asserted): `rounds` is not empty, every round asked the same
// questions (function and size) in the same order of the same job (ranks, hosts), and the probe is
// asked those questions in that order, once (the probe serves one run_cpu_calibration).
CpuCalibrationProbe median_probe(const CpuCalibrationProbe& like, std::vector<CpuProbeRound> rounds);

}  // namespace megasim::scenarios
