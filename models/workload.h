// The workload of one training iteration: what every rank computes and communicates, in schedule
// order, independent of any hardware. The same Workload goes to every backend (DESIGN.md "One data
// flow"): the simulator times it on the modelled cluster, a real backend runs it.
//
// Structure. All ranks of a pipeline stage run the same program; a rank's tensor-parallel index and
// data-parallel replica only select its peers and groups (Megatron rank order tp-dp-pp, see
// parallel_groups.h). So the workload holds one StageProgram per pipeline stage, and kernel lists
// (the ops of a chunk's forward, backward, ...) once each, referenced by index. A 12,288-GPU plan
// is therefore a few thousand tasks, not tens of millions.
//
// Semantics a backend must follow:
//  - Streams. Each rank has a compute stream and three communication streams (tp, pp, dp). Tasks of
//    one stream run in program order, one at a time, except kPpSend/kPpRecv (see below).
//  - Dependencies. A task starts when its stream is free and every task in `deps` (indices into the
//    same StageProgram, always earlier tasks) has finished on this rank.
//  - Compute tasks run their kernel list `repeat` times. Tensor-parallel collectives inside that
//    work (the all-reduce, or with sequence parallelism the all-gather / reduce-scatter pairs, of
//    every layer) are listed in `tp_collectives` of the kernel list and belong to the task: they run
//    on the TP group (one server's NVLink) between the kernels; with plan.tp_comm_overlap they
//    overlap the GEMMs they are fused with (MegaScale §3.1) and only the excess is exposed.
//  - Pipeline point-to-point. kPpSend / kPpRecv are posted in program order once their deps are met
//    (posting takes no time and does not block the stream, like Megatron's batched isend/irecv); a
//    transfer starts when both the send on one stage and the recv with the same tag on the peer
//    stage (same data-parallel replica, same tensor-parallel rank) are posted, and both tasks finish
//    when it ends. Compute that needs the data depends on the recv; without plan.overlap_p2p_comm
//    the next compute task also depends on the preceding send (Megatron waits for it).
//  - Data-parallel collectives (kDpCollective) run over the rank's data-parallel group (same stage,
//    same TP index, every replica), one call per gradient or parameter bucket, in program order on
//    the dp stream.
//  - Tied embeddings with pp > 1: the first and last stages all-reduce the word-embedding gradient
//    between them (Megatron's embedding group) as a kPpSend + kPpRecv pair in each direction on the
//    pp stream (a two-member ring all-reduce sends the whole buffer each way), category
//    kGradientReduce, tags above every activation tag.
//  - Synchronous data loading (plan.async_data_loading off) is a kCompute task of category
//    kDataLoading whose kernel list has no ops, only TP broadcasts (Megatron's get_batch; none at
//    tp = 1). It is a host synchronisation (below): broadcast_data copies the sizes to the host.
//  - Host synchronisation (Task::host_sync): the host waits until the rank's GPU work has finished
//    (torch.cuda.synchronize(), or a device-to-host copy), so the GPU is idle from then until the
//    host has launched its next kernel. The builder lists as deps what the synchronisation waits
//    for (the rank's earlier compute, TP and DP work and its posted transfers, which the
//    non-overlapped schedule has all waited for by then); the backend charges the GPU's idle time
//    before the task's kernels (sim: the calibration's host_sync_gap; cuda: a real synchronize). A
//    kHostSync task has no kernels: it is the gap alone, after Megatron's batch_p2p_sync.
//  - The per-micro-batch loss average (plan.average_loss_per_micro_batch) is a kDpCollective of
//    category kLossReduce: a 4-byte all-reduce over the DP group after each forward of the last
//    model chunk on the last stage, which the next compute task waits for.
// What each plan switch does to the program is written where it is built (workload_*.cc).
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
};

// The ops of one kind of compute work, for one micro-batch on one TP rank.
struct KernelList {
  std::string name;                          // "chunk forward", "chunk backward", "embedding", ...
  std::vector<LayerOp> ops;                  // execution order
  std::vector<TpCollective> tp_collectives;  // inside one run of `ops`
  // The first `recompute_ops` ops rerun forward ops (recomputation inside backward): they count in
  // hardware FLOPs, not in model FLOPs.
  std::int32_t recompute_ops = 0;
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

// Parameters held by one GPU of `stage` in its model chunk `chunk` (TP-sharded): the chunk's layers,
// plus the embeddings in chunk 0 of the first stage and the final LayerNorm and output weights in
// the last chunk of the last stage. Sums over chunks to stage_parameter_count.
std::int64_t chunk_parameter_count(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                   std::int64_t chunk);
// Megatron core DDP's gradient buckets of one model chunk, in parameters, in the order backward
// fills them (see workload_dp.cc for the rule).
std::vector<std::int64_t> gradient_bucket_params(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                                 std::int64_t chunk);

}  // namespace megasim::models
