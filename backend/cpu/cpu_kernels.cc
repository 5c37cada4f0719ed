#include "backend/cpu/cpu_kernels.h"

// One core per kernel, whatever the build flags: the caller places one process per core.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>

#include "models/compute_cost.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

using models::GemmShape;
using models::LayerOp;
using models::OpKind;

using MatrixMap = Eigen::Map<Eigen::MatrixXf>;
using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXf>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

bool is_gemm(OpKind kind) {
  return kind == OpKind::kGemm || kind == OpKind::kAttention;
}

void check_shape(const GemmShape& shape) {
  MEGASIM_ASSERT(shape.m >= 0 && shape.n >= 0 && shape.k >= 0 && shape.batch >= 1,
                 "GEMM shape with a negative dimension or a batch below 1");
}

// Elements of the streaming kernel that moves `bytes`: 4 bytes read and 4 written per element.
std::int64_t stream_elements(double bytes) {
  MEGASIM_ASSERT(std::isfinite(bytes) && bytes >= 0, "streaming op with negative or non-finite bytes");
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / 8.0));
}

// Elements each buffer needs for the ops seen so far.
struct BufferSizes {
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::int64_t c = 0;
  std::int64_t stream = 0;

  void add(const LayerOp& op) {
    if (is_gemm(op.kind)) {
      const GemmShape& s = op.shape;
      check_shape(s);
      a = std::max(a, s.batch * s.m * s.k);
      b = std::max(b, s.batch * s.k * s.n);
      c = std::max(c, s.batch * s.m * s.n);
    } else {
      stream = std::max(stream, stream_elements(op.bytes));
    }
  }
};

// Small fixed inputs, multiples of 1/256 in [-50/256, 50/256]: no denormals, no NaNs, and products
// stay far from overflow. `seed` gives each buffer a different sequence.
void fill_inputs(std::vector<float>& buffer, std::int64_t seed) {
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    const auto value = (static_cast<std::int64_t>(i) * 37 + seed) % 101 - 50;
    buffer[i] = static_cast<float>(value) / 256.0F;
  }
}

std::size_t to_size(std::int64_t elements) {
  return static_cast<std::size_t>(elements);
}

}  // namespace

CpuKernels::CpuKernels(std::span<const models::KernelList> lists) {
  BufferSizes sizes;
  for (const models::KernelList& list : lists) {
    for (const LayerOp& op : list.ops) sizes.add(op);
  }
  allocate(sizes.a, sizes.b, sizes.c, sizes.stream);
}

CpuKernels::CpuKernels(std::span<const LayerOp> ops) {
  BufferSizes sizes;
  for (const LayerOp& op : ops) sizes.add(op);
  allocate(sizes.a, sizes.b, sizes.c, sizes.stream);
}

void CpuKernels::allocate(std::int64_t a_elements, std::int64_t b_elements, std::int64_t c_elements,
                          std::int64_t stream_size) {
  a_.resize(to_size(a_elements));
  b_.resize(to_size(b_elements));
  c_.resize(to_size(c_elements));
  x_.resize(to_size(stream_size));
  y_.resize(to_size(stream_size));
  fill_inputs(a_, 0);
  fill_inputs(b_, 11);
  fill_inputs(x_, 23);
}

void CpuKernels::run(const LayerOp& op, bool flash_attention) {
  switch (op.kind) {
    case OpKind::kGemm:
      run_gemm(op.shape, 1);
      return;
    case OpKind::kAttention: {
      if (!flash_attention) {
        run_gemm(op.shape, 1);
        return;
      }
      // FlashAttention's executed FLOPs as whole batched products of its Q*K^T shape.
      const double product_flops = models::gemm_flops(op.shape);
      const std::int64_t count =
          product_flops > 0 ? std::max<std::int64_t>(1, std::llround(op.executed_flops / product_flops)) : 1;
      run_gemm(op.shape, count);
      return;
    }
    case OpKind::kElementwise:
    case OpKind::kNorm:
      run_stream(op.bytes);
      return;
  }
  MEGASIM_ASSERT(false, "unknown OpKind");
}

void CpuKernels::run_gemm(const GemmShape& shape, std::int64_t count) {
  check_shape(shape);
  const std::int64_t a_size = shape.m * shape.k;
  const std::int64_t b_size = shape.k * shape.n;
  const std::int64_t c_size = shape.m * shape.n;
  MEGASIM_ASSERT(shape.batch * a_size <= std::ssize(a_) && shape.batch * b_size <= std::ssize(b_) &&
                     shape.batch * c_size <= std::ssize(c_),
                 "GEMM larger than the ops CpuKernels was sized for");
  for (std::int64_t rep = 0; rep < count; ++rep) {
    for (std::int64_t i = 0; i < shape.batch; ++i) {
      const ConstMatrixMap a(a_.data() + i * a_size, shape.m, shape.k);
      const ConstMatrixMap b(b_.data() + i * b_size, shape.k, shape.n);
      MatrixMap c(c_.data() + i * c_size, shape.m, shape.n);
      c.noalias() = a * b;
      if (c_size > 0) checksum_ += static_cast<double>(c(shape.m - 1, shape.n - 1));
    }
  }
  last_a_ = std::span<const float>(a_).first(to_size(shape.batch * a_size));
  last_b_ = std::span<const float>(b_).first(to_size(shape.batch * b_size));
  last_output_ = std::span<const float>(c_).first(to_size(shape.batch * c_size));
}

void CpuKernels::run_stream(double bytes) {
  const std::int64_t n = stream_elements(bytes);
  MEGASIM_ASSERT(n <= std::ssize(x_), "streaming op larger than the ops CpuKernels was sized for");
  const ConstArrayMap x(x_.data(), n);
  ArrayMap y(y_.data(), n);
  y = kStreamScale * x + kStreamShift;
  checksum_ += static_cast<double>(y(n - 1));
  last_a_ = std::span<const float>(x_).first(to_size(n));
  last_b_ = {};
  last_output_ = std::span<const float>(y_).first(to_size(n));
}

std::span<const float> CpuKernels::last_input(int operand) const {
  MEGASIM_ASSERT(operand == 0 || operand == 1, "CpuKernels::last_input: operand is 0 or 1");
  return operand == 0 ? last_a_ : last_b_;
}

}  // namespace megasim::backend::cpu
