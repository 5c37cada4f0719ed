// The sweep's candidate space and its acceptance (sweep_study.h: enumerate_sweep). The rules of what
// is a valid plan live in models::resolve_plan and the memory estimate (through run_plan_study); this
// file only proposes candidates and records their verdicts.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"
#include "scenarios/studies/sweep/sweep_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr const char* kTpKey = "plan.tensor_model_parallel_size";
constexpr const char* kPpKey = "plan.pipeline_model_parallel_size";
constexpr const char* kVppKey = "plan.num_layers_per_virtual_pipeline_stage";
constexpr const char* kMicroKey = "plan.micro_batch_size";
constexpr const char* kGroupKey = "plan.microbatch_group_size_per_vp_stage";

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The points of the varied keys' cross product, the last axis fastest: values per axis.
std::vector<std::vector<std::string>> cross_product(const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<std::string>> points{{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    next.reserve(points.size() * axis.values.size());
    for (const auto& p : points) {
      for (const std::string& v : axis.values) {
        next.push_back(p);
        next.back().push_back(v);
      }
    }
    points = std::move(next);
  }
  return points;
}

void check_options(const SweepOptions& o) {
  std::set<std::string> seen;
  for (const SweepAxis& axis : o.vary) {
    if (!seen.insert(axis.key).second) {
      throw sim::ConfigError("--vary", axis.key, "each key varied at most once (list all its values in one --vary)");
    }
    if (axis.values.empty()) throw sim::ConfigError(axis.key, "(no values)", "at least one value");
  }
  if (o.max_micro_batch_size < 0) {
    throw sim::ConfigError("--max-micro-batch", std::to_string(o.max_micro_batch_size), "0 (no limit) or >= 1");
  }
}

bool varied(const SweepOptions& o, const char* key) {
  return std::any_of(o.vary.begin(), o.vary.end(), [key](const SweepAxis& a) { return a.key == key; });
}

// A scenario on today's tunable interleaved schedule (a group size set) sweeps every interleaved
// plan with a group of its own pp micro-batches, Megatron's default for the option and the one that
// holds the fewest; the base's group would not fit plans of other depths or batch splits. 1F1B plans
// get 0 (the option does nothing there). A scenario on the 2023 schedule (0), or a sweep that
// varies the key itself, keeps its value.
std::optional<std::int64_t> swept_group(const SweepOptions& o, const models::ParallelPlan& base, std::int64_t pp,
                                        std::int64_t layers_per_virtual_stage) {
  if (base.microbatch_group_size_per_vp_stage == 0 || varied(o, kGroupKey)) return std::nullopt;
  return layers_per_virtual_stage == 0 ? 0 : pp;
}

// One plan dimension's candidates: the scenario's value when the dimension is varied, else `all`.
std::vector<std::int64_t> dimension(const SweepOptions& o, const char* key, std::int64_t value,
                                    std::vector<std::int64_t> all) {
  return varied(o, key) ? std::vector<std::int64_t>{value} : all;
}

// The pipeline depths that split the model's layers by the plan's rule (models::middle_stage_layers:
// the divisors of num_layers without uneven first or last stages).
std::vector<std::int64_t> pipeline_options(const models::ModelSpec& model, const models::ParallelPlan& plan) {
  std::vector<std::int64_t> out;
  for (std::int64_t pp = 1; pp <= model.num_layers; ++pp) {
    if (models::middle_stage_layers(model.num_layers, pp, plan.decoder_first_pipeline_num_layers,
                                    plan.decoder_last_pipeline_num_layers) > 0) {
      out.push_back(pp);
    }
  }
  return out;
}

// 0 and the chunk sizes that split every stage of depth pp into the same number of chunks: proper
// divisors of a middle stage's layers with whose chunk count the first and last stages split too
// (models::outermost_chunk_layers).
std::vector<std::int64_t> virtual_stage_options(const models::ModelSpec& model, const models::ParallelPlan& plan,
                                                std::int64_t pp) {
  std::vector<std::int64_t> out{0};
  const std::int64_t first = plan.decoder_first_pipeline_num_layers, last = plan.decoder_last_pipeline_num_layers;
  const std::int64_t middle = models::middle_stage_layers(model.num_layers, pp, first, last);
  if (pp < 2 || middle == 0) return out;
  for (const std::int64_t d : divisors(middle)) {
    const std::int64_t chunks = middle / d;
    if (d < middle && models::outermost_chunk_layers(first == 0 ? middle : first, chunks, d) >= 0 &&
        models::outermost_chunk_layers(last == 0 ? middle : last, chunks, d) >= 0) {
      out.push_back(d);
    }
  }
  return out;
}

std::vector<std::int64_t> micro_batch_options(std::int64_t global_batch, std::int64_t limit) {
  const std::int64_t bound = limit > 0 ? std::min(limit, global_batch) : global_batch;
  std::vector<std::int64_t> out;
  for (std::int64_t m = 1; m <= bound; m *= 2) out.push_back(m);
  return out;
}

// Accepts or rejects `c` (its plan fields already set) by Megatron's rules and the memory estimate.
void judge(const Scenario& s, SweepCandidate& c) {
  c.gpus = s.cluster.gpus;
  PlanReport r;
  try {
    r = run_plan_study(s);
  } catch (const sim::ConfigError& e) {
    c.status = SweepStatus::kInvalid;
    c.reason = e.what();
    return;
  }
  c.dp = r.plan.dp;
  c.virtual_stages = r.plan.virtual_stages;
  c.num_microbatches = r.plan.num_microbatches;
  c.peak_stage = r.memory.peak_stage();
  c.peak_memory_bytes = r.memory.peak().total_bytes();
  c.hbm_bytes = r.hbm_bytes;
  if (r.fits) return;
  c.status = SweepStatus::kOutOfMemory;
  c.reason = fmt::format("peak memory {:.1f} GB per GPU (pipeline stage {}) exceeds the {:.1f} GB of HBM of the {}",
                         static_cast<double>(c.peak_memory_bytes) / 1e9, c.peak_stage, r.hbm_bytes / 1e9, r.gpu);
}

// The candidates of one point of the varied keys; `s` is the base scenario with the point applied.
void enumerate_point(const Scenario& s, const SweepOptions& o, std::size_t point,
                     const std::vector<std::string>& values, std::vector<SweepCandidate>& out) {
  std::vector<std::string> assignments;
  for (std::size_t i = 0; i < o.vary.size(); ++i) assignments.push_back(o.vary[i].key + "=" + values[i]);
  const models::ParallelPlan& p = s.plan;
  const std::vector<std::int64_t> tps =
      dimension(o, kTpKey, p.tensor_model_parallel_size, divisors(s.cluster.gpus_per_server));
  const std::vector<std::int64_t> pps =
      dimension(o, kPpKey, p.pipeline_model_parallel_size, pipeline_options(s.model, p));
  const std::vector<std::int64_t> mbs =
      dimension(o, kMicroKey, p.micro_batch_size, micro_batch_options(p.global_batch_size, o.max_micro_batch_size));
  // Counted before any is kept: the sweep's candidates are bounded (kMaxSweepCandidates).
  std::size_t count = 0;
  for (const std::int64_t pp : pps) {
    count +=
        tps.size() * mbs.size() *
        dimension(o, kVppKey, p.num_layers_per_virtual_pipeline_stage, virtual_stage_options(s.model, p, pp)).size();
  }
  if (out.size() + count > kMaxSweepCandidates) {
    throw sim::ConfigError("--vary", fmt::format("(point {} of the varied keys)", point + 1),
                           fmt::format("a sweep of at most {} candidate plans: the points up to this one give {} "
                                       "(fewer varied values, or --max-micro-batch, keep it smaller)",
                                       kMaxSweepCandidates, out.size() + count));
  }
  for (const std::int64_t tp : tps) {
    for (const std::int64_t pp : pps) {
      for (const std::int64_t v :
           dimension(o, kVppKey, p.num_layers_per_virtual_pipeline_stage, virtual_stage_options(s.model, p, pp))) {
        for (const std::int64_t mb : mbs) {
          SweepCandidate c;
          c.point = point;
          c.point_values = values;
          c.tp = tp;
          c.pp = pp;
          c.layers_per_virtual_stage = v;
          c.micro_batch_size = mb;
          c.overrides = assignments;
          for (const auto& [key, value] :
               {std::pair{kTpKey, tp}, std::pair{kPpKey, pp}, std::pair{kVppKey, v}, std::pair{kMicroKey, mb}}) {
            if (!varied(o, key)) c.overrides.push_back(fmt::format("{}={}", key, value));
          }
          Scenario plan_scenario = s;
          plan_scenario.plan.tensor_model_parallel_size = tp;
          plan_scenario.plan.pipeline_model_parallel_size = pp;
          plan_scenario.plan.num_layers_per_virtual_pipeline_stage = v;
          plan_scenario.plan.micro_batch_size = mb;
          if (const std::optional<std::int64_t> group = swept_group(o, p, pp, v)) {
            plan_scenario.plan.microbatch_group_size_per_vp_stage = *group;
            c.overrides.push_back(fmt::format("{}={}", kGroupKey, *group));
          }
          judge(plan_scenario, c);
          out.push_back(std::move(c));
        }
      }
    }
  }
}

}  // namespace

