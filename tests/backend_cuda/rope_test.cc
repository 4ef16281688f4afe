// cuda::rope against ReferenceOps::rope (f64 rotation of the same f32 angle), on q and k heads of
// a fused qkv row, both styles, plain and llama3-scaled frequency tables, partial rotary dims.
// Tolerance: one bf16 rounding (kBf16RelTol) plus 1e-5 absolute: f32 sincos and the f32
// rotation differ from f64 by a few 1e-7 of the inputs (|x| <= 2), which matters only for
// outputs that cancel to near zero.
#include "backend/cuda/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "cuda_test_util.h"
#include "rope_tables.h"

namespace se::cuda {
namespace {

using testing::download_bf16;
using testing::upload;
using testing::upload_bf16;

constexpr int32_t kNumQHeads = 8;
constexpr int32_t kNumKvHeads = 2;

using testing::llama3_inv_freq;
using testing::plain_inv_freq;

enum class Table { kPlain, kLlama3 };
using RopeParam = std::tuple<RopeStyle, int32_t, int32_t, Table>;  // style, head, rotary, table

class RopeTest : public ::testing::TestWithParam<RopeParam> {};

TEST_P(RopeTest, MatchesReferenceOnFusedQkvRows) {
    const auto [style, head_dim, rotary_dim, table] = GetParam();
    const std::vector<float> inv_freq =
        table == Table::kPlain ? plain_inv_freq(rotary_dim, 10000.0f) : llama3_inv_freq(rotary_dim);
    const std::vector<int32_t> positions = {0, 1, 2, 17, 255, 4096, 8191, 30000, 131071};
    const auto n = static_cast<int32_t>(positions.size());
    // One fused row: q heads, k heads, v heads (v must come back untouched).
    const int64_t q_width = int64_t{kNumQHeads} * head_dim;
    const int64_t kv_width = int64_t{kNumKvHeads} * head_dim;
    const int64_t row = q_width + 2 * kv_width;
    const std::vector<float> qkv = testing::random_bf16_values(n * row, 7, -2, 2);

    const DeviceBuffer d_qkv = upload_bf16(qkv);
    const DeviceBuffer d_pos = upload(positions);
    const DeviceBuffer d_freq = upload(inv_freq);
    bf16* base = d_qkv.as<bf16>();
    const Status s = rope({.q = base,
                           .k = base + q_width,
                           .positions = d_pos.as<int32_t>(),
                           .inv_freq = d_freq.as<float>(),
                           .q_row_stride = row,
                           .k_row_stride = row,
                           .num_tokens = n,
                           .num_q_heads = kNumQHeads,
                           .num_kv_heads = kNumKvHeads,
                           .head_dim = head_dim,
                           .rotary_dim = rotary_dim,
                           .style = style},
                          nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();

    // The reference rotates [n, heads * head_dim] views; q and k heads of a row are adjacent,
    // so the first q_width + kv_width columns are one such view with row stride `row`.
    std::vector<float> want = qkv;
    const RopeArgs args{.inv_freq = inv_freq, .style = style, .head_dim = head_dim};
    for (int32_t t = 0; t < n; ++t) {
        ReferenceOps().rope({DType::kF32, want.data() + t * row, 1, q_width + kv_width},
                            std::span(positions).subspan(t, 1), args);
    }
    testing::expect_all_near(download_bf16(d_qkv, n * row), want, 1e-5f, testing::kBf16RelTol,
                             "qkv");
}

std::string param_name(const ::testing::TestParamInfo<RopeParam>& info) {
    const auto [style, head_dim, rotary_dim, table] = info.param;
    return std::string(style == RopeStyle::kNeox ? "neox" : "interleaved") + "_dim" +
           std::to_string(head_dim) + "_rot" + std::to_string(rotary_dim) +
           (table == Table::kPlain ? "_plain" : "_llama3");
}

INSTANTIATE_TEST_SUITE_P(
    Full, RopeTest,
    ::testing::Values(RopeParam{RopeStyle::kNeox, 64, 64, Table::kPlain},
                      RopeParam{RopeStyle::kNeox, 128, 128, Table::kLlama3},
                      RopeParam{RopeStyle::kInterleaved, 64, 64, Table::kPlain},
                      RopeParam{RopeStyle::kInterleaved, 128, 128, Table::kLlama3}),
    param_name);

INSTANTIATE_TEST_SUITE_P(Partial, RopeTest,
                         ::testing::Values(RopeParam{RopeStyle::kNeox, 128, 64, Table::kPlain},
                                           RopeParam{RopeStyle::kInterleaved, 64, 32,
                                                     Table::kLlama3}),
                         param_name);

TEST(RopeArgs, OddRotaryDimIsRejected) {
    const Status s = rope({.num_tokens = 1, .head_dim = 64, .rotary_dim = 63}, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se::cuda
