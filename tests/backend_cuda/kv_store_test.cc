// cuda::store_kv against ReferenceOps::store_kv into a bf16 cache: both copy bf16 values, so the
// whole cache (written slots and every slot around them) must be equal bit for bit.
#include "backend/cuda/kv_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;
using testing::upload_bf16;

using KvStoreParam = std::tuple<int32_t, int32_t>;  // block size, head dim

class KvStoreTest : public ::testing::TestWithParam<KvStoreParam> {};

TEST_P(KvStoreTest, WritesSlotsAndNothingElse) {
    const auto [block_size, head_dim] = GetParam();
    const int32_t num_kv_heads = 4;
    const int64_t num_blocks = 9;
    const PagedKvLayout layout{DType::kBF16, block_size, num_kv_heads, head_dim};
    const int64_t entry = layout.entry_elems();
    const int64_t num_slots = num_blocks * block_size;

    // 37 tokens (not a multiple of the block size) to distinct random slots; k and v rows sit
    // inside wider fused rows.
    std::vector<int64_t> slots(num_slots);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937(5));
    slots.resize(37);
    const auto n = static_cast<int32_t>(slots.size());
    const int64_t row_stride = 3 * entry;
    const std::vector<float> rows = testing::random_bf16_values(n * row_stride, 1);
    const std::vector<uint16_t> k_cache =
        testing::to_bf16(testing::random_floats(num_slots * entry, 2));
    const std::vector<uint16_t> v_cache =
        testing::to_bf16(testing::random_floats(num_slots * entry, 3));

    const DeviceBuffer d_rows = upload_bf16(rows);
    const DeviceBuffer d_slots = upload(slots);
    const DeviceBuffer d_k_cache = upload(k_cache);
    const DeviceBuffer d_v_cache = upload(v_cache);
    const Status s = store_kv({.k = d_rows.as<bf16>() + entry,
                               .v = d_rows.as<bf16>() + 2 * entry,
                               .slots = d_slots.as<int64_t>(),
                               .k_blocks = d_k_cache.as<bf16>(),
                               .v_blocks = d_v_cache.as<bf16>(),
                               .row_stride = row_stride,
                               .num_slots = num_slots,
                               .num_tokens = n,
                               .entry_elems = static_cast<int32_t>(entry)},
                              nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    std::vector<float> k(n * entry);
    std::vector<float> v(n * entry);
    for (int32_t t = 0; t < n; ++t) {
        std::copy_n(rows.begin() + t * row_stride + entry, entry, k.begin() + t * entry);
        std::copy_n(rows.begin() + t * row_stride + 2 * entry, entry, v.begin() + t * entry);
    }
    std::vector<uint16_t> want_k = k_cache;
    std::vector<uint16_t> want_v = v_cache;
    const PagedKvCache cache{layout, want_k.data(), want_v.data(), num_blocks};
    ReferenceOps().store_kv({DType::kF32, k.data(), n, entry}, {DType::kF32, v.data(), n, entry},
                            {slots}, cache);
    EXPECT_TRUE(download<uint16_t>(d_k_cache, want_k.size()) == want_k) << "k cache differs";
    EXPECT_TRUE(download<uint16_t>(d_v_cache, want_v.size()) == want_v) << "v cache differs";
}

INSTANTIATE_TEST_SUITE_P(Layouts, KvStoreTest,
                         ::testing::Combine(::testing::Values(16, 32), ::testing::Values(64, 128)));

}  // namespace
}  // namespace se::cuda
