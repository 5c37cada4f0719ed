// The workload of one training iteration: what every rank computes and communicates, in schedule
// order, independent of any hardware. The same Workload goes to every backend (DESIGN.md "One data
// flow"): the simulator times it on the modelled cluster, a real backend runs it. All ranks of a
// pipeline stage run the same program (the TP index and DP replica only select peers and groups,
// Megatron rank order tp-dp-pp: parallel_groups.h), so the workload holds one StageProgram per stage
// and each kernel list once, referenced by index.
//
// The semantics a backend follows (the details and Megatron's reasons: docs/design/workload.md):
//  - each rank has a compute stream and three communication streams (tp, pp, dp); a stream runs
//    its tasks in program order, one at a time (kPpSend/kPpRecv excepted), and a task starts when
//    its stream is free and every task of `deps` (earlier tasks of the program) has finished;
//  - a compute task runs its kernel list `repeat` times, the list's tp_collectives on the TP group
//    between its kernels (with plan.tp_comm_overlap only their excess over the GEMMs is exposed);
//  - kPpSend / kPpRecv are posted in program order without blocking the stream; a transfer starts
//    once both the send and the recv with the same tag (same replica and TP rank) are posted, and
//    ends both tasks;
//  - kDpCollective runs over the rank's data-parallel group, one call per bucket, in order on the
//    dp stream;
//  - a task with host_sync idles the GPU from the synchronisation until the host has launched the
//    task's kernels (sim: the calibration's host_sync_gap; cuda: a real synchronize).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/collective.h"
#include "models/layer_ops.h"
#include "models/model_spec.h"
#include "models/plan.h"

namespace megasim::models {

enum class StreamKind : std::uint8_t { kCompute, kTp, kPp, kDp };
enum class TaskKind : std::uint8_t { kCompute, kPpSend, kPpRecv, kDpCollective };
// What a task is for, for the report's breakdown and the trace's names.
enum class TaskCategory : std::uint8_t {
  kForward,           // a model chunk's forward (with the embedding on the first, loss on the last stage)
  kBackward,          // a model chunk's backward (with recomputation when the plan recomputes)
  kOptimizer,         // the optimizer step on the rank's parameter shard
  kDataLoading,       // reading the next batch when data loading is not asynchronous
  kPipelineForward,   // activations to the next stage
  kPipelineBackward,  // gradients to the previous stage
  kGradientReduce,    // DP reduce-scatter (distributed optimizer) or all-reduce of a grad bucket
  kParameterGather,   // DP all-gather of updated parameters (distributed optimizer)
  kHostSync,          // the GPU idle after a host synchronisation (batch_p2p_sync), no kernels
  kLossReduce,        // a micro-batch's loss averaged over the DP group (average_loss_per_micro_batch)
};

std::string_view to_string(StreamKind stream);
std::string_view to_string(TaskKind kind);
std::string_view to_string(TaskCategory category);

// The group a collective inside a compute task runs over (parallel_groups.h's ExpertLayout): the
// tensor-parallel group, or in an MoE layer the expert-parallel group (the alltoall dispatcher's
// dispatch and combine), the expert tensor-parallel group, or both together (the allgather
// dispatcher's gather and reduce-scatter).
// kContext is the context-parallel group (the attention's K/V exchange).
enum class ComputeGroup : std::uint8_t { kTensor, kExpert, kExpertTensor, kExpertTensorAndExpert, kContext };
// The kernels of a list an overlappable collective runs beside (TpCollective::window).
enum class OverlapWindow : std::uint8_t { kGemms, kAttention };
// The group a kDpCollective runs over: the data-parallel group, or for the MoE layers' experts the
// expert-data-parallel group.
enum class DpGroup : std::uint8_t { kData, kExpertData };

struct TpCollective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  double bytes = 0;        // nccl-tests size of one call
  std::int32_t count = 0;  // calls per run of the kernel list
  // Whether these calls run concurrently with the list's GEMMs (kernel_list_gemm_time_s), so only
  // the excess over them is exposed: all layer collectives under plan.tp_comm_overlap (MegaScale
  // §3.1), and, in every plan, Megatron's asynchronous backward calls (the grad-input all-reduce or
  // reduce-scatter issued before the weight-gradient GEMM, the sequence-parallel input re-gather
  // issued before the data-gradient GEMM; tensor_parallel/layers.py). The builder decides; a
  // backend needs no plan flag to interpret it.
  bool overlappable = false;
  ComputeGroup group = ComputeGroup::kTensor;
  // What an overlappable call hides behind: the list's GEMMs, or its attention kernels (ring
  // attention's K/V blocks, each fetched while the block before it is attended).
  OverlapWindow window = OverlapWindow::kGemms;
};

