#include "core/status.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/expected.h"

namespace se {
namespace {

Expected<int> parse_positive(int v) {
    if (v <= 0) return invalid_argument("value must be positive, got " + std::to_string(v));
    return v;
}

Expected<int> doubled(int v) {
    SE_ASSIGN_OR_RETURN(int x, parse_positive(v));
    return 2 * x;
}

Status check_both(int a, int b) {
    SE_RETURN_IF_ERROR(parse_positive(a).ok() ? Status() : parse_positive(a).status());
    SE_RETURN_IF_ERROR(parse_positive(b).ok() ? Status() : parse_positive(b).status());
    return {};
}

TEST(StatusTest, OkByDefault) {
    Status s;
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(s.to_string(), "ok");
}

TEST(StatusTest, CarriesCodeAndContext) {
    Status s = not_found("model.gguf").with_context("loading model");
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kNotFound);
    EXPECT_EQ(s.to_string(), "not found: loading model: model.gguf");
}

TEST(ExpectedTest, PropagatesErrorsAndValues) {
    EXPECT_EQ(doubled(4).value(), 8);
    auto bad = doubled(-1);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("-1"), std::string::npos);
    EXPECT_TRUE(check_both(1, 2).ok());
    EXPECT_FALSE(check_both(1, 0).ok());
}

TEST(ExpectedTest, HoldsMoveOnlyValues) {
    Expected<std::unique_ptr<int>> e = std::make_unique<int>(7);
    ASSERT_TRUE(e.ok());
    std::unique_ptr<int> p = std::move(e).value();
    EXPECT_EQ(*p, 7);
}

TEST(ExpectedDeathTest, ValueOfErrorAborts) {
    Expected<int> e = internal_error("boom");
    EXPECT_DEATH((void)e.value(), "boom");
}

}  // namespace
}  // namespace se
