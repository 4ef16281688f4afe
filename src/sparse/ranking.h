// Deterministic ranking primitives shared by the methods' selection rules.
//
//   top_k      the k highest scores, ties to the lower index, returned in ascending index order
//   pool1d     1-D pooling, stride 1, padding kernel / 2: max pads -inf, avg pads zeros and
//              divides by the kernel (PyTorch's count_include_pad), so both keep the length
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se {

// Indices of the min(k, n) highest scores, ascending. NaN ranks lowest.
std::vector<int32_t> top_k(std::span<const float> scores, int32_t k);

enum class PoolKind : uint8_t { kMax, kAvg };

// y[j] = pool of x[j - kernel/2 .. j + kernel/2]; kernel odd and >= 1 (1 copies x).
std::vector<float> pool1d(std::span<const float> x, int32_t kernel, PoolKind kind);

}  // namespace se
