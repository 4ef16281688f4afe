// Tokenizer::from_gguf: properties of the real SmolLM2 vocabulary, the pre-tokenizer presets,
// and the errors for vocabularies it cannot handle.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "tokenizer/tokenizer.h"

namespace se {
namespace {

using testing::gguf_from_fixture_json;
using testing::load_smollm2_gguf_vocab;

// The SmolLM2 metadata is large; read it once.
const GgufVocab& smollm2() {
    static const GgufVocab vocab = load_smollm2_gguf_vocab();
    return vocab;
}

void expect_error(const GgufVocab& vocab, StatusCode code, const std::string& fragment) {
    auto tok = Tokenizer::from_gguf(vocab);
    ASSERT_FALSE(tok.ok()) << "expected an error mentioning: " << fragment;
    EXPECT_EQ(tok.status().code(), code) << tok.status().to_string();
    EXPECT_NE(tok.status().message().find(fragment), std::string::npos) << tok.status().to_string();
}

TEST(TokenizerGgufTest, SmolLm2Properties) {
    auto tok = Tokenizer::from_gguf(smollm2());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    EXPECT_EQ(tok->vocab_size(), 49152);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->token_to_id("<|im_start|>"), 1);
    EXPECT_EQ(tok->token_text(2).value(), "<|im_end|>");
    ASSERT_EQ(tok->special_ids().size(), 17u);  // the control tokens 0..16
    EXPECT_EQ(tok->special_ids().front(), 0);
    EXPECT_EQ(tok->special_ids().back(), 16);
    // add_bos_token is false: no BOS even with add_special_tokens.
    EXPECT_EQ(tok->encode("<|im_start|>user").value(), (std::vector<int32_t>{1, 4093}));
}

TEST(TokenizerGgufTest, AddBosAndEos) {
    GgufVocab vocab = smollm2();
    vocab.add_bos = true;
    vocab.add_eos = true;
    auto tok = Tokenizer::from_gguf(vocab);
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->encode("user").value(), (std::vector<int32_t>{1, 4093, 2}));
    EXPECT_EQ(tok->encode("user", {.add_special_tokens = false}).value(),
              (std::vector<int32_t>{4093}));
}

TEST(TokenizerGgufTest, UserDefinedTokensMatchAsPlainText) {
    GgufVocab vocab = smollm2();
    vocab.token_types[4093] = static_cast<int32_t>(GgufTokenType::kUserDefined);  // "user"
    auto tok = Tokenizer::from_gguf(vocab);
    ASSERT_TRUE(tok.ok());
    EXPECT_FALSE(tok->is_special(4093));
    // Matched inside words and even when special tokens are not parsed.
    const auto ids = tok->encode("superuser", {.parse_special = false}).value();
    EXPECT_EQ(ids.back(), 4093);
    EXPECT_EQ(tok->decode(ids).value(), "superuser");
}

TEST(TokenizerGgufTest, Qwen2PresetMatchesHfOutsideAddedTokens) {
    // The fixture's added tokens carry flags (lstrip, single_word, normalized) GGUF cannot
    // store, so compare only texts that hold none of them.
    auto tok = Tokenizer::from_gguf(gguf_from_fixture_json("qwen2_nfc", "qwen2"));
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    const nlohmann::json cases =
        testing::read_json(testing::fixture_path("qwen2_nfc", "cases.json"));
    const nlohmann::json spec =
        testing::read_json(testing::fixture_path("qwen2_nfc", "tokenizer.json"));
    std::vector<std::string> contents = {
        "G\xC3\xB6"
        "del"};  // NFC of "Go\u0308del"
    for (const auto& added : spec["added_tokens"])
        contents.push_back(added["content"].get<std::string>());
    auto holds_added_token = [&](const std::string& text) {
        return std::any_of(contents.begin(), contents.end(), [&](const std::string& content) {
            return text.find(content) != std::string::npos;
        });
    };
    int compared = 0;
    for (const testing::EncodeCase& c : testing::load_encode_cases(cases)) {
        if (holds_added_token(c.input)) continue;
        EXPECT_EQ(tok->encode(c.input, {.add_special_tokens = false}).value(), c.ids) << c.label;
        ++compared;
    }
    EXPECT_GT(compared, 300);
}

TEST(TokenizerGgufTest, UnsupportedModelAndPreNameThemselves) {
    GgufVocab vocab = smollm2();
    vocab.model = "llama";
    expect_error(vocab, StatusCode::kUnsupported, "tokenizer.ggml.model 'llama'");
    vocab = smollm2();
    vocab.pre = "deepseek-coder";
    expect_error(vocab, StatusCode::kUnsupported, "tokenizer.ggml.pre 'deepseek-coder'");
}

TEST(TokenizerGgufTest, InconsistentMetadataIsInvalid) {
    GgufVocab vocab = smollm2();
    vocab.token_types.pop_back();
    expect_error(vocab, StatusCode::kInvalidArgument, "tokenizer.ggml.token_type");

    vocab = smollm2();
    vocab.bos_id = 49152;
    expect_error(vocab, StatusCode::kInvalidArgument, "tokenizer.ggml.bos_token_id = 49152");

    vocab = smollm2();
    vocab.eos_id.reset();
    vocab.add_eos = true;
    expect_error(vocab, StatusCode::kInvalidArgument, "add_eos_token");

    vocab = smollm2();
    vocab.merges[7] = "nospace";
    expect_error(vocab, StatusCode::kInvalidArgument, "tokenizer.ggml.merges[7]");

    vocab = smollm2();
    vocab.merges.push_back("Ġ zzzzqq");
    expect_error(vocab, StatusCode::kInvalidArgument, "'zzzzqq' is not in the vocab");
}

}  // namespace
}  // namespace se
