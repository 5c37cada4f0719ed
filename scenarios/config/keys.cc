#include "scenarios/config/keys.h"

#include "scenarios/config/device.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/gpu_spec.h"
#include "models/moe.h"
#include "scenarios/config/key_binding.h"
#include "scenarios/config/key_ranges.h"
#include "scenarios/config/keys_reliability.h"
#include "scenarios/config/keys_stragglers.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using binding::duration;
using binding::enum_field;
using binding::field;
using namespace ranges;  // the bounds (key_ranges.h) read as data in the table
constexpr double kNsPerSecond = 1e9;
constexpr double kNsPerMicrosecond = 1e3;

using Setter = std::function<void(Scenario&, const Value&)>;
using Getter = std::function<Value(const Scenario&)>;

KeySpec custom(std::string_view section, std::string_view name, ValueType type, std::string_view unit,
               std::string_view choices, std::string_view description, Setter set, Getter get, KeyRange range = {}) {
  return KeySpec{section, name, type, unit, description, choices, std::move(set), std::move(get), range};
}

const std::string& text_of(const Value& v) {
  return std::get<std::string>(v);
}

void add_simulation_keys(std::vector<KeySpec>& t) {
  t.push_back(custom(
      "simulation", "seed", ValueType::kInt, "", "", "master seed of every named random stream",
      [](Scenario& s, const Value& v) { s.seed = static_cast<std::uint64_t>(std::get<std::int64_t>(v)); },
      [](const Scenario& s) -> Value { return static_cast<std::int64_t>(s.seed); }, between(0, kMaxSeed)));
  t.push_back(custom(
      "simulation", "name", ValueType::kString, "", "", "a label copied into reports",
      [](Scenario& s, const Value& v) { s.name = text_of(v); }, [](const Scenario& s) -> Value { return s.name; }));
}

void add_cluster_keys(std::vector<KeySpec>& t) {
  using topo::ClusterParams;
  constexpr auto c = &Scenario::cluster;
  t.push_back(custom(
      "cluster", "gpu", ValueType::kString, "", "A100|A800|H100|H200|H800, a full name of the GPU table, or calibrated",
      "GPU model (calibrated: the [device] of calibration.file)",
      [](Scenario& s, const Value& v) {
        const std::string name = text_of(v);
        s.gpu = name == kCalibratedGpu ? name : models::find_gpu(name, "cluster.gpu").name;
      },
      [](const Scenario& s) -> Value { return s.gpu; }));
  t.push_back(field("cluster", "gpus", "GPUs", "total GPUs (a multiple of gpus_per_server)", c, &ClusterParams::gpus,
                    between(1, kMaxGpus)));
  t.push_back(custom(
      "cluster", "placement", ValueType::kString, "", "contiguous|topology_aware|scattered",
      "rank to GPU: Megatron order on consecutive servers, stages aligned to ToR groups, or shuffled servers",
      [](Scenario& s, const Value& v) { s.placement = topo::parse_placement_policy(text_of(v), "cluster.placement"); },
      [](const Scenario& s) -> Value { return std::string(topo::to_string(s.placement)); }));
  t.push_back(field("cluster", "gpus_per_server", "GPUs", "GPUs behind one NVSwitch, one NIC each", c,
                    &ClusterParams::gpus_per_server, between(1, 4096)));
  t.push_back(field("cluster", "rails", "", "rail ToRs per group; GPU k of a server uses rail k % rails", c,
                    &ClusterParams::rails, between(1, 4096)));
  t.push_back(field("cluster", "nic_gbps", "Gb/s", "NIC port speed, each way (0: from the device)", c,
                    &ClusterParams::nic_gbps, zero_or(kMinGbps, kMaxGbps)));
  t.push_back(field("cluster", "nvlink_gbytes_per_s", "GB/s", "NVLink bandwidth per GPU, each way (0: from the GPU)", c,
                    &ClusterParams::nvlink_gbytes_per_s, zero_or(kMinGbytesPerS, kMaxGbytesPerS)));
  t.push_back(field("cluster", "switch_radix", "ports", "ports per ToR and core switch (even)", c,
                    &ClusterParams::switch_radix, between(4, 1024)));
  t.push_back(field("cluster", "agg_switch_radix", "ports",
                    "ports per aggregation switch (even), half of them down to the ToRs of a pod (0: switch_radix)", c,
                    &ClusterParams::agg_switch_radix, between(0, 1024)));
  t.push_back(field("cluster", "switch_port_gbps", "Gb/s", "switch port speed, each way", c,
                    &ClusterParams::switch_port_gbps, between(kMinGbps, kMaxGbps)));
  t.push_back(field("cluster", "tor_downlink_split", "", "NIC links per ToR down port (breakout cables)", c,
                    &ClusterParams::tor_downlink_split, between(1, 64)));
  t.push_back(field("cluster", "servers_per_group", "servers", "servers under one rail-ToR group", c,
                    &ClusterParams::servers_per_group, between(1, 32768)));
  t.push_back(field("cluster", "tor_oversubscription", "", "ToR down/up bandwidth ratio (>= 1)", c,
                    &ClusterParams::tor_oversubscription, between(1, 512)));
  t.push_back(field("cluster", "agg_oversubscription", "", "aggregation down/up bandwidth ratio (>= 1)", c,
                    &ClusterParams::agg_oversubscription, between(1, 512)));
  t.push_back(
      field("cluster", "tiers", "", "switch tiers: 0 automatic, 2 or 3", c, &ClusterParams::tiers, between(0, 3)));
  t.push_back(field("cluster", "rail_planes", "",
                    "each rail its own leaf-spine (multi-plane fat tree): no switch joins two rails, and a transfer "
                    "to another rail crosses NVLink to the GPU on that rail first",
                    c, &ClusterParams::rail_planes));
  t.push_back(field("cluster", "link_latency_ns", "ns", "latency of one network hop (switch and cable)", c,
                    &ClusterParams::link_latency_ns, between(0, kMaxLinkLatencyNs)));
  t.push_back(field("cluster", "nvlink_latency_ns", "ns", "latency of one NVLink hop", c,
                    &ClusterParams::nvlink_latency_ns, between(0, kMaxNvlinkLatencyNs)));
}

