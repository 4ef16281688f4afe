#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tiny_tokenizer.h"

namespace se {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

Tokenizer tiny() {
    return Tokenizer::from_json(testing::tiny_tokenizer_json().dump()).value();
}

TEST(StreamDecoderTest, HoldsASplitCharacterUntilComplete) {
    const Tokenizer tok = tiny();
    StreamDecoder stream(tok);
    EXPECT_EQ(stream.push('a').value(), "a");
    EXPECT_EQ(stream.push(0xF0).value(), "");  // 😀 = F0 9F 98 80, one byte token each
    EXPECT_EQ(stream.push(0x9F).value(), "");
    EXPECT_EQ(stream.push(0x98).value(), "");
    EXPECT_EQ(stream.num_pending_bytes(), 3u);
    EXPECT_EQ(stream.push(0x80).value(), "\xF0\x9F\x98\x80");
    EXPECT_EQ(stream.num_pending_bytes(), 0u);
    EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoderTest, InvalidBytesBecomeReplacementCharactersAtOnce) {
    const Tokenizer tok = tiny();
    StreamDecoder stream(tok);
    EXPECT_EQ(stream.push(0xFF).value(), kFffd);
    EXPECT_EQ(stream.push(0xE2).value(), "");
    // 'a' cannot continue E2: the held byte is one replacement, then 'a'.
    EXPECT_EQ(stream.push('a').value(), kFffd + "a");
}

TEST(StreamDecoderTest, FlushReplacesAnUnfinishedCharacter) {
    const Tokenizer tok = tiny();
    StreamDecoder stream(tok);
    EXPECT_EQ(stream.push(0xE4).value(), "");
    EXPECT_EQ(stream.push(0xBD).value(), "");
    EXPECT_EQ(stream.flush(), kFffd);  // as decode() of E4 BD: one maximal subpart
    EXPECT_EQ(stream.num_pending_bytes(), 0u);
    EXPECT_EQ(stream.push('b').value(), "b");
}

TEST(StreamDecoderTest, SkipsSpecialTokensWhenAsked) {
    const Tokenizer tok = tiny();
    StreamDecoder keep(tok);
    StreamDecoder skip(tok, {.skip_special_tokens = true});
    EXPECT_EQ(keep.push(259).value(), "<s>");
    EXPECT_EQ(skip.push(259).value(), "");
    EXPECT_EQ(skip.push(261).value(), "<tool>");  // not special
}

TEST(StreamDecoderTest, InvalidIdIsAnErrorAndKeepsState) {
    const Tokenizer tok = tiny();
    StreamDecoder stream(tok);
    EXPECT_EQ(stream.push(0xC3).value(), "");
    auto bad = stream.push(4242);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
    EXPECT_EQ(stream.push(0xA9).value(), "\xC3\xA9");
}

TEST(StreamDecoderTest, EveryByteSequenceStreamsLikeDecode) {
    // All pairs and triples of "interesting" byte tokens, including across UTF-8 boundaries.
    const Tokenizer tok = tiny();
    const std::vector<int32_t> bytes = {'a',  0x80, 0xBF, 0xC2, 0xC3, 0xE0, 0xE2,
                                        0xED, 0xF0, 0xF4, 0x9F, 0xA0, 0xFF, 259};
    for (int32_t a : bytes) {
        for (int32_t b : bytes) {
            for (int32_t c : bytes) {
                const std::vector<int32_t> ids = {a, b, c};
                StreamDecoder stream(tok);
                std::string text;
                for (int32_t id : ids) text += stream.push(id).value();
                text += stream.flush();
                EXPECT_EQ(text, tok.decode(ids).value()) << a << " " << b << " " << c;
            }
        }
    }
}

}  // namespace
}  // namespace se
