#include "backend/cpu/kv_store.h"

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/simd.h"
#include "core/check.h"
#include "core/half.h"

namespace se::cpu {

void convert_from_f32(const float* src, DType dtype, void* dst, int64_t n) {
    auto* out16 = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    switch (dtype) {
        case DType::kF32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case DType::kF16:
            for (; i + 8 <= n; i += 8) store_f16x8(out16 + i, _mm256_loadu_ps(src + i));
            for (; i < n; ++i) out16[i] = f32_to_f16(src[i]);
            return;
        case DType::kBF16:
            for (; i + 8 <= n; i += 8) store_bf16x8(out16 + i, _mm256_loadu_ps(src + i));
            for (; i < n; ++i) out16[i] = f32_to_bf16(src[i]);
            return;
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "KV cache dtype %s is not F32, F16 or BF16", dtype_name(dtype).data());
}

void store_kv_rows(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                   const PagedKvCache& cache) {
    const PagedKvLayout& layout = cache.layout;
    const int64_t entry = layout.entry_elems();
    const auto num_tokens = static_cast<int64_t>(write.slots.size());
    SE_CHECK(k.rows == num_tokens && v.rows == num_tokens && k.cols == entry && v.cols == entry,
             "store_kv: k [%lld, %lld], v [%lld, %lld], %lld slots of %lld elements",
             static_cast<long long>(k.rows), static_cast<long long>(k.cols),
             static_cast<long long>(v.rows), static_cast<long long>(v.cols),
             static_cast<long long>(num_tokens), static_cast<long long>(entry));
    const int64_t num_slots = cache.num_blocks * layout.block_size;
    const int64_t elem_bytes = dtype_block_bytes(layout.dtype);
    for (int64_t t = 0; t < num_tokens; ++t) {
        const int64_t slot = write.slots[t];
        SE_CHECK(slot >= 0 && slot < num_slots, "store_kv: slot %lld of %lld",
                 static_cast<long long>(slot), static_cast<long long>(num_slots));
        // [num_blocks, block_size, ...] makes entry `slot` the slot-th row of entries.
        const int64_t offset = slot * entry * elem_bytes;
        convert_from_f32(k.f32() + t * entry, layout.dtype,
                         static_cast<uint8_t*>(cache.k_blocks) + offset, entry);
        convert_from_f32(v.f32() + t * entry, layout.dtype,
                         static_cast<uint8_t*>(cache.v_blocks) + offset, entry);
    }
}

}  // namespace se::cpu