void add_fabric_keys(std::vector<KeySpec>& t) {
  using backend::FabricParams;
  constexpr auto f = &Scenario::fabric;
  t.push_back(enum_field("fabric", "routing", "ecmp|spray|adaptive", "how flows pick among equal-cost paths", f,
                         &FabricParams::routing, backend::parse_routing));
  t.push_back(custom(
      "fabric", "ecmp_hash", ValueType::kString, "", "crc32|xor", "hash function of the switches' ECMP",
      [](Scenario& s, const Value& v) {
        s.fabric.ecmp.function = topo::parse_hash_function(text_of(v), "fabric.ecmp_hash");
      },
      [](const Scenario& s) -> Value { return std::string(topo::to_string(s.fabric.ecmp.function)); }));
  t.push_back(custom(
      "fabric", "ecmp_polarized", ValueType::kBool, "", "",
      "same hash function and seed at every switch (hash polarization)",
      [](Scenario& s, const Value& v) { s.fabric.ecmp.polarized = std::get<bool>(v); },
      [](const Scenario& s) -> Value { return s.fabric.ecmp.polarized; }));
  t.push_back(field("fabric", "qps_per_connection", "", "queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION)", f,
                    &FabricParams::qps_per_connection, between(1, kMaxQpsPerConnection)));
  t.push_back(field("fabric", "nvlink_efficiency", "", "achievable fraction of NVLink bandwidth", f,
                    &FabricParams::nvlink_efficiency, between(kMinEfficiency, 1)));
  t.push_back(field("fabric", "network_efficiency", "", "achievable fraction of network link bandwidth", f,
                    &FabricParams::network_efficiency, between(kMinEfficiency, 1)));
  t.push_back(duration("fabric", "failure_detection_s", "s", "delay before a failed link leaves its ECMP groups", f,
                       &FabricParams::failure_detection_ns, kNsPerSecond, between(0, kHourS)));
  t.push_back(duration("fabric", "stall_timeout_s", "s", "a flow stalled this long fails the job (0: never)", f,
                       &FabricParams::stall_timeout_ns, kNsPerSecond, between(0, kWeekS)));
}

