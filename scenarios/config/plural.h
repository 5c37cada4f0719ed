// Counts in text reports, in the right grammatical number: counted(1, "pod") is "1 pod",
// counted(2, "pod") "2 pods", counted(3, "host", "hosts") with an irregular plural.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace megasim::scenarios {

// The noun for `n` of it: `singular` for exactly one, else `plural` (default: singular + "s").
template <typename N>
requires std::integral<N> || std::floating_point<N> std::string noun_for(N n, std::string_view singular,
                                                                         std::string_view plural = {}) {
  if (n == N{1}) return std::string(singular);
  return plural.empty() ? std::string(singular) + "s" : std::string(plural);
}

// "<n> <noun>", n formatted by {} (integers as they are, 1.5 days as "1.5 days").
template <typename N>
requires std::integral<N> || std::floating_point<N> std::string counted(N n, std::string_view singular,
                                                                        std::string_view plural = {}) {
  return fmt::format("{} {}", n, noun_for(n, singular, plural));
}

}  // namespace megasim::scenarios
