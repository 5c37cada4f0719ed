// The measurements behind `calibrate --backend cpu` and `validate --backend cpu`
// (scenarios/cpu_calibration.h), taken on every rank of the MPI job at once: the communicators they
// run over are split once, and each probe() measures the links, then times every rank's compute
// in place (its stage's compute ops in program order, backend/cpu/cpu_timing.h SequenceTimer; the
// ranks of all stages at once, as in an iteration), and returns the functions that answer for the
// plan's ops from those times and time its collectives then, after the compute as an iteration's
// follow its backward. Every rank gets the same numbers (an op's from the first rank of the first
// stage that runs it, a collective's from rank 0), so that all ranks compute the same calibration.
#pragma once

#include <memory>

#include "scenarios/cpu_calibration.h"
#include "scenarios/scenario.h"

namespace megasim::cli {

class CpuProbeSession {
 public:
  // Collective over MPI_COMM_WORLD (call on every rank together, inside run_as_mpi_job).
  explicit CpuProbeSession(const scenarios::Scenario& scenario);
  ~CpuProbeSession();
  CpuProbeSession(const CpuProbeSession&) = delete;
  CpuProbeSession& operator=(const CpuProbeSession&) = delete;

  // Measures the links (every rank idle otherwise) and the compute, and returns the probe; every
  // measurement is the median of `repetitions` timed runs (passes of the compute). The probe's
  // functions are collective too: every rank must call the same functions in the same order
  // (run_cpu_calibration does). The probe refers to this session.
  scenarios::CpuCalibrationProbe probe(int repetitions);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::cli
