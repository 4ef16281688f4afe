// cuda::move_kv against ReferenceOps::move_kv (a sequential host loop) on a bf16 cache: both
// copy bf16 values, so the whole cache must be equal bit for bit. The moves form chains, where a
// move reads a slot an earlier move wrote, which only a sequential order gets right.
#include "backend/cuda/kv_move.h"

#include <gtest/gtest.h>

#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;

using KvMoveParam = std::tuple<int32_t, int32_t>;  // num_kv_heads, head_dim

class KvMoveTest : public ::testing::TestWithParam<KvMoveParam> {};

TEST_P(KvMoveTest, MatchesSequentialMoves) {
    const auto [num_kv_heads, head_dim] = GetParam();
    const int32_t block_size = 16;
    const int64_t num_blocks = 4;
    const PagedKvLayout layout{DType::kBF16, block_size, num_kv_heads, head_dim};
    const int64_t entry = layout.entry_elems();
    const int64_t num_slots = num_blocks * block_size;

    // Compaction toward the front (from > to, the common case), then chains in which a move's
    // source is an earlier move's destination (to[i] == from[i + 1] and longer), a move onto
    // itself, and moves across blocks in both directions.
    const std::vector<int64_t> from = {5, 9, 12, 40, 3, 4, 5, 20, 20, 33, 2, 63};
    const std::vector<int64_t> to = {1, 2, 3, 17, 4, 5, 6, 20, 60, 0, 33, 2};
    const std::vector<uint16_t> k_cache =
        testing::to_bf16(testing::random_floats(num_slots * entry, 1));
    const std::vector<uint16_t> v_cache =
        testing::to_bf16(testing::random_floats(num_slots * entry, 2));

    const DeviceBuffer d_from = upload(from);
    const DeviceBuffer d_to = upload(to);
    const DeviceBuffer d_k_cache = upload(k_cache);
    const DeviceBuffer d_v_cache = upload(v_cache);
    const Status s = move_kv({.from = d_from.as<int64_t>(),
                              .to = d_to.as<int64_t>(),
                              .k_blocks = d_k_cache.as<bf16>(),
                              .v_blocks = d_v_cache.as<bf16>(),
                              .num_slots = num_slots,
                              .num_moves = static_cast<int32_t>(from.size()),
                              .entry_elems = static_cast<int32_t>(entry)},
                             nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    std::vector<uint16_t> want_k = k_cache;
    std::vector<uint16_t> want_v = v_cache;
    const PagedKvCache cache{layout, want_k.data(), want_v.data(), num_blocks};
    ReferenceOps().move_kv(cache, from, to);
    EXPECT_TRUE(download<uint16_t>(d_k_cache, want_k.size()) == want_k) << "k cache differs";
    EXPECT_TRUE(download<uint16_t>(d_v_cache, want_v.size()) == want_v) << "v cache differs";
}

// Entries of 8 elements (one 16-byte access, most threads idle) up to 4096 (more than one pass
// of the block's threads).
INSTANTIATE_TEST_SUITE_P(Layouts, KvMoveTest,
                         ::testing::Values(KvMoveParam{1, 8}, KvMoveParam{4, 64},
                                           KvMoveParam{8, 128}, KvMoveParam{16, 256}));

TEST(KvMoveArgs, NoMovesIsANoOp) {
    EXPECT_TRUE(move_kv({.num_moves = 0, .entry_elems = 64}, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
