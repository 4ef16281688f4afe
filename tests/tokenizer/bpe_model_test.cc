#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"

namespace se {
namespace {

// A vocabulary of all 256 byte tokens (id = byte value) plus `extra` tokens, written in the
// byte-level alphabet.
std::vector<std::pair<std::string, int32_t>> byte_vocab(const std::vector<std::string>& extra) {
    std::vector<std::pair<std::string, int32_t>> vocab;
    for (int b = 0; b < 256; ++b)
        vocab.emplace_back(byte_level::encode(std::string(1, static_cast<char>(b))), b);
    for (const std::string& token : extra)
        vocab.emplace_back(token, static_cast<int32_t>(vocab.size()));
    return vocab;
}

std::vector<int32_t> encode(const BpeModel& model, std::string_view word) {
    std::vector<int32_t> ids;
    model.encode_word(word, ids);
    return ids;
}

TEST(BpeModelTest, MergesLowestRankFirst) {
    // "abc": rank 0 merges b+c first, so a+b (rank 1) never applies.
    auto model = BpeModel::create(byte_vocab({"bc", "ab", "abc"}),
                                  {{"b", "c"}, {"a", "b"}, {"a", "bc"}}, {});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ(encode(*model, "abc"), (std::vector<int32_t>{258}));
    EXPECT_EQ(encode(*model, "ab"), (std::vector<int32_t>{257}));
    EXPECT_EQ(encode(*model, "abx"), (std::vector<int32_t>{257, 'x'}));
}

TEST(BpeModelTest, TiesGoToTheLeftmostPair) {
    auto model = BpeModel::create(byte_vocab({"aa"}), {{"a", "a"}}, {});
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(encode(*model, "aaa"), (std::vector<int32_t>{256, 'a'}));
    EXPECT_EQ(encode(*model, "aaaa"), (std::vector<int32_t>{256, 256}));
}

TEST(BpeModelTest, IgnoreMergesEmitsVocabularyWordsWhole) {
    // "abc" is in the vocabulary but no merge sequence reaches it.
    const auto vocab = byte_vocab({"ab", "abc"});
    auto plain = BpeModel::create(vocab, {{"a", "b"}}, {});
    auto whole = BpeModel::create(vocab, {{"a", "b"}}, {.ignore_merges = true});
    ASSERT_TRUE(plain.ok() && whole.ok());
    EXPECT_EQ(encode(*plain, "abc"), (std::vector<int32_t>{256, 'c'}));
    EXPECT_EQ(encode(*whole, "abc"), (std::vector<int32_t>{257}));
    EXPECT_EQ(encode(*whole, "abcab"), (std::vector<int32_t>{256, 'c', 256}));
}

TEST(BpeModelTest, BytesMissingFromTheVocabularyAreDropped) {
    auto vocab = byte_vocab({"ab"});
    vocab.erase(vocab.begin() + 'x');  // no token for "x"
    auto model = BpeModel::create(vocab, {{"a", "b"}}, {});
    ASSERT_TRUE(model.ok());
    EXPECT_FALSE(model->has_all_bytes());
    // HF (no unk_token) drops the byte, and its neighbours become adjacent.
    EXPECT_EQ(encode(*model, "axb"), (std::vector<int32_t>{256}));
    EXPECT_EQ(model->token('x'), nullptr);
}

TEST(BpeModelTest, ByteLevelTokensCoverEveryByte) {
    auto model = BpeModel::create(byte_vocab({}), {}, {});
    ASSERT_TRUE(model.ok());
    EXPECT_TRUE(model->has_all_bytes());
    EXPECT_EQ(encode(*model, std::string("\0 \xFF", 3)), (std::vector<int32_t>{0, ' ', 0xFF}));
    EXPECT_EQ(*model->token(' '), "\xC4\xA0");  // Ġ
    EXPECT_EQ(model->token_to_id("\xC4\xA0"), ' ');
}

TEST(BpeModelTest, MergeWithUnknownTokenIsAnError) {
    auto model = BpeModel::create(byte_vocab({}), {{"a", "b"}}, {});
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("merges[0]"), std::string::npos);
    EXPECT_NE(model.status().message().find("'ab' is not in the vocab"), std::string::npos);
}

TEST(BpeModelTest, DuplicateIdsAndNegativeIdsAreErrors) {
    auto vocab = byte_vocab({});
    vocab.emplace_back("zz", 5);
    EXPECT_FALSE(BpeModel::create(vocab, {}, {}).ok());
    vocab.back().second = -1;
    EXPECT_FALSE(BpeModel::create(vocab, {}, {}).ok());
}

TEST(BpeModelTest, LaterDuplicateMergeTakesOverTheRank) {
    // HF collects merges into a map, so the second "a b" (rank 2) wins over rank 0 and "b c"
    // (rank 1) applies first.
    auto model =
        BpeModel::create(byte_vocab({"ab", "bc"}), {{"a", "b"}, {"b", "c"}, {"a", "b"}}, {});
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(encode(*model, "abc"), (std::vector<int32_t>{'a', 257}));
}

// Textbook BPE: repeatedly merge the lowest-ranked adjacent pair, leftmost on ties.
std::vector<int32_t> naive_bpe(
    std::string_view word,
    const std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>& rules) {
    std::vector<int32_t> symbols(word.begin(), word.end());
    for (;;) {
        size_t best = symbols.size();
        int32_t best_rank = INT32_MAX;
        for (size_t i = 0; i + 1 < symbols.size(); ++i) {
            const auto it = rules.find({symbols[i], symbols[i + 1]});
            if (it != rules.end() && it->second.first < best_rank) {
                best_rank = it->second.first;
                best = i;
            }
        }
        if (best == symbols.size()) return symbols;
        symbols[best] = rules.at({symbols[best], symbols[best + 1]}).second;
        symbols.erase(symbols.begin() + static_cast<ptrdiff_t>(best) + 1);
    }
}

TEST(BpeModelTest, MatchesNaiveBpeOnRandomWords) {
    std::mt19937 rng(42);
    std::vector<std::string> tokens = {"a", "b", "c", "d"};
    std::vector<std::string> extra;
    std::vector<BpeMerge> merges;
    std::map<std::string, int32_t> ids;
    for (const auto& t : tokens) ids[t] = static_cast<unsigned char>(t[0]);
    std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> rules;
    while (merges.size() < 300) {
        const std::string& l = tokens[rng() % tokens.size()];
        const std::string& r = tokens[rng() % tokens.size()];
        if (ids.count(l + r) || (l + r).size() > 12) continue;
        const auto id = static_cast<int32_t>(256 + extra.size());
        rules[{ids[l], ids[r]}] = {static_cast<int32_t>(merges.size()), id};
        merges.push_back({l, r});
        extra.push_back(l + r);
        ids[l + r] = id;
        tokens.push_back(l + r);
    }
    auto model = BpeModel::create(byte_vocab(extra), merges, {});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    for (int trial = 0; trial < 500; ++trial) {
        std::string word(1 + rng() % 300, 'a');
        for (char& c : word) c = static_cast<char>('a' + rng() % 4);
        EXPECT_EQ(encode(*model, word), naive_bpe(word, rules)) << word;
        EXPECT_EQ(encode(*model, word), naive_bpe(word, rules)) << "cached: " << word;
    }
}

TEST(BpeModelTest, LongWordsMergeFully) {
    auto model = BpeModel::create(byte_vocab({"aa", "aaaa"}), {{"a", "a"}, {"aa", "aa"}}, {});
    ASSERT_TRUE(model.ok());
    const std::vector<int32_t> ids = encode(*model, std::string(1 << 20, 'a'));
    EXPECT_EQ(ids, std::vector<int32_t>(1 << 18, 257));
}

}  // namespace
}  // namespace se
