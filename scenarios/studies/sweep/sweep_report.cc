// The sweep's writers (sweep_study.h): ranked text table, CSV of every candidate, JSON. Numbers in
// CSV and JSON are written in the shortest form that round-trips, so equal reports give equal files.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/report/report_json.h"
#include "scenarios/studies/sweep/sweep_study.h"

namespace megasim::scenarios {
namespace {

constexpr double kGB = 1e9;

bool simulated(const SweepRow& row) {
  return row.candidate.status == SweepStatus::kSimulated;
}

// Rows with figures: simulated in full, or screened.
bool has_figures(const SweepRow& row) {
  return simulated(row) || row.candidate.status == SweepStatus::kScreened;
}

// Rows written: the first `top` simulated ones (0: all), then every other one.
bool written(const SweepRow& row, std::size_t rank, std::size_t top) {
  return !simulated(row) || top == 0 || rank < top;
}

// The screen's tokens/s in a CSV cell: empty when the row was not screened.
std::string screen_cell(const SweepRow& row) {
  return row.screen_tokens_per_s > 0 ? fmt::format("{}", row.screen_tokens_per_s) : std::string();
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The varied keys shown as columns of their own in the text table: the plan's four and the GPU count
// have columns already.
bool own_text_column(const std::string& key) {
  return key != "cluster.gpus" && key != "plan.tensor_model_parallel_size" &&
         key != "plan.pipeline_model_parallel_size" && key != "plan.num_layers_per_virtual_pipeline_stage" &&
         key != "plan.micro_batch_size";
}

}  // namespace

std::string to_text(const SweepReport& r, std::size_t top) {
  std::string out =
      fmt::format("sweep: {}: {} simulated in full, {} screened, {} in memory, {} invalid (Megatron's rules)\n",
                  counted(r.rows.size(), "candidate plan"), r.simulated, r.screened,
                  r.out_of_memory == 1 ? "1 does not fit" : fmt::format("{} do not fit", r.out_of_memory), r.invalid);
  if (!r.varied_keys.empty()) out += fmt::format("varied: {}\n", fmt::join(r.varied_keys, ", "));
  if (r.screened > 0) {
    out += fmt::format(
        "screen: replica 0 stood for every replica (at the slowest replica's speeds where hosts are slow; no ECMP "
        "collisions among the replicas' pipeline transfers), an upper bound on tokens/s; every plan that could reach "
        "the top {}{} was simulated in full (--full: all)\n",
        r.confirm_top, r.varied_keys.empty() ? "" : " of its point");
  }
  if (r.bound_violations > 0) {
    out += fmt::format(
        "warning: {} ran faster in full than {} screen (by up to {:.3g}%): a plan left screened may be "
        "faster than its screen says; --full simulates every plan\n",
        counted(r.bound_violations, "plan"), r.bound_violations == 1 ? "its" : "their", 100 * r.largest_bound_excess);
  }
  if (r.simulated == 0) return out + "no plan fits: see --csv for each candidate's reason\n";
  const std::size_t shown = top == 0 ? r.simulated : std::min(top, r.simulated);
  out += fmt::format("ranked by throughput{}; times in seconds, the breakdown a mean over ranks\n",
                     shown < r.simulated ? fmt::format(" (top {} of {})", shown, r.simulated) : "");
  std::string header = fmt::format("{:>4}", "rank");
  for (const std::string& key : r.varied_keys) {
    if (own_text_column(key)) header += fmt::format(" {:>10}", key.substr(key.find('.') + 1, 10));
  }
  header += fmt::format(
      " {:>6} {:>2} {:>3} {:>5} {:>3} {:>3} {:>4} {:>10} {:>5} {:>6} {:>7} {:>7} {:>6} {:>6} {:>6} "
      "{:>6} {:>6}\n",
      "gpus", "tp", "pp", "dp", "vpp", "mb", "m", "tokens/s", "MFU", "mem GB", "iter", "compute", "tp", "pp", "dp",
      "bubble", "wait");
  out += header;
  for (std::size_t i = 0; i < shown; ++i) {
    const SweepRow& row = r.rows[i];
    const SweepCandidate& c = row.candidate;
    const RankBreakdown& b = row.breakdown;
    out += fmt::format("{:>4}", i + 1);
    for (std::size_t k = 0; k < r.varied_keys.size(); ++k) {
      if (own_text_column(r.varied_keys[k])) out += fmt::format(" {:>10}", c.point_values[k]);
    }
    out += fmt::format(
        " {:>6} {:>2} {:>3} {:>5} {:>3} {:>3} {:>4} {:>10.0f} {:>5.3f} {:>6.1f} {:>7.3f} {:>7.3f} {:>6.3f} {:>6.3f} "
        "{:>6.3f} {:>6.3f} {:>6.3f}\n",
        c.gpus, c.tp, c.pp, c.dp, c.virtual_stages, c.micro_batch_size, c.num_microbatches, row.tokens_per_s, row.mfu,
        static_cast<double>(c.peak_memory_bytes) / kGB, row.iteration_time_s, b.compute_s, b.tp_exposed_s,
        b.pp_exposed_s, b.dp_exposed_s, b.bubble_s, b.waiting_s);
  }
  if (r.screened > 0) {
    double best_screen = 0;
    for (const SweepRow& row : r.rows) {
      if (row.candidate.status == SweepStatus::kScreened) best_screen = std::max(best_screen, row.tokens_per_s);
    }
    out += fmt::format("{} only screened, at most {:.0f} tokens/s each (--csv lists {})\n",
                       counted(r.screened, "more plan"), best_screen, r.screened == 1 ? "it" : "them");
  }
  out += fmt::format(
      "vpp: model chunks per pipeline rank; mb: micro-batch size; m: micro-batches per replica; "
      "mem: peak stage, per GPU\nconvention: {}\n",
      r.flop_convention);
  return out;
}

std::string to_csv(const SweepReport& r) {
  std::string out = "rank";
  for (const std::string& key : r.varied_keys) out += "," + csv_field(key);
  out +=
      ",gpus,tp,pp,dp,layers_per_virtual_stage,vpp,micro_batch_size,num_microbatches,status,iteration_time_s,"
      "tokens_per_s,mfu,hfu,peak_memory_bytes,peak_stage,hbm_bytes,compute_s,tp_exposed_s,pp_exposed_s,dp_exposed_s,"
      "bubble_s,waiting_s,screen_tokens_per_s,reason\n";
  const auto derived = [](std::int64_t x) { return x > 0 ? std::to_string(x) : std::string(); };
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    const SweepCandidate& c = row.candidate;
    out += simulated(row) ? std::to_string(i + 1) : std::string();
    for (const std::string& v : c.point_values) out += "," + csv_field(v);
    out += fmt::format(",{},{},{},{},{},{},{},{},{}", c.gpus, c.tp, c.pp, derived(c.dp), c.layers_per_virtual_stage,
                       derived(c.virtual_stages), c.micro_batch_size, derived(c.num_microbatches), to_string(c.status));
    if (has_figures(row)) {
      const RankBreakdown& b = row.breakdown;
      out += fmt::format(",{},{},{},{}", row.iteration_time_s, row.tokens_per_s, row.mfu, row.hfu);
      out += fmt::format(",{},{},{}", c.peak_memory_bytes, c.peak_stage, c.hbm_bytes);
      out += fmt::format(",{},{},{},{},{},{}", b.compute_s, b.tp_exposed_s, b.pp_exposed_s, b.dp_exposed_s, b.bubble_s,
                         b.waiting_s);
      out += "," + screen_cell(row);
    } else if (c.status == SweepStatus::kOutOfMemory) {
      out += fmt::format(",,,,,{},{},{},,,,,,,", c.peak_memory_bytes, c.peak_stage, c.hbm_bytes);
    } else {
      out += ",,,,,,,,,,,,,,";
    }
    out += "," + csv_field(c.reason) + "\n";
  }
  return out;
}

std::string to_json(const SweepReport& r, std::size_t top) {
  JsonWriter w;
  w.begin_object();
  w.key("varied_keys").begin_array();
  for (const std::string& key : r.varied_keys) w.value(key);
  w.end_array();
  w.field("flop_convention", r.flop_convention);
  w.field("confirm_top", static_cast<std::uint64_t>(r.confirm_top));
  w.key("counts").begin_object();
  w.field("candidates", static_cast<std::uint64_t>(r.rows.size()));
  w.field("simulated", static_cast<std::uint64_t>(r.simulated));
  w.field("screened", static_cast<std::uint64_t>(r.screened));
  w.field("out_of_memory", static_cast<std::uint64_t>(r.out_of_memory));
  w.field("invalid", static_cast<std::uint64_t>(r.invalid));
  w.field("bound_violations", static_cast<std::uint64_t>(r.bound_violations));
  w.end_object();
  w.key("rows").begin_array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    const SweepCandidate& c = row.candidate;
    if (!written(row, i, top)) continue;
    w.begin_object();
    if (simulated(row)) w.field("rank", static_cast<std::uint64_t>(i + 1));
    w.field("status", to_string(c.status));
    w.key("point").begin_object();
    for (std::size_t k = 0; k < r.varied_keys.size(); ++k) w.field(r.varied_keys[k], c.point_values[k]);
    w.end_object();
    w.field("gpus", c.gpus).field("tp", c.tp).field("pp", c.pp).field("dp", c.dp);
    w.field("layers_per_virtual_stage", c.layers_per_virtual_stage).field("vpp", c.virtual_stages);
    w.field("micro_batch_size", c.micro_batch_size).field("num_microbatches", c.num_microbatches);
    if (c.status != SweepStatus::kInvalid) {
      w.key("memory").begin_object();
      w.field("peak_bytes", c.peak_memory_bytes).field("peak_stage", c.peak_stage).field("hbm_bytes", c.hbm_bytes);
      w.end_object();
    }
    if (has_figures(row)) {
      w.field("iteration_time_s", row.iteration_time_s).field("tokens_per_s", row.tokens_per_s);
      w.field("mfu", row.mfu).field("hfu", row.hfu).key("breakdown");
      write_breakdown_json(w, row.breakdown);
      if (row.screen_tokens_per_s > 0) w.field("screen_tokens_per_s", row.screen_tokens_per_s);
    }
    if (!simulated(row)) w.field("reason", c.reason);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
