// upload_weights into host memory (the CPU backend's BackendMemory): the same names, matrices as
// bf16 whatever they were stored as (f32 rounded to nearest even, Q8_0 dequantized), [1, n] f32
// rows (norms, biases) unchanged, and views pointing into memory of the store's own.
#include "engine/weight_upload.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/quant_blocks.h"

namespace se {
namespace {

TEST(WeightUploadTest, MatricesBecomeBf16AndNormRowsStayF32) {
    WeightStore host;
    std::vector<float> norm = {1.0f, 0.5f, -2.0f, 3.25f};
    std::vector<float> matrix(3 * 32);
    for (size_t i = 0; i < matrix.size(); ++i) matrix[i] = 0.1f * static_cast<float>(i) - 4.0f;
    std::vector<BlockQ8_0> q8(2);  // a [2, 32] Q8_0 matrix: value = d * q
    for (int r = 0; r < 2; ++r) {
        q8[r].d = f32_to_f16(r == 0 ? 1.0f : 0.25f);
        for (int i = 0; i < 32; ++i) q8[r].qs[i] = static_cast<int8_t>(i - 16);
    }
    ASSERT_TRUE(host.add("norm", ConstTensorView(DType::kF32, norm.data(), 1, 4)).ok());
    ASSERT_TRUE(host.add("matrix", ConstTensorView(DType::kF32, matrix.data(), 3, 32)).ok());
    ASSERT_TRUE(host.add("q8", ConstTensorView(DType::kQ8_0, q8.data(), 2, 32)).ok());

    BackendMemory memory;
    float last_progress = 0.0f;
    auto uploaded = upload_weights(host, memory, DType::kBF16,
                                   [&](float fraction) { last_progress = fraction; });
    ASSERT_TRUE(uploaded.ok()) << uploaded.status().to_string();
    EXPECT_FLOAT_EQ(last_progress, 1.0f);

    const ConstTensorView n = uploaded->get("norm", 1, 4).value();
    EXPECT_EQ(n.dtype, DType::kF32);
    EXPECT_NE(n.data, norm.data());
    EXPECT_EQ(std::memcmp(n.data, norm.data(), norm.size() * sizeof(float)), 0);

    const ConstTensorView m = uploaded->get("matrix", 3, 32).value();
    ASSERT_EQ(m.dtype, DType::kBF16);
    const auto* mb = static_cast<const uint16_t*>(m.data);
    for (size_t i = 0; i < matrix.size(); ++i) EXPECT_EQ(mb[i], f32_to_bf16(matrix[i])) << i;

    const ConstTensorView q = uploaded->get("q8", 2, 32).value();
    ASSERT_EQ(q.dtype, DType::kBF16);
    const auto* qb = static_cast<const uint16_t*>(q.data);
    for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < 32; ++i) {
            EXPECT_EQ(bf16_to_f32(qb[r * 32 + i]), (r == 0 ? 1.0f : 0.25f) * (i - 16)) << r << i;
        }
    }
}

}  // namespace
}  // namespace se
