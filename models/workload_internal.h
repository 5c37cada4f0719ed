// Pieces of build_workload (workload.h) shared by its files: the kernel lists (workload_kernels.cc),
// the pipeline part of a stage program (workload_stage.cc) and its data-parallel and optimizer tail
// (workload_dp.cc). Not a public header.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/model_spec.h"
#include "models/pipeline_schedule.h"
#include "models/plan.h"
#include "models/workload.h"

namespace megasim::models::workload_detail {

// Indices into Workload::kernels of the lists build_workload makes once.
struct KernelIds {
  std::int32_t chunk_forward = -1;   // one layer's forward
  std::int32_t chunk_backward = -1;  // one layer's recompute (if any) and backward
  std::int32_t moe_forward = -1;     // one MoE layer's forward (-1 for a dense model)
  std::int32_t moe_backward = -1;    // one MoE layer's recompute (if any) and backward
  std::int32_t embedding_forward = -1;
  std::int32_t embedding_backward = -1;
  std::int32_t output_forward = -1;
  std::int32_t output_backward = -1;
  std::int32_t data_first = -1;         // data loading on the first stage (every tensor when pp == 1); -1 when async
  std::int32_t data_last = -1;          // data loading on the last stage when pp > 1; -1 when async
  std::vector<std::int32_t> optimizer;  // per stage
};

// Appends every kernel list the plan needs to `out` and says where each is.
KernelIds add_kernel_lists(const ModelSpec& model, const ResolvedPlan& plan, std::vector<KernelList>& out);

// Bytes of one pipeline transfer per TP rank: the (s, b, h) bf16 hidden state, the sequence split
// over the TP ranks with sequence parallelism.
double pp_transfer_bytes(const ModelSpec& model, const ResolvedPlan& plan);

// Tag of the transfer into virtual stage `virtual_stage` for micro-batch `microbatch`: activations
// (kForward) or gradients (kBackward). Unique per (pass, micro-batch, virtual stage).
std::int64_t pp_tag(const ResolvedPlan& plan, PassKind pass, std::int64_t microbatch, std::int64_t virtual_stage);
// Tags of the tied-embedding gradient exchange: from the first stage to the last, and back.
std::int64_t embedding_tag(const ResolvedPlan& plan, bool from_first_stage);

// A stage program under construction.
class ProgramBuilder {
 public:
  std::int32_t add(Task task);
  [[nodiscard]] const Task& at(std::int32_t index) const { return program_.tasks.at(static_cast<std::size_t>(index)); }
  [[nodiscard]] std::int32_t size() const { return static_cast<std::int32_t>(program_.tasks.size()); }
  // The latest task added on `stream`, -1 when none.
  [[nodiscard]] std::int32_t last_on(StreamKind stream) const {
    return last_on_stream_[static_cast<std::size_t>(stream)];
  }
  StageProgram take() { return std::move(program_); }

 private:
  StageProgram program_;
  std::array<std::int32_t, 4> last_on_stream_ = {-1, -1, -1, -1};  // by StreamKind
};

// What the pipeline part leaves for the data-parallel tail.
struct PipelineResult {
  std::vector<std::int32_t> unwaited_p2p;  // sends/recvs no compute task depends on
  std::int32_t final_compute = -1;         // the last backward
};

// Megatron's parameter all-gathers placed at the start of the program (plan.overlap_param_gather):
// the task indices per chunk (v vectors, empty when not prefetched).
std::vector<std::vector<std::int32_t>> add_prefetched_gathers(const ModelSpec& model, const ResolvedPlan& plan,
                                                              std::int64_t stage, ProgramBuilder& program);
// Appends the gradient buckets of `chunk` as kDpCollective tasks depending on `deps`; their indices
// go to `out`.
void add_gradient_reduces(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage, std::int64_t chunk,
                          std::vector<std::int32_t> deps, ProgramBuilder& program, std::vector<std::int32_t>& out);
// Sharded data parallelism's per-micro-batch collectives (workload_dp.cc): the all-gather of the
// parameters of `step`'s chunk before it runs, and the reduce-scatter of its gradients after a
// backward; each depends on `deps` and returns its task index.
std::int32_t add_sharded_gather(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                const ScheduleStep& step, std::vector<std::int32_t> deps, ProgramBuilder& program);
std::int32_t add_sharded_reduce(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                const ScheduleStep& step, std::vector<std::int32_t> deps, ProgramBuilder& program);
// The end of the iteration: the gradient reduction when neither overlapped nor sharded, the tied-embedding
// exchange, the optimizer step and the parameter all-gathers when not prefetched.
void add_iteration_tail(const ModelSpec& model, const ResolvedPlan& plan, const KernelIds& ids, std::int64_t stage,
                        const PipelineResult& pipeline, std::vector<std::int32_t> grad_reduces,
                        ProgramBuilder& program);

// The whole program of one pipeline stage.
StageProgram build_stage_program(const ModelSpec& model, const ResolvedPlan& plan, const KernelIds& ids,
                                 std::int64_t stage);

}  // namespace megasim::models::workload_detail