// The ops of one kind of compute work, for one micro-batch on one TP rank.
struct KernelList {
  std::string name;                          // "chunk forward", "chunk backward", "embedding", ...
  std::vector<LayerOp> ops;                  // execution order
  std::vector<TpCollective> tp_collectives;  // inside one run of `ops`
  // The first `recompute_ops` ops rerun forward ops (recomputation inside backward): they count in
  // hardware FLOPs, not in model FLOPs.
  std::int32_t recompute_ops = 0;
  // Host synchronisations inside one run (an MoE layer's forward copies its tokens-per-expert
  // counts to the host for the all-to-all's split sizes and the grouped GEMM's): each idles the GPU
  // until the host has launched the kernels after it (the calibration's host_sync_gap).
  std::int32_t host_syncs = 0;
};

struct Task {
  TaskKind kind = TaskKind::kCompute;
  StreamKind stream = StreamKind::kCompute;
  TaskCategory category = TaskCategory::kForward;
  std::int32_t microbatch = -1;  // -1 when not tied to one
  std::int32_t chunk = -1;       // model chunk (virtual stage index on this rank); -1 when none
  // kCompute: kernel lists run in order, each `repeat` times (e.g. {chunk forward x 2 layers,
  // output layer x 1}).
  struct KernelRun {
    std::int32_t kernels = -1;  // index into Workload::kernels
    std::int32_t repeat = 1;
  };
  std::vector<KernelRun> runs;
  // kPpSend / kPpRecv: the peer stage is (stage + peer_offset) mod pp (+1 or -1); the tag pairs a
  // send with its recv.
  std::int32_t peer_offset = 0;
  std::int64_t tag = -1;
  // kPpSend / kPpRecv / kDpCollective: bytes (per TP rank; the nccl-tests size for collectives).
  double bytes = 0;
  CollectiveOp op = CollectiveOp::kSendRecv;  // kDpCollective: reduce_scatter, all_gather or all_reduce
  DpGroup group = DpGroup::kData;             // kDpCollective: over which group
  std::vector<std::int32_t> deps;             // earlier tasks of this program that must finish first
  // kCompute: the host synchronises with the GPU before it launches this task (see the file comment).
  bool host_sync = false;
};

struct StageProgram {
  std::vector<Task> tasks;
};

struct Workload {
  ModelSpec model;
  ResolvedPlan plan;
  std::vector<KernelList> kernels;
  std::vector<StageProgram> stages;  // index = pipeline stage
  double model_flops = 0;            // whole job, one iteration (flops.h convention)
  double hardware_flops = 0;
  double model_flops_full_attention = 0;  // model_flops with the sliding window ignored (MegaScale's MFU)
};

// Builds the iteration: Megatron's schedule per stage (pipeline_schedule.h), the kernel lists from
// layer_ops.h, PP transfers of s*b*h/t (sequence parallel) or s*b*h bf16 values per TP rank, the DP
// gradient reduction in buckets (reduce-scatter with the distributed optimizer, else all-reduce) and
// the parameter all-gather, the optimizer step. The plan must be resolved (resolve_plan).
Workload build_workload(const ModelSpec& model, const ResolvedPlan& plan);

// FLOPs (flops.h convention) of one run of a kernel list: model FLOPs leave out the recompute ops.
double kernel_list_model_flops(const KernelList& kernels);
double kernel_list_hardware_flops(const KernelList& kernels);
// FLOPs of one task on one rank (its runs times their repeats; 0 for communication tasks).
double task_model_flops(const Workload& workload, const Task& task);
double task_hardware_flops(const Workload& workload, const Task& task);

// Parameters held by one GPU of `stage` in its model chunk `chunk` (TP-sharded, experts split over
// ep x etp): chunk_parameters(...).total() of stage_parameters.h. Sums over chunks to
// stage_parameter_count.
std::int64_t chunk_parameter_count(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                   std::int64_t chunk);
// Megatron core DDP's gradient buckets of one model chunk, in parameters, in the order backward
// fills them (see workload_dp.cc for the rule): of its dense parameters (kData), or of its experts
// (kExpertData; empty when the chunk has none).
std::vector<std::int64_t> gradient_bucket_params(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                                 std::int64_t chunk, DpGroup group = DpGroup::kData);

}  // namespace megasim::models
