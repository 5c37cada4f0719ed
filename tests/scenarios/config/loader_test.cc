#include "scenarios/config/loader.h"

#include <gtest/gtest.h>

#include <string>

#include "scenarios/config/units.h"
#include "sim/error.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::config_error_message;

TEST(Loader, ReadsEverySectionOverDefaults) {
  const Scenario s = load_scenario_text(R"(
[simulation]
seed = 7
[cluster]
gpus = 4096
tor_oversubscription = 2
[fabric]
routing = "spray"
ecmp_hash = "xor"
ecmp_polarized = true
failure_detection_s = 0.25
[collective]
channels = 4
net_step_latency_us = 7.5
[plan]
tensor_model_parallel_size = 4
)");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.cluster.gpus, 4096);
  EXPECT_DOUBLE_EQ(s.cluster.tor_oversubscription, 2.0);  // an integer is accepted for a number
  EXPECT_EQ(s.cluster.gpus_per_server, 8);                // untouched default
  EXPECT_EQ(s.fabric.routing, backend::Routing::kSpray);
  EXPECT_EQ(s.fabric.ecmp.function, topo::HashFunction::kXor);
  EXPECT_TRUE(s.fabric.ecmp.polarized);
  EXPECT_EQ(s.fabric.failure_detection_ns, 250 * sim::kMillisecond);
  EXPECT_EQ(s.collective.channels, 4);
  EXPECT_EQ(s.collective.net_step_latency_ns, 7500);
  EXPECT_EQ(s.plan.tensor_model_parallel_size, 4);
}

TEST(Loader, BadInputsNameTheKey) {
  config_error_message([] { load_scenario_text("[cluster]\ngpus = \"many\"\n"); }, "cluster.gpus");
  config_error_message([] { load_scenario_text("[cluster]\ngpus = 1.5\n"); }, "cluster.gpus");
  config_error_message([] { load_scenario_text("[cluster]\nnic_gbps = [1, 2]\n"); }, "cluster.nic_gbps");
  config_error_message([] { load_scenario_text("[cluster]\nfoo = 1\n"); }, "cluster.foo");
  config_error_message([] { load_scenario_text("[network]\ngpus = 1\n"); }, "network.gpus");
  config_error_message([] { load_scenario_text("gpus = 8\n"); }, "gpus");
  config_error_message([] { load_scenario_text("[fabric]\nrouting = \"random\"\n"); }, "fabric.routing");
  config_error_message([] { load_scenario_text("[fabric]\necmp_hash = \"md5\"\n"); }, "fabric.ecmp_hash");
  config_error_message([] { load_scenario_text("[fabric]\nfailure_detection_s = -1\n"); },
                       "fabric.failure_detection_s");
  config_error_message([] { load_scenario_text("[simulation]\nseed = -3\n"); }, "simulation.seed");
  config_error_message([] { load_scenario_text("[cluster]\nswitch_radix = 4294967296\n"); }, "cluster.switch_radix");
}

TEST(Loader, MalformedTomlNamesFileLineAndColumn) {
  try {
    load_scenario_text("[cluster]\ngpus = = 3\n", "bad.toml");
    FAIL();
  } catch (const sim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:2:"), std::string::npos) << e.what();
  }
}

TEST(Loader, MissingFileIsAConfigError) {
  config_error_message([] { load_scenario_file("/nonexistent/scenario.toml"); }, "scenario");
}

TEST(Overrides, ParseByKeyType) {
  Scenario s;
  apply_overrides(s, {"cluster.gpus=12288", "fabric.routing=adaptive", "fabric.ecmp_polarized=true",
                      "cluster.nic_gbps=400", "simulation.name=\"study\""});
  EXPECT_EQ(s.cluster.gpus, 12288);
  EXPECT_EQ(s.fabric.routing, backend::Routing::kAdaptive);
  EXPECT_TRUE(s.fabric.ecmp.polarized);
  EXPECT_DOUBLE_EQ(s.cluster.nic_gbps, 400.0);
  EXPECT_EQ(s.name, "study");
  config_error_message([&] { apply_override(s, "cluster.gpus=12k"); }, "cluster.gpus");
  config_error_message([&] { apply_override(s, "cluster.nic_gbps=fast"); }, "cluster.nic_gbps");
  config_error_message([&] { apply_override(s, "fabric.ecmp_polarized=yes"); }, "fabric.ecmp_polarized");
  config_error_message([&] { apply_override(s, "gpus=8"); }, "--set");
  config_error_message([&] { apply_override(s, "cluster.gpus"); }, "--set");
}

// plan.attention_kernel: the three kernels from TOML and --set; anything else names the key, the
// value and the valid ones.
TEST(Overrides, AttentionKernelAcceptsItsValuesOnly) {
  EXPECT_EQ(load_scenario_text("[plan]\nattention_kernel = \"flash_attention_1\"\n").plan.attention_kernel,
            models::AttentionKernel::kFlashAttention1);
  Scenario s;
  EXPECT_EQ(s.plan.attention_kernel, models::AttentionKernel::kUnfused);
  apply_override(s, "plan.attention_kernel=flash_attention_2");
  EXPECT_EQ(s.plan.attention_kernel, models::AttentionKernel::kFlashAttention2);
  apply_override(s, "plan.attention_kernel=unfused");
  EXPECT_EQ(s.plan.attention_kernel, models::AttentionKernel::kUnfused);
  const std::string message =
      config_error_message([&] { apply_override(s, "plan.attention_kernel=flash3"); }, "plan.attention_kernel");
  for (const char* part : {"flash3", "unfused", "flash_attention_1", "flash_attention_2"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
  config_error_message([] { load_scenario_text("[plan]\nattention_kernel = 1\n"); }, "plan.attention_kernel");
}

TEST(Units, ParseBytes) {
  EXPECT_DOUBLE_EQ(parse_bytes("1GiB", "--bytes"), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bytes("64MiB", "--bytes"), 64.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_bytes("4GB", "--bytes"), 4e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1e6", "--bytes"), 1e6);
  EXPECT_DOUBLE_EQ(parse_bytes("2 KiB", "--bytes"), 2048.0);
  for (const char* bad : {"", "GiB", "1XB", "-4MiB", "0", "inf"}) {
    config_error_message([&] { parse_bytes(bad, "--bytes"); }, "--bytes");
  }
  // Whole bytes from 1 to 2^50: 1.5 KB is 1500 bytes, 0.5 B and 1e-300 B are not whole, 2^50 + 1 KiB
  // and 2^64 are too many.
  EXPECT_DOUBLE_EQ(parse_bytes("1.5KB", "--bytes"), 1500.0);
  EXPECT_DOUBLE_EQ(parse_bytes("1024TiB", "--bytes"), kMaxBytes);
  for (const char* bad : {"0.5", "1e-300", "1025TiB", "18446744073709551616", "1e30"}) {
    config_error_message([&] { parse_bytes(bad, "--bytes"); }, "--bytes");
  }
  EXPECT_EQ(format_bytes(1073741824.0), "1 GiB");
  EXPECT_EQ(format_bytes(1536.0), "1.5 KiB");
}

}  // namespace
}  // namespace megasim::scenarios
