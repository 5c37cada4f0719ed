// The measurements behind `calibrate --backend cpu` and `validate --backend cpu`
// (scenarios/cpu_calibration.h), taken on every rank of the MPI job at once: the communicators they
// run over are split once, and each probe() measures the links and returns the functions that
// time the plan's ops and collectives (every rank gets rank 0's numbers, so that all ranks compute
// the same calibration).
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

  // Measures the links (every rank idle otherwise) and returns the probe, whose functions take the
  // median of `repetitions` timed runs and are collective too: every rank must call the same
  // functions in the same order (run_cpu_calibration does). The probe refers to this session.
  scenarios::CpuCalibrationProbe probe(int repetitions);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::cli
