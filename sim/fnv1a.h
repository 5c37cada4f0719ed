// FNV-1a, 64-bit (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/), fed in pieces: the
// hash of the named random streams' names (rng.h fnv1a64) and the checksum of trace.bin
// (scenarios/trace/binary_trace.h, fed as the file is written or read). Not cryptographic: it
// detects truncation and corruption, not tampering.
#pragma once

#include <cstdint>
#include <string_view>

namespace megasim::sim {

class Fnv1a64 {
 public:
  void add(std::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<std::uint8_t>(c);
      hash_ *= kPrime;
    }
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kOffsetBasis = 14695981039346656037ULL;
  static constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash_ = kOffsetBasis;
};

}  // namespace megasim::sim
