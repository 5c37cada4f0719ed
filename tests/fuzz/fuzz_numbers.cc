// Fuzz target: extreme numbers where they are used, not only where they are read. `--set`
// assignments, one per line, over a small job, then its iteration simulated, one collective on its
// fabric and a day of its campaign: every conversion to simulated time, every rate and every count
// the input reaches (the scenario and override targets stop at the plan). A ConfigError (a
// SimTimeError too) is a refusal; an abort ("an event was scheduled in the past", any
// MEGASIM_ASSERT), another exception or a sanitizer report is the bug. Inputs that make the job
// large are refused by the checks or skipped before simulating, so each input runs in milliseconds.
#include "fuzz_target.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/campaign/campaign_study.h"
#include "scenarios/studies/collective_study.h"
#include "scenarios/studies/run_study.h"

namespace megasim::fuzz {
namespace {

// 16 GPUs (2 per server) on a radix-8 Clos of two pods, a 4-layer GPT of hidden 256.
constexpr std::string_view kSmallJob = R"(
[cluster]
gpus = 16
gpus_per_server = 2
rails = 2
switch_radix = 8
servers_per_group = 2
[fabric]
stall_timeout_s = 7.5
[model]
num_layers = 4
hidden_size = 256
num_attention_heads = 4
seq_length = 256
vocab_size = 1024
[plan]
tensor_model_parallel_size = 2
pipeline_model_parallel_size = 2
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 8
[failures]
rate_scale = 50
)";

bool small_enough(const scenarios::Scenario& s) {
  return s.cluster.gpus <= 256 && s.model.num_layers <= 64 && s.model.hidden_size <= 4096 &&
         s.model.seq_length <= 65536 && s.plan.global_batch_size <= 1024;
}

}  // namespace

void run_input(std::string_view input) {
  scenarios::Scenario s = scenarios::load_scenario_text(kSmallJob, "small_job.toml");
  while (!input.empty()) {
    const std::size_t end = input.find('\n');
    scenarios::apply_override(s, input.substr(0, end));
    input = end == std::string_view::npos ? std::string_view{} : input.substr(end + 1);
  }
  if (!small_enough(s)) return;
  static_cast<void>(scenarios::run_iteration_study(s));
  scenarios::CollectiveRequest request;
  request.bytes = 1 << 20;
  static_cast<void>(scenarios::run_collective_study(s, request));
  scenarios::CampaignOptions campaign;
  campaign.days = 1;
  campaign.seeds = 1;
  campaign.threads = 1;
  static_cast<void>(scenarios::run_campaign_study(s, campaign));
}

}  // namespace megasim::fuzz
