// The plan's enumerated keys: their names in scenario files and reports, parsed and printed
// (models/plan.h). Unknown names throw sim::ConfigError naming the key and the valid names.
#include "models/plan.h"

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "sim/error.h"

namespace megasim::models {

using sim::ConfigError;

RecomputeGranularity parse_recompute_granularity(std::string_view text, std::string_view key) {
  if (text == "none") return RecomputeGranularity::kNone;
  if (text == "selective") return RecomputeGranularity::kSelective;
  if (text == "full") return RecomputeGranularity::kFull;
  throw ConfigError(std::string(key), std::string(text), "none, selective or full");
}

std::string_view to_string(RecomputeGranularity granularity) {
  switch (granularity) {
    case RecomputeGranularity::kSelective:
      return "selective";
    case RecomputeGranularity::kFull:
      return "full";
    case RecomputeGranularity::kNone:
      break;
  }
  return "none";
}

AttentionKernel parse_attention_kernel(std::string_view text, std::string_view key) {
  if (text == "unfused") return AttentionKernel::kUnfused;
  if (text == "flash_attention_1") return AttentionKernel::kFlashAttention1;
  if (text == "flash_attention_2") return AttentionKernel::kFlashAttention2;
  throw ConfigError(std::string(key), std::string(text), "unfused, flash_attention_1 or flash_attention_2");
}

std::string_view to_string(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFlashAttention1:
      return "flash_attention_1";
    case AttentionKernel::kFlashAttention2:
      return "flash_attention_2";
    case AttentionKernel::kUnfused:
      break;
  }
  return "unfused";
}

DataParallelSharding parse_data_parallel_sharding(std::string_view text, std::string_view key) {
  if (text == "no_shard") return DataParallelSharding::kNoShard;
  if (text == "optim") return DataParallelSharding::kOptim;
  if (text == "optim_grads") return DataParallelSharding::kOptimGrads;
  if (text == "optim_grads_params") return DataParallelSharding::kOptimGradsParams;
  throw ConfigError(std::string(key), std::string(text), "no_shard, optim, optim_grads or optim_grads_params");
}

std::string_view to_string(DataParallelSharding strategy) {
  switch (strategy) {
    case DataParallelSharding::kOptim:
      return "optim";
    case DataParallelSharding::kOptimGrads:
      return "optim_grads";
    case DataParallelSharding::kOptimGradsParams:
      return "optim_grads_params";
    case DataParallelSharding::kNoShard:
      break;
  }
  return "no_shard";
}

MoeTokenDispatcher parse_moe_token_dispatcher(std::string_view text, std::string_view key) {
  if (text == "allgather") return MoeTokenDispatcher::kAllgather;
  if (text == "alltoall") return MoeTokenDispatcher::kAlltoall;
  if (text == "flex") return MoeTokenDispatcher::kFlex;
  throw ConfigError(std::string(key), std::string(text), "allgather, alltoall or flex");
}

std::string_view to_string(MoeTokenDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeTokenDispatcher::kAlltoall:
      return "alltoall";
    case MoeTokenDispatcher::kFlex:
      return "flex";
    case MoeTokenDispatcher::kAllgather:
      break;
  }
  return "allgather";
}

CpCommType parse_cp_comm_type(std::string_view text, std::string_view key) {
  if (text == "p2p") return CpCommType::kP2p;
  if (text == "all_gather") return CpCommType::kAllGather;
  if (text == "a2a") return CpCommType::kA2a;
  throw ConfigError(std::string(key), std::string(text), "p2p, all_gather or a2a");
}

std::string_view to_string(CpCommType type) {
  switch (type) {
    case CpCommType::kAllGather:
      return "all_gather";
    case CpCommType::kA2a:
      return "a2a";
    case CpCommType::kP2p:
      break;
  }
  return "p2p";
}

Fp8Format parse_fp8_format(std::string_view text, std::string_view key) {
  if (text == "none") return Fp8Format::kNone;
  if (text == "e4m3") return Fp8Format::kE4m3;
  if (text == "hybrid") return Fp8Format::kHybrid;
  throw ConfigError(std::string(key), std::string(text), "none, e4m3 or hybrid");
}

std::string_view to_string(Fp8Format format) {
  switch (format) {
    case Fp8Format::kE4m3:
      return "e4m3";
    case Fp8Format::kHybrid:
      return "hybrid";
    case Fp8Format::kNone:
      break;
  }
  return "none";
}

namespace {

constexpr std::array<std::pair<std::string_view, std::uint32_t>, 5> kRecomputeModuleNames{{
    {"core_attn", kRecomputeCoreAttn},
    {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj},
    {"moe_act", kRecomputeMoeAct},
    {"mlp", kRecomputeMlp},
}};

}  // namespace

std::uint32_t parse_recompute_modules(std::string_view text, std::string_view key) {
  std::uint32_t out = 0;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view name = text.substr(begin, end - begin);
    const auto it = std::find_if(kRecomputeModuleNames.begin(), kRecomputeModuleNames.end(),
                                 [&](const auto& entry) { return entry.first == name; });
    if (it == kRecomputeModuleNames.end()) {
      throw ConfigError(std::string(key), std::string(text),
                        "a comma-separated list of core_attn, layernorm, mla_up_proj, moe_act, mlp");
    }
    out |= it->second;
    begin = end + 1;
  }
  return out;
}

std::string to_string_recompute_modules(std::uint32_t modules) {
  std::string out;
  for (const auto& [name, bit] : kRecomputeModuleNames) {
    if ((modules & bit) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

}  // namespace megasim::models
