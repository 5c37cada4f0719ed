// Bytes per element of the data types the cost model moves (activations and weights in bf16,
// main gradients, optimizer state and loss statistics in fp32, token ids in int64).
#pragma once

namespace megasim::models {

inline constexpr double kBf16Bytes = 2;
inline constexpr double kFp32Bytes = 4;
inline constexpr double kInt64Bytes = 8;

}  // namespace megasim::models
