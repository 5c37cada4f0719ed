#include "topology/ecmp.h"

#include <array>
#include <string>

#include "sim/enum_names.h"
#include "sim/error.h"
#include "sim/rng.h"

namespace megasim::topo {
namespace {

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

// MurmurHash3's 32-bit finaliser (Appleby): a bijective, non-linear avalanche mix.
std::uint32_t fmix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

void put_be(std::uint8_t* out, std::uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * (bytes - 1 - i)));
}

}  // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t init) {
  std::uint32_t crc = init;
  for (std::size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::uint16_t roce_source_port(std::uint32_t qp_number) {
  const std::uint32_t folded = qp_number ^ (qp_number >> 14) ^ (qp_number >> 28);
  return static_cast<std::uint16_t>(0xC000u | (folded & 0x3FFFu));
}

namespace {
constexpr sim::EnumNames<HashFunction, 2> kHashNames{{
    {"crc32", HashFunction::kCrc32},
    {"xor", HashFunction::kXor},
}};
}  // namespace

std::string_view to_string(HashFunction f) {
  return sim::enum_name(kHashNames, f);
}

HashFunction parse_hash_function(std::string_view text, std::string_view key) {
  return sim::parse_enum(kHashNames, text, key);
}

std::uint32_t EcmpHasher::switch_seed(NodeId switch_node) const {
  std::uint64_t state = config_.seed;
  if (!config_.polarized) {
    state ^= 0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(static_cast<std::uint32_t>(switch_node.value)) + 1);
  }
  const std::uint64_t mixed = sim::splitmix64(state);
  return static_cast<std::uint32_t>(mixed ^ (mixed >> 32));
}

std::uint32_t EcmpHasher::hash(const FiveTuple& tuple, NodeId switch_node) const {
  const std::uint32_t seed = switch_seed(switch_node);
  if (config_.function == HashFunction::kXor) {
    const std::uint32_t x = tuple.src_ip ^ tuple.dst_ip ^
                            (static_cast<std::uint32_t>(tuple.src_port) << 16 | tuple.dst_port) ^ tuple.protocol ^ seed;
    return (x >> 16) ^ (x & 0xFFFFu);
  }
  std::array<std::uint8_t, 13> bytes{};
  put_be(bytes.data(), tuple.src_ip, 4);
  put_be(bytes.data() + 4, tuple.dst_ip, 4);
  put_be(bytes.data() + 8, tuple.src_port, 2);
  put_be(bytes.data() + 10, tuple.dst_port, 2);
  bytes[12] = tuple.protocol;
  return fmix32(crc32(bytes.data(), bytes.size(), seed));
}

}  // namespace megasim::topo
