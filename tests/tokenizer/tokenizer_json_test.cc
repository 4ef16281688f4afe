// Tokenizer::from_json: the supported subset and the errors for everything else.
#include <gtest/gtest.h>

#include <string>

#include "tiny_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace se {
namespace {

using nlohmann::json;
using testing::tiny_tokenizer_json;

Expected<Tokenizer> load(const json& spec, const TokenizerJsonOptions& options = {}) {
    return Tokenizer::from_json(spec.dump(), options);
}

// Loading fails with `code` and a message containing `fragment`.
void expect_error(const json& spec, StatusCode code, const std::string& fragment) {
    auto tok = load(spec);
    ASSERT_FALSE(tok.ok()) << "expected an error mentioning: " << fragment;
    EXPECT_EQ(tok.status().code(), code) << tok.status().to_string();
    EXPECT_NE(tok.status().message().find(fragment), std::string::npos) << tok.status().to_string();
}

TEST(TokenizerJsonTest, LoadsAndEncodesWithTemplate) {
    auto tok = load(tiny_tokenizer_json());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    EXPECT_EQ(tok->vocab_size(), 262);
    EXPECT_EQ(tok->bos_id(), 259);
    EXPECT_FALSE(tok->eos_id().has_value());
    EXPECT_EQ(tok->encode("abc w").value(), (std::vector<int32_t>{259, 257, 258, 260}));
    EXPECT_EQ(tok->encode("abc w", {.add_special_tokens = false}).value(),
              (std::vector<int32_t>{257, 258}));
    EXPECT_EQ(tok->encode("", {.add_special_tokens = true}).value(),
              (std::vector<int32_t>{259, 260}));
}

TEST(TokenizerJsonTest, AddedTokensAndSpecialFlags) {
    auto tok = load(tiny_tokenizer_json());
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->encode("x<s>y<tool>", {.add_special_tokens = false}).value(),
              (std::vector<int32_t>{'x', 259, 'y', 261}));
    // Unparsed special tokens are text; the non-special <tool> still matches.
    const auto literal =
        tok->encode("<s><tool>", {.add_special_tokens = false, .parse_special = false}).value();
    EXPECT_EQ(literal, (std::vector<int32_t>{'<', 's', '>', 261}));
    EXPECT_TRUE(tok->is_special(259));
    EXPECT_FALSE(tok->is_special(261));
    EXPECT_FALSE(tok->is_special(-1));
    EXPECT_FALSE(tok->is_special(100000));
    EXPECT_EQ(tok->special_ids(), (std::vector<int32_t>{259, 260}));
    EXPECT_EQ(tok->token_to_id("<tool>"), 261);
    EXPECT_EQ(tok->token_to_id("abc"), 257);
    EXPECT_FALSE(tok->token_to_id("zzz").has_value());
    EXPECT_EQ(tok->token_text(258).value(), "\xC4\xA0w");
    EXPECT_EQ(tok->token_text(259).value(), "<s>");
    EXPECT_EQ(tok->token_bytes(258).value(), " w");
    EXPECT_EQ(tok->token_bytes(0xC3).value(), "\xC3");
    EXPECT_EQ(tok->token_bytes(259).value(), "<s>");
    EXPECT_FALSE(tok->token_bytes(-3).ok());
}

TEST(TokenizerJsonTest, ConfigNamesBosAndEos) {
    auto tok = load(tiny_tokenizer_json(), {.bos_token = "</s>", .eos_token = "<tool>"});
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->bos_id(), 260);
    EXPECT_EQ(tok->eos_id(), 261);
    auto bad = load(tiny_tokenizer_json(), {.eos_token = "<missing>"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("eos_token '<missing>'"), std::string::npos);
}

TEST(TokenizerJsonTest, DecodeAndInvalidIds) {
    auto tok = load(tiny_tokenizer_json());
    ASSERT_TRUE(tok.ok());
    const std::vector<int32_t> ids = {259, 257, 258, 260};
    EXPECT_EQ(tok->decode(ids).value(), "<s>abc w</s>");
    EXPECT_EQ(tok->decode(ids, {.skip_special_tokens = true}).value(), "abc w");
    for (int32_t bad : {-1, 262, 1 << 30}) {
        const std::vector<int32_t> with_bad = {257, bad};
        auto text = tok->decode(with_bad);
        ASSERT_FALSE(text.ok());
        EXPECT_EQ(text.status().code(), StatusCode::kOutOfRange);
        EXPECT_NE(text.status().message().find(std::to_string(bad)), std::string::npos);
        EXPECT_FALSE(tok->token_text(bad).ok());
    }
}

TEST(TokenizerJsonTest, ModelWithoutTypeIsBpe) {
    json spec = tiny_tokenizer_json();
    spec["model"].erase("type");
    auto tok = load(spec);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    EXPECT_EQ(tok->encode("abc", {.add_special_tokens = false}).value(),
              (std::vector<int32_t>{257}));
}

TEST(TokenizerJsonTest, NfcNormalizerInASequence) {
    json spec = tiny_tokenizer_json();
    spec["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
    auto tok = load(spec);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    // e + combining acute composes to é (C3 A9), two byte tokens.
    EXPECT_EQ(tok->encode("e\xCC\x81", {.add_special_tokens = false}).value(),
              (std::vector<int32_t>{0xC3, 0xA9}));
}

TEST(TokenizerJsonTest, MalformedJsonIsInvalidArgument) {
    auto tok = Tokenizer::from_json("{\"model\": ");
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos);
    expect_error(json::array(), StatusCode::kInvalidArgument, "JSON object");
}

