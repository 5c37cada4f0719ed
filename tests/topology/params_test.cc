// Every invalid cluster parameter throws ConfigError naming its key.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "sim/error.h"
#include "topology/cluster_params.h"

namespace megasim::topo {
namespace {

struct BadCase {
  const char* name;
  std::function<void(ClusterParams&)> edit;
  const char* key;
  const char* message_part;  // a fragment the message must contain, beyond the key
};

void expect_rejected(const BadCase& c) {
  ClusterParams p;
  c.edit(p);
  try {
    validate(p);
    ADD_FAILURE() << c.name << ": expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), c.key) << c.name;
    EXPECT_NE(std::string(e.what()).find(c.key), std::string::npos) << c.name;
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.name << ": " << e.what();
  }
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Validate, DefaultsAreValid) {
  EXPECT_NO_THROW(validate(ClusterParams{}));
}

TEST(Validate, RejectsEachBadField) {
  const BadCase cases[] = {
      {"zero gpus", [](ClusterParams& p) { p.gpus = 0; }, "cluster.gpus", "multiple of gpus_per_server"},
      {"gpus not server multiple", [](ClusterParams& p) { p.gpus = 1020; }, "cluster.gpus", "= 8"},
      {"gpus_per_server 0", [](ClusterParams& p) { p.gpus_per_server = 0; }, "cluster.gpus_per_server", "from 1 to"},
      {"gpus_per_server huge", [](ClusterParams& p) { p.gpus_per_server = 1 << 20; }, "cluster.gpus_per_server",
       "from 1 to 4096"},
      {"gpus past the addresses", [](ClusterParams& p) { p.gpus = std::int64_t{1} << 40; }, "cluster.gpus",
       "10.0.0.0/8"},
      {"rails 0", [](ClusterParams& p) { p.rails = 0; }, "cluster.rails", "dividing"},
      {"rails not dividing server", [](ClusterParams& p) { p.rails = 3; }, "cluster.rails", "gpus_per_server = 8"},
      {"rails not dividing radix/2", [](ClusterParams& p) { p.switch_radix = 40, p.servers_per_group = 40; },
       "cluster.rails", "switch_radix/2 = 20"},
      {"nic 0", [](ClusterParams& p) { p.nic_gbps = 0; }, "cluster.nic_gbps", "> 0"},
      {"nic nan", [](ClusterParams& p) { p.nic_gbps = kNan; }, "cluster.nic_gbps", "finite"},
      {"nic above port share", [](ClusterParams& p) { p.nic_gbps = 400; }, "cluster.nic_gbps", "at most"},
      {"nvlink negative", [](ClusterParams& p) { p.nvlink_gbytes_per_s = -1; }, "cluster.nvlink_gbytes_per_s", "> 0"},
      {"nvlink inf", [](ClusterParams& p) { p.nvlink_gbytes_per_s = kInf; }, "cluster.nvlink_gbytes_per_s", "finite"},
      {"port 0", [](ClusterParams& p) { p.switch_port_gbps = 0; }, "cluster.switch_port_gbps", "> 0"},
      {"radix odd", [](ClusterParams& p) { p.switch_radix = 63; }, "cluster.switch_radix", "even"},
      {"radix 2", [](ClusterParams& p) { p.switch_radix = 2; }, "cluster.switch_radix", "between 4"},
      {"split 0", [](ClusterParams& p) { p.tor_downlink_split = 0; }, "cluster.tor_downlink_split", "between 1"},
      {"split 65", [](ClusterParams& p) { p.tor_downlink_split = 65; }, "cluster.tor_downlink_split", "and 64"},
      {"radix 1026", [](ClusterParams& p) { p.switch_radix = 1026; }, "cluster.switch_radix", "and 1024"},
      {"group 0", [](ClusterParams& p) { p.servers_per_group = 0; }, "cluster.servers_per_group", "between 1 and"},
      // A ToR has 32 ports x 2 = 64 NIC links and one NIC per server on each rail: at most 64.
      {"group 65", [](ClusterParams& p) { p.servers_per_group = 65; }, "cluster.servers_per_group", "= 64"},
      {"tor oversub < 1", [](ClusterParams& p) { p.tor_oversubscription = 0.5; }, "cluster.tor_oversubscription",
       ">= 1"},
      {"tor oversub fractional uplinks", [](ClusterParams& p) { p.tor_oversubscription = 3; },
       "cluster.tor_oversubscription", "whole number"},
      {"tor oversub nan", [](ClusterParams& p) { p.tor_oversubscription = kNan; }, "cluster.tor_oversubscription",
       ">= 1"},
      {"agg oversub fractional", [](ClusterParams& p) { p.agg_oversubscription = 1.5; }, "cluster.agg_oversubscription",
       "whole number"},
      {"agg oversub above radix/2", [](ClusterParams& p) { p.agg_oversubscription = 64; },
       "cluster.agg_oversubscription", "whole number"},
      {"tiers 1", [](ClusterParams& p) { p.tiers = 1; }, "cluster.tiers", "0 (automatic), 2 or 3"},
      {"tiers 4", [](ClusterParams& p) { p.tiers = 4; }, "cluster.tiers", "0 (automatic), 2 or 3"},
      {"link latency", [](ClusterParams& p) { p.link_latency_ns = -1; }, "cluster.link_latency_ns", ">= 0"},
      {"nvlink latency", [](ClusterParams& p) { p.nvlink_latency_ns = -5; }, "cluster.nvlink_latency_ns", ">= 0"},
      // One pod = 4 groups x 64 servers x 8 GPUs = 2048 GPUs; 4096 need two pods.
      {"two tiers, two pods", [](ClusterParams& p) { p.gpus = 4096, p.tiers = 2; }, "cluster.tiers", "2048"},
      // 64 pods (a core's 64 ports) x 2048 = 131072.
      {"above capacity", [](ClusterParams& p) { p.gpus = 131072 + 8; }, "cluster.gpus", "at most 131072"},
  };
  for (const auto& c : cases) expect_rejected(c);
}

TEST(Validate, CapacityScalesWithRadix) {
  ClusterParams p;
  // Radix 32: a pod has 16 ToRs = 2 groups of 32 servers (16 ports x 2 NIC links) x 8 GPUs = 512
  // GPUs, and a core's 32 ports allow 32 pods: 16384 GPUs.
  p.switch_radix = 32;
  p.servers_per_group = 32;
  p.gpus = 16384;
  EXPECT_NO_THROW(validate(p));
  p.gpus = 16384 + 8;
  EXPECT_THROW(validate(p), sim::ConfigError);
}

// Radix 1024, one GPU per server and rail: a pod holds 512 groups x 1024 servers = 524288 GPUs and
// 1024 pods would hold 2^29, but NIC addresses 10.0.0.1 + g limit the cluster to 2^24 - 2.
TEST(Validate, AddressSpaceLimit) {
  ClusterParams p;
  p.switch_radix = 1024;
  p.gpus_per_server = p.rails = 1;
  p.servers_per_group = 1024;
  p.gpus = (1 << 24) - 2;
  EXPECT_NO_THROW(validate(p));
  p.gpus = 1 << 24;
  try {
    validate(p);
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpus");
    EXPECT_NE(std::string(e.what()).find("at most 16777214"), std::string::npos) << e.what();
  }
}

TEST(Validate, AcceptsLargestAndSmallest) {
  ClusterParams p;
  p.gpus = 131072;
  EXPECT_NO_THROW(validate(p));
  p.gpus = 8;
  EXPECT_NO_THROW(validate(p));
  p.gpus = 1;
  p.gpus_per_server = 1;
  p.rails = 1;
  EXPECT_NO_THROW(validate(p));
}

}  // namespace
}  // namespace megasim::topo
