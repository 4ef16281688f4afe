#include "model/hf_tokenizer_config.h"

#include <gtest/gtest.h>

namespace se {
namespace {

TEST(HfTokenizerConfigTest, StringsAndAddedTokenObjects) {
    auto c = parse_tokenizer_config(
        R"({"bos_token": {"content": "<|begin|>", "special": true}, "eos_token": "<|end|>",
            "add_bos_token": false, "chat_template": "T", "model_max_length": 8192})",
        "tokenizer_config.json");
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->bos_token, "<|begin|>");
    EXPECT_EQ(c->eos_token, "<|end|>");
    EXPECT_EQ(c->add_bos_token, false);
    EXPECT_EQ(c->chat_template, "T");
    EXPECT_EQ(c->json["model_max_length"], 8192);
}

TEST(HfTokenizerConfigTest, NamedTemplatesTakeDefault) {
    auto c = parse_tokenizer_config(
        R"({"chat_template": [{"name": "tool_use", "template": "A"},
                              {"name": "default", "template": "B"}]})",
        "tokenizer_config.json");
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->chat_template, "B");
}

TEST(HfTokenizerConfigTest, AbsentAndNullFields) {
    auto c = parse_tokenizer_config(R"({"bos_token": null})", "tokenizer_config.json");
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_FALSE(c->bos_token.has_value());
    EXPECT_FALSE(c->add_bos_token.has_value());
    EXPECT_TRUE(c->chat_template.empty());
}

TEST(HfTokenizerConfigTest, WrongTypesNameTheField) {
    auto a = parse_tokenizer_config(R"({"chat_template": 3})", "/m/tokenizer_config.json");
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.status().message().find("'chat_template'"), std::string::npos);
    EXPECT_NE(a.status().message().find("/m/tokenizer_config.json"), std::string::npos);
    auto b = parse_tokenizer_config(R"({"eos_token": {"content": 5}})", "tokenizer_config.json");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("'eos_token.content'"), std::string::npos);
    auto c = parse_tokenizer_config(R"({"add_bos_token": "yes"})", "tokenizer_config.json");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("'add_bos_token'"), std::string::npos);
    auto d = parse_tokenizer_config("[]", "tokenizer_config.json");
    ASSERT_FALSE(d.ok());
}

}  // namespace
}  // namespace se