void add_collective_keys(std::vector<KeySpec>& t) {
  using models::CollectiveParams;
  constexpr auto c = &Scenario::collective;
  t.push_back(field("collective", "channels", "", "NCCL channels per collective, each on its own connections", c,
                    &CollectiveParams::channels, between(1, 64)));
  t.push_back(duration("collective", "base_latency_us", "us", "fixed cost of one collective call", c,
                       &CollectiveParams::base_latency_ns, kNsPerMicrosecond, between(0, kMaxCollectiveLatencyUs)));
  t.push_back(duration("collective", "nvlink_step_latency_us", "us", "latency of one algorithm step over NVLink", c,
                       &CollectiveParams::nvlink_step_latency_ns, kNsPerMicrosecond,
                       between(0, kMaxCollectiveLatencyUs)));
  t.push_back(duration("collective", "net_step_latency_us", "us", "latency of one algorithm step across the network", c,
                       &CollectiveParams::net_step_latency_ns, kNsPerMicrosecond, between(0, kMaxCollectiveLatencyUs)));
  t.push_back(field("collective", "hierarchical", "", "NVLink reduce-scatter, per-rail rings, NVLink all-gather", c,
                    &CollectiveParams::hierarchical));
  t.push_back(field("collective", "reduction_gbytes_per_s", "GB/s",
                    "rate of combining received data in reducing collectives (0: free, as with NCCL)", c,
                    &CollectiveParams::reduction_gbytes_per_s, zero_or(kMinGbytesPerS, kMaxGbytesPerS)));
}

void add_model_keys(std::vector<KeySpec>& t) {
  using models::ModelSpec;
  constexpr auto m = &Scenario::model;
  t.push_back(field("model", "num_layers", "", "transformer layers", m, &ModelSpec::num_layers,
                    between(1, models::kMaxLayers)));
  t.push_back(
      field("model", "hidden_size", "", "hidden size h", m, &ModelSpec::hidden_size, between(1, models::kMaxHidden)));
  t.push_back(field("model", "num_attention_heads", "", "attention heads a", m, &ModelSpec::num_attention_heads,
                    between(1, models::kMaxHeads)));
  t.push_back(field("model", "num_query_groups", "", "key/value heads for grouped-query attention (0: = heads)", m,
                    &ModelSpec::num_query_groups, between(0, models::kMaxHeads)));
  t.push_back(field("model", "ffn_hidden_size", "", "MLP width (0: 4h for GeLU, Megatron's 8h/3 rule for SwiGLU)", m,
                    &ModelSpec::ffn_hidden_size, between(0, models::kMaxFfn)));
  t.push_back(enum_field("model", "activation", "gelu|swiglu", "MLP activation", m, &ModelSpec::activation,
                         models::parse_activation));
  t.push_back(enum_field("model", "position_embedding_type", "learned_absolute|rope", "position embedding", m,
                         &ModelSpec::position_embedding_type, models::parse_position_embedding));
  t.push_back(field("model", "seq_length", "tokens", "sequence length s", m, &ModelSpec::seq_length,
                    between(1, models::kMaxSeqLength)));
  t.push_back(field("model", "vocab_size", "tokens", "vocabulary before padding", m, &ModelSpec::vocab_size,
                    between(1, models::kMaxVocab)));
  t.push_back(field("model", "make_vocab_size_divisible_by", "", "vocabulary padding unit (times TP)", m,
                    &ModelSpec::make_vocab_size_divisible_by, between(1, models::kMaxVocab)));
  t.push_back(field("model", "untie_embeddings_and_output_weights", "", "separate output layer weights", m,
                    &ModelSpec::untie_embeddings_and_output_weights));
  t.push_back(field("model", "hidden_dropout", "",
                    "dropout probability after the embedding and on each residual branch (0: no masks kept)", m,
                    &ModelSpec::hidden_dropout, between(0.0, 0.99)));
  t.push_back(field("model", "multi_latent_attention", "",
                    "multi-head latent attention (DeepSeek-V2/V3): keys, values and queries from low-rank latents", m,
                    &ModelSpec::multi_latent_attention));
  t.push_back(field("model", "q_lora_rank", "", "MLA: the query latent's rank (0: queries projected directly)", m,
                    &ModelSpec::q_lora_rank, between(0, models::kMaxHidden)));
  t.push_back(field("model", "kv_lora_rank", "", "MLA: the key-value latent's rank", m, &ModelSpec::kv_lora_rank,
                    between(1, models::kMaxHidden)));
  t.push_back(field("model", "qk_head_dim", "", "MLA: a head's query/key width without RoPE", m,
                    &ModelSpec::qk_head_dim, between(1, models::kMaxHidden)));
  t.push_back(field("model", "qk_pos_emb_head_dim", "", "MLA: a head's RoPE query/key width", m,
                    &ModelSpec::qk_pos_emb_head_dim, between(1, models::kMaxHidden)));
  t.push_back(field("model", "v_head_dim", "", "MLA: a head's value width", m, &ModelSpec::v_head_dim,
                    between(1, models::kMaxHidden)));
  t.push_back(field("model", "num_experts", "", "experts per MoE layer (0: a dense model)", m, &ModelSpec::num_experts,
                    between(0, models::kMaxExperts)));
  t.push_back(field("model", "moe_router_topk", "", "experts each token is routed to", m, &ModelSpec::moe_router_topk,
                    between(1, models::kMaxExperts)));
  t.push_back(field("model", "moe_ffn_hidden_size", "", "one expert's MLP width (0: ffn_hidden_size)", m,
                    &ModelSpec::moe_ffn_hidden_size, between(0, models::kMaxFfn)));
  t.push_back(field("model", "moe_shared_expert_intermediate_size", "",
                    "the shared experts' MLP width, every token through it (0: none)", m,
                    &ModelSpec::moe_shared_expert_intermediate_size, between(0, models::kMaxFfn)));
  t.push_back(field("model", "moe_layer_freq", "",
                    "every how many layers one is an MoE layer (layer i when i % freq == 0)", m,
                    &ModelSpec::moe_layer_freq, between(1, models::kMaxLayers)));
  t.push_back(field("model", "moe_first_dense_layers", "",
                    "dense layers before the MoE layers start (DeepSeek-V3's first_k_dense_replace)", m,
                    &ModelSpec::moe_first_dense_layers, between(0, models::kMaxLayers)));
  t.push_back(field("model", "moe_expert_capacity_factor", "",
                    "tokens an expert takes, times its balanced share; the rest are dropped (0: dropless)", m,
                    &ModelSpec::moe_expert_capacity_factor, between(0.0, static_cast<double>(models::kMaxExperts))));
  t.push_back(field("model", "moe_router_num_groups", "",
                    "group-limited routing: the experts' groups (DeepSeek's nodes; 0: unlimited)", m,
                    &ModelSpec::moe_router_num_groups, between(0, models::kMaxExperts)));
  t.push_back(field("model", "moe_router_group_topk", "", "group-limited routing: groups a token's experts come from",
                    m, &ModelSpec::moe_router_group_topk, between(0, models::kMaxExperts)));
  t.push_back(field("model", "moe_router_load_skew", "",
                    "coefficient of variation of the experts' expected token shares (0: balanced); the busiest "
                    "expert rank sets the pace",
                    m, &ModelSpec::moe_router_load_skew, between(0.0, 10.0)));
}

