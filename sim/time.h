// Simulated time: a signed 64-bit count of nanoseconds. Integer time keeps event ordering exact and
// runs bit-identical across machines.
//
// Range. Every simulated time and every duration is at most kMaxSimTime = 2^62 ns (about 146
// years, fifteen times the longest campaign, 3,650 days). Two such values add up to at most 2^63 ns,
// one more than INT64_MAX, so checking a sum against the limit (add_time) needs no wider type, and
// kInfiniteTime (INT64_MAX, "never") stays above every real time. The conversions from seconds and
// the scheduling of events check the limit (a predictable branch): a time beyond it throws
// SimTimeError, a ConfigError (exit code 2, Python ValueError) naming what overflowed, instead of
// wrapping to a negative time that would be "scheduled in the past".
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/error.h"

namespace megasim::sim {

using SimTime = std::int64_t;  // nanoseconds since the start of the simulation

inline constexpr SimTime kNanosecond = 1;
inline constexpr SimTime kMicrosecond = 1'000;
inline constexpr SimTime kMillisecond = 1'000'000;
inline constexpr SimTime kSecond = 1'000'000'000;
inline constexpr SimTime kInfiniteTime = INT64_MAX;
inline constexpr SimTime kMaxSimTime = SimTime{1} << 62;
inline constexpr double kMaxSimSeconds = static_cast<double>(kMaxSimTime) * 1e-9;  // about 4.6e9 s

// A simulated time or duration outside [0, kMaxSimTime]: "simulated time overflows: WHAT ..." for
// one too large, "simulated time is not a valid duration: WHAT ..." for a negative or NaN one.
class SimTimeError : public ConfigError {
 public:
  explicit SimTimeError(const std::string& message);
};

// Throws SimTimeError for `what` (a phrase naming the quantity and the keys that set it, e.g. "a
// compute task's duration (GPU speed, efficiencies, straggler factors)") of `seconds`.
[[noreturn]] void throw_time_error(std::string_view what, double seconds);

constexpr double to_seconds(SimTime t) {
  return static_cast<double>(t) * 1e-9;
}

// Rounds to the nearest nanosecond; throws SimTimeError naming `what` unless 0 <= seconds <=
// kMaxSimSeconds (NaN fails the test too).
inline SimTime from_seconds(double seconds, std::string_view what = "a simulated time") {
  if (!(seconds >= 0 && seconds <= kMaxSimSeconds)) throw_time_error(what, seconds);
  return static_cast<SimTime>(std::llround(seconds * 1e9));
}

// The same from a number of nanoseconds (rounded to the nearest), for rates given per nanosecond.
inline SimTime from_nanoseconds(double ns, std::string_view what = "a simulated time") {
  if (!(ns >= 0 && ns <= static_cast<double>(kMaxSimTime))) throw_time_error(what, ns * 1e-9);
  return static_cast<SimTime>(std::llround(ns));
}

// Rounds up, for "the earliest whole nanosecond at which a fluid quantity is done"; the same checks.
inline SimTime ceil_from_seconds(double seconds, std::string_view what = "a simulated time") {
  if (!(seconds >= 0 && seconds <= kMaxSimSeconds)) throw_time_error(what, seconds);
  return static_cast<SimTime>(std::ceil(seconds * 1e9));
}

// The same rounding up from a number of nanoseconds.
inline SimTime ceil_from_nanoseconds(double ns, std::string_view what = "a simulated time") {
  if (!(ns >= 0 && ns <= static_cast<double>(kMaxSimTime))) throw_time_error(what, ns * 1e-9);
  return static_cast<SimTime>(std::ceil(ns));
}

// t + d for a time and a duration in [0, kMaxSimTime]; throws SimTimeError naming `what` when the
// sum passes kMaxSimTime. Added as unsigned: at most 2^63, which fits (see the top).
inline SimTime add_time(SimTime t, SimTime d, std::string_view what = "an event's time") {
  const std::uint64_t sum = static_cast<std::uint64_t>(t) + static_cast<std::uint64_t>(d);
  if (sum > static_cast<std::uint64_t>(kMaxSimTime)) throw_time_error(what, to_seconds(t) + to_seconds(d));
  return static_cast<SimTime>(sum);
}

}  // namespace megasim::sim
