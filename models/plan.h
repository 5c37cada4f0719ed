// The parallel plan with Megatron-LM's argument names and defaults, MegaScale's switches, and its
// resolution against a model and a GPU count (derived sizes plus validation).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/compute_cost.h"
#include "models/model_spec.h"
#include "models/parallel_groups.h"

namespace megasim::models {

// Megatron's --recompute-granularity. kFull means Megatron's "full" with recompute_method uniform
// and recompute_num_layers 1: every layer recomputes its forward, keeping only its input.
enum class RecomputeGranularity : std::uint8_t { kNone, kSelective, kFull };

// Megatron's --recompute-modules for selective recompute (a bit set): what backward recomputes
// instead of keeping. core_attn: the attention core (Megatron does not checkpoint it when a
// FlashAttention kernel runs, which keeps no s x s matrix); layernorm: every LayerNorm's output;
// mla_up_proj: MLA's query and key-value up-projections (their Q, K, V); moe_act: the experts'
// activation; mlp: a dense layer's whole MLP. Megatron's default is core_attn.
enum RecomputeModule : std::uint32_t {
  kRecomputeCoreAttn = 1U << 0,
  kRecomputeLayernorm = 1U << 1,
  kRecomputeMlaUpProj = 1U << 2,
  kRecomputeMoeAct = 1U << 3,
  kRecomputeMlp = 1U << 4,
};

// Megatron-FSDP's --data-parallel-sharding-strategy (megatron/core/distributed/fsdp, its
// ShardingStrategy): what each data-parallel rank keeps of the model state. kNoShard is Megatron's
// DDP (the distributed optimizer, use_distributed_optimizer, then shards the optimizer state alone);
// the others require use_distributed_optimizer, as Megatron-FSDP does:
//  - kOptim (ZeRO-1): the optimizer state; the same as the distributed optimizer.
//  - kOptimGrads (ZeRO-2): the gradients too. A rank keeps only its 1/dp of the gradient buffer, so
//    each micro-batch's gradients are reduce-scattered after its backward (no accumulation across
//    micro-batches in an unsharded buffer); parameters stay replicated, all-gathered after the step.
//  - kOptimGradsParams (ZeRO-3): the parameters too, all-gathered before every forward and, when
//    reshard_after_forward, again before every backward.
enum class DataParallelSharding : std::uint8_t { kNoShard, kOptim, kOptimGrads, kOptimGradsParams };

// Megatron's --moe-token-dispatcher-type: how an MoE layer's tokens reach their experts' ranks.
// kAlltoall permutes each rank's tokens by expert and exchanges them with an all-to-all over the
// expert-parallel group (and back after the experts); kAllgather all-gathers every rank's tokens
// over the group, each rank keeps those routed to its experts, and a reduce-scatter returns the
// outputs (Megatron's default, meant for small EP or many experts per token).
// kFlex is Megatron's flex dispatcher on DeepEP: each token goes once to every server its
// experts are on (over the network, one rank per server) and on over NVLink, and back the same way
// for the combine; with fp8 it dispatches in FP8 (the combine stays BF16).
enum class MoeTokenDispatcher : std::uint8_t { kAllgather, kAlltoall, kFlex };

// Megatron's --cp-comm-type: how the context-parallel ranks of an attention layer exchange keys
// and values. kP2p passes K/V blocks around the CP ring, overlapped with each step's attention
// (ring attention); kAllGather all-gathers K and V, then attends its local queries (Llama 3);
// kA2a trades the sequence split for a head split with an all-to-all before and after attention
// (DeepSpeed-Ulysses).
enum class CpCommType : std::uint8_t { kP2p, kAllGather, kA2a };

// Megatron's --fp8-format (Transformer Engine): the linear layers' GEMMs in FP8, E4M3 for every
// tensor (kE4m3) or E5M2 for the gradients (kHybrid; the same speed); attention, norms, the
// embedding, the router and the output layer stay BF16. kNone: BF16 training.
enum class Fp8Format : std::uint8_t { kNone, kE4m3, kHybrid };

struct ParallelPlan {
  std::int64_t tensor_model_parallel_size = 1;
  // Context parallelism: the sequence of every micro-batch split over context_parallel_size ranks,
  // load-balanced for causal attention (2 x cp chunks, rank i holds chunks i and 2 cp - 1 - i).
  // Rank order tp-cp-dp-pp (Megatron's); gradients are reduced over the DP x CP ranks.
  std::int64_t context_parallel_size = 1;
  CpCommType cp_comm_type = CpCommType::kP2p;
  std::int64_t pipeline_model_parallel_size = 1;
  std::int64_t num_layers_per_virtual_pipeline_stage = 0;  // 0: no interleaving
  // Contiguous micro-batches through one model chunk before the next chunk (Megatron-LM's
  // --microbatch-group-size-per-virtual-pipeline-stage, Llama 3's N): from pp to the micro-batches
  // per iteration; 0: the 2023 interleaved schedule (groups of pp; pipeline_schedule.h).
  std::int64_t microbatch_group_size_per_vp_stage = 0;
  // Layers of the first and the last pipeline stage when they differ from the others (Megatron-LM's
  // --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers; Llama 3 405B keeps one
  // layer less on both); 0: Megatron's None, that stage takes the even share.
  std::int64_t decoder_first_pipeline_num_layers = 0;
  std::int64_t decoder_last_pipeline_num_layers = 0;
  bool sequence_parallel = false;
  std::int64_t micro_batch_size = 1;
  std::int64_t global_batch_size = 1;
  bool use_distributed_optimizer = false;
  DataParallelSharding data_parallel_sharding_strategy = DataParallelSharding::kNoShard;
  // With kOptimGradsParams: whether a model chunk's gathered parameters are freed after its forward
  // and gathered again for its backward (PyTorch FSDP's reshard_after_forward, Megatron-FSDP's
  // behaviour). false is Llama 3's variant (Dubey et al. 2024 section 3.3.2: "we don't reshard after
  // forward computation to avoid an extra all-gather communication during backward passes"): one
  // all-gather per micro-batch and chunk, and the gathered parameters stay resident.
  bool reshard_after_forward = true;
  // Megatron's --grad-reduce-in-bf16: gradients accumulated and reduced in bf16 (2 bytes) instead of
  // the fp32 main gradients (4 bytes) of bf16 training.
  bool grad_reduce_in_bf16 = false;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::kNone;
  std::uint32_t recompute_modules = kRecomputeCoreAttn;  // RecomputeModule bits, for kSelective
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  bool overlap_p2p_comm = false;
  // MegaScale (Jiang et al., NSDI'24, section 3.1) switches.
  bool parallel_transformer_block = false;  // attention and MLP from the same LayerNorm output
  std::int64_t sliding_window_size = 0;     // tokens each query attends to; 0: full causal attention
  bool use_flash_attention = false;         // FlashAttention-2, fused LayerNorm/GeLU kernels, GEMM bias epilogues
  bool async_data_loading = false;          // data preprocessing off the critical path
  // Host-side synchronisation in Megatron-LM's training loop (the code of commit 285068c8, 2023):
  //  - batch_p2p_sync: p2p_communication.py calls torch.cuda.synchronize() after every batched
  //    isend/irecv ("to protect against race condition when using batch_isend_irecv()"; Megatron
  //    core keeps it as ModelParallelConfig.batch_p2p_sync, default true). Not with
  //    overlap_p2p_comm, whose asynchronous calls do not batch.
  //  - average_loss_per_micro_batch: pretrain_gpt.py's loss_func all-reduces every micro-batch's
  //    loss over the data-parallel group (average_losses_across_data_parallel_group, a blocking
  //    torch.distributed.all_reduce: the compute stream waits for it) on the last stage.
  bool batch_p2p_sync = true;
  bool average_loss_per_micro_batch = true;
  // The attention core's kernel alone, the rest of the layer as Megatron-LM runs it: kUnfused is
  // Megatron's CoreAttention; kFlashAttention1 is Megatron-LM's --use-flash-attn of 2023 (commit
  // 285068c8, flash-attn 1.x's flash_attn_unpadded_func); kFlashAttention2 the same with flash-attn
  // 2.x. use_flash_attention (MegaScale's efficient operators) wins: with it the kernel is FA2.
  AttentionKernel attention_kernel = AttentionKernel::kUnfused;
  // Expert parallelism (Megatron core's MoE "parallel folding"): the experts of an MoE layer are
  // split over expert_model_parallel_size ranks, each expert's MLP over expert_tensor_parallel_size
  // (0: Megatron's default, the tensor-parallel size); what is left of a stage's tp x dp ranks is
  // the expert-data-parallel group that reduces the experts' gradients. Rank order tp-ep-dp-pp for
  // the experts: expert TP innermost, then EP, then expert DP (parallel_groups.h).
  std::int64_t expert_model_parallel_size = 1;
  std::int64_t expert_tensor_parallel_size = 0;
  MoeTokenDispatcher moe_token_dispatcher_type = MoeTokenDispatcher::kAllgather;
  // One grouped GEMM per projection for all of a rank's experts (Megatron's --moe-grouped-gemm,
  // CUTLASS grouped GEMM) instead of one GEMM per expert (SequentialMLP).
  bool moe_grouped_gemm = false;
  // Megatron's --overlap-moe-expert-parallel-comm: the expert-parallel all-to-alls (and the expert
  // TP gathers around them) of one micro-batch run while another micro-batch computes, so only what
  // exceeds the overlapped GEMMs is exposed (MegaScale-MoE's inter-operator overlap is the same idea).
  bool overlap_moe_expert_parallel_comm = false;
  Fp8Format fp8 = Fp8Format::kNone;
  // Megatron's --fp8-param-gather: the distributed optimizer all-gathers FP8 parameters (1 byte).
  bool fp8_param_gather = false;
};

[[nodiscard]] inline bool uses_fp8(const ParallelPlan& plan) {
  return plan.fp8 != Fp8Format::kNone;
}

// Whether each data-parallel rank keeps only its shard of the gradients (and of the parameters).
[[nodiscard]] inline bool shards_gradients(const ParallelPlan& plan) {
  return plan.data_parallel_sharding_strategy >= DataParallelSharding::kOptimGrads;
}
[[nodiscard]] inline bool shards_parameters(const ParallelPlan& plan) {
  return plan.data_parallel_sharding_strategy == DataParallelSharding::kOptimGradsParams;
}
// Bytes per parameter of the gradient buffer and of its reduction: fp32 main gradients, or bf16
// with grad_reduce_in_bf16.
[[nodiscard]] inline std::int64_t gradient_bytes_per_parameter(const ParallelPlan& plan) {
  return plan.grad_reduce_in_bf16 ? 2 : 4;
}

// The attention kernel in effect: FlashAttention-2 under use_flash_attention, else attention_kernel.
// Megatron-LM neither stores nor recomputes an s x s score matrix with a FlashAttention kernel
// (transformer.py of 285068c8: the flash path replaces CoreAttention and its checkpointing).
[[nodiscard]] AttentionKernel attention_kernel_of(const ParallelPlan& plan);
[[nodiscard]] inline bool uses_flash_kernel(const ParallelPlan& plan) {
  return attention_kernel_of(plan) != AttentionKernel::kUnfused;
}

// Interleaving with uneven first or last stages: the v model chunks of a first or last stage of
// `stage_layers` layers hold stage_layers / v each when v divides them (Megatron's
// get_num_layers_to_build); otherwise its chunks hold the plan's chunk size `per_chunk` but the
// outermost one (the first stage's chunk 0 with the embedding, the last stage's chunk v-1 with the
// loss), which holds the rest, possibly no layer: Llama 3's 405B layout of one layer less on each
// end, where "the first model chunk on the first stage has only the embedding, and the last model
// chunk on the last stage has only output projection and loss calculation" (Dubey et al. 2024,
// §3.3.2; Megatron expresses it with --pipeline-model-parallel-layout or
// --account-for-embedding/loss-in-pipeline-split). Returns the outermost chunk's layers, -1 when
// the other chunks already take more than the stage's layers.
[[nodiscard]] std::int64_t outermost_chunk_layers(std::int64_t stage_layers, std::int64_t v, std::int64_t per_chunk);

// A plan checked against a model and a cluster size, with the derived quantities. Flags hold the
// values in effect: Megatron silently or with a warning turns some off, and so does resolve_plan
// (each such change is listed in `warnings`).
struct ResolvedPlan {
  ParallelPlan plan;                      // the effective plan (switches Megatron would disable are off here)
  std::int64_t tp = 1, pp = 1, dp = 1;    // tensor, pipeline, data parallel sizes
  std::int64_t ep = 1, etp = 1, edp = 1;  // expert parallel, expert tensor and expert data parallel sizes
  std::int64_t cp = 1;                    // context parallel size
  std::int64_t virtual_stages = 1;        // model chunks per pipeline rank (v); 1 = plain 1F1B
  std::int64_t layers_per_stage = 0;      // layers of a stage other than an uneven first or last (pp 2
                                          // with both set apart: the first's)
  std::int64_t first_stage_layers = 0;    // layers of stage 0 (layers_per_stage unless set apart)
  std::int64_t last_stage_layers = 0;     // layers of stage pp - 1 (the same)
  std::int64_t num_microbatches = 0;      // per DP rank per iteration: global / (micro * dp)
  std::int64_t padded_vocab_size = 0;
  std::int64_t world_size = 0;
  std::int64_t gpus_per_server = 1;  // of the cluster the plan was resolved for
  std::vector<std::string> warnings;