TEST(TokenizerJsonTest, UnsupportedComponentsNameTheirType) {
    json spec = tiny_tokenizer_json();
    spec["model"]["type"] = "WordPiece";
    expect_error(spec, StatusCode::kUnsupported, "model.type 'WordPiece'");

    spec = tiny_tokenizer_json();
    spec["normalizer"] = {{"type", "Lowercase"}};
    expect_error(spec, StatusCode::kUnsupported, "normalizer.type 'Lowercase'");

    spec = tiny_tokenizer_json();
    spec["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}}}};
    expect_error(spec, StatusCode::kUnsupported, "normalizer.normalizers[0].type 'NFKC'");

    spec = tiny_tokenizer_json();
    spec["pre_tokenizer"] = {{"type", "Metaspace"}};
    expect_error(spec, StatusCode::kUnsupported, "pre_tokenizer.type 'Metaspace'");

    spec = tiny_tokenizer_json();
    spec["post_processor"] = {{"type", "BertProcessing"}};
    expect_error(spec, StatusCode::kUnsupported, "post_processor.type 'BertProcessing'");

    spec = tiny_tokenizer_json();
    spec["decoder"] = {{"type", "Metaspace"}};
    expect_error(spec, StatusCode::kUnsupported, "decoder.type 'Metaspace'");

    spec = tiny_tokenizer_json();
    spec["decoder"] = nullptr;
    expect_error(spec, StatusCode::kUnsupported, "decoder is null");
}

TEST(TokenizerJsonTest, UnsupportedModelOptions) {
    json spec = tiny_tokenizer_json();
    spec["model"]["byte_fallback"] = true;
    expect_error(spec, StatusCode::kUnsupported, "model.byte_fallback");

    spec = tiny_tokenizer_json();
    spec["model"]["dropout"] = 0.1;
    expect_error(spec, StatusCode::kUnsupported, "model.dropout");

    spec = tiny_tokenizer_json();
    spec["model"]["continuing_subword_prefix"] = "##";
    expect_error(spec, StatusCode::kUnsupported, "model.continuing_subword_prefix");

    // An unk_token is harmless while every byte has a token...
    spec = tiny_tokenizer_json();
    spec["model"]["unk_token"] = "<s>";
    EXPECT_TRUE(load(spec).ok());
    // ...but not when a byte could need it.
    spec["model"]["vocab"].erase("x");
    expect_error(spec, StatusCode::kUnsupported, "model.unk_token");
}

TEST(TokenizerJsonTest, PreTokenizerMustEndWithOneByteLevel) {
    json spec = tiny_tokenizer_json();
    spec["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", true}};
    expect_error(spec, StatusCode::kUnsupported, "ByteLevel");

    spec["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Digits"}}}}};
    expect_error(spec, StatusCode::kUnsupported, "placed last");

    spec["pre_tokenizer"] = nullptr;
    expect_error(spec, StatusCode::kUnsupported, "pre_tokenizer is null");
}

TEST(TokenizerJsonTest, BadFieldsNameTheirPath) {
    json spec = tiny_tokenizer_json();
    spec["model"]["merges"][1] = "a b c";
    expect_error(spec, StatusCode::kInvalidArgument, "model.merges[1]");

    spec = tiny_tokenizer_json();
    spec["model"]["merges"].push_back("x yz");
    expect_error(spec, StatusCode::kInvalidArgument, "token 'yz' is not in the vocab");

    spec = tiny_tokenizer_json();
    spec["model"]["vocab"]["zz"] = "seven";
    expect_error(spec, StatusCode::kInvalidArgument, "model.vocab.zz must be an integer");

    spec = tiny_tokenizer_json();
    spec["added_tokens"][1].erase("id");
    expect_error(spec, StatusCode::kInvalidArgument, "added_tokens[1].id is missing");

    spec = tiny_tokenizer_json();
    spec["pre_tokenizer"] = {{"type", "Split"},
                             {"pattern", {{"Regex", "(oops"}}},
                             {"behavior", "Isolated"},
                             {"invert", false}};
    expect_error(spec, StatusCode::kInvalidArgument, "pre_tokenizer.pattern.Regex");

    spec["pre_tokenizer"]["pattern"] = {{"Regex", "\\s+"}};
    spec["pre_tokenizer"]["behavior"] = "Sideways";
    expect_error(spec, StatusCode::kInvalidArgument, "pre_tokenizer.behavior 'Sideways'");

    spec = tiny_tokenizer_json();
    spec["post_processor"]["special_tokens"].erase("</s>");
    expect_error(spec, StatusCode::kInvalidArgument, "special_tokens.</s> is missing");

    spec = tiny_tokenizer_json();
    spec["post_processor"]["special_tokens"]["</s>"]["ids"] = {9999};
    expect_error(spec, StatusCode::kOutOfRange, "token id 9999");
}

TEST(TokenizerJsonTest, FileErrorsNameThePath) {
    auto tok = Tokenizer::from_json_file("/nonexistent/tokenizer.json");
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
    EXPECT_NE(tok.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);
}

}  // namespace
}  // namespace se
