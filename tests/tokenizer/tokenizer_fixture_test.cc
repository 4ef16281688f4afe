// Golden tests: ids, decoded text and streaming output equal what HF `tokenizers` produced for
// the same tokenizer (tools/gen_tokenizer_fixtures.py) on a few hundred strings each.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/utf8.h"
#include "fixtures.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace se {
namespace {

using testing::EncodeCase;
using testing::fixture_path;

enum class Via {
    kJson,           // Tokenizer::from_json_file on the fixture tokenizer.json
    kSmolLm2Gguf,    // Tokenizer::from_gguf on the real SmolLM2 GGUF metadata
    kLlama3BpeGguf,  // Tokenizer::from_gguf on the fixture converted to GGUF, pre "llama-bpe"
};

struct Source {
    std::string name;  // fixture folder
    Via via;
};

std::string source_label(const ::testing::TestParamInfo<Source>& info) {
    return info.param.name + (info.param.via == Via::kJson ? "_json" : "_gguf");
}

Expected<Tokenizer> build(const Source& source) {
    switch (source.via) {
        case Via::kJson:
            return Tokenizer::from_json_file(fixture_path(source.name, "tokenizer.json"));
        case Via::kSmolLm2Gguf:
            return Tokenizer::from_gguf(testing::load_smollm2_gguf_vocab());
        case Via::kLlama3BpeGguf: {
            GgufVocab vocab = testing::gguf_from_fixture_json(source.name, "llama-bpe");
            vocab.bos_id = 0;
            for (size_t id = 0; id < vocab.tokens.size(); ++id) {
                if (vocab.tokens[id] == "<|begin_of_text|>")
                    vocab.bos_id = static_cast<int32_t>(id);
            }
            vocab.add_bos = true;
            return Tokenizer::from_gguf(vocab);
        }
    }
    return internal_error("unknown source");
}

struct Loaded {
    std::unique_ptr<Tokenizer> tokenizer;
    nlohmann::json cases;
    std::vector<EncodeCase> encode_cases;
};

// Fixture files are large; each is read once per test binary.
const Loaded& load(const Source& source) {
    static std::map<std::string, std::unique_ptr<Loaded>> cache;
    const std::string key = source.name + "/" + std::to_string(static_cast<int>(source.via));
    auto& slot = cache[key];
    if (!slot) {
        slot = std::make_unique<Loaded>();
        auto tok = build(source);
        EXPECT_TRUE(tok.ok()) << tok.status().to_string();
        if (tok.ok()) slot->tokenizer = std::make_unique<Tokenizer>(std::move(tok).value());
        slot->cases = testing::read_json(fixture_path(source.name, "cases.json"));
        slot->encode_cases = testing::load_encode_cases(slot->cases);
    }
    return *slot;
}

class TokenizerFixtureTest : public ::testing::TestWithParam<Source> {
  protected:
    void SetUp() override {
        loaded_ = &load(GetParam());
        ASSERT_NE(loaded_->tokenizer, nullptr);
        ASSERT_GE(loaded_->encode_cases.size(), 200u);
    }
    const Tokenizer& tok() const { return *loaded_->tokenizer; }

    const Loaded* loaded_ = nullptr;
};

TEST_P(TokenizerFixtureTest, VocabSizeMatchesHf) {
    EXPECT_EQ(tok().vocab_size(), loaded_->cases["vocab_size"].get<int32_t>());
}

TEST_P(TokenizerFixtureTest, EncodeWithoutSpecialTokensMatchesHf) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        auto ids = tok().encode(c.input, {.add_special_tokens = false});
        ASSERT_TRUE(ids.ok()) << c.label << ": " << ids.status().to_string();
        EXPECT_EQ(*ids, c.ids) << c.label;
    }
}

