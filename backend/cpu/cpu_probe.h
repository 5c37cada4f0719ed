// The cpu backend's calibration probe (backend/probe.h CpuProbe), behind `calibrate --backend cpu`
// and `validate --backend cpu --calibration interleaved`, taken on every rank of the MPI job at
// once: the communicators it runs over are split once, and each probe() measures the links, then
// times every rank's compute in place (its stage's compute ops in program order, cpu_timing.h
// SequenceTimer; the ranks of all stages at once, as in an iteration), and returns the functions
// that answer for the plan's ops from those times and time its collectives then, after the compute
// as an iteration's follow its backward. Every rank gets the same numbers (an op's from the first
// rank of the first stage that runs it, a collective's from rank 0), so that all ranks compute the
// same calibration.
#pragma once

#include <memory>

#include "backend/probe.h"
#include "models/workload.h"

namespace megasim::backend::cpu {

class CpuProbeSession {
 public:
  // Collective over MPI_COMM_WORLD (call on every rank together, inside mpi::run_as_mpi_job).
  // `workload` must outlive the session.
  explicit CpuProbeSession(const models::Workload& workload);
  ~CpuProbeSession();
  CpuProbeSession(const CpuProbeSession&) = delete;
  CpuProbeSession& operator=(const CpuProbeSession&) = delete;

  // Measures the links (every rank idle otherwise) and the compute, and returns the probe; every
  // measurement is the median of `repetitions` timed runs (passes of the compute). The probe's
  // functions are collective too: every rank must call the same functions in the same order
  // (scenarios::run_cpu_calibration does). The probe refers to this session.
  CpuProbe probe(int repetitions);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::backend::cpu