void add_plan_keys(std::vector<KeySpec>& t) {
  using models::ParallelPlan;
  constexpr auto p = &Scenario::plan;
  t.push_back(field("plan", "tensor_model_parallel_size", "", "tensor-parallel size (inside a server)", p,
                    &ParallelPlan::tensor_model_parallel_size, between(1, 4096)));
  t.push_back(field("plan", "pipeline_model_parallel_size", "", "pipeline stages", p,
                    &ParallelPlan::pipeline_model_parallel_size, between(1, models::kMaxLayers)));
  t.push_back(field("plan", "num_layers_per_virtual_pipeline_stage", "", "layers per model chunk (0: no interleaving)",
                    p, &ParallelPlan::num_layers_per_virtual_pipeline_stage, between(0, models::kMaxLayers)));
  t.push_back(field("plan", "microbatch_group_size_per_vp_stage", "micro-batches",
                    "contiguous micro-batches per model chunk in the interleaved schedule, from pp to the "
                    "micro-batches per iteration (Megatron-LM today, Llama 3's N; 0: Megatron-LM 2023, groups of pp)",
                    p, &ParallelPlan::microbatch_group_size_per_vp_stage, between(0, kMaxBatch)));
  t.push_back(field("plan", "decoder_first_pipeline_num_layers", "", "layers of the first stage (0: an even share)", p,
                    &ParallelPlan::decoder_first_pipeline_num_layers, between(0, models::kMaxLayers)));
  t.push_back(field("plan", "decoder_last_pipeline_num_layers", "", "layers of the last stage (0: an even share)", p,
                    &ParallelPlan::decoder_last_pipeline_num_layers, between(0, models::kMaxLayers)));
  t.push_back(field("plan", "sequence_parallel", "", "shard LayerNorm/dropout activations over TP", p,
                    &ParallelPlan::sequence_parallel));
  t.push_back(field("plan", "micro_batch_size", "samples", "samples per micro-batch", p,
                    &ParallelPlan::micro_batch_size, between(1, kMaxBatch)));
  t.push_back(field("plan", "global_batch_size", "samples", "samples per iteration (data parallel derived)", p,
                    &ParallelPlan::global_batch_size, between(1, kMaxBatch)));
  t.push_back(field("plan", "use_distributed_optimizer", "", "shard optimizer state over DP (ZeRO-1/2 style)", p,
                    &ParallelPlan::use_distributed_optimizer));
  t.push_back(enum_field("plan", "data_parallel_sharding_strategy", "no_shard|optim|optim_grads|optim_grads_params",
                         "Megatron-FSDP: model state sharded over DP (ZeRO-1/2/3); optim_grads reduce-scatters every "
                         "micro-batch's gradients, optim_grads_params also all-gathers parameters per micro-batch",
                         p, &ParallelPlan::data_parallel_sharding_strategy, models::parse_data_parallel_sharding));
  t.push_back(field("plan", "reshard_after_forward", "",
                    "optim_grads_params: free gathered parameters after forward, gather again for backward (false: "
                    "Llama 3's variant, kept until backward)",
                    p, &ParallelPlan::reshard_after_forward));
  t.push_back(field("plan", "grad_reduce_in_bf16", "", "gradients accumulated and reduced in bf16 (else fp32)", p,
                    &ParallelPlan::grad_reduce_in_bf16));
  t.push_back(enum_field("plan", "recompute_granularity", "none|selective|full", "activation recomputation", p,
                         &ParallelPlan::recompute_granularity, models::parse_recompute_granularity));
  t.push_back(custom(
      "plan", "recompute_modules", ValueType::kString, "",
      "comma-separated: core_attn|layernorm|mla_up_proj|moe_act|mlp",
      "what selective recompute reruns in backward instead of keeping (Megatron's --recompute-modules)",
      [](Scenario& s, const Value& v) {
        s.plan.recompute_modules = models::parse_recompute_modules(text_of(v), "plan.recompute_modules");
      },
      [](const Scenario& s) -> Value { return models::to_string_recompute_modules(s.plan.recompute_modules); }));
  t.push_back(field("plan", "overlap_grad_reduce", "", "DP reduce-scatter overlapped with backward", p,
                    &ParallelPlan::overlap_grad_reduce));
  t.push_back(field("plan", "overlap_param_gather", "", "DP all-gather prefetched during forward", p,
                    &ParallelPlan::overlap_param_gather));
  t.push_back(field("plan", "tp_comm_overlap", "", "TP communication overlapped with GEMMs", p,
                    &ParallelPlan::tp_comm_overlap));
  t.push_back(
      field("plan", "overlap_p2p_comm", "", "PP send/recv decoupled from compute", p, &ParallelPlan::overlap_p2p_comm));
  t.push_back(field("plan", "parallel_transformer_block", "", "attention and MLP in parallel (MegaScale)", p,
                    &ParallelPlan::parallel_transformer_block));
  t.push_back(field("plan", "sliding_window_size", "tokens", "attention window (0: full causal)", p,
                    &ParallelPlan::sliding_window_size, between(0, models::kMaxSeqLength)));
  t.push_back(field("plan", "use_flash_attention", "", "FlashAttention-2 and fused kernels", p,
                    &ParallelPlan::use_flash_attention));
  // FlashAttention-1: Megatron-LM's --use-flash-attn at commit 285068c8 (2023, flash-attn 1.x).
  t.push_back(enum_field("plan", "attention_kernel", "unfused|flash_attention_1|flash_attention_2",
                         "attention core kernel alone (Megatron --use-flash-attn of 2023: flash_attention_1); "
                         "use_flash_attention wins",
                         p, &ParallelPlan::attention_kernel, models::parse_attention_kernel));
  t.push_back(field("plan", "async_data_loading", "",
                    "data loading off the critical path (off: Megatron's get_batch, its TP broadcasts and the host "
                    "synchronisation of broadcast_data's sizes.cpu())",
                    p, &ParallelPlan::async_data_loading));
  t.push_back(field("plan", "batch_p2p_sync", "",
                    "torch.cuda.synchronize() after every batched PP send/recv (Megatron-LM p2p_communication.py; "
                    "not with overlap_p2p_comm)",
                    p, &ParallelPlan::batch_p2p_sync));
  t.push_back(field("plan", "average_loss_per_micro_batch", "",
                    "every micro-batch's loss all-reduced over the DP group, the compute stream waiting for it "
                    "(Megatron-LM pretrain_gpt.py loss_func)",
                    p, &ParallelPlan::average_loss_per_micro_batch));
  t.push_back(field("plan", "context_parallel_size", "",
                    "ranks each sequence is split over (CP, load-balanced for causal attention)", p,
                    &ParallelPlan::context_parallel_size, between(1, 4096)));
  t.push_back(enum_field("plan", "cp_comm_type", "p2p|all_gather|a2a",
                         "context parallelism's K/V exchange: ring (overlapped), all-gather, or all-to-all over heads",
                         p, &ParallelPlan::cp_comm_type, models::parse_cp_comm_type));
  t.push_back(enum_field("plan", "fp8", "none|e4m3|hybrid",
                         "linear layers' GEMMs in FP8 (Transformer Engine; attention, norms, embedding, router and "
                         "output head stay BF16)",
                         p, &ParallelPlan::fp8, models::parse_fp8_format));
  t.push_back(field("plan", "fp8_param_gather", "", "the distributed optimizer all-gathers FP8 parameters", p,
                    &ParallelPlan::fp8_param_gather));
  t.push_back(field("plan", "expert_model_parallel_size", "", "ranks an MoE layer's experts are split over (EP)", p,
                    &ParallelPlan::expert_model_parallel_size, between(1, models::kMaxExperts)));
  t.push_back(field("plan", "expert_tensor_parallel_size", "",
                    "ranks each expert's MLP is split over (0: the tensor-parallel size)", p,
                    &ParallelPlan::expert_tensor_parallel_size, between(0, 4096)));
  t.push_back(enum_field("plan", "moe_token_dispatcher_type", "allgather|alltoall|flex",
                         "how tokens reach their experts: all-gather over the expert group, all-to-all, or DeepEP "
                         "(once per server over the network)",
                         p, &ParallelPlan::moe_token_dispatcher_type, models::parse_moe_token_dispatcher));
  t.push_back(field("plan", "moe_grouped_gemm", "", "one grouped GEMM for a rank's experts (else one GEMM each)", p,
                    &ParallelPlan::moe_grouped_gemm));
  t.push_back(field("plan", "overlap_moe_expert_parallel_comm", "",
                    "expert-parallel all-to-alls overlapped with another micro-batch's compute (alltoall only)", p,
                    &ParallelPlan::overlap_moe_expert_parallel_comm));
}

