// embedding_shard on a table split into row shards, as a vocabulary-parallel embedding splits it:
// each shard gives its own rows of the full embedding bit for bit and exact zeros elsewhere, so
// the sum of the shards' outputs is the full embedding. CpuOps against ReferenceOps too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

using testing::f32_view;
using testing::nan_filled;

// Rows [first, first + count) of `table` as a table of their own.
ConstTensorView table_rows(const ConstTensorView& table, int64_t first, int64_t count) {
    return {table.dtype, table.row(first), count, table.cols};
}

class EmbeddingShardTest : public ::testing::TestWithParam<std::tuple<DType, int32_t>> {};

TEST_P(EmbeddingShardTest, ShardsSumToTheFullEmbeddingAndAreZeroOutsideTheirRows) {
    const auto [dtype, num_shards] = GetParam();
    // 301 rows: the last shard is narrower. 150 x 576 values: above the threading threshold.
    const int64_t vocab = 301;
    const int64_t dim = 576;
    const int64_t shard_rows = (vocab + num_shards - 1) / num_shards;
    const testing::Weights table = testing::random_weights(dtype, vocab, dim, 21);
    std::vector<int32_t> ids(150);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 5) % vocab);
    // Every shard's first and last row.
    for (int32_t s = 0; s < num_shards; ++s) {
        ids[2 * s] = static_cast<int32_t>(s * shard_rows);
        ids[2 * s + 1] = static_cast<int32_t>(std::min(vocab, (s + 1) * shard_rows) - 1);
    }
    const auto n = static_cast<int64_t>(ids.size());
    CpuOps ops({.num_threads = 2});
    std::vector<float> full = nan_filled(n * dim);
    ops.embedding(ids, table.view(), f32_view(full, n, dim));

    std::vector<float> sum(static_cast<size_t>(n * dim), 0.0f);
    for (int32_t s = 0; s < num_shards; ++s) {
        const int64_t first = s * shard_rows;
        const int64_t rows = std::min(vocab, first + shard_rows) - first;
        const ConstTensorView part = table_rows(table.view(), first, rows);
        std::vector<float> got = nan_filled(n * dim);
        ops.embedding_shard(ids, part, static_cast<int32_t>(first), f32_view(got, n, dim));
        std::vector<float> want = nan_filled(n * dim);
        ReferenceOps().embedding_shard(ids, part, static_cast<int32_t>(first),
                                       f32_view(want, n, dim));
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << "shard " << s;
        for (int64_t i = 0; i < n; ++i) {
            const bool mine = ids[i] >= first && ids[i] < first + rows;
            const float* row = got.data() + i * dim;
            if (mine) {
                ASSERT_EQ(0, std::memcmp(row, full.data() + i * dim, dim * sizeof(float)))
                    << "shard " << s << ", id " << ids[i];
            } else {
                for (int64_t c = 0; c < dim; ++c) {
                    ASSERT_TRUE(row[c] == 0.0f && !std::signbit(row[c]))
                        << "shard " << s << ", id " << ids[i] << ": " << row[c];
                }
            }
        }
        for (size_t e = 0; e < sum.size(); ++e) sum[e] += got[e];
    }
    EXPECT_EQ(sum, full);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndShards, EmbeddingShardTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16,
                                                              DType::kQ8_0, DType::kQ4_1),
                                            ::testing::Values(2, 3)),
                         [](const auto& info) {
                             return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                    std::to_string(std::get<1>(info.param)) + "shards";
                         });

TEST(EmbeddingShard, IdsPastEveryShardGiveZeros) {
    const testing::Weights table = testing::random_weights(DType::kF32, 10, 8, 3);
    const std::vector<int32_t> ids = {4, 5, 1000};
    std::vector<float> got = nan_filled(3 * 8);
    CpuOps().embedding_shard(ids, table_rows(table.view(), 5, 5), 5, f32_view(got, 3, 8));
    for (int64_t c = 0; c < 8; ++c) {
        EXPECT_EQ(got[c], 0.0f);
        EXPECT_EQ(got[8 + c], table.view().f32()[5 * 8 + c]);
        EXPECT_EQ(got[16 + c], 0.0f);
    }
}

TEST(EmbeddingShardDeathTest, NegativeIdIsABug) {
    const testing::Weights table = testing::random_weights(DType::kF32, 10, 8, 3);
    const std::vector<int32_t> ids = {-1};
    std::vector<float> got = nan_filled(8);
    EXPECT_DEATH(CpuOps().embedding_shard(ids, table.view(), 0, f32_view(got, 1, 8)), "id -1");
}

}  // namespace
}  // namespace se
