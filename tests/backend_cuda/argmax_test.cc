// cuda::argmax against a host loop, exactly: the index of the largest non-NaN value, the lowest
// on ties, 0 for a row of NaN. Rows of every kind go through one launch, in strided storage.
#include "backend/cuda/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::poisoned;
using testing::upload;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

int32_t reference_argmax(const float* row, int32_t vocab) {
    int32_t best = -1;
    for (int32_t i = 0; i < vocab; ++i) {
        if (std::isnan(row[i])) continue;
        if (best < 0 || row[i] > row[best]) best = i;
    }
    return best < 0 ? 0 : best;
}

// One row per case; each starts random in [-10, 10].
std::vector<std::vector<float>> make_rows(int32_t vocab) {
    const auto random_row = [&](uint32_t seed) {
        return testing::random_floats(vocab, seed, -10, 10);
    };
    std::vector<std::vector<float>> rows;
    rows.push_back(random_row(1));
    rows.push_back(random_row(2));

    std::vector<float> ties = random_row(3);  // the maximum three times
    for (const int32_t i : {vocab - 1, vocab / 2, vocab / 3}) ties[i] = 20.0f;
    rows.push_back(ties);

    rows.emplace_back(vocab, -kInf);  // all -inf: index 0
    std::vector<float> one_finite(vocab, -kInf);
    one_finite[vocab * 2 / 3] = -1e30f;
    rows.push_back(one_finite);

    rows.emplace_back(vocab, kNan);  // all NaN: index 0
    std::vector<float> nan_and_inf(vocab, kNan);
    nan_and_inf[vocab - 1] = -kInf;  // the only number, however small
    rows.push_back(nan_and_inf);
    std::vector<float> some_nan = random_row(4);
    for (int32_t i = 0; i < vocab; i += 3) some_nan[i] = kNan;  // index 0 included
    rows.push_back(some_nan);

    std::vector<float> last = random_row(5);
    last[vocab - 1] = 11.0f;
    rows.push_back(last);

    std::vector<float> signed_zeros(vocab, -1.0f);  // -0 and +0 are equal: the lower index wins
    signed_zeros[vocab - 1] = 0.0f;
    signed_zeros[vocab / 2] = -0.0f;
    rows.push_back(signed_zeros);
    return rows;
}

class ArgmaxTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(ArgmaxTest, MatchesHostLoop) {
    const int32_t vocab = GetParam();
    const std::vector<std::vector<float>> rows = make_rows(vocab);
    const auto num_rows = static_cast<int32_t>(rows.size());
    const int64_t stride = vocab + 5;                     // rows start at unaligned addresses
    std::vector<float> logits(num_rows * stride, 1e38f);  // padding would win if it were read
    for (int32_t r = 0; r < num_rows; ++r)
        std::copy(rows[r].begin(), rows[r].end(), logits.begin() + r * stride);

    const DeviceBuffer d_logits = upload(logits);
    const DeviceBuffer d_out = poisoned(sizeof(int32_t) * num_rows);
    const Status s = argmax({.logits = d_logits.as<float>(),
                             .out = d_out.as<int32_t>(),
                             .row_stride = stride,
                             .num_rows = num_rows,
                             .vocab = vocab},
                            nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const std::vector<int32_t> got = download<int32_t>(d_out, num_rows);
    for (int32_t r = 0; r < num_rows; ++r) {
        EXPECT_EQ(got[r], reference_argmax(rows[r].data(), vocab)) << "row case " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, ArgmaxTest, ::testing::Values(151936, 49152, 7));

TEST(ArgmaxArgs, EmptyVocabIsInvalid) {
    EXPECT_EQ(argmax({.num_rows = 1, .vocab = 0}, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se::cuda
