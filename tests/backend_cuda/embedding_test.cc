// cuda::embedding against ReferenceOps::embedding on a bf16 table: bf16 -> f32 is exact, so the
// rows must be equal bit for bit.
#include "backend/cuda/embedding.h"

#include <gtest/gtest.h>

#include <limits>

#include "backend/cpu/reference_ops.h"
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

Gathered gather(const std::vector<int32_t>& ids, const std::vector<float>& table, int32_t hidden) {
    const DeviceBuffer d_ids = upload(ids);
    const DeviceBuffer d_table = upload_bf16(table);
    const auto n = static_cast<int32_t>(ids.size());
    const DeviceBuffer d_out = poisoned(sizeof(float) * n * hidden);
    Gathered r;
    r.status = embedding({.ids = d_ids.as<int32_t>(),
                          .table = d_table.as<bf16>(),
                          .out = d_out.as<float>(),
                          .num_tokens = n,
                          .vocab_size = kVocab,
                          .hidden = hidden},
                         nullptr);
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
