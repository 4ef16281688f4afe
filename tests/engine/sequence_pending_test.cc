// A sequence through overlapped decode steps (engine.h): the placeholder the next step runs on
// while the token is on its way, and where the sequence stands once the token arrives, which must
// be where plain steps leave it.
#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "engine/sequence.h"
#include "support/greedy_params.h"

namespace se::testing {
namespace {

std::unique_ptr<Sequence> make_running(SamplingParams params) {
    auto seq = std::make_unique<Sequence>(SequenceOptions{.id = 1,
                                                          .prompt = {5, 6, 7},
                                                          .params = std::move(params),
                                                          .sampler = {},
                                                          .eos_token_ids = {},
                                                          .on_delta = {}},
                                          nullptr);
    seq->set_status(SeqStatus::kRunning);
    seq->advance(3);  // the prompt's KV
    return seq;
}

// Plain steps: each step computes the last token's KV, then its token is appended.
TEST(SequencePendingTest, OverlappedStepsLeaveTheSequenceWherePlainStepsDo) {
    const auto plain_seq = make_running(greedy(8));
    const auto overlapped_seq = make_running(greedy(8));
    Sequence& plain = *plain_seq;
    Sequence& overlapped = *overlapped_seq;
    std::vector<LogitEdit> edits;
    for (Sequence* seq : {&plain, &overlapped}) {
        EXPECT_FALSE(seq->append_sampled(11, {}));  // the prefill's token
        seq->advance(1);                            // step N runs on it
    }
    // Plain: N's token arrives, then step N + 1 runs on it.
    EXPECT_FALSE(plain.append_sampled(12, {}));
    plain.advance(1);
    plain.plan_sample(0, edits);
    // Overlapped: step N + 1 runs on a placeholder before N's token is on the host.
    overlapped.push_pending_token();
    EXPECT_TRUE(overlapped.has_pending_token());
    EXPECT_EQ(overlapped.tokens().back(), Sequence::kPendingToken);
    EXPECT_TRUE(overlapped.is_decoding());
    overlapped.advance(1);
    overlapped.plan_sample(0, edits);  // N + 1's draw is planned before N's token arrives
    EXPECT_FALSE(overlapped.append_sampled(12, {}));
    EXPECT_FALSE(overlapped.has_pending_token());
    for (Sequence* seq : {&plain, &overlapped}) {
        EXPECT_EQ(seq->tokens(), (std::vector<int32_t>{5, 6, 7, 11, 12}));
        EXPECT_EQ(seq->num_computed_tokens(), 5);
        EXPECT_EQ(seq->num_pending_tokens(), 0);  // N + 1 ran; its token is not drawn yet
        EXPECT_EQ(seq->output().token_ids, (std::vector<int32_t>{11, 12}));
        EXPECT_FALSE(seq->append_sampled(13, {}));  // N + 1's token
        EXPECT_EQ(seq->num_pending_tokens(), 1);
        EXPECT_TRUE(seq->is_decoding());
    }
    EXPECT_EQ(plain.output().usage.completion_tokens, overlapped.output().usage.completion_tokens);
}

TEST(SequencePendingTest, ADroppedPlaceholderLeavesNoTrace) {
    const auto owned = make_running(greedy(8));
    Sequence& seq = *owned;
    EXPECT_FALSE(seq.append_sampled(11, {}));
    seq.advance(1);
    seq.push_pending_token();
    seq.drop_pending_token();
    EXPECT_FALSE(seq.has_pending_token());
    EXPECT_EQ(seq.tokens(), (std::vector<int32_t>{5, 6, 7, 11}));
    EXPECT_EQ(seq.num_pending_tokens(), 0);
    EXPECT_FALSE(seq.append_sampled(12, {}));
    EXPECT_EQ(seq.tokens(), (std::vector<int32_t>{5, 6, 7, 11, 12}));
}

TEST(SequencePendingTest, TheTokenThatReachesMaxTokensGetsNoStepAfterIt) {
    const auto owned = make_running(greedy(3));
    Sequence& seq = *owned;
    EXPECT_FALSE(seq.ends_at_next_token());  // the prefill's token is the 1st of 3
    EXPECT_FALSE(seq.append_sampled(11, {}));
    seq.advance(1);
    EXPECT_FALSE(seq.ends_at_next_token());  // the 2nd
    EXPECT_FALSE(seq.append_sampled(12, {}));
    seq.advance(1);
    EXPECT_TRUE(seq.ends_at_next_token());  // the 3rd ends it
    EXPECT_TRUE(seq.append_sampled(13, {}));
    EXPECT_EQ(seq.output().finish_reason, FinishReason::kLength);
}

TEST(SequencePendingTest, OnlyRequestsThatNeverReadTheirTokensOverlap) {
    EXPECT_TRUE(make_running(greedy(8))->can_overlap());
    SamplingParams seeded = greedy(8);
    seeded.temperature = 0.8f;
    seeded.seed = 3;
    seeded.logit_bias = {{4, 2.0f}};  // static: the same edit every step
    seeded.min_tokens = 4;            // counts tokens, reads none
    EXPECT_TRUE(make_running(seeded)->can_overlap());
    const std::vector<std::pair<const char*, void (*)(SamplingParams&)>> readers = {
        {"logprobs", [](SamplingParams& p) { p.logprobs = 1; }},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 1.1f; }},
        {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = 0.5f; }},
        {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 0.5f; }},
    };
    for (const auto& [name, set] : readers) {
        SamplingParams params = greedy(8);
        set(params);
        EXPECT_FALSE(make_running(params)->can_overlap()) << name;
    }
}

}  // namespace
}  // namespace se::testing
