#include "model/generation_config.h"

#include <gtest/gtest.h>

namespace se {
namespace {

TEST(GenerationConfigTest, ReadsDefaults) {
    auto g = parse_generation_config(
        R"({"bos_token_id": 1, "eos_token_id": 2, "do_sample": true, "temperature": 0.7,
            "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05, "transformers_version": "4"})",
        "generation_config.json");
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(g->eos_token_ids, std::vector<int32_t>{2});
    EXPECT_EQ(g->do_sample, true);
    EXPECT_FLOAT_EQ(*g->temperature, 0.7f);
    EXPECT_FLOAT_EQ(*g->top_p, 0.8f);
    EXPECT_EQ(g->top_k, 20);
    EXPECT_FLOAT_EQ(*g->repetition_penalty, 1.05f);
}

TEST(GenerationConfigTest, EosListAndAbsentFields) {
    auto g = parse_generation_config(R"({"eos_token_id": [151645, 151643]})", "g.json");
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(g->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
    EXPECT_FALSE(g->temperature.has_value());
    EXPECT_FALSE(g->top_k.has_value());
}

TEST(GenerationConfigTest, WrongTypeNamesField) {
    auto g = parse_generation_config(R"({"temperature": "hot"})", "/m/generation_config.json");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find("'temperature'"), std::string::npos);
    EXPECT_NE(g.status().message().find("/m/generation_config.json"), std::string::npos);
    EXPECT_FALSE(parse_generation_config("not json", "g.json").ok());
}

}  // namespace
}  // namespace se
