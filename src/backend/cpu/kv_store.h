// Writing a step's new K/V rows into the paged cache (kv_layout.h), converting f32 to the cache
// dtype (F32, F16 or BF16, round to nearest even).
#pragma once

#include <cstdint>

#include "backend/kv_layout.h"
#include "core/tensor_view.h"

namespace se::cpu {

// dst cache dtype [n] = src f32 [n]; dtype F32, F16 or BF16.
void convert_from_f32(const float* src, DType dtype, void* dst, int64_t n);

// k, v f32 [num_tokens, num_kv_heads * head_dim] -> entries write.slots of the cache.
void store_kv_rows(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                   const PagedKvCache& cache);

}  // namespace se::cpu
