// Simulated time: a signed 64-bit count of nanoseconds. Integer time keeps event ordering exact and
// runs bit-identical across machines; 2^63 ns is about 292 years, enough for any campaign.
#pragma once

#include <cmath>
#include <cstdint>

namespace megasim::sim {

using SimTime = std::int64_t;  // nanoseconds since the start of the simulation

inline constexpr SimTime kNanosecond = 1;
inline constexpr SimTime kMicrosecond = 1'000;
inline constexpr SimTime kMillisecond = 1'000'000;
inline constexpr SimTime kSecond = 1'000'000'000;
inline constexpr SimTime kInfiniteTime = INT64_MAX;

constexpr double to_seconds(SimTime t) {
  return static_cast<double>(t) * 1e-9;
}

// Rounds to the nearest nanosecond. Precondition: 0 <= seconds < ~9.2e9.
inline SimTime from_seconds(double seconds) {
  return static_cast<SimTime>(std::llround(seconds * 1e9));
}

// Rounds up, for "the earliest whole nanosecond at which a fluid quantity is done".
inline SimTime ceil_from_seconds(double seconds) {
  return static_cast<SimTime>(std::ceil(seconds * 1e9));
}

}  // namespace megasim::sim
