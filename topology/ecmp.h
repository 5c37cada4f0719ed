// ECMP path selection by hashing the RoCEv2 5-tuple. A switch with n live equal-cost next hops
// forwards a packet to next hop hash(tuple, switch seed) mod n. Each switch has its own seed
// derived from the fabric seed, unless `polarized` is set: then every switch uses the same function
// and seed, so consecutive tiers make correlated choices ("hash polarization").
#pragma once

#include <cstdint>
#include <string_view>

#include "topology/ids.h"

namespace megasim::topo {

inline constexpr std::uint16_t kRoceV2UdpPort = 4791;
inline constexpr std::uint8_t kUdpProtocol = 17;

struct FiveTuple {
  std::uint32_t src_ip = 0;
  std::uint32_t dst_ip = 0;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = kRoceV2UdpPort;
  std::uint8_t protocol = kUdpProtocol;
};

// The UDP source port a RoCEv2 NIC uses for a queue pair: the port carries flow entropy derived
// from the QP number, in the range 49152..65535 recommended by the RoCEv2 annex.
std::uint16_t roce_source_port(std::uint32_t qp_number);

enum class HashFunction : std::uint8_t { kCrc32, kXor };
std::string_view to_string(HashFunction f);
// Parses "crc32" or "xor"; throws ConfigError(key, text, valid names) otherwise.
HashFunction parse_hash_function(std::string_view text, std::string_view key);

struct EcmpConfig {
  HashFunction function = HashFunction::kCrc32;
  bool polarized = false;
  std::uint64_t seed = 0;  // the fabric's hashing seed (from the scenario's named RNG streams)
};

// The hash functions. The tuple is serialised as 13 bytes, big-endian fields in the order src_ip,
// dst_ip, src_port, dst_port, protocol.
//   kCrc32: fmix32(crc32(bytes, seed)), the MurmurHash3 finaliser applied to the CRC. CRC is affine
//           over GF(2), so a seed used only as the CRC init value XORs a constant into the hash, and
//           hash mod 2^k would then split the tuples into the same classes at every switch (each
//           switch merely permutes its next hops): polarization despite per-switch seeds. Real
//           ASICs break this with per-switch hash-bit selection; the non-linear finaliser models it.
//   kXor:   x = src_ip ^ dst_ip ^ (src_port << 16 | dst_port) ^ protocol ^ seed, folded to 16 bits
//           as (x >> 16) ^ (x & 0xFFFF), as simple switches do. Linear, so with power-of-two groups
//           it correlates the choices of consecutive tiers even with per-switch seeds: a deliberate
//           what-if of a weak hash.
// The seed of a switch is splitmix64(config.seed ^ golden * (node + 1)) folded to 32 bits, or
// splitmix64(config.seed) folded at every switch when `polarized`.
class EcmpHasher {
 public:
  explicit EcmpHasher(EcmpConfig config) : config_(config) {}
  // The 32-bit hash a given switch computes for a tuple.
  [[nodiscard]] std::uint32_t hash(const FiveTuple& tuple, NodeId switch_node) const;
  // Next-hop index in [0, n) among n > 0 live equal-cost next hops.
  [[nodiscard]] std::uint32_t choose(const FiveTuple& tuple, NodeId switch_node, std::uint32_t n) const {
    return hash(tuple, switch_node) % n;
  }
  [[nodiscard]] const EcmpConfig& config() const { return config_; }

 private:
  [[nodiscard]] std::uint32_t switch_seed(NodeId switch_node) const;
  EcmpConfig config_;
};

// CRC-32 with the IEEE 802.3 polynomial in reflected form (0xEDB88320), table-driven: the register
// starts at `init` (not inverted), takes the bytes least-significant bit first, and the result is
// the register XOR 0xFFFFFFFF. crc32(data, n, 0xFFFFFFFF) is the standard CRC-32 of zlib and
// Ethernet (check value crc32("123456789") = 0xCBF43926). Exposed for tests.
std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t init);

}  // namespace megasim::topo
