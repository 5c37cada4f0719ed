// Strong integer ids: a LinkId cannot be passed where a GpuId is expected. The value is a dense
// index (0..n-1) into the owner's tables; kInvalid marks "none".
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace megasim::sim {

template <typename Tag, typename Rep = std::int32_t>
struct StrongId {
  using rep_type = Rep;
  static constexpr Rep kInvalidValue = static_cast<Rep>(-1);

  Rep value = kInvalidValue;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : value(v) {}

  [[nodiscard]] constexpr bool valid() const { return value != kInvalidValue; }
  // The id as an index into a std::vector.
  [[nodiscard]] constexpr std::size_t index() const { return static_cast<std::size_t>(value); }

  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

}  // namespace megasim::sim

template <typename Tag, typename Rep>
struct std::hash<megasim::sim::StrongId<Tag, Rep>> {
  std::size_t operator()(megasim::sim::StrongId<Tag, Rep> id) const noexcept { return std::hash<Rep>{}(id.value); }
};
