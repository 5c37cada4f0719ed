// The data-parallel part of a stage program and the end of the iteration, following Megatron-LM's
// core DDP (megatron/core/distributed/distributed_data_parallel.py, param_and_grad_buffer.py), its
// distributed optimizer (optimizer/distrib_optimizer.py) and finalize_model_grads.
//
// Gradient buckets (DistributedDataParallel.__init__): each model chunk has its own buffer of fp32
// main gradients (bf16 training accumulates and reduces gradients in fp32), cut into buckets of
// max(40,000,000, 1,000,000 x dp) parameters -- but only when overlap_grad_reduce is on, only on the
// first pipeline stage and only for model chunk 0 (training.py passes disable_bucketing for later
// chunks; later stages are not on the critical path); every other buffer is one bucket. Megatron
// closes a bucket at a parameter boundary once it holds bucket_size parameters; here buckets hold
// exactly bucket_size and the last the rest (the distributed optimizer's padding of each bucket to a
// multiple of dp, fewer than dp elements, is left out). Backward fills the buffer from its end, so
// the buckets are listed in that order and the parameter all-gathers run them in reverse (forward)
// order.
//
// MoE: the experts' parameters live in buffers of their own, reduced and gathered over the
// expert-data-parallel group (Megatron core DDP's expert_parallel_buffers, bucketed by the same
// rule with the expert-data-parallel size); each chunk's expert buckets follow its dense ones.
//
// Per bucket: a reduce-scatter of the fp32 gradients with the distributed optimizer, else an
// all-reduce; after the optimizer step the distributed optimizer all-gathers the bf16 parameters.
// With overlap_grad_reduce a chunk's buckets are issued when the chunk's last backward (the one of
// the last micro-batch, outside no_sync) ends -- Megatron starts each bucket as soon as its last
// gradient is ready during that backward, so this is the latest such start. Without it the whole
// reduction runs after the schedule returns (finish_grad_sync per chunk, chunk 0 first). With
// overlap_param_gather the all-gathers of the update are prefetched: they run at the start of the
// program, overlapping the first forwards, and each chunk's first forward waits for its own.
//
// Sharded data parallelism (plan.h's DataParallelSharding, Megatron-FSDP): with sharded gradients
// every backward of a chunk reduce-scatters that chunk's gradients (one call per chunk and
// micro-batch) and nothing is reduced at the end; with sharded parameters every forward of a chunk
// (and its backward, with reshard_after_forward) all-gathers the chunk's bf16 parameters first, and
// no all-gather follows the optimizer step. Megatron-FSDP gathers and reduces layer by layer; here
// a chunk's units go as one call (the same bytes), so their overlap with compute is that of the
// chunk: the stage program (workload_stage.cc) prefetches a chunk's gather one compute step ahead.
#include <algorithm>
#include <utility>
#include <vector>

#include "models/stage_parameters.h"
#include "models/workload_internal.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// Bytes of a gathered parameter: bf16, or FP8 with fp8_param_gather.
double param_bytes(const ResolvedPlan& plan) {
  return plan.plan.fp8_param_gather ? 1.0 : 2.0;
}
constexpr std::int64_t kMinBucketParams = 40'000'000;
constexpr std::int64_t kBucketParamsPerDpRank = 1'000'000;

double gradient_bytes(const ResolvedPlan& plan, std::int64_t params) {
  return static_cast<double>(gradient_bytes_per_parameter(plan.plan)) * static_cast<double>(params);
}

Task dp_task(TaskCategory category, CollectiveOp op, std::int64_t chunk, double bytes, DpGroup group = DpGroup::kData) {
  Task t;
  t.group = group;
  t.kind = TaskKind::kDpCollective;
  t.stream = StreamKind::kDp;
  t.category = category;
  t.chunk = static_cast<std::int32_t>(chunk);
  t.op = op;
  t.bytes = bytes;
  return t;
}

}  // namespace

std::int64_t chunk_parameter_count(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                   std::int64_t chunk) {
  return chunk_parameters(model, plan, stage, chunk).total();
}

std::vector<std::int64_t> gradient_bucket_params(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                                 std::int64_t chunk, DpGroup group) {
  const ParameterCount count = chunk_parameters(model, plan, stage, chunk);
  const bool experts = group == DpGroup::kExpertData;
  const std::int64_t params = experts ? count.expert : count.dense;
  if (experts && params == 0) return {};
  const bool bucketed = plan.plan.overlap_grad_reduce && stage == 0 && chunk == 0;
  const std::int64_t size = std::max(kMinBucketParams, kBucketParamsPerDpRank * (experts ? plan.edp : plan.replicas()));
  if (!bucketed || params <= size) return {params};
  std::vector<std::int64_t> buckets(static_cast<std::size_t>(params / size), size);
  if (params % size > 0) buckets.push_back(params % size);
  return buckets;
}

namespace workload_detail {

std::vector<std::vector<std::int32_t>> add_prefetched_gathers(const ModelSpec& model, const ResolvedPlan& plan,
                                                              std::int64_t stage, ProgramBuilder& program) {
  std::vector<std::vector<std::int32_t>> gathers(static_cast<std::size_t>(plan.virtual_stages));
  const ParallelPlan& p = plan.plan;
  if (!p.use_distributed_optimizer || !p.overlap_param_gather || shards_parameters(p)) return gathers;
  for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
    for (const DpGroup group : {DpGroup::kData, DpGroup::kExpertData}) {
      const std::vector<std::int64_t> buckets = gradient_bucket_params(model, plan, stage, chunk, group);
      for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
        gathers[static_cast<std::size_t>(chunk)].push_back(
            program.add(dp_task(TaskCategory::kParameterGather, CollectiveOp::kAllGather, chunk,
                                param_bytes(plan) * static_cast<double>(*it), group)));
      }
    }
  }
  return gathers;
}

