// Hash functions of ecmp.h against known values and their defining properties.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "sim/error.h"
#include "topology/ecmp.h"

namespace megasim::topo {
namespace {

TEST(Crc32, StandardCheckValue) {
  // The CRC-32 catalogue check value: CRC of the ASCII bytes "123456789" is 0xCBF43926.
  constexpr std::string_view kCheck = "123456789";
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(kCheck.data());
  EXPECT_EQ(crc32(bytes, kCheck.size(), 0xFFFFFFFFu), 0xCBF43926u);
  // Empty input: the register is untouched, so the result is init ^ 0xFFFFFFFF.
  EXPECT_EQ(crc32(bytes, 0, 0xFFFFFFFFu), 0u);
  // Chaining: the CRC of a split message continues from the un-inverted register.
  const std::uint32_t head = crc32(bytes, 4, 0xFFFFFFFFu) ^ 0xFFFFFFFFu;
  EXPECT_EQ(crc32(bytes + 4, kCheck.size() - 4, head), 0xCBF43926u);
}

TEST(RoceSourcePort, InDynamicRangeAndDistinctForNearbyQps) {
  std::set<std::uint16_t> ports;
  for (std::uint32_t qp = 0; qp < 1000; ++qp) {
    const std::uint16_t port = roce_source_port(qp);
    EXPECT_GE(port, 49152);  // 0xC000
    ports.insert(port);
  }
  EXPECT_EQ(ports.size(), 1000u);  // below 2^14 the fold is the identity on the low bits
}

TEST(EcmpHasher, FunctionsDiffer) {
  const FiveTuple t{0x0A000001u, 0x0A000201u, 0xC123};
  const EcmpHasher crc(EcmpConfig{HashFunction::kCrc32, false, 1});
  const EcmpHasher xr(EcmpConfig{HashFunction::kXor, false, 1});
  int differ = 0;
  for (std::int32_t sw = 0; sw < 100; ++sw) differ += crc.hash(t, NodeId(sw)) != xr.hash(t, NodeId(sw)) ? 1 : 0;
  EXPECT_GT(differ, 90);
  // The xor fold is 16 bits wide.
  EXPECT_LT(xr.hash(t, NodeId(3)), 1u << 16);
}

TEST(EcmpHasher, XorHashFollowsItsFormula) {
  const FiveTuple a{0x0A000001u, 0x0A000201u, 0xC123};
  FiveTuple b = a;
  b.src_port = 0xC124;
  const EcmpHasher xr(EcmpConfig{HashFunction::kXor, true, 9});
  // Same seed everywhere (polarized); ports differ in the low bits 0x3 ^ 0x4 = 0x7, and the fold
  // (x >> 16) ^ (x & 0xFFFF) moves the port's bits down unchanged: the hashes differ by 0x7.
  EXPECT_EQ(xr.hash(a, NodeId(1)) ^ xr.hash(b, NodeId(1)), 0x7u);
}

TEST(EcmpHasher, SeedsPerSwitchUnlessPolarized) {
  const FiveTuple t{1, 2, 0xC000};
  const EcmpHasher per_switch(EcmpConfig{HashFunction::kCrc32, false, 11});
  const EcmpHasher polarized(EcmpConfig{HashFunction::kCrc32, true, 11});
  std::set<std::uint32_t> seen_per_switch, seen_polarized;
  for (std::int32_t sw = 0; sw < 50; ++sw) {
    seen_per_switch.insert(per_switch.hash(t, NodeId(sw)));
    seen_polarized.insert(polarized.hash(t, NodeId(sw)));
  }
  EXPECT_EQ(seen_polarized.size(), 1u);
  EXPECT_EQ(seen_per_switch.size(), 50u);
  // Different fabric seeds give different functions.
  EXPECT_NE(EcmpHasher(EcmpConfig{HashFunction::kCrc32, true, 12}).hash(t, NodeId(0)), polarized.hash(t, NodeId(0)));
  EXPECT_LT(per_switch.choose(t, NodeId(4), 7), 7u);
}

TEST(EcmpHasher, ParseHashFunction) {
  EXPECT_EQ(parse_hash_function("crc32", "fabric.hash"), HashFunction::kCrc32);
  EXPECT_EQ(parse_hash_function("xor", "fabric.hash"), HashFunction::kXor);
  EXPECT_EQ(to_string(HashFunction::kXor), "xor");
  try {
    (void)parse_hash_function("md5", "fabric.hash");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "fabric.hash");
    EXPECT_NE(std::string(e.what()).find("crc32"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("xor"), std::string::npos);
  }
}

}  // namespace
}  // namespace megasim::topo
