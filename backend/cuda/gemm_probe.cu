#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/gemm_probe.h"
#include "backend/cuda/gemm_runner.h"

namespace megasim::backend::cuda {
namespace {

constexpr int kWarmups = 3;
// Idle time before each measurement: under sustained GEMM load an H200 holds its 700 W limit by
// lowering its clock, so without a pause a shape measured after a large one would run slower than
// the same shape measured first.
constexpr auto kSettle = std::chrono::milliseconds(100);

std::size_t elements(std::int64_t rows, std::int64_t cols, std::int64_t batch) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * static_cast<std::size_t>(batch);
}

}  // namespace

// The runner holds the cuBLASLt handle, the workspace and each shape's configuration; the probe
// brings its own operands per problem.
struct GemmProbe::State {
  GemmRunner runner;
  cudaStream_t stream = nullptr;

  State() { check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~State() { cudaStreamDestroy(stream); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

GemmProbe::GemmProbe() : state_(std::make_unique<State>()) {}

GemmProbe::~GemmProbe() = default;

double GemmProbe::median_seconds(const GemmProblem& p, int repetitions) {
  validate(p);
  if (repetitions < 1) throw CudaError("GEMM timing needs at least one repetition");
  const std::size_t a_count = elements(p.k, p.n, p.batch);
  const std::size_t b_count = elements(p.k, p.m, p.batch);
  const std::size_t element = operand_bytes(p.operands);
  const DeviceBuffer a(a_count * element, "GEMM operand A");
  const DeviceBuffer b(b_count * element, "GEMM operand B");
  const DeviceBuffer d(elements(p.n, p.m, p.batch) * sizeof(__nv_bfloat16), "GEMM output");
  const auto fill = p.operands == GemmOperands::kFp8E4m3 ? fill_uniform_fp8 : fill_uniform_bf16;
  fill(a.get(), a_count, 0x9e3779b9u, state_->stream);
  fill(b.get(), b_count, 0x85ebca6bu, state_->stream);
  GemmRunner& runner = state_->runner;
  runner.prepare(p);
  check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
  std::this_thread::sleep_for(kSettle);
  for (int i = 0; i < kWarmups; ++i) runner.run(p, a.get(), b.get(), d.get(), state_->stream);

  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(repetitions));
  for (cudaEvent_t& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  std::vector<double> seconds;
  try {
    for (int i = 0; i < repetitions; ++i) {
      check(cudaEventRecord(events[2 * i], state_->stream), "cudaEventRecord");
      runner.run(p, a.get(), b.get(), d.get(), state_->stream);
      check(cudaEventRecord(events[2 * i + 1], state_->stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
    for (int i = 0; i < repetitions; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
      seconds.push_back(ms * 1e-3);
    }
  } catch (...) {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

double GemmProbe::max_relative_error(const GemmProblem& p) {
  validate(p);
  // Operands in {-2, ..., 2}: exact in bf16 and in FP8 E4M3, and every partial sum is an integer
  // exact in fp32.
  const std::size_t a_count = elements(p.k, p.n, p.batch);
  const std::size_t b_count = elements(p.k, p.m, p.batch);
  const std::size_t d_count = elements(p.n, p.m, p.batch);
  std::vector<__nv_bfloat16> d_host(d_count);
  std::vector<float> a_value(a_count), b_value(b_count);
  for (std::size_t i = 0; i < a_count; ++i) a_value[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 5) - 2);
  for (std::size_t i = 0; i < b_count; ++i) b_value[i] = static_cast<float>(static_cast<int>((i * 11 + 1) % 5) - 2);
  const std::size_t element = operand_bytes(p.operands);
  // The operands' bytes in the problem's element type.
  const auto encode = [&](const std::vector<float>& values) {
    std::vector<unsigned char> bytes(values.size() * element);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (p.operands == GemmOperands::kFp8E4m3) {
        const __nv_fp8_e4m3 v(values[i]);
        std::memcpy(bytes.data() + i, &v, 1);
      } else {
        const __nv_bfloat16 v = __float2bfloat16(values[i]);
        std::memcpy(bytes.data() + i * element, &v, element);
      }
    }
    return bytes;
  };
  const std::vector<unsigned char> a_host = encode(a_value);
  const std::vector<unsigned char> b_host = encode(b_value);
  const DeviceBuffer a(a_host.size(), "GEMM operand A");
  const DeviceBuffer b(b_host.size(), "GEMM operand B");
  const DeviceBuffer d(d_count * sizeof(__nv_bfloat16), "GEMM output");
  check(cudaMemcpy(a.get(), a_host.data(), a_host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(b.get(), b_host.data(), b_host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  state_->runner.run(p, a.get(), b.get(), d.get(), state_->stream);
  check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
  check(cudaMemcpy(d_host.data(), d.get(), d_count * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost), "cudaMemcpy");

  // Column-major: A(kk, i) at kk + i·k for i < n, B(kk, j) at kk + j·k for j < m, D(i, j) at i + j·n,
  // per batch.
  double worst = 0;
  for (std::int64_t g = 0; g < p.batch; ++g) {
    const float* ag = a_value.data() + g * p.k * p.n;
    const float* bg = b_value.data() + g * p.k * p.m;
    for (std::int64_t j = 0; j < p.m; ++j) {
      for (std::int64_t i = 0; i < p.n; ++i) {
        double reference = 0;
        for (std::int64_t kk = 0; kk < p.k; ++kk) reference += double{ag[kk + i * p.k]} * bg[kk + j * p.k];
        const double got = __bfloat162float(d_host[static_cast<std::size_t>(g * p.m * p.n + i + j * p.n)]);
        worst = std::max(worst, std::abs(got - reference) / std::max(1.0, std::abs(reference)));
      }
    }
  }
  return worst;
}

}  // namespace megasim::backend::cuda
