// The catalogue of invalid inputs (issue "Hardening"): malformed TOML, wrong types, negative or zero
// sizes, impossible plans, a plan that does not fit, unknown names, more GPUs than the fabric holds,
// bad options, truncated and foreign traces. Each case runs the megasim executable in a folder of
// its own and expects exit code 2, a message naming the key and the value, and no file written
// besides the case's own inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;

struct Case {
  const char* name;
  const char* args;          // after "megasim"; {S} is the case's scenario.toml, {175B} MegaScale's 175B file
  const char* toml;          // written to scenario.toml when not null
  const char* key;           // the message names it...
  const char* value;         // ...and the value
  bool needs_trace = false;  // the folder gets trace.json and cut.json (a truncated copy) first
};

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
  return text;
}

using megasim::cli_testing::Result;

Result run_in(const fs::path& dir, const std::string& args) {
  return megasim::cli_testing::run_shell("cd '" + dir.string() + "' && " + MEGASIM_BINARY + " " + args + " 2>&1");
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) out.insert(e.path().string());
  return out;
}

// A real trace of a small job, and the same cut in the middle of its events.
void write_traces(const fs::path& dir) {
  const Result r = run_in(dir, std::string("run ") + MEGASIM_SOURCE_DIR +
                                   "/tests/data/campaign_small.toml --max-trace-ranks 0 --out trace_run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::rename(dir / "trace_run" / "trace.json", dir / "trace.json");
  fs::remove_all(dir / "trace_run");
  const std::string text = megasim::cli_testing::contents(dir / "trace.json");
  std::ofstream(dir / "cut.json", std::ios::binary) << text.substr(0, text.size() / 2);
}

class BadInputCatalogue : public ::testing::TestWithParam<Case> {};

TEST_P(BadInputCatalogue, ExitsTwoNamesKeyAndValueAndWritesNothing) {
  const Case& c = GetParam();
  const fs::path dir = fs::temp_directory_path() / (std::string("megasim_bad_input_") + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (c.toml != nullptr) std::ofstream(dir / "scenario.toml") << c.toml;
  if (c.needs_trace) write_traces(dir);
  const std::set<std::string> before = listing(dir);
  std::string args = replace_all(c.args, "{S}", "scenario.toml");
  args = replace_all(args, "{175B}", std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale/175b_megascale.toml");
  const Result r = run_in(dir, args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(c.key), std::string::npos) << "key " << c.key << " not named:\n" << r.output;
  EXPECT_NE(r.output.find(c.value), std::string::npos) << "value " << c.value << " not named:\n" << r.output;
  EXPECT_EQ(listing(dir), before) << "output left behind by: " << args;
  fs::remove_all(dir);
}

// Every case writes to out/ when it can, so a partial output would show.
const Case kCases[] = {
    // Malformed TOML: the file, line and column.
    {"unterminated_string", "run {S} --out out", "[model]\nnum_layers = \"abc\n", "scenario.toml:2:", "malformed TOML"},
    {"duplicate_key", "run {S} --out out", "[model]\nnum_layers = 4\nnum_layers = 8\n",
     "scenario.toml:3:", "num_layers"},
    {"missing_equals", "run {S} --out out", "[model]\nnum_layers 4\n", "scenario.toml:2:", "expected '='"},
    // Wrong types.
    {"string_for_integer", "run {S} --out out", "[model]\nnum_layers = \"many\"\n", "model.num_layers", "\"many\""},
    {"fraction_for_integer", "run {S} --out out", "[model]\nhidden_size = 4096.5\n", "model.hidden_size", "4096.5"},
    {"integer_for_boolean", "run {S} --out out", "[plan]\nsequence_parallel = 1\n", "plan.sequence_parallel", "= 1"},
    {"integer_for_string", "run {S} --out out", "[cluster]\ngpu = 80\n", "cluster.gpu", "= 80"},
    {"unknown_section", "run {S} --out out", "[modle]\nnum_layers = 4\n", "modle.num_layers", "[modle]"},
    {"unknown_key", "run {S} --out out", "[model]\nnum_layer = 4\n", "model.num_layer", "unknown key"},
    {"bare_key", "run {S} --out out", "model = 3\n", "model", "a bare key"},
    {"set_without_equals", "run --set model.num_layers --out out", nullptr, "--set", "model.num_layers"},
    {"set_empty_value", "run --set model.num_layers= --out out", nullptr, "model.num_layers", "\"\""},
    {"set_exponent_for_integer", "run --set model.num_layers=1e3 --out out", nullptr, "model.num_layers", "1e3"},
    {"option_not_a_number", "run --seed abc --out out", nullptr, "--seed", "abc"},
    // Negative or zero sizes.
    {"zero_layers", "run --set model.num_layers=0 --out out", nullptr, "model.num_layers", "= 0"},
    {"negative_hidden", "run --set model.hidden_size=-4096 --out out", nullptr, "model.hidden_size", "-4096"},
    {"zero_seq_length", "run --set model.seq_length=0 --out out", nullptr, "model.seq_length", "= 0"},
    {"zero_heads", "run --set model.num_attention_heads=0 --out out", nullptr, "model.num_attention_heads", "= 0"},
    {"zero_vocab", "run --set model.vocab_size=0 --out out", nullptr, "model.vocab_size", "= 0"},
    {"negative_ffn", "run --set model.ffn_hidden_size=-1 --out out", nullptr, "model.ffn_hidden_size", "-1"},
    {"zero_micro_batch", "run --set plan.micro_batch_size=0 --out out", nullptr, "plan.micro_batch_size", "= 0"},
    {"negative_global_batch", "run --set plan.global_batch_size=-8 --out out", nullptr, "plan.global_batch_size", "-8"},
    {"zero_gpus", "run --set cluster.gpus=0 --out out", nullptr, "cluster.gpus", "= 0"},
    {"zero_gpus_per_server", "run --set cluster.gpus_per_server=0 --out out", nullptr, "cluster.gpus_per_server",
     "= 0"},
    {"negative_nic_speed", "run --set cluster.nic_gbps=-1 --out out", nullptr, "cluster.nic_gbps", "-1"},
    {"negative_seed", "run --set simulation.seed=-1 --out out", nullptr, "simulation.seed", "-1"},
    {"negative_sliding_window", "run --set plan.sliding_window_size=-1 --out out", nullptr, "plan.sliding_window_size",
     "-1"},
    // Impossible plans.
    {"tp_not_dividing_heads",
     "run --set model.num_attention_heads=12 --set model.hidden_size=1536 --set plan.tensor_model_parallel_size=8 "
     "--out out",
     nullptr, "plan.tensor_model_parallel_size", "= 8"},
    {"tp_beyond_server", "run --set plan.tensor_model_parallel_size=16 --out out", nullptr,
     "plan.tensor_model_parallel_size", "16"},
    {"layers_not_divisible_by_pp_vpp", "run {175B} --set plan.num_layers_per_virtual_pipeline_stage=5 --out out",
     nullptr, "plan.num_layers_per_virtual_pipeline_stage", "= 5"},
    {"tp_pp_not_dividing_gpus", "run {175B} --set plan.pipeline_model_parallel_size=5 --out out", nullptr,
     "plan.pipeline_model_parallel_size", "= 5"},
    {"global_batch_not_divisible", "run {175B} --set plan.global_batch_size=6145 --out out", nullptr,
     "plan.global_batch_size", "6145"},
    {"heads_not_dividing_hidden", "run --set model.hidden_size=1000 --out out", nullptr, "model.num_attention_heads",
     "hidden_size 1000"},
    {"query_groups_not_dividing_heads", "run --set model.num_query_groups=5 --out out", nullptr,
     "model.num_query_groups", "= 5"},
    {"does_not_fit",
     "run {175B} --set plan.tensor_model_parallel_size=1 --set plan.pipeline_model_parallel_size=1 "
     "--set plan.num_layers_per_virtual_pipeline_stage=0 --set plan.global_batch_size=12288 --out out",
     nullptr, "per GPU on pipeline stage 0", "has 85.9 GB"},
    // Unknown names.
    {"unknown_gpu", "run --set cluster.gpu=H900 --out out", nullptr, "cluster.gpu", "H900"},
    {"unknown_routing", "run --set fabric.routing=random --out out", nullptr, "fabric.routing", "random"},
    {"unknown_recompute", "run --set plan.recompute_granularity=some --out out", nullptr, "plan.recompute_granularity",
     "some"},
    {"unknown_activation", "run --set model.activation=relu7 --out out", nullptr, "model.activation", "relu7"},
    {"missing_scenario_file", "run missing.toml --out out", nullptr, "scenario", "missing.toml"},
    {"missing_calibration_file", "run --set calibration.file=missing_cal.toml --out out", nullptr, "calibration.file",
     "missing_cal.toml"},
    // Cluster and fabric.
    {"more_gpus_than_the_fabric", "run --set cluster.gpus=1000000 --out out", nullptr, "cluster.gpus", "1000000"},
    {"odd_switch_radix", "run --set cluster.switch_radix=63 --out out", nullptr, "cluster.switch_radix", "63"},
    {"four_tiers", "run --set cluster.tiers=4 --out out", nullptr, "cluster.tiers", "= 4"},
    {"gpus_not_multiple_of_server", "run --set cluster.gpus_per_server=3 --out out", nullptr, "cluster.gpus",
     "gpus_per_server = 3"},
    {"efficiency_above_one", "run --set fabric.network_efficiency=1.5 --out out", nullptr, "fabric.network_efficiency",
     "1.5"},
    {"zero_channels", "run --set collective.channels=0 --out out", nullptr, "collective.channels", "= 0"},
    // Stragglers.
    {"slow_host_fraction_above_one", "run --set stragglers.slow_host_fraction=2 --out out", nullptr,
     "stragglers.slow_host_fraction", "= 2 "},
    {"malformed_slow_hosts", "run --set stragglers.slow_hosts=x --out out", nullptr, "stragglers.slow_hosts", "= x"},
    {"negative_drift", "run --set stragglers.drift_per_hour=-0.5 --out out", nullptr, "stragglers.drift_per_hour",
     "-0.5"},
    // Campaigns.
    {"negative_mtbf", "campaign --set failures.gpu_mtbf_h=-1 --days 1", nullptr, "failures.gpu_mtbf_h", "-1"},
    {"zero_checkpoint_interval", "campaign --set checkpoint.interval_s=0 --days 1", nullptr, "checkpoint.interval_s",
     "= 0"},
    {"unknown_detection", "campaign --set recovery.detection=pager --days 1", nullptr, "recovery.detection", "pager"},
    {"zero_days", "campaign --days 0", nullptr, "--days", "= 0"},
    {"zero_seeds", "campaign --days 1 --seeds 0", nullptr, "--seeds", "= 0"},
    {"negative_interval", "campaign --days 1 --sweep-checkpoint-interval --intervals 600,-1", nullptr, "--intervals",
     "-1"},
    // Traces.
    {"truncated_trace", "whatif cut.json", nullptr, "cut.json:", "end of the input", true},
    {"not_a_trace", "whatif {S}", "{\"traceEvents\": []}", "scenario.toml", "no \"megasim\" object"},
    {"missing_trace", "whatif missing.json", nullptr, "missing.json", "missing.json"},
};

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputCatalogue, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
