// Times bf16 GEMMs on the current GPU through cuBLASLt, the library Megatron-LM's GEMMs go through
// (PyTorch's bf16 matmul calls cublasLtMatmul). What `megasim calibrate --backend cuda` measures the
// cost model's GEMM efficiency with.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/cuda/gemm_runner.h"  // GemmProblem

namespace megasim::backend::cuda {

class GemmProbe {
 public:
  // Creates the cuBLASLt handle and a 32 MiB workspace on the current device (throws CudaError).
  GemmProbe();
  ~GemmProbe();
  GemmProbe(const GemmProbe&) = delete;
  GemmProbe& operator=(const GemmProbe&) = delete;

  // Median seconds of one GEMM over `repetitions` timed runs (CUDA events around each, all queued
  // before the first is read) after 100 ms idle and three warm-ups. bf16 operands drawn uniformly from [-1, 1),
  // fp32 accumulation, bf16 output, handed to cuBLASLt as PyTorch's F.linear(x, W) hands it (x the
  // m×k activations, W the n×k weight: cuBLAS's M = n, N = m, W transposed), the first algorithm of
  // cuBLASLt's heuristic. FP8 operands (problem.operands) are drawn the same way in E4M3, the
  // output and accumulation as above.
  double median_seconds(const GemmProblem& problem, int repetitions);

  // Runs the GEMM on small integer operands (exact in bf16 and E4M3) and returns the largest
  // |result − host reference| / max(1, |reference|): about 2^-9 from the bf16 output's rounding
  // when the layout is right, order 1 when it is not.
  double max_relative_error(const GemmProblem& problem);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace megasim::backend::cuda
