#include "model/ggml_type.h"

#include <gtest/gtest.h>

namespace se {
namespace {

TEST(GgmlTypeTest, Names) {
    EXPECT_EQ(ggml_type_name(0), "F32");
    EXPECT_EQ(ggml_type_name(8), "Q8_0");
    EXPECT_EQ(ggml_type_name(12), "Q4_K");
    EXPECT_EQ(ggml_type_name(14), "Q6_K");
    EXPECT_EQ(ggml_type_name(23), "IQ4_XS");
    EXPECT_EQ(ggml_type_name(30), "BF16");
    EXPECT_EQ(ggml_type_name(39), "MXFP4");
    EXPECT_EQ(ggml_type_name(500), "type #500");
}

TEST(GgmlTypeTest, SupportedTypesRoundTrip) {
    for (const DType d :
         {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1}) {
        const std::optional<uint32_t> id = ggml_type_from_dtype(d);
        ASSERT_TRUE(id.has_value());
        EXPECT_EQ(dtype_from_ggml_type(*id), d);
        EXPECT_EQ(ggml_type_name(*id), dtype_name(d));
    }
    EXPECT_FALSE(dtype_from_ggml_type(12).has_value());
    EXPECT_FALSE(dtype_from_ggml_type(26).has_value());  // I32 tensors are not weights
    EXPECT_FALSE(ggml_type_from_dtype(DType::kI32).has_value());
}

}  // namespace
}  // namespace se
