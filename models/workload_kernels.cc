// The kernel lists of build_workload: the ops of layer_ops.h with the tensor-parallel collectives
// Megatron-LM issues around them (megatron/core/tensor_parallel/mappings.py and layers.py,
// vocab-parallel cross-entropy in cross_entropy.py), the data-loading broadcasts of get_batch, and
// the optimizer step.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/dtype_bytes.h"
#include "models/layer_ops.h"
#include "models/moe.h"
#include "models/stage_parameters.h"
#include "models/workload_internal.h"

namespace megasim::models::workload_detail {
namespace {

// Zeroing the fp32 main-gradient buffer of every parameter the rank holds before the iteration
// accumulates into it (DistributedDataParallel.zero_grad_buffer, called at the start of each
// train_step): 4 bytes written per parameter, sharded or not.
constexpr double kZeroGradBytes = 4;

// Adam on the rank's shard of the fp32 main parameters, per parameter (Megatron-LM
// optimizer/optimizer.py and distrib_optimizer.py with apex FusedAdam): the gradient norm for
// clipping reads the fp32 gradient (4 bytes); the Adam step reads the gradient (4) and reads and
// writes the master weight, m and v (3 x 8); copying the master weights into the bf16 model weights
// reads 4 and writes 2. 38 bytes in all. Left out: the scalar all-reduce of the norm over the
// model-parallel group, and the in-place gradient scaling that only runs when the norm exceeds
// the clip value.
constexpr double kGradNormBytes = 4;
constexpr double kAdamBytes = 28;
constexpr double kCopyParamsBytes = 6;

struct Sizes {
  double hidden_bytes = 0;  // one (s, b, h) bf16 tensor: the nccl-tests size of a layer collective
  double tokens = 0;        // s * b
  std::int64_t tp = 1;
  bool sp = false, overlap = false, parallel_block = false;
};

Sizes sizes_of(const ModelSpec& model, const ResolvedPlan& plan) {
  Sizes x;
  x.tokens = static_cast<double>(plan.local_tokens(model.seq_length));
  x.hidden_bytes = kBf16Bytes * x.tokens * static_cast<double>(model.hidden_size);
  x.tp = plan.tp;
  x.sp = plan.plan.sequence_parallel;
  x.overlap = plan.plan.tp_comm_overlap;
  x.parallel_block = plan.plan.parallel_transformer_block;
  return x;
}

TpCollective call(CollectiveOp op, double bytes, std::int32_t count, bool overlappable,
                  ComputeGroup group = ComputeGroup::kTensor) {
  return TpCollective{op, bytes, count, overlappable, group};
}

// Forward of one layer. Without SP: an all-reduce after each row-parallel GEMM (attention
// projection, fc2). With SP: an all-gather before each column-parallel GEMM (qkv, fc1) and a
// reduce-scatter after each row-parallel one (Korthikanti et al. 2022 §4.2.2). The parallel block
// has one column-parallel input (qkv_fc1) and one row-parallel output (proj_fc2): half of each.
// `n` column-parallel / row-parallel pairs: a dense layer's attention and MLP (2), the parallel
// block's fused one (1), an MoE layer's attention and shared expert.
std::int32_t dense_layer_pairs(const Sizes& x) {
  return x.parallel_block ? 1 : 2;
}

std::vector<TpCollective> layer_forward_collectives(const Sizes& x, std::int32_t n) {
  if (x.tp == 1 || n == 0) return {};
  if (!x.sp) return {call(CollectiveOp::kAllReduce, x.hidden_bytes, n, false)};
  return {call(CollectiveOp::kAllGather, x.hidden_bytes, n, x.overlap),
          call(CollectiveOp::kReduceScatter, x.hidden_bytes, n, x.overlap)};
}

// Backward of one layer. Without SP: the column-parallel layers' grad-input all-reduce, issued
// asynchronously before their weight-gradient GEMM. With SP: the gradient of each row-parallel
// output is all-gathered (the transpose of the forward reduce-scatter), each column-parallel layer
// re-gathers its sequence-sharded input for the weight gradient (asynchronously, behind the
// data-gradient GEMM) and reduce-scatters its grad-input (asynchronously, behind the
// weight-gradient GEMM): LinearWithGradAccumulationAndAsyncCommunication.backward.
std::vector<TpCollective> layer_backward_collectives(const Sizes& x, std::int32_t n) {
  if (x.tp == 1 || n == 0) return {};
  if (!x.sp) return {call(CollectiveOp::kAllReduce, x.hidden_bytes, n, true)};
  return {call(CollectiveOp::kAllGather, x.hidden_bytes, n, x.overlap),
          call(CollectiveOp::kAllGather, x.hidden_bytes, n, true),
          call(CollectiveOp::kReduceScatter, x.hidden_bytes, n, true)};
}

// Context parallelism's exchanges in one layer's attention (Transformer Engine's context-parallel
// attention, over the CP group), with K and V the rank's local keys and values (2 x s/cp x b x
// groups x head dim / tp, bf16):
//  - p2p (ring attention): K and V go around the CP ring, cp - 1 blocks, each step's transfer
//    overlapped with the attention of the block before (OverlapWindow::kAttention): an all-gather
//    of them in volume and steps;
//    backward passes K and V again and returns dK and dV (an all-gather and a reduce-scatter);
//  - all_gather (Llama 3): the same all-gather before the attention and reduce-scatter of the key
//    and value gradients after its backward (which re-gathers K and V), not overlapped;
//  - a2a (Ulysses): an all-to-all of Q, K and V (sequence split to head split) before the
//    attention and of its output after; backward the two transposes.
std::vector<TpCollective> context_collectives(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x,
                                              bool backward) {
  if (plan.cp == 1) return {};
  const double tp = static_cast<double>(x.tp);
  const double head = static_cast<double>(kv_channels(model));
  const double kv = kBf16Bytes * x.tokens * 2 * static_cast<double>(query_groups(model)) * head / tp;
  const double gathered = kv * static_cast<double>(plan.cp);
  const auto cp_call = [](CollectiveOp op, double bytes, bool ring) {
    TpCollective c = call(op, bytes, 1, ring, ComputeGroup::kContext);
    if (ring) c.window = OverlapWindow::kAttention;
    return c;
  };
  switch (plan.plan.cp_comm_type) {
    case CpCommType::kP2p:
    case CpCommType::kAllGather: {
      const bool ring = plan.plan.cp_comm_type == CpCommType::kP2p;
      std::vector<TpCollective> out{cp_call(CollectiveOp::kAllGather, gathered, ring)};
      if (backward) out.push_back(cp_call(CollectiveOp::kReduceScatter, gathered, ring));
      return out;
    }
    case CpCommType::kA2a: {
      const double q = kBf16Bytes * x.tokens * static_cast<double>(model.hidden_size) / tp;
      return {cp_call(CollectiveOp::kAllToAll, q + kv, false), cp_call(CollectiveOp::kAllToAll, q, false)};
    }
  }
  return {};
}

std::vector<TpCollective> with_context(std::vector<TpCollective> list, const ModelSpec& model, const ResolvedPlan& plan,
                                       const Sizes& x, bool backward) {
  for (const TpCollective& c : context_collectives(model, plan, x, backward)) list.push_back(c);
  return list;
}

KernelList chunk_forward(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  return KernelList{"chunk forward", layer_ops(model, plan, Pass::kForward),
                    with_context(layer_forward_collectives(x, dense_layer_pairs(x)), model, plan, x, false), 0};
}

// Recompute runs inside backward (Megatron's CheckpointFunction reruns a layer's forward before its
// backward; selective recompute reruns the attention core within it), listed first. Full recompute
// also repeats the forward's TP collectives; the attention core has none.
KernelList chunk_backward(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  KernelList list{"chunk backward", layer_ops(model, plan, Pass::kRecompute), {}, 0};
  list.recompute_ops = static_cast<std::int32_t>(list.ops.size());
  for (LayerOp& op : layer_ops(model, plan, Pass::kBackward)) list.ops.push_back(std::move(op));
  if (plan.plan.recompute_granularity == RecomputeGranularity::kFull)
    list.tp_collectives = with_context(layer_forward_collectives(x, dense_layer_pairs(x)), model, plan, x, false);
  for (const TpCollective& c :
       with_context(layer_backward_collectives(x, dense_layer_pairs(x)), model, plan, x, true)) {
    list.tp_collectives.push_back(c);
  }
  return list;
}

// An MoE layer's collectives (Megatron core's token_dispatcher.py, SharedExpertMLP), sequence
// parallelism given whenever tp > 1 (resolve_plan requires it):
//  - the attention's all-gather before qkv and reduce-scatter after the projection over TP, as in a
//    dense layer; in backward the gradient all-gather, the asynchronous input re-gather and
//    grad-input reduce-scatter;
//  - alltoall dispatcher: the dispatch and the combine, each an all-to-all over the expert-parallel
//    group of the rank's T x k rows (nccl-tests size: the send buffer), scaled by the load factor
//    (the busiest rank's receive sets the pace); with expert TP an all-gather of the received rows
//    over the expert-tensor group before the experts and a reduce-scatter after;
//  - flex dispatcher (DeepEP): each token crosses the network once per other server its experts
//    are on and fans out over NVLink there (flex_dispatch_bytes); the dispatch in FP8 with fp8, the
//    combine and both backward transposes in BF16;
//  - allgather dispatcher: an all-gather of the tokens over the expert-tensor-and-expert group
//    before the experts and a reduce-scatter of their outputs after;
//  - the shared expert's all-gather of its input and reduce-scatter of its output over TP (as a
//    dense MLP's, also in backward).
// Backward runs the transpose of each: all-to-all for all-to-all, reduce-scatter for all-gather.
// With overlap_moe_expert_parallel_comm the expert collectives are overlappable (another
// micro-batch's GEMMs hide them, up to the SMs NCCL takes).
// The flex dispatcher's traffic as the all-to-all over the EP group that moves the same bytes
// through each GPU's NIC: a token whose k experts are spread over N servers of n_local group
// members each touches D = N (1 - (1 - 1/N)^k) distinct servers (with group-limited routing whose
// groups are the servers, G = moe_router_group_topk (1 - (1 - 1/G)^k) of its G chosen ones), all
// but its own (D (N - 1) / N) over the network, once each; an all-to-all of S moves
// S (n - n_local) / n over the network, so S = T h b D (N - 1) / N x n / (n - n_local). Inside one
// server (N = 1) DeepEP sends each token once per distinct GPU: D = n (1 - (1 - 1/n)^k).
double flex_dispatch_bytes(const ModelSpec& model, const ResolvedPlan& plan, double token_bytes) {
  const auto n = static_cast<double>(plan.ep);
  const double local = std::min(n, static_cast<double>(plan.gpus_per_server));
  const double servers = std::ceil(n / local);
  const auto k = static_cast<double>(model.moe_router_topk);
  const auto distinct = [k](double among) { return among * (1 - std::pow(1 - 1 / among, k)); };
  if (servers <= 1) return token_bytes * distinct(n);
  const bool node_limited =
      model.moe_router_num_groups == static_cast<std::int64_t>(servers) && model.moe_router_group_topk > 0;
  const double touched = node_limited ? distinct(static_cast<double>(model.moe_router_group_topk)) : distinct(servers);
  return token_bytes * touched * (servers - 1) / servers * n / (n - local);
}

std::vector<TpCollective> moe_collectives(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x,
                                          bool backward) {
  const double rows_bytes = x.hidden_bytes / static_cast<double>(x.tp) * static_cast<double>(model.moe_router_topk) *
                            expert_load_factor(model, plan);
  // The attention's pair, and the shared expert's: a dense layer's collectives for them.
  const std::int32_t pairs = model.moe_shared_expert_intermediate_size > 0 ? 2 : 1;
  std::vector<TpCollective> out = backward ? layer_backward_collectives(x, pairs) : layer_forward_collectives(x, pairs);
  const bool hidden = plan.plan.overlap_moe_expert_parallel_comm;
  if (plan.plan.moe_token_dispatcher_type == MoeTokenDispatcher::kFlex) {
    if (plan.ep > 1) {
      const double tokens = x.hidden_bytes / static_cast<double>(x.tp) * expert_load_factor(model, plan);  // bf16
      const double bf16 = flex_dispatch_bytes(model, plan, tokens);
      const double dispatch = !backward && uses_fp8(plan.plan) ? bf16 / 2 : bf16;
      out.push_back(call(CollectiveOp::kAllToAll, dispatch, 1, hidden, ComputeGroup::kExpert));
      out.push_back(call(CollectiveOp::kAllToAll, bf16, 1, hidden, ComputeGroup::kExpert));
    }
  } else if (plan.plan.moe_token_dispatcher_type == MoeTokenDispatcher::kAlltoall) {
    if (plan.ep > 1) out.push_back(call(CollectiveOp::kAllToAll, rows_bytes, 2, hidden, ComputeGroup::kExpert));
    if (plan.etp > 1) {
      const double gathered = rows_bytes * static_cast<double>(plan.etp);
      out.push_back(call(CollectiveOp::kAllGather, gathered, 1, hidden, ComputeGroup::kExpertTensor));
      out.push_back(call(CollectiveOp::kReduceScatter, gathered, 1, hidden, ComputeGroup::kExpertTensor));
    }
  } else if (plan.ep * plan.etp > 1) {
    const double gathered = x.hidden_bytes / static_cast<double>(x.tp) * static_cast<double>(plan.ep * plan.etp);
    out.push_back(call(CollectiveOp::kAllGather, gathered, 1, hidden, ComputeGroup::kExpertTensorAndExpert));
    out.push_back(call(CollectiveOp::kReduceScatter, gathered, 1, hidden, ComputeGroup::kExpertTensorAndExpert));
  }
  return out;
}

// Megatron core's dispatchers copy the tokens-per-expert counts to the host once per MoE layer
// forward (token_dispatcher.py: the all-to-all's split sizes, GroupedMLP's batch sizes) and wait for
// them; backward reuses them. Full recompute runs the forward, and its synchronisation, again.
KernelList moe_forward(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  KernelList list{"moe layer forward", moe_layer_ops(model, plan, Pass::kForward),
                  with_context(moe_collectives(model, plan, x, false), model, plan, x, false), 0};
  list.host_syncs = 1;
  return list;
}

KernelList moe_backward(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  KernelList list{"moe layer backward", moe_layer_ops(model, plan, Pass::kRecompute), {}, 0};
  list.recompute_ops = static_cast<std::int32_t>(list.ops.size());
  for (LayerOp& op : moe_layer_ops(model, plan, Pass::kBackward)) list.ops.push_back(std::move(op));
  if (plan.plan.recompute_granularity == RecomputeGranularity::kFull) {
    list.tp_collectives = with_context(moe_collectives(model, plan, x, false), model, plan, x, false);
    list.host_syncs = 1;
  }
  for (const TpCollective& c : with_context(moe_collectives(model, plan, x, true), model, plan, x, true)) {
    list.tp_collectives.push_back(c);
  }
  return list;
}

// VocabParallelEmbedding sums the partial lookups over TP: an all-reduce, or with SP a
// reduce-scatter into the sequence-parallel region, whose backward is an all-gather.
std::pair<KernelList, KernelList> embedding_lists(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  KernelList forward{"embedding forward", embedding_ops(model, plan, Pass::kForward), {}, 0};
  KernelList backward{"embedding backward", embedding_ops(model, plan, Pass::kBackward), {}, 0};
  if (x.tp > 1) {
    forward.tp_collectives.push_back(
        call(x.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, x.hidden_bytes, 1, false));
    if (x.sp) backward.tp_collectives.push_back(call(CollectiveOp::kAllGather, x.hidden_bytes, 1, false));
  }
  return {std::move(forward), std::move(backward)};
}

// The logits GEMM is Megatron's own column-parallel linear (not Transformer Engine, so
// tp_comm_overlap does not fuse it): with SP it all-gathers its input in forward; its backward has
// the asynchronous collectives of any column-parallel layer. The vocab-parallel cross-entropy
// all-reduces three fp32 values per token over TP: the logit max, the target logit and the sum of
// exponentials (_VocabParallelCrossEntropy.forward); its backward communicates nothing.
std::pair<KernelList, KernelList> output_lists(const ModelSpec& model, const ResolvedPlan& plan, const Sizes& x) {
  KernelList forward{"output forward", output_ops(model, plan, Pass::kForward), {}, 0};
  KernelList backward{"output backward", output_ops(model, plan, Pass::kBackward), {}, 0};
  if (x.tp > 1) {
    if (x.sp) {
      forward.tp_collectives.push_back(call(CollectiveOp::kAllGather, x.hidden_bytes, 1, false));
      backward.tp_collectives.push_back(call(CollectiveOp::kAllGather, x.hidden_bytes, 1, true));
      backward.tp_collectives.push_back(call(CollectiveOp::kReduceScatter, x.hidden_bytes, 1, true));
    } else {
      backward.tp_collectives.push_back(call(CollectiveOp::kAllReduce, x.hidden_bytes, 1, true));
    }
    forward.tp_collectives.push_back(call(CollectiveOp::kAllReduce, kFp32Bytes * x.tokens, 3, false));
  }
  return {std::move(forward), std::move(backward)};
}

// Megatron's get_batch_on_this_tp_rank (pretrain_gpt.py / megatron/training/utils.py): TP rank 0
// reads the micro-batch and broadcasts it to its TP group, one call per tensor: the first stage
// needs tokens, the attention mask and position ids, the last stage labels, the loss mask and the
// attention mask; a single stage needs all five. int64 tokens, labels and position ids, fp32 loss
// mask, bool b x 1 x s x s attention mask. This is the part of a synchronous loader's cost on the
// critical path that the model can derive; the host-side preprocessing MegaScale moves off it
// (§3.1) is not modelled. At tp = 1 the list is empty (the task remains, taking no time), as every
// TP collective of a group of one.
KernelList data_loading(const ModelSpec& model, const Sizes& x, bool first, bool last) {
  const double mask = x.tokens * static_cast<double>(model.seq_length);
  KernelList list{"data loading", {}, {}, 0};
  auto broadcast = [&](double bytes) {
    if (x.tp > 1) list.tp_collectives.push_back(call(CollectiveOp::kBroadcast, bytes, 1, false));
  };
  if (first) broadcast(kInt64Bytes * x.tokens);  // tokens
  if (last) broadcast(kInt64Bytes * x.tokens);   // labels
  if (last) broadcast(kFp32Bytes * x.tokens);    // loss mask
  broadcast(mask);                               // attention mask
  if (first) broadcast(kInt64Bytes * x.tokens);  // position ids
  if (first != last) list.name = first ? "data loading (first stage)" : "data loading (last stage)";
  return list;
}

// Parameters of one layer that every TP rank holds whole (LayerNorm weights and biases, row-parallel
// biases): total = sharded + replicated and per rank = sharded / t + replicated.
std::int64_t replicated_layer_parameters(const ModelSpec& model, std::int64_t tp) {
  return (tp * layer_parameter_count_per_tp_rank(model, tp) - layer_parameter_count(model)) / (tp - 1);
}

// MoE layers among the layers of `stage`, over its chunks.
std::int64_t stage_moe_layers(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  if (!is_moe(model)) return 0;
  std::int64_t n = 0;
  for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
    n += moe_layers_in(model, plan.chunk_first_layer(stage, chunk), plan.chunk_layers(stage, chunk));
  }
  return n;
}

// The optimizer step of `stage`. With SP, Megatron first all-reduces over TP the gradients of the
// parameters every TP rank holds whole (finalize_model_grads' _allreduce_layernorm_grads: LayerNorm
// weights and biases, row-parallel biases, coalesced into one fp32 call). The list also holds the
// zeroing of the gradient buffer, which Megatron does at the start of every iteration: one
// iteration in steady state pays it once, and on the compute stream its place does not matter.
KernelList optimizer_step(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  const ParameterCount count = stage_parameters(model, plan, stage);
  const std::int64_t params = count.total();
  // The distributed optimizer shards the dense parameters over DP, the experts over expert DP.
  const std::int64_t shard =
      plan.plan.use_distributed_optimizer
          ? (count.dense + plan.replicas() - 1) / plan.replicas() + (count.expert + plan.edp - 1) / plan.edp
          : params;
  const double n = static_cast<double>(shard);
  KernelList list{"optimizer step", {}, {}, 0};
  if (plan.pp > 1) {
    list.name += stage == 0 ? " (first stage)" : stage == plan.pp - 1 ? " (last stage)" : " (middle stages)";
  }
  auto op = [&](const char* name, double bytes) {
    list.ops.push_back(LayerOp{name, OpKind::kElementwise, GemmShape{0, 0, 0, 0}, 0.0, 0.0, bytes});
  };
  op("zero_grad_buffer", kZeroGradBytes * static_cast<double>(params));
  op("grad_norm", kGradNormBytes * n);
  op("adam", kAdamBytes * n);
  op("copy_main_params", kCopyParamsBytes * n);
  if (plan.plan.sequence_parallel) {
    const std::int64_t layers = plan.stage_layers(stage);
    const std::int64_t moe = stage_moe_layers(model, plan, stage);
    std::int64_t replicated =
        (layers - moe) * replicated_layer_parameters(model, plan.tp) + moe * moe_layer_replicated_parameters(model);
    if (stage == plan.pp - 1) replicated += 2 * model.hidden_size;  // final LayerNorm
    list.tp_collectives.push_back(
        call(CollectiveOp::kAllReduce, kFp32Bytes * static_cast<double>(replicated), 1, false));
  }
  return list;
}

std::int32_t push(std::vector<KernelList>& out, KernelList list) {
  out.push_back(std::move(list));
  return static_cast<std::int32_t>(out.size() - 1);
}

}  // namespace

