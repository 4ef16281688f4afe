#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

namespace se {
namespace {

constexpr int32_t kBs = 4;

// Dense-like costs over a pool of `total` blocks: a sequence holds ceil(tokens / kBs) blocks.
class FakeOracle final : public MemoryOracle {
  public:
    explicit FakeOracle(int64_t total) : total_(total) {}

    int64_t available_blocks() const override { return total_ - used(); }
    bool fits_alone(int64_t n) const override { return (n + kBs - 1) / kBs <= total_; }
    AdmissionCost admission_cost(const PrefixQuery& q, int32_t max_chunk) const override {
        const auto first = std::min<int32_t>(max_chunk, static_cast<int32_t>(q.tokens.size()));
        return {.hit_tokens = 0, .first_chunk = first, .blocks = (first + kBs - 1) / kBs};
    }
    int64_t step_cost(SeqId seq, int32_t n) const override {
        const int32_t have = tokens_.count(seq) ? tokens_.at(seq) : 0;
        return (have + n + kBs - 1) / kBs - (have + kBs - 1) / kBs;
    }
    int64_t release_gain(SeqId seq) const override {
        return tokens_.count(seq) ? (tokens_.at(seq) + kBs - 1) / kBs : 0;
    }

    void grow(SeqId seq, int32_t n) { tokens_[seq] += n; }
    void release(SeqId seq) { tokens_.erase(seq); }

  private:
    int64_t used() const {
        int64_t u = 0;
        for (const auto& [seq, n] : tokens_) u += (n + kBs - 1) / kBs;
        return u;
    }
    int64_t total_;
    std::map<SeqId, int32_t> tokens_;
};

class SchedulerTest : public ::testing::Test {
  protected:
    SchedulerTest() : oracle_(1000) {}

    void make_scheduler(SchedulerConfig config) {
        scheduler_ = std::make_unique<Scheduler>(config, oracle_, [](const Sequence& s) {
            return PrefixQuery{.ns = 0, .tokens = s.tokens()};
        });
    }

    Sequence* add(int32_t prompt_len, int32_t max_tokens = 8) {
        SamplingParams params;
        params.temperature = 0.0f;
        params.ignore_eos = true;
        params.max_tokens = max_tokens;
        const RequestId id = static_cast<RequestId>(seqs_.size() + 1);
        seqs_.push_back(std::make_unique<Sequence>(
            SequenceOptions{
                .id = id, .prompt = std::vector<int32_t>(prompt_len, 1), .params = params},
            nullptr));
        scheduler_->add(seqs_.back().get());
        return seqs_.back().get();
    }

    // What the engine does with a plan, with fake logits.
    void run(const ScheduledStep& step) {
        for (Sequence* s : step.preempted) {
            oracle_.release(s->seq_id());
            s->reset_for_recompute();
        }
        for (const Admission& a : step.admitted) a.seq->set_status(SeqStatus::kRunning);
        scheduler_->commit(step);
        for (size_t i = 0; i < step.seqs.size(); ++i) {
            oracle_.grow(step.seqs[i]->seq_id(), step.plan.seqs[i].num_new_tokens);
            step.seqs[i]->advance(step.plan.seqs[i].num_new_tokens);
            if (step.plan.seqs[i].samples) {
                std::vector<float> logits(8, 0.0f);
                if (step.seqs[i]->sample_and_append(logits)) {
                    oracle_.release(step.seqs[i]->seq_id());
                    scheduler_->remove(step.seqs[i]);
                }
            }
        }
    }

