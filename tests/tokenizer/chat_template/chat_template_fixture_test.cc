// Byte-for-byte agreement with transformers' apply_chat_template on the fixtures that
// tools/gen_chat_template_fixtures.py records (real model templates and interpreter cases).
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "tokenizer/chat_template/chat_context.h"
#include "tokenizer/chat_template/chat_template.h"

namespace se {
namespace {

using nlohmann::ordered_json;

// An error case passes when rendering fails; messages jinja2 words the same way we do
// (raise_exception and undefined values) must appear verbatim.
void check_case(const ChatTemplate& tmpl, const ordered_json& c, const std::string& label) {
    auto out = tmpl.render(c["context"]);
    if (c.contains("expected")) {
        ASSERT_TRUE(out.ok()) << label << ": " << out.status().to_string();
        EXPECT_EQ(*out, c["expected"].get<std::string>()) << label;
        return;
    }
    ASSERT_FALSE(out.ok()) << label << " should fail with: " << c["error"] << "\nbut rendered:\n"
                           << *out;
    std::string kind = c["error_kind"].get<std::string>();
    if (kind == "raised" || kind == "undefined") {
        EXPECT_NE(out.status().message().find(c["error"].get<std::string>()), std::string::npos)
            << label << ": " << out.status().message();
    }
}

class ModelTemplateTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelTemplateTest, MatchesTransformers) {
    const std::string model = GetParam();
    ordered_json fixture = testing::read_ordered_json(testing::chat_fixture_path(model + ".json"));
    std::string source =
        testing::read_text(testing::chat_fixture_path(fixture["template"].get<std::string>()));
    auto tmpl =
        ChatTemplate::parse(source, testing::pinned_clock(fixture["now"].get<std::string>()));
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    ASSERT_GE(fixture["cases"].size(), 10u);
    for (const auto& c : fixture["cases"]) {
        check_case(*tmpl, c, model + "/" + c["name"].get<std::string>());
    }
}

// make_chat_context turns apply_chat_template's arguments into exactly the variables
// transformers passed the template (null keys dropped, reasoning aliased, key order kept).
TEST_P(ModelTemplateTest, ContextMatchesTransformers) {
    const std::string model = GetParam();
    ordered_json fixture = testing::read_ordered_json(testing::chat_fixture_path(model + ".json"));
    for (const auto& c : fixture["cases"]) {
        const ordered_json& in = c["inputs"];
        ChatTemplateInputs inputs{.messages = in["messages"],
                                  .tools = in["tools"],
                                  .add_generation_prompt = in["add_generation_prompt"].get<bool>(),
                                  .special_tokens = in["special_tokens"],
                                  .extra = in["extra"]};
        EXPECT_EQ(make_chat_context(inputs).dump(), c["context"].dump())
            << model << "/" << c["name"].get<std::string>();
    }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelTemplateTest,
                         ::testing::Values("smollm2", "qwen3", "qwen2_5", "llama3_1", "llama3_2",
                                           "gemma2", "mistral_nemo", "phi3_5", "deepseek_r1_qwen",
                                           "hermes3", "functionary3_1", "granite3_3", "smollm3",
                                           "gpt_oss"),
                         [](const auto& info) { return info.param; });

TEST(InterpreterCasesTest, MatchesJinja2) {
    ordered_json fixture =
        testing::read_ordered_json(testing::chat_fixture_path("interpreter_cases.json"));
    ASSERT_FALSE(fixture["cases"].empty());
    for (const auto& c : fixture["cases"]) {
        std::string label = c["name"].get<std::string>() + ": " + c["template"].get<std::string>();
        auto tmpl = ChatTemplate::parse(c["template"].get<std::string>(),
                                        testing::pinned_clock(fixture["now"].get<std::string>()));
        ASSERT_TRUE(tmpl.ok()) << label << "\n" << tmpl.status().to_string();
        check_case(*tmpl, c, label);
    }
}

}  // namespace
}  // namespace se
