// CpuOps::store_kv: values land in the right slots with the same bits as core's scalar
// conversions, and read back through attention's view of the cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/dequant.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"
#include "core/half.h"

namespace se {
namespace {

class KvStoreTest : public ::testing::TestWithParam<DType> {};

TEST_P(KvStoreTest, RoundTripsThroughTheCacheDtype) {
    const DType dtype = GetParam();
    const PagedKvLayout layout{dtype, 16, 3, 64};
    const int64_t num_blocks = 5;
    const int64_t entry = layout.entry_elems();
    const int64_t bytes = num_blocks * layout.block_elems() * dtype_block_bytes(dtype);
    std::vector<uint8_t> k_cpu(bytes, 0xab), v_cpu(bytes, 0xab);
    std::vector<uint8_t> k_ref(bytes, 0xab), v_ref(bytes, 0xab);
    const std::vector<int64_t> slots = {0, 17, 79, 40, 41, 15, 63};
    const auto n = static_cast<int64_t>(slots.size());
    std::vector<float> k = testing::random_floats(n * entry, 41, -70000, 70000);
    std::vector<float> v = testing::random_floats(n * entry, 42, -2, 2);
    // Special values: NaN, infinities, f16 subnormals, a bf16 rounding tie, f16 overflow.
    k[0] = std::numeric_limits<float>::quiet_NaN();
    k[1] = -std::numeric_limits<float>::infinity();
    k[2] = 3e-6f;
    k[3] = 1.00390625f;  // exactly between two bf16 values
    k[4] = 1e9f;
    v[5] = -0.0f;

    const PagedKvCache cpu_cache{layout, k_cpu.data(), v_cpu.data(), num_blocks};
    const PagedKvCache ref_cache{layout, k_ref.data(), v_ref.data(), num_blocks};
    CpuOps({.num_threads = 2})
        .store_kv(testing::f32_cview(k, n, entry), testing::f32_cview(v, n, entry), {slots},
                  cpu_cache);
    ReferenceOps().store_kv(testing::f32_cview(k, n, entry), testing::f32_cview(v, n, entry),
                            {slots}, ref_cache);
    EXPECT_EQ(k_cpu, k_ref);
    EXPECT_EQ(v_cpu, v_ref);

    // Read back: each slot holds its token's values converted once.
    const int64_t elem_bytes = dtype_block_bytes(dtype);
    std::vector<float> back(entry);
    for (int64_t t = 0; t < n; ++t) {
        dequantize_row(dtype, k_cpu.data() + slots[t] * entry * elem_bytes, back.data(), entry);
        for (int64_t e = 0; e < entry; ++e) {
            const float x = k[t * entry + e];
            const float want = dtype == DType::kF16    ? f16_to_f32(f32_to_f16(x))
                               : dtype == DType::kBF16 ? bf16_to_f32(f32_to_bf16(x))
                                                       : x;
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(back[e]));
            } else {
                EXPECT_EQ(back[e], want) << "token " << t << " element " << e;
            }
        }
    }
    // Slots nobody wrote keep their bytes.
    EXPECT_EQ(k_cpu[1 * entry * elem_bytes], 0xab);
    EXPECT_EQ(k_cpu[78 * entry * elem_bytes], 0xab);
}

INSTANTIATE_TEST_SUITE_P(CacheDtypes, KvStoreTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace se
