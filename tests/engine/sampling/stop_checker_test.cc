#include "engine/sampling/stop_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/sampling/sampling_rng.h"

namespace se {
namespace {

constexpr int32_t kEos = 0;
constexpr int32_t kText = 100;  // any token that is neither EOS nor a stop token

struct FedStream {
    std::vector<std::string> emitted;  // emit_text per token
    StopDecision last;
    int32_t num_tokens = 0;
};

// Feeds the deltas one token each until the checker finishes or the deltas run out.
FedStream feed(StopChecker& checker, const std::vector<std::string>& deltas) {
    FedStream run;
    for (const std::string& delta : deltas) {
        run.last = checker.on_token(kText, delta, ++run.num_tokens);
        run.emitted.push_back(run.last.emit_text);
        if (run.last.finished()) break;
    }
    return run;
}

SamplingParams with_stop(std::vector<std::string> stop) {
    return SamplingParams{.max_tokens = 1000, .stop = std::move(stop)};
}

TEST(StopCheckerTest, FinishReasonNamesFollowOpenAi) {
    EXPECT_EQ(finish_reason_name(FinishReason::kStop), "stop");
    EXPECT_EQ(finish_reason_name(FinishReason::kLength), "length");
    EXPECT_EQ(finish_reason_name(FinishReason::kAbort), "abort");
}

TEST(StopCheckerTest, StopStringAcrossTokensIsCutAndNeverStreamed) {
    StopChecker checker(with_stop({"\n\n"}), {kEos});
    const FedStream run = feed(checker, {"Hello", "\n", "\nWorld"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"Hello", "", ""}));
    ASSERT_TRUE(run.last.finished());
    EXPECT_EQ(run.last.finish_reason, FinishReason::kStop);
    EXPECT_EQ(std::get<std::string>(run.last.stop_reason), "\n\n");
    EXPECT_EQ(checker.emitted_text(), "Hello");
    EXPECT_TRUE(checker.finished());
}

TEST(StopCheckerTest, PartialMatchIsHeldBackThenReleased) {
    StopChecker checker(with_stop({"###"}), {kEos});
    const FedStream run = feed(checker, {"a#", "#", "b", "##"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"a", "", "##b", ""}));
    EXPECT_FALSE(run.last.finished());
    EXPECT_EQ(checker.emitted_text(), "a##b");
    // EOS ends the request and releases the held-back "##".
    const StopDecision eos = checker.on_token(kEos, "", 5);
    EXPECT_EQ(eos.finish_reason, FinishReason::kStop);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(eos.stop_reason));
    EXPECT_EQ(eos.emit_text, "##");
    EXPECT_EQ(checker.emitted_text(), "a##b##");
}

TEST(StopCheckerTest, MatchInsideADeltaDropsTheRestOfIt) {
    StopChecker checker(with_stop({"STOP"}), {kEos});
    const FedStream run = feed(checker, {"one ", "two STOP three"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"one ", "two "}));
    EXPECT_EQ(checker.emitted_text(), "one two ");
}

TEST(StopCheckerTest, EarliestOccurrenceWinsAmongStopStrings) {
    StopChecker checker(with_stop({"world", "lo"}), {kEos});
    const FedStream run = feed(checker, {"hello world"});
    EXPECT_EQ(std::get<std::string>(run.last.stop_reason), "lo");
    EXPECT_EQ(checker.emitted_text(), "hel");
}

TEST(StopCheckerTest, IncludeStopStringStreamsEverythingUpToItsEnd) {
    SamplingParams params = with_stop({"END"});
    params.include_stop_str_in_output = true;
    StopChecker checker(params, {kEos});
    const FedStream run = feed(checker, {"fooE", "NDbar"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"fooE", "ND"}));
    EXPECT_EQ(std::get<std::string>(run.last.stop_reason), "END");
    EXPECT_EQ(checker.emitted_text(), "fooEND");
}

TEST(StopCheckerTest, MultiByteStopStringsMatchOnCharacterBoundaries) {
    StopChecker checker(with_stop({"é!"}), {kEos});
    const FedStream run = feed(checker, {"café", "!", "x"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"caf", ""}));
    EXPECT_EQ(checker.emitted_text(), "caf");
}

TEST(StopCheckerTest, StopTokenIdEndsWithoutItsText) {
    SamplingParams params{.max_tokens = 100, .stop_token_ids = {7}};
    StopChecker checker(params, {kEos});
    EXPECT_EQ(checker.on_token(kText, "abc", 1).emit_text, "abc");
    const StopDecision stop = checker.on_token(7, "<|im_end|>", 2);
    EXPECT_EQ(stop.finish_reason, FinishReason::kStop);
    EXPECT_EQ(std::get<int32_t>(stop.stop_reason), 7);
    EXPECT_EQ(stop.emit_text, "");
    EXPECT_EQ(checker.emitted_text(), "abc");
}

