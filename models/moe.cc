#include "models/moe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/error.h"
#include "sim/rng.h"

namespace megasim::models {
namespace {

// Draws of the router's expert shares averaged by busiest_expert_rank_load: enough for the
// expectation of a maximum to settle within a fraction of a percent at the skews routers show.
constexpr int kLoadDraws = 256;
constexpr double kMaxLoadSkew = 10;

void require_count(std::int64_t value, const char* field, std::int64_t smallest, std::int64_t largest,
                   const std::string& meaning) {
  if (value < smallest || value > largest) {
    throw sim::ConfigError(std::string("model.") + field, std::to_string(value),
                           fmt::format("{} from {} to {}", meaning, smallest, largest));
  }
}

}  // namespace

bool is_moe_layer(const ModelSpec& model, std::int64_t layer) {
  if (!is_moe(model) || layer < model.moe_first_dense_layers) return false;
  return layer % model.moe_layer_freq == 0;
}

std::int64_t moe_layers_in(const ModelSpec& model, std::int64_t first, std::int64_t count) {
  std::int64_t n = 0;
  for (std::int64_t layer = first; layer < first + count; ++layer) n += is_moe_layer(model, layer) ? 1 : 0;
  return n;
}

std::int64_t moe_ffn_hidden(const ModelSpec& model) {
  return model.moe_ffn_hidden_size != 0 ? model.moe_ffn_hidden_size : ffn_hidden(model);
}

std::int64_t moe_fc1_width(const ModelSpec& model) {
  return model.activation == Activation::kSwiglu ? 2 * moe_ffn_hidden(model) : moe_ffn_hidden(model);
}

std::int64_t shared_expert_fc1_width(const ModelSpec& model) {
  const std::int64_t f = model.moe_shared_expert_intermediate_size;
  return model.activation == Activation::kSwiglu ? 2 * f : f;
}

std::int64_t expert_parameter_count(const ModelSpec& model) {
  return model.hidden_size * (moe_fc1_width(model) + moe_ffn_hidden(model));
}

std::int64_t router_parameter_count(const ModelSpec& model) {
  return model.hidden_size * model.num_experts;
}

std::int64_t shared_expert_parameter_count(const ModelSpec& model) {
  return model.hidden_size * (shared_expert_fc1_width(model) + model.moe_shared_expert_intermediate_size);
}

std::int64_t moe_layer_replicated_parameters(const ModelSpec& model) {
  return 5 * model.hidden_size + router_parameter_count(model) + attention_replicated_parameter_count(model);
}

std::int64_t moe_layer_parameter_count(const ModelSpec& model) {
  return attention_parameter_count(model) + shared_expert_parameter_count(model) +
         moe_layer_replicated_parameters(model) + model.num_experts * expert_parameter_count(model);
}

std::int64_t moe_layer_dense_parameters_per_tp_rank(const ModelSpec& model, std::int64_t tp) {
  return (attention_parameter_count(model) + shared_expert_parameter_count(model)) / tp +
         moe_layer_replicated_parameters(model);
}

std::int64_t moe_layer_expert_parameters_per_rank(const ModelSpec& model, std::int64_t ep, std::int64_t etp) {
  return model.num_experts / ep * (expert_parameter_count(model) / etp);
}

void validate_moe(const ModelSpec& model) {
  require_count(model.num_experts, "num_experts", 0, kMaxExperts, "0 (a dense model) or a number of experts");
  if (!is_moe(model)) return;
  require_count(model.moe_router_topk, "moe_router_topk", 1, model.num_experts,
                "experts per token, at most num_experts,");
  require_count(model.moe_ffn_hidden_size, "moe_ffn_hidden_size", 0, kMaxFfn, "0 (ffn_hidden_size) or a width");
  require_count(model.moe_shared_expert_intermediate_size, "moe_shared_expert_intermediate_size", 0, kMaxFfn,
                "0 (no shared expert) or a width");
  require_count(model.moe_layer_freq, "moe_layer_freq", 1, model.num_layers,
                "every how many layers one is an MoE layer,");
  require_count(model.moe_first_dense_layers, "moe_first_dense_layers", 0, model.num_layers - 1,
                "dense layers before the first MoE layer,");
  const double c = model.moe_expert_capacity_factor;
  if (!(c == 0 || (c > 0 && c <= static_cast<double>(model.num_experts)))) {
    throw sim::ConfigError(
        "model.moe_expert_capacity_factor", fmt::format("{}", c),
        fmt::format("0 (dropless) or a factor above 0 and at most num_experts {}", model.num_experts));
  }
  if (model.moe_router_num_groups != 0 || model.moe_router_group_topk != 0) {
    const std::int64_t groups = model.moe_router_num_groups;
    if (groups < 1 || model.num_experts % groups != 0) {
      throw sim::ConfigError(
          "model.moe_router_num_groups", std::to_string(groups),
          fmt::format("a divisor of num_experts {} (with moe_router_group_topk)", model.num_experts));
    }
    const std::int64_t per_group = model.num_experts / groups;
    if (model.moe_router_group_topk < 1 || model.moe_router_group_topk > groups ||
        model.moe_router_group_topk * per_group < model.moe_router_topk) {
      throw sim::ConfigError("model.moe_router_group_topk", std::to_string(model.moe_router_group_topk),
                             fmt::format("from 1 to moe_router_num_groups {}, its groups holding at least "
                                         "moe_router_topk {} experts ({} each)",
                                         groups, model.moe_router_topk, per_group));
    }
  }
  const double skew = model.moe_router_load_skew;
  if (!(skew >= 0 && skew <= kMaxLoadSkew)) {
    throw sim::ConfigError("model.moe_router_load_skew", fmt::format("{}", skew),
                           fmt::format("a coefficient of variation from 0 (balanced) to {}", kMaxLoadSkew));
  }
}

RouterLoad router_load(const ModelSpec& model, std::int64_t ep, double assignments) {
  const std::int64_t experts = model.num_experts;
  const std::int64_t local = experts / ep;
  const double skew = model.moe_router_load_skew;
  const double balanced_expert = assignments / static_cast<double>(experts);
  const double cap =
      model.moe_expert_capacity_factor > 0 ? model.moe_expert_capacity_factor * balanced_expert : assignments;
  // ln of the share: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2 gives mean 1 and the coefficient of
  // variation cv.
  const double sigma = std::sqrt(std::log1p(skew * skew));
  sim::Rng rng(sim::fnv1a64("moe.router_load"));
  std::vector<double> share(static_cast<std::size_t>(experts));
  std::vector<double> count(static_cast<std::size_t>(experts));
  double sum_of_maxima = 0;
  double sum_of_kept = 0;
  for (int draw = 0; draw < kLoadDraws; ++draw) {
    double total = 0;
    for (double& w : share) total += w = skew > 0 ? rng.lognormal(-sigma * sigma / 2, sigma) : 1.0;
    // Multinomial counts: each expert's mean plus its normal noise, rescaled so that they add up to
    // the assignments as a multinomial's do.
    double counted = 0;
    for (std::size_t e = 0; e < count.size(); ++e) {
      const double p = share[e] / total;
      const double mean = assignments * p;
      counted += count[e] = std::max(0.0, mean + std::sqrt(mean * (1 - p)) * rng.normal(0, 1));
    }
    // Every count clamped at 0 (a handful of tokens): the expected counts instead.
    const double rescale = counted > 0 ? assignments / counted : 0;
    double busiest = 0;
    for (std::int64_t r = 0; r < ep; ++r) {
      double load = 0;
      for (std::int64_t e = r * local; e < (r + 1) * local; ++e) {
        const auto i = static_cast<std::size_t>(e);
        load += std::min(counted > 0 ? count[i] * rescale : assignments * share[i] / total, cap);
      }
      busiest = std::max(busiest, load);
      sum_of_kept += load;
    }
    sum_of_maxima += busiest;
  }
  return {sum_of_maxima / kLoadDraws / (assignments / static_cast<double>(ep)), sum_of_kept / kLoadDraws / assignments};
}

double busiest_expert_rank_load(const ModelSpec& model, std::int64_t ep, double assignments) {
  return router_load(model, ep, assignments).busiest;
}

}  // namespace megasim::models