    FakeOracle oracle_;
    std::unique_ptr<Scheduler> scheduler_;
    std::vector<std::unique_ptr<Sequence>> seqs_;
};

TEST_F(SchedulerTest, AdmitsInArrivalOrderWithinMaxNumSeqs) {
    make_scheduler({.max_num_seqs = 2, .max_num_batched_tokens = 100, .prefill_chunk_size = 100});
    Sequence* a = add(5);
    Sequence* b = add(6);
    add(7);
    auto step = scheduler_->plan();
    ASSERT_TRUE(step);
    EXPECT_EQ(step->plan.phase, StepPhase::kPrefill);
    ASSERT_EQ(step->seqs.size(), 2u);
    EXPECT_EQ(step->seqs[0], a);
    EXPECT_EQ(step->seqs[1], b);
    EXPECT_TRUE(step->plan.seqs[0].samples);
}

TEST_F(SchedulerTest, SplitsLongPromptsIntoChunksWithinTheTokenBudget) {
    make_scheduler({.max_num_seqs = 8, .max_num_batched_tokens = 10, .prefill_chunk_size = 6});
    Sequence* a = add(14);
    Sequence* b = add(3);
    auto step = scheduler_->plan();
    ASSERT_TRUE(step);
    ASSERT_EQ(step->seqs.size(), 2u);
    EXPECT_EQ(step->plan.seqs[0].num_new_tokens, 6);  // chunk size
    EXPECT_FALSE(step->plan.seqs[0].samples);
    EXPECT_EQ(step->plan.seqs[1].num_new_tokens, 3);
    run(*step);
    // b decodes next (alternation), then a continues its prompt.
    step = scheduler_->plan();
    EXPECT_EQ(step->plan.phase, StepPhase::kDecode);
    EXPECT_EQ(step->seqs, std::vector<Sequence*>{b});
    run(*step);
    step = scheduler_->plan();
    EXPECT_EQ(step->plan.phase, StepPhase::kPrefill);
    EXPECT_EQ(step->seqs[0], a);
    EXPECT_EQ(step->plan.seqs[0].num_computed_tokens, 6);
    EXPECT_EQ(step->plan.seqs[0].num_new_tokens, 6);
}

TEST_F(SchedulerTest, NeitherPrefillNorDecodeWaitsMoreThanOneStep) {
    make_scheduler({.max_num_seqs = 64, .max_num_batched_tokens = 8, .prefill_chunk_size = 8});
    add(4, 50);
    std::vector<StepPhase> phases;
    for (int i = 0; i < 40; ++i) {
        if (i % 3 == 0) add(20, 50);  // prefill work keeps arriving
        auto step = scheduler_->plan();
        ASSERT_TRUE(step);
        phases.push_back(step->plan.phase);
        run(*step);
    }
    for (size_t i = 2; i < phases.size(); ++i) {
        EXPECT_FALSE(phases[i] == phases[i - 1] && phases[i] == phases[i - 2])
            << "three steps of one kind in a row while the other kind waited, at " << i;
    }
}

TEST_F(SchedulerTest, PreemptsNewestFirstWhenDecodeRunsOutOfBlocks) {
    oracle_ = FakeOracle(6);
    make_scheduler({.max_num_seqs = 8, .max_num_batched_tokens = 100, .prefill_chunk_size = 100});
    Sequence* a = add(8, 20);
    Sequence* b = add(8, 20);
    Sequence* c = add(4, 20);
    run(*scheduler_->plan());  // all three prefill: 2 + 2 + 1 blocks
    ASSERT_EQ(oracle_.available_blocks(), 1);
    // Decode: a and b each need a new block (9th token), c fits: 2 > 1 available.
    auto step = scheduler_->plan();
    ASSERT_TRUE(step);
    EXPECT_EQ(step->plan.phase, StepPhase::kDecode);
    ASSERT_EQ(step->preempted.size(), 1u);
    EXPECT_EQ(step->preempted[0], c);  // newest first: c frees 1 block, enough
    EXPECT_EQ(step->seqs, (std::vector<Sequence*>{a, b}));
    run(*step);
    EXPECT_EQ(c->num_computed_tokens(), 0);
    EXPECT_EQ(c->num_preemptions(), 1);
    EXPECT_EQ(scheduler_->num_waiting(), 1);
}

TEST_F(SchedulerTest, PlanningIsPureAndARefusedAdmissionChangesNothing) {
    oracle_ = FakeOracle(3);
    make_scheduler({.max_num_seqs = 8, .max_num_batched_tokens = 100, .prefill_chunk_size = 100});
    Sequence* big = add(40);  // needs 10 blocks: refused
    add(4);                   // FCFS: blocked behind it
    const int64_t available = oracle_.available_blocks();
    auto first = scheduler_->plan();
    auto second = scheduler_->plan();
    EXPECT_FALSE(first.has_value());
    EXPECT_FALSE(second.has_value());
    EXPECT_EQ(oracle_.available_blocks(), available);
    EXPECT_EQ(scheduler_->num_waiting(), 2);
    EXPECT_EQ(scheduler_->num_running(), 0);
    EXPECT_EQ(big->status(), SeqStatus::kWaiting);
    EXPECT_EQ(big->num_computed_tokens(), 0);
}

}  // namespace
}  // namespace se