void add_calibration_keys(std::vector<KeySpec>& t) {
  t.push_back(custom(
      "calibration", "file", ValueType::kString, "", "", "calibration TOML replacing the cost model defaults",
      [](Scenario& s, const Value& v) { s.calibration_file = text_of(v); },
      [](const Scenario& s) -> Value { return s.calibration_file; }));
}

// Every numeric key checks its range before its own setter runs: one check for TOML, --set and
// Python alike.
void check_ranges_on_set(std::vector<KeySpec>& t) {
  for (KeySpec& k : t) {
    if (k.type != ValueType::kInt && k.type != ValueType::kFloat) continue;
    MEGASIM_ASSERT(k.range.min < k.range.max, "every numeric key of the table declares its physical range");
    k.set = [inner = std::move(k.set), range = k.range, key = k.full_name(), unit = k.unit](Scenario& s,
                                                                                            const Value& v) {
      if (!range.contains(v)) {
        throw sim::ConfigError(key, format_value(v), range.describe(unit, std::holds_alternative<std::int64_t>(v)));
      }
      inner(s, v);
    };
  }
}

std::vector<KeySpec> build_table() {
  std::vector<KeySpec> t;
  add_simulation_keys(t);
  add_cluster_keys(t);
  add_fabric_keys(t);
  add_collective_keys(t);
  add_model_keys(t);
  add_plan_keys(t);
  add_calibration_keys(t);
  add_straggler_keys(t);
  add_reliability_keys(t);
  check_ranges_on_set(t);
  return t;
}

