// Tokenizer behaviour beyond the golden fixtures: invalid UTF-8, NUL bytes, long inputs and
// concurrent use.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fixtures.h"
#include "tiny_tokenizer.h"

namespace se {
namespace {

Tokenizer tiny() {
    return Tokenizer::from_json(testing::tiny_tokenizer_json().dump()).value();
}

TEST(TokenizerTest, InvalidUtf8IsEncodedAsItsLossyDecoding) {
    const Tokenizer tok = tiny();
    const EncodeOptions plain{.add_special_tokens = false};
    // Each maximal ill-formed subsequence becomes U+FFFD (EF BF BD) before encoding.
    EXPECT_EQ(tok.encode("a\xFF"
                         "b",
                         plain)
                  .value(),
              tok.encode("a\xEF\xBF\xBD"
                         "b",
                         plain)
                  .value());
    EXPECT_EQ(tok.encode("\xE2\x82", plain).value(), tok.encode("\xEF\xBF\xBD", plain).value());
    EXPECT_EQ(tok.encode("\xED\xA0\x80", plain).value(),
              tok.encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", plain).value());
    EXPECT_EQ(tok.decode(tok.encode("ok\xC3", plain).value()).value(), "ok\xEF\xBF\xBD");
}

TEST(TokenizerTest, NulBytesAreOrdinaryText) {
    const Tokenizer tok = tiny();
    const std::string text("a\0b\0", 4);
    const auto ids = tok.encode(text, {.add_special_tokens = false}).value();
    EXPECT_EQ(ids, (std::vector<int32_t>{'a', 0, 'b', 0}));
    EXPECT_EQ(tok.decode(ids).value(), text);
}

TEST(TokenizerTest, LongWhitespaceRunsRoundTrip) {
    const Tokenizer tok =
        Tokenizer::from_json_file(testing::fixture_path("llama3_bos", "tokenizer.json")).value();
    for (const std::string unit : {" ", "\n", " \t", "\r\n"}) {
        std::string text;
        while (text.size() < 300000) text += unit;
        text += "x";
        const auto ids = tok.encode(text, {.add_special_tokens = false}).value();
        EXPECT_LE(ids.size(), text.size());
        EXPECT_EQ(tok.decode(ids).value(), text);
    }
}

TEST(TokenizerTest, ConcurrentEncodesAgreeWithSequentialOnes) {
    const Tokenizer tok =
        Tokenizer::from_json_file(testing::fixture_path("qwen2_nfc", "tokenizer.json")).value();
    const nlohmann::json cases =
        testing::read_json(testing::fixture_path("qwen2_nfc", "cases.json"));
    const std::vector<testing::EncodeCase> all = testing::load_encode_cases(cases);
    constexpr int kThreads = 4;
    std::vector<std::vector<std::vector<int32_t>>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            // Each thread walks the cases from a different start to mix cache hits and misses.
            for (size_t k = 0; k < all.size(); ++k) {
                const auto& c = all[(k + t * all.size() / kThreads) % all.size()];
                results[t].push_back(tok.encode(c.input, {.add_special_tokens = false}).value());
            }
        });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        for (size_t k = 0; k < all.size(); ++k)
            EXPECT_EQ(results[t][k], all[(k + t * all.size() / kThreads) % all.size()].ids);
    }
}

TEST(TokenizerTest, MovedTokenizerStillWorks) {
    Tokenizer a = tiny();
    const auto before = a.encode("abc w").value();
    Tokenizer b = std::move(a);
    EXPECT_EQ(b.encode("abc w").value(), before);
}

}  // namespace
}  // namespace se