TEST_P(TokenizerFixtureTest, EncodeWithSpecialTokensMatchesHf) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        auto ids = tok().encode(c.input, {.add_special_tokens = true});
        ASSERT_TRUE(ids.ok()) << c.label << ": " << ids.status().to_string();
        EXPECT_EQ(*ids, c.ids_add_special) << c.label;
    }
}

TEST_P(TokenizerFixtureTest, EncodeWithoutParsingSpecialTokensMatchesHf) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        auto ids = tok().encode(c.input, {.add_special_tokens = false, .parse_special = false});
        ASSERT_TRUE(ids.ok()) << c.label << ": " << ids.status().to_string();
        EXPECT_EQ(*ids, c.ids_no_parse) << c.label;
    }
}

TEST_P(TokenizerFixtureTest, DecodeMatchesHf) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        auto text = tok().decode(c.ids_add_special);
        ASSERT_TRUE(text.ok()) << c.label << ": " << text.status().to_string();
        EXPECT_EQ(*text, c.decoded) << c.label;
        auto skipped = tok().decode(c.ids_add_special, {.skip_special_tokens = true});
        ASSERT_TRUE(skipped.ok());
        EXPECT_EQ(*skipped, c.decoded_skip_special) << c.label;
    }
}

// decode(encode(s)) through this implementation alone gives HF's round-trip text.
TEST_P(TokenizerFixtureTest, RoundTripMatchesHf) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        auto ids = tok().encode(c.input);
        ASSERT_TRUE(ids.ok());
        auto text = tok().decode(*ids);
        ASSERT_TRUE(text.ok());
        EXPECT_EQ(*text, c.decoded) << c.label;
    }
}

TEST_P(TokenizerFixtureTest, DecodeOfArbitraryIdsMatchesHf) {
    for (const auto& c : loaded_->cases["decode_cases"]) {
        const auto ids = c["ids"].get<std::vector<int32_t>>();
        auto text = tok().decode(ids);
        ASSERT_TRUE(text.ok()) << text.status().to_string();
        EXPECT_EQ(*text, c["decoded"].get<std::string>()) << c["ids"].dump();
        auto skipped = tok().decode(ids, {.skip_special_tokens = true});
        ASSERT_TRUE(skipped.ok());
        EXPECT_EQ(*skipped, c["decoded_skip_special"].get<std::string>()) << c["ids"].dump();
    }
}

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids,
                       const DecodeOptions& options) {
    StreamDecoder stream(tok, options);
    std::string text;
    for (int32_t id : ids) {
        auto piece = stream.push(id);
        EXPECT_TRUE(piece.ok());
        if (!piece.ok()) break;
        EXPECT_TRUE(utf8::is_valid(*piece));
        EXPECT_LE(stream.num_pending_bytes(), 3u);
        text += *piece;
    }
    return text + stream.flush();
}

TEST_P(TokenizerFixtureTest, StreamDecoderEqualsDecode) {
    for (const EncodeCase& c : loaded_->encode_cases) {
        EXPECT_EQ(stream_all(tok(), c.ids_add_special, {}), c.decoded) << c.label;
        EXPECT_EQ(stream_all(tok(), c.ids_add_special, {.skip_special_tokens = true}),
                  c.decoded_skip_special)
            << c.label;
    }
    for (const auto& c : loaded_->cases["decode_cases"]) {
        const auto ids = c["ids"].get<std::vector<int32_t>>();
        EXPECT_EQ(stream_all(tok(), ids, {}), c["decoded"].get<std::string>()) << c["ids"].dump();
    }
}

INSTANTIATE_TEST_SUITE_P(Hf, TokenizerFixtureTest,
                         ::testing::Values(Source{"smollm2", Via::kJson},
                                           Source{"smollm2", Via::kSmolLm2Gguf},
                                           Source{"qwen2_nfc", Via::kJson},
                                           Source{"llama3_bos", Via::kJson},
                                           Source{"llama3_bos", Via::kLlama3BpeGguf}),
                         source_label);

}  // namespace
}  // namespace se