  [[nodiscard]] bool interleaved() const { return virtual_stages > 1; }
  // The micro-batch group of the interleaved schedule in effect (pipeline_schedule.h): the plan's
  // microbatch_group_size_per_vp_stage, 0 for the 2023 schedule and for 1F1B (which has none).
  [[nodiscard]] std::int64_t microbatch_group() const {
    return interleaved() ? plan.microbatch_group_size_per_vp_stage : 0;
  }
  // Whether the first or the last stage holds another number of layers than the others.
  [[nodiscard]] bool uneven_stages() const {
    return first_stage_layers != layers_per_stage || last_stage_layers != layers_per_stage;
  }
  // Layers held by pipeline rank `stage` (0 <= stage < pp), and by each of its v model chunks.
  [[nodiscard]] std::int64_t stage_layers(std::int64_t stage) const {
    if (stage == 0) return first_stage_layers;
    return stage == pp - 1 ? last_stage_layers : layers_per_stage;
  }
  // Layers of model chunk `chunk` (0 .. v-1) of pipeline rank `stage` (outermost_chunk_layers below).
  [[nodiscard]] std::int64_t chunk_layers(std::int64_t stage, std::int64_t chunk) const {
    const std::int64_t layers = stage_layers(stage);
    const bool outermost = (stage == 0 && chunk == 0) || (stage == pp - 1 && chunk == virtual_stages - 1);
    if (outermost) return outermost_chunk_layers(layers, virtual_stages, plan.num_layers_per_virtual_pipeline_stage);
    return layers % virtual_stages == 0 ? layers / virtual_stages : plan.num_layers_per_virtual_pipeline_stage;
  }
  // The model's index of the first layer of model chunk `chunk` of pipeline rank `stage`: the layers
  // of the virtual stages before it (virtual stage chunk x pp + stage).
  [[nodiscard]] std::int64_t chunk_first_layer(std::int64_t stage, std::int64_t chunk) const {
    std::int64_t first = 0;
    for (std::int64_t vs = 0; vs < chunk * pp + stage; ++vs) first += chunk_layers(vs % pp, vs / pp);
    return first;
  }
  // Ranks of one stage and TP rank: the DP x CP ranks (Megatron's data-parallel group with context
  // parallelism), over which gradients are reduced and the optimizer state sharded; the layout's
  // data dimension (rank order tp-cp-dp-pp: its index is cp_rank + cp x dp_rank).
  [[nodiscard]] std::int64_t replicas() const { return dp * cp; }
  // Tokens of a micro-batch on one rank's sequence shard (before sequence parallelism).
  [[nodiscard]] std::int64_t local_tokens(std::int64_t seq_length) const {
    return seq_length / cp * plan.micro_batch_size;
  }
  [[nodiscard]] ParallelLayout layout() const { return ParallelLayout{tp, pp, replicas()}; }
  [[nodiscard]] ExpertLayout expert_layout() const { return ExpertLayout{layout(), etp, ep}; }
  [[nodiscard]] std::int64_t tokens_per_iteration(std::int64_t seq_length) const {
    return plan.global_batch_size * seq_length;
  }
};

// Validates the model and the plan and derives the rest; throws sim::ConfigError with key
// "plan.<field>" (or "model.<field>", or "cluster.gpus" for a bad world size). Rules (Megatron-LM
// arguments.py unless noted):
//  - all sizes >= 1; tp divides the heads, the query groups, ffn_hidden and gpus_per_server
//    (TP inside one server, DESIGN.md); tp*pp divides world_size; pp divides num_layers;
//  - uneven first/last stages (decoder_first/last_pipeline_num_layers >= 1, Megatron's
//    get_num_layers_to_build): pp >= 2; the layers left after the set ones split evenly over the
//    other stages, at least one each (none left when no other stage remains);
//  - interleaving: pp >= 2, layers_per_virtual_stage divides num_layers / pp (with uneven stages:
//    the other stages' layers; v = those / layers_per_virtual_stage, and the first and last stages
//    split into v chunks by outermost_chunk_layers, the outermost of zero layers or more), and
//    num_microbatches % pp == 0 (Megatron's 2023 interleaved schedule requires it), or with
//    microbatch_group_size_per_vp_stage N: pp <= N <= num_microbatches and num_microbatches mod N
//    of 0 or at least pp (validate_pipeline_schedule);
//  - global_batch_size divisible by micro_batch_size * dp, and its tokens (x seq_length) within
//    64 bits (this project's bound);
//  - sequence_parallel needs seq_length % tp == 0; at tp == 1 it is switched off with a warning
//    (as Megatron does), and so is tp_comm_overlap (nothing to overlap; Megatron would assert);
//  - tp_comm_overlap requires sequence_parallel;
//  - overlap_param_gather requires use_distributed_optimizer and overlap_grad_reduce;
//  - a data_parallel_sharding_strategy other than no_shard requires use_distributed_optimizer;
//    reshard_after_forward = false requires optim_grads_params (it does nothing otherwise);
//  - overlap_p2p_comm without interleaving is switched off with a warning (as Megatron does);
//  - 0 <= sliding_window_size <= seq_length;
//  - use_flash_attention with attention_kernel flash_attention_1: FA2 wins, with a warning (the
//    effective plan says flash_attention_2); FlashAttention-1 with a sliding window: a warning that
//    flash-attn 1.x has no window argument and the kernel is timed as one skipping the blocks
//    outside the window, as its causal mask skips those above the diagonal (an assumption).
ResolvedPlan resolve_plan(const ModelSpec& model, const ParallelPlan& plan, std::int64_t world_size,
                          std::int64_t gpus_per_server);

// The layers of each stage other than the first and last when `num_layers` split over `pp` stages
// with the first's and last's set to `first` and `last` (0: an even share), by resolve_plan's
// rule; with pp = 2 and both set, `first`. 0 when that split does not exist (the sweep's
// enumeration asks; resolve_plan says why).
[[nodiscard]] std::int64_t middle_stage_layers(std::int64_t num_layers, std::int64_t pp, std::int64_t first,
                                               std::int64_t last);

// Parameters held by one GPU of pipeline stage `stage` of the plan (model_spec.h), its layers
// plan.stage_layers(stage), its MoE layers' experts split over ep x etp (stage_parameters.h).
[[nodiscard]] std::int64_t stage_parameter_count(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage);

// "core_attn,layernorm,mla_up_proj,moe_act,mlp" (any non-empty comma-separated subset) to the
// bits, and back; anything else throws sim::ConfigError(key).
std::uint32_t parse_recompute_modules(std::string_view text, std::string_view key = "plan.recompute_modules");
std::string to_string_recompute_modules(std::uint32_t modules);
RecomputeGranularity parse_recompute_granularity(std::string_view text,
                                                 std::string_view key = "plan.recompute_granularity");
std::string_view to_string(RecomputeGranularity granularity);
// "unfused", "flash_attention_1", "flash_attention_2"; anything else throws sim::ConfigError(key).
AttentionKernel parse_attention_kernel(std::string_view text, std::string_view key = "plan.attention_kernel");
std::string_view to_string(AttentionKernel kernel);
// "no_shard", "optim", "optim_grads", "optim_grads_params"; anything else throws sim::ConfigError(key).
DataParallelSharding parse_data_parallel_sharding(std::string_view text,
                                                  std::string_view key = "plan.data_parallel_sharding_strategy");
std::string_view to_string(DataParallelSharding strategy);
// "none", "e4m3", "hybrid"; anything else throws sim::ConfigError(key).
Fp8Format parse_fp8_format(std::string_view text, std::string_view key = "plan.fp8");
std::string_view to_string(Fp8Format format);
// "p2p", "all_gather", "a2a"; anything else throws sim::ConfigError(key).
CpCommType parse_cp_comm_type(std::string_view text, std::string_view key = "plan.cp_comm_type");
std::string_view to_string(CpCommType type);
// "allgather", "alltoall"; anything else throws sim::ConfigError(key).
MoeTokenDispatcher parse_moe_token_dispatcher(std::string_view text,
                                              std::string_view key = "plan.moe_token_dispatcher_type");
std::string_view to_string(MoeTokenDispatcher dispatcher);

}  // namespace megasim::models