void add_gradient_reduces(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage, std::int64_t chunk,
                          std::vector<std::int32_t> deps, ProgramBuilder& program, std::vector<std::int32_t>& out) {
  const CollectiveOp op = plan.plan.use_distributed_optimizer ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
  for (const DpGroup group : {DpGroup::kData, DpGroup::kExpertData}) {
    for (std::int64_t params : gradient_bucket_params(model, plan, stage, chunk, group)) {
      Task t = dp_task(TaskCategory::kGradientReduce, op, chunk, gradient_bytes(plan, params), group);
      t.deps = deps;
      out.push_back(program.add(std::move(t)));
    }
  }
}

std::int32_t add_sharded_gather(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                const ScheduleStep& step, std::vector<std::int32_t> deps, ProgramBuilder& program) {
  MEGASIM_ASSERT(shards_parameters(plan.plan), "only sharded parameters are gathered per micro-batch");
  const double params = static_cast<double>(chunk_parameter_count(model, plan, stage, step.chunk));
  Task t = dp_task(TaskCategory::kParameterGather, CollectiveOp::kAllGather, step.chunk, param_bytes(plan) * params);
  t.microbatch = step.microbatch;
  t.deps = std::move(deps);
  return program.add(std::move(t));
}

std::int32_t add_sharded_reduce(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                const ScheduleStep& step, std::vector<std::int32_t> deps, ProgramBuilder& program) {
  MEGASIM_ASSERT(shards_gradients(plan.plan), "only sharded gradients are reduced per micro-batch");
  const std::int64_t params = chunk_parameter_count(model, plan, stage, step.chunk);
  Task t =
      dp_task(TaskCategory::kGradientReduce, CollectiveOp::kReduceScatter, step.chunk, gradient_bytes(plan, params));
  t.microbatch = step.microbatch;
  t.deps = std::move(deps);
  return program.add(std::move(t));
}

namespace {

// Tied embeddings with pp > 1: the last stage keeps a copy of the word embeddings for the logits,
// and finalize_model_grads all-reduces their fp32 gradient over the first and last stages
// (_allreduce_word_embedding_grads). A ring all-reduce of two members sends the whole buffer each
// way: here a send and a receive of it on each side.
std::vector<std::int32_t> add_embedding_exchange(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                                 const std::vector<std::int32_t>& deps, ProgramBuilder& program) {
  const bool first = stage == 0, last = stage == plan.pp - 1;
  if (model.untie_embeddings_and_output_weights || plan.pp == 1 || (!first && !last)) return {};
  const double bytes = gradient_bytes(plan, plan.padded_vocab_size / plan.tp * model.hidden_size);
  std::vector<std::int32_t> out;
  for (const TaskKind kind : {TaskKind::kPpSend, TaskKind::kPpRecv}) {
    Task t;
    t.kind = kind;
    t.stream = StreamKind::kPp;
    t.category = TaskCategory::kGradientReduce;
    t.peer_offset = first ? -1 : +1;  // the first stage's peer is pp - 1, the last stage's is 0
    const bool from_first = (kind == TaskKind::kPpSend) == first;
    t.tag = embedding_tag(plan, from_first);
    t.bytes = bytes;
    t.deps = deps;
    out.push_back(program.add(std::move(t)));
  }
  return out;
}

}  // namespace

void add_iteration_tail(const ModelSpec& model, const ResolvedPlan& plan, const KernelIds& ids, std::int64_t stage,
                        const PipelineResult& pipeline, std::vector<std::int32_t> grad_reduces,
                        ProgramBuilder& program) {
  // Everything the schedule leaves outstanding when forward_backward_func returns.
  std::vector<std::int32_t> schedule_end = pipeline.unwaited_p2p;
  schedule_end.push_back(pipeline.final_compute);
  if (!plan.plan.overlap_grad_reduce && !shards_gradients(plan.plan)) {
    for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
      add_gradient_reduces(model, plan, stage, chunk, schedule_end, program, grad_reduces);
    }
  }
  std::vector<std::int32_t> synced = schedule_end;
  synced.insert(synced.end(), grad_reduces.begin(), grad_reduces.end());
  const std::vector<std::int32_t> exchange = add_embedding_exchange(model, plan, stage, synced, program);
  synced.insert(synced.end(), exchange.begin(), exchange.end());

  Task step;
  step.category = TaskCategory::kOptimizer;
  step.runs.push_back({ids.optimizer.at(static_cast<std::size_t>(stage)), 1});
  step.deps = std::move(synced);
  const std::int32_t optimizer = program.add(std::move(step));

  const ParallelPlan& p = plan.plan;
  if (!p.use_distributed_optimizer || p.overlap_param_gather || shards_parameters(p)) return;
  for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
    for (const DpGroup group : {DpGroup::kData, DpGroup::kExpertData}) {
      const std::vector<std::int64_t> buckets = gradient_bucket_params(model, plan, stage, chunk, group);
      for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
        Task t = dp_task(TaskCategory::kParameterGather, CollectiveOp::kAllGather, chunk,
                         param_bytes(plan) * static_cast<double>(*it), group);
        t.deps = {optimizer};
        program.add(std::move(t));
      }
    }
  }
}

}  // namespace workload_detail
}  // namespace megasim::models