KernelIds add_kernel_lists(const ModelSpec& model, const ResolvedPlan& plan, std::vector<KernelList>& out) {
  const Sizes x = sizes_of(model, plan);
  KernelIds ids;
  ids.chunk_forward = push(out, chunk_forward(model, plan, x));
  ids.chunk_backward = push(out, chunk_backward(model, plan, x));
  if (is_moe(model)) {
    ids.moe_forward = push(out, moe_forward(model, plan, x));
    ids.moe_backward = push(out, moe_backward(model, plan, x));
  }
  auto [embedding_forward, embedding_backward] = embedding_lists(model, plan, x);
  ids.embedding_forward = push(out, std::move(embedding_forward));
  ids.embedding_backward = push(out, std::move(embedding_backward));
  auto [output_forward, output_backward] = output_lists(model, plan, x);
  ids.output_forward = push(out, std::move(output_forward));
  ids.output_backward = push(out, std::move(output_backward));
  if (!plan.plan.async_data_loading) {
    ids.data_first = push(out, data_loading(model, x, true, plan.pp == 1));
    if (plan.pp > 1) ids.data_last = push(out, data_loading(model, x, false, true));
  }
  // What an optimizer step depends on besides the stage's place: its parameters and MoE layers.
  const auto footprint = [&](std::int64_t stage) {
    const ParameterCount p = stage_parameters(model, plan, stage);
    return std::array<std::int64_t, 3>{p.dense, p.expert, stage_moe_layers(model, plan, stage)};
  };
  std::array<std::int64_t, 3> previous{};
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    const std::array<std::int64_t, 3> current = footprint(stage);
    // Middle stages holding the same parameters share one list.
    const bool same_as_previous = stage > 1 && stage < plan.pp - 1 && current == previous;
    ids.optimizer.push_back(same_as_previous ? ids.optimizer.back() : push(out, optimizer_step(model, plan, stage)));
    previous = current;
  }
  return ids;
}

double pp_transfer_bytes(const ModelSpec& model, const ResolvedPlan& plan) {
  const double elements = static_cast<double>(plan.local_tokens(model.seq_length) * model.hidden_size);
  return kBf16Bytes * (plan.plan.sequence_parallel ? elements / static_cast<double>(plan.tp) : elements);
}

}  // namespace megasim::models::workload_detail
