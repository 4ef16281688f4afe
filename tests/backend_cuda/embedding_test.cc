// cuda::embedding against ReferenceOps::embedding on a bf16 table, and on a vocabulary shard
// against ReferenceOps::embedding_shard (directly and through CudaOps, whose ids go through the
// step staging): bf16 -> f32 is exact, so the rows must be equal bit for bit.
#include "backend/cuda/embedding.h"

#include <gtest/gtest.h>

#include <limits>

#include "backend/cpu/reference_ops.h"
#include "backend/cuda/cuda_ops.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

constexpr int32_t kVocab = 1000;

struct Gathered {
    std::vector<float> got;
    Status status;
};

// Runs the kernel with the table's rows, first id and outside rule from `shape`.
Gathered gather(const std::vector<int32_t>& ids, const std::vector<float>& table, int32_t hidden,
                EmbeddingParams shape = {.vocab_size = kVocab}) {
    const DeviceBuffer d_ids = upload(ids);
    const DeviceBuffer d_table = upload_bf16(table);
    const auto n = static_cast<int32_t>(ids.size());
    const DeviceBuffer d_out = poisoned(sizeof(float) * n * hidden);
    Gathered r;
    shape.ids = d_ids.as<int32_t>();
    shape.table = d_table.as<bf16>();
    shape.out = d_out.as<float>();
    shape.num_tokens = n;
    shape.hidden = hidden;
    r.status = embedding(shape, nullptr);
    r.got = download<float>(d_out, static_cast<size_t>(n) * hidden);
    return r;
}

class EmbeddingTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(EmbeddingTest, GathersRowsExactly) {
    const int32_t hidden = GetParam();
    const std::vector<float> table = testing::random_bf16_values(int64_t{kVocab} * hidden, 1);
    const std::vector<int32_t> ids = {0, 999, 17, 17, 500, 3, 998, 1, 250};
    const Gathered r = gather(ids, table, hidden);
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();

    std::vector<float> want(ids.size() * hidden);
    ReferenceOps().embedding(ids, {DType::kF32, table.data(), kVocab, hidden},
                             {DType::kF32, want.data(), static_cast<int64_t>(ids.size()), hidden});
    testing::expect_all_equal(r.got, want, "embedding");
}

TEST_P(EmbeddingTest, OutOfRangeIdGivesNanRow) {
    const int32_t hidden = GetParam();
    const std::vector<float> table = testing::random_bf16_values(int64_t{kVocab} * hidden, 2);
    const Gathered r = gather({5, kVocab, -1}, table, hidden);
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    for (int32_t c = 0; c < hidden; ++c) {
        EXPECT_EQ(r.got[c], table[5 * hidden + c]);
        EXPECT_TRUE(std::isnan(r.got[hidden + c]));
        EXPECT_TRUE(std::isnan(r.got[2 * hidden + c]));
    }
}

// Rows [kShardFirst, kShardFirst + kShardRows) of a kVocab-row table, as one rank holds them.
constexpr int32_t kShardFirst = 300;
constexpr int32_t kShardRows = 400;

TEST_P(EmbeddingTest, ShardGathersItsRowsExactlyAndZerosForOtherIds) {
    const int32_t hidden = GetParam();
    const std::vector<float> shard = testing::random_bf16_values(int64_t{kShardRows} * hidden, 3);
    // Below, at and past both ends of the shard, repeats, and an id past the whole vocabulary.
    const std::vector<int32_t> ids = {0, 299, 300, 301, 699, 700, 999, 500, 500, 5000};
    const Gathered r = gather(
        ids, shard, hidden,
        {.vocab_size = kShardRows, .first_id = kShardFirst, .outside = EmbeddingOutside::kZero});
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();

    std::vector<float> want(ids.size() * hidden);
    ReferenceOps().embedding_shard(
        ids, {DType::kF32, shard.data(), kShardRows, hidden}, kShardFirst,
        {DType::kF32, want.data(), static_cast<int64_t>(ids.size()), hidden});
    testing::expect_all_equal(r.got, want, "embedding_shard");
}

TEST_P(EmbeddingTest, ShardGivesANegativeIdANanRow) {
    const int32_t hidden = GetParam();
    const std::vector<float> shard = testing::random_bf16_values(int64_t{kShardRows} * hidden, 4);
    const Gathered r = gather(
        {-1, 0}, shard, hidden,
        {.vocab_size = kShardRows, .first_id = kShardFirst, .outside = EmbeddingOutside::kZero});
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    for (int32_t c = 0; c < hidden; ++c) {
        EXPECT_TRUE(std::isnan(r.got[c]));
        EXPECT_EQ(r.got[hidden + c], 0.0f);
    }
}

TEST(CudaOpsEmbeddingShard, EqualsTheReferenceBitForBit) {
    constexpr int32_t kHidden = 64;
    auto ops = testing::must(CudaOps::create({.max_step_tokens = 64, .max_seqs = 4}));
    const std::vector<uint16_t> shard =
        testing::to_bf16(testing::random_floats(int64_t{kShardRows} * kHidden, 5));
    const std::vector<int32_t> ids = {0, 300, 699, 700, 512, 299};
    const auto n = static_cast<int64_t>(ids.size());
    const size_t out_bytes = static_cast<size_t>(n) * kHidden * sizeof(float);
    BackendBuffer table = testing::must(ops->allocate(shard.size() * sizeof(uint16_t)));
    testing::must_ok(ops->copy_from_host(table.data(), shard.data(), table.size()));
    BackendBuffer out = testing::must(ops->allocate(out_bytes));
    std::vector<float> got = se::testing::nan_filled(n * kHidden);
    testing::must_ok(ops->copy_from_host(out.data(), got.data(), out_bytes));

    ops->embedding_shard(ids, {DType::kBF16, table.data(), kShardRows, kHidden}, kShardFirst,
                         {DType::kF32, out.data(), n, kHidden});
    testing::must_ok(ops->copy_to_host(got.data(), out.data(), out_bytes));

    std::vector<float> want(got.size());
    ReferenceOps().embedding_shard(ids, {DType::kBF16, shard.data(), kShardRows, kHidden},
                                   kShardFirst, {DType::kF32, want.data(), n, kHidden});
    testing::expect_all_equal(got, want, "CudaOps::embedding_shard");
}

INSTANTIATE_TEST_SUITE_P(Hidden, EmbeddingTest, ::testing::Values(8, 576, 1032, 4096));

TEST(EmbeddingArgs, NoTokensIsANoOp) {
    EXPECT_TRUE(embedding({.num_tokens = 0, .vocab_size = kVocab, .hidden = 64}, nullptr).ok());
}

TEST(EmbeddingArgs, HiddenNotAMultipleOf8IsRejected) {
    const Status s = embedding({.num_tokens = 1, .vocab_size = kVocab, .hidden = 60}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("hidden"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace se::cuda