std::string_view to_string(SweepStatus status) {
  switch (status) {
    case SweepStatus::kOutOfMemory:
      return "out_of_memory";
    case SweepStatus::kInvalid:
      return "invalid";
    case SweepStatus::kScreened:
      return "screened";
    case SweepStatus::kSimulated:
      break;
  }
  return "simulated";
}

bool key_less(const SweepCandidate& a, const SweepCandidate& b) {
  return std::tie(a.point, a.tp, a.pp, a.layers_per_virtual_stage, a.micro_batch_size) <
         std::tie(b.point, b.tp, b.pp, b.layers_per_virtual_stage, b.micro_batch_size);
}

// The cross product's size, before it is built (each axis has at most kMaxSweepAxisValues values, so
// a few axes reach 2^48).
void check_points(const SweepOptions& o) {
  double points = 1;
  std::string sizes;
  for (const SweepAxis& axis : o.vary) {
    points *= static_cast<double>(axis.values.size());
    sizes += fmt::format("{}{} x {}", sizes.empty() ? "" : ", ", axis.key, axis.values.size());
  }
  if (points > static_cast<double>(kMaxSweepCandidates)) {
    throw sim::ConfigError("--vary", sizes,
                           fmt::format("at most {} points of the varied keys' cross product (this one has {:.3g})",
                                       kMaxSweepCandidates, points));
  }
}

std::vector<SweepCandidate> enumerate_sweep(const Scenario& base, const SweepOptions& options) {
  check_options(options);
  check_points(options);
  std::vector<SweepCandidate> out;
  const std::vector<std::vector<std::string>> points = cross_product(options.vary);
  for (std::size_t point = 0; point < points.size(); ++point) {
    Scenario s = base;
    for (std::size_t i = 0; i < options.vary.size(); ++i) {
      apply_override(s, options.vary[i].key + "=" + points[point][i]);
    }
    validate(s);  // a varied value that breaks the scenario outside its plan is an input error
    enumerate_point(s, options, point, points[point], out);
  }
  return out;
}

Scenario candidate_scenario(const Scenario& base, const SweepCandidate& candidate) {
  Scenario s = base;
  apply_overrides(s, candidate.overrides);
  return s;
}

}  // namespace megasim::scenarios
