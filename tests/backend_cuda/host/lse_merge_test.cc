// The split-KV merge of decode attention (lse_merge.h), checked on the CPU: softmax-weighted sums
// computed partition by partition and merged must equal the softmax over all keys at once. This
// runs in the CPU CI, so a broken merge fails there before any GPU sees it.
#include "backend/cuda/lse_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace se::cuda {
namespace {

constexpr int kDim = 4;

struct Keys {
    std::vector<float> scores;  // f32 [n]
    std::vector<float> values;  // f32 [n, kDim]
};

Keys random_keys(int n, float score_spread, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> score(-score_spread, score_spread);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    Keys k;
    for (int i = 0; i < n; ++i) k.scores.push_back(score(rng));
    for (int i = 0; i < n * kDim; ++i) k.values.push_back(value(rng));
    return k;
}

// out f64 [kDim] = softmax(scores) · values over all keys.
std::vector<double> full_softmax(const Keys& k) {
    const double max = *std::max_element(k.scores.begin(), k.scores.end());
    double total = 0.0;
    std::vector<double> out(kDim, 0.0);
    for (size_t i = 0; i < k.scores.size(); ++i) {
        const double e = std::exp(k.scores[i] - max);
        total += e;
        for (int d = 0; d < kDim; ++d) out[d] += e * k.values[i * kDim + d];
    }
    for (double& x : out) x /= total;
    return out;
}

// What the first pass leaves per partition ([begin, end) of the keys), merged as the merge
// kernel does.
std::vector<float> merged(const Keys& k, const std::vector<int>& bounds) {
    const int num_parts = static_cast<int>(bounds.size()) - 1;
    std::vector<float> maxes(num_parts);
    std::vector<float> sums(num_parts, 0.0f);
    std::vector<float> accs(num_parts * kDim, 0.0f);
    for (int p = 0; p < num_parts; ++p) {
        maxes[p] =
            *std::max_element(k.scores.begin() + bounds[p], k.scores.begin() + bounds[p + 1]);
        for (int i = bounds[p]; i < bounds[p + 1]; ++i) {
            const float e = std::exp(k.scores[i] - maxes[p]);
            sums[p] += e;
            for (int d = 0; d < kDim; ++d) accs[p * kDim + d] += e * k.values[i * kDim + d];
        }
    }
    const LseMerge m = lse_merge(maxes.data(), sums.data(), num_parts);
    std::vector<float> out(kDim, 0.0f);
    for (int p = 0; p < num_parts; ++p) {
        for (int d = 0; d < kDim; ++d) out[d] += m.scale(maxes[p]) * accs[p * kDim + d];
    }
    return out;
}

void expect_matches(const Keys& k, const std::vector<int>& bounds) {
    const std::vector<double> want = full_softmax(k);
    const std::vector<float> got = merged(k, bounds);
    for (int d = 0; d < kDim; ++d) EXPECT_NEAR(got[d], want[d], 1e-5) << "dim " << d;
}

TEST(LseMerge, OnePartitionIsThePlainSoftmax) {
    expect_matches(random_keys(100, 3.0f, 1), {0, 100});
}

TEST(LseMerge, UnevenPartitions) {
    expect_matches(random_keys(1100, 3.0f, 2), {0, 256, 512, 768, 1024, 1100});
    expect_matches(random_keys(300, 3.0f, 3), {0, 1, 2, 299, 300});
}

// Partition maxes 60 apart: exp(max_p - M) underflows to 0 for the low partitions, which is
// right; forgetting the rescaling would overflow (exp(60) * ...) or weight them equally.
TEST(LseMerge, PartitionsOnVeryDifferentScales) {
    Keys k = random_keys(512, 1.0f, 4);
    for (int i = 256; i < 512; ++i) k.scores[i] += 60.0f;
    expect_matches(k, {0, 256, 512});
    for (int i = 256; i < 512; ++i) k.scores[i] -= 120.0f;
    expect_matches(k, {0, 256, 512});
}

TEST(LseMerge, ScalesOfEqualPartitionsAreEqual) {
    const float maxes[] = {2.0f, 2.0f};
    const float sums[] = {3.0f, 3.0f};
    const LseMerge m = lse_merge(maxes, sums, 2);
    EXPECT_FLOAT_EQ(m.scale(2.0f), 1.0f / 6.0f);
}

}  // namespace
}  // namespace se::cuda