std::string valid_names(std::string_view section) {
  std::string out;
  for (const KeySpec& k : key_table()) {
    if (!section.empty() && k.section != section) continue;
    const std::string name = section.empty() ? std::string(k.section) : std::string(k.name);
    if (out.find(name) != std::string::npos && section.empty()) continue;
    out += out.empty() ? name : ", " + name;
  }
  return out;
}

}  // namespace

std::string_view to_string(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "integer";
    case ValueType::kFloat:
      return "number";
    case ValueType::kBool:
      return "boolean";
    case ValueType::kString:
      return "string";
  }
  return "?";
}

std::string format_value(const Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>)
          return "\"" + v + "\"";
        else if constexpr (std::is_same_v<T, bool>)
          return v ? "true" : "false";
        else
          return fmt::format("{}", v);
      },
      value);
}

bool KeyRange::contains(const Value& value) const {
  double x = 0;
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    x = static_cast<double>(*i);  // exact for the bounds (below 2^53, or INT64_MAX itself)
  } else if (const auto* d = std::get_if<double>(&value)) {
    x = *d;
  } else {
    return false;
  }
  return (x >= min && x <= max) || (or_zero && x == 0);
}

std::string KeyRange::describe(std::string_view unit, bool integer) const {
  // Integer bounds as integers; INT64_MAX is 2^63 as a double, so it is spelt out.
  const auto bound = [integer](double b) {
    if (!integer) return fmt::format("{}", b);
    return b >= 9.2e18 ? std::string("9223372036854775807") : fmt::format("{}", static_cast<std::int64_t>(b));
  };
  const std::string span = fmt::format("{} from {} to {}{}", integer ? "an integer" : "a number", bound(min),
                                       bound(max), unit.empty() ? "" : " " + std::string(unit));
  return or_zero ? "0, or " + span : span;
}