TEST(StopCheckerTest, EosEndsUnlessIgnored) {
    StopChecker stops(SamplingParams{}, {kEos, 5});
    const StopDecision d = stops.on_token(5, "</s>", 1);
    EXPECT_EQ(d.finish_reason, FinishReason::kStop);
    EXPECT_EQ(stops.emitted_text(), "");

    StopChecker ignores(SamplingParams{.ignore_eos = true}, {kEos, 5});
    const StopDecision kept = ignores.on_token(5, "</s>", 1);
    EXPECT_FALSE(kept.finished());
    EXPECT_EQ(kept.emit_text, "</s>");
}

TEST(StopCheckerTest, MaxTokensEndsWithLengthAndFlushesHeldText) {
    SamplingParams params{.max_tokens = 3, .stop = {"xyz"}};
    StopChecker checker(params, {kEos});
    const FedStream run = feed(checker, {"a", "b", "cx"});
    EXPECT_EQ(run.emitted, (std::vector<std::string>{"a", "b", "cx"}));
    EXPECT_EQ(run.last.finish_reason, FinishReason::kLength);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(run.last.stop_reason));
}

TEST(StopCheckerTest, NaturalStopOnTheLastAllowedTokenReportsStop) {
    StopChecker by_eos(SamplingParams{.max_tokens = 2}, {kEos});
    EXPECT_FALSE(by_eos.on_token(kText, "a", 1).finished());
    EXPECT_EQ(by_eos.on_token(kEos, "", 2).finish_reason, FinishReason::kStop);

    StopChecker by_string(SamplingParams{.max_tokens = 1, .stop = {"b"}}, {kEos});
    const StopDecision d = by_string.on_token(kText, "ab", 1);
    EXPECT_EQ(d.finish_reason, FinishReason::kStop);
    EXPECT_EQ(d.emit_text, "a");
}

TEST(StopCheckerTest, NoMaxTokensNeverEndsForLength) {
    SamplingParams params;
    params.max_tokens.reset();
    StopChecker checker(params, {kEos});
    for (int32_t i = 1; i <= 100; ++i) EXPECT_FALSE(checker.on_token(kText, "x", i).finished());
}

TEST(StopCheckerTest, NothingStopsBeforeMinTokens) {
    SamplingParams params{
        .max_tokens = 100, .min_tokens = 2, .stop = {"ab"}, .stop_token_ids = {7}};
    StopChecker checker(params, {kEos});
    EXPECT_FALSE(checker.on_token(kEos, "", 1).finished());
    EXPECT_FALSE(checker.on_token(kText, "ab", 2).finished());  // complete inside min_tokens
    const StopDecision d = checker.on_token(7, "", 3);
    EXPECT_EQ(d.finish_reason, FinishReason::kStop);
    EXPECT_EQ(checker.emitted_text(), "ab");
}

TEST(StopCheckerTest, StopStringStartedInsideMinTokensStillMatchesLater) {
    SamplingParams params{.max_tokens = 100, .min_tokens = 1, .stop = {"ab"}};
    StopChecker checker(params, {kEos});
    EXPECT_EQ(checker.on_token(kText, "xa", 1).emit_text, "x");
    const StopDecision d = checker.on_token(kText, "bc", 2);
    EXPECT_EQ(d.finish_reason, FinishReason::kStop);
    EXPECT_EQ(checker.emitted_text(), "x");
}

// The first token whose text completes an occurrence ends the request; among the occurrences
// it completes, the one starting earliest is cut.
std::string reference_output(const std::vector<std::string>& deltas,
                             const std::vector<std::string>& stops) {
    std::string text;
    for (const std::string& delta : deltas) {
        const size_t begin = text.size();
        text += delta;
        size_t cut = std::string::npos;
        for (const std::string& stop : stops) {
            for (size_t pos = text.find(stop); pos != std::string::npos;
                 pos = text.find(stop, pos + 1)) {
                if (pos + stop.size() > begin) {
                    cut = std::min(cut, pos);
                    break;
                }
            }
        }
        if (cut != std::string::npos) return text.substr(0, cut);
    }
    return text;
}

TEST(StopCheckerTest, RandomStreamsMatchReferenceAndNeverLeakStopText) {
    SamplingRng rng(99);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng.next_double() * n); };
    const std::string alphabet = "aab";
    for (int trial = 0; trial < 500; ++trial) {
        std::vector<std::string> stops(1 + pick(3));
        for (std::string& stop : stops) {
            for (size_t len = 1 + pick(4); len > 0; --len) stop += alphabet[pick(alphabet.size())];
        }
        std::vector<std::string> deltas(1 + pick(12));
        for (std::string& delta : deltas) {
            for (size_t len = pick(4); len > 0; --len) delta += alphabet[pick(alphabet.size())];
        }
        SamplingParams params{.max_tokens = 1000, .stop = stops};
        StopChecker checker(params, {kEos});
        const FedStream run = feed(checker, deltas);
        std::string streamed;
        for (const std::string& piece : run.emitted) streamed += piece;
        if (!run.last.finished())
            streamed += checker.on_token(kEos, "", run.num_tokens + 1).emit_text;
        EXPECT_EQ(streamed, reference_output(deltas, stops)) << "trial " << trial;
        EXPECT_EQ(streamed, checker.emitted_text());
    }
}

}  // namespace
}  // namespace se