std::string KeySpec::full_name() const {
  return std::string(section) + "." + std::string(name);
}

const std::vector<KeySpec>& key_table() {
  static const std::vector<KeySpec> table = build_table();
  return table;
}

const KeySpec& find_key(std::string_view section, std::string_view name) {
  bool section_known = false;
  for (const KeySpec& k : key_table()) {
    if (k.section != section) continue;
    section_known = true;
    if (k.name == name) return k;
  }
  const std::string full = std::string(section) + "." + std::string(name);
  if (!section_known) {
    throw sim::ConfigError(full, "(unknown section [" + std::string(section) + "])",
                           "a key in one of the sections: " + valid_names(""));
  }
  throw sim::ConfigError(full, "(unknown key)",
                         "one of the keys of [" + std::string(section) + "]: " + valid_names(section));
}

Value coerce(const KeySpec& key, const Value& value) {
  if (key.type == ValueType::kFloat && std::holds_alternative<std::int64_t>(value)) {
    return static_cast<double>(std::get<std::int64_t>(value));
  }
  const bool matches = (key.type == ValueType::kInt && std::holds_alternative<std::int64_t>(value)) ||
                       (key.type == ValueType::kFloat && std::holds_alternative<double>(value)) ||
                       (key.type == ValueType::kBool && std::holds_alternative<bool>(value)) ||
                       (key.type == ValueType::kString && std::holds_alternative<std::string>(value));
  if (!matches) {
    std::string valid = (key.type == ValueType::kInt ? "an " : "a ") + std::string(to_string(key.type));
    if (!key.choices.empty()) valid += " (one of " + std::string(key.choices) + ")";
    throw sim::ConfigError(key.full_name(), format_value(value), valid);
  }
  return value;
}

std::string describe_keys() {
  const Scenario defaults;
  std::string out;
  std::string_view section;
  for (const KeySpec& k : key_table()) {
    if (k.section != section) {
      section = k.section;
      out += fmt::format("\n[{}]\n", section);
    }
    std::string type(to_string(k.type));
    if (!k.choices.empty()) type = std::string(k.choices);
    const bool numeric = k.type == ValueType::kInt || k.type == ValueType::kFloat;
    const std::string range = numeric ? " (" + k.range.describe(k.unit, k.type == ValueType::kInt) + ")" : "";
    out += fmt::format("  {:<30} {:<20} default {:<12} {:<8} {}{}\n", k.name, type, format_value(k.get(defaults)),
                       k.unit, k.description, range);
  }
  return out;
}

}  // namespace megasim::scenarios
