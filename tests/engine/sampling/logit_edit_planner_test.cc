// LogitEditPlanner and the backend half of Sampler (plan / finish): the edits a backend applies,
// in the formula of backend/sampling_rows.h, change every logit exactly as the host sampler's
// processing does (bitwise), and plan() draws from the request's random stream as sample() would.
#include "engine/sampling/logit_edit_planner.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "engine/sampling/logits_processors.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/sampling_rng.h"
#include "engine/sampling/token_logprobs.h"

namespace se {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kVocab = 500;
constexpr int32_t kEos = 2;

// What a backend does with one edit (backend/sampling_rows.h), written out on the host.
void apply_edit(float& logit, const LogitEdit& e) {
    logit += e.bias;
    if (e.mask) logit = -kInf;
    if (e.repetition != 1.0f) logit = logit > 0.0f ? logit / e.repetition : logit * e.repetition;
    logit -= e.subtract;
}

struct Case {
    SamplingParams params;
    std::vector<int32_t> masked;
    std::vector<int32_t> prompt;
    std::vector<int32_t> output;
};

Case random_case(int variant, std::mt19937& rng) {
    std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
    std::normal_distribution<float> value(0.0f, 3.0f);
    Case c;
    const int num_bias = variant % 3 == 0 ? 0 : 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < num_bias; ++i) c.params.logit_bias[token(rng)] = value(rng);
    if (variant % 2 == 1) {
        for (int i = 0; i < 3; ++i) c.masked.push_back(token(rng));
        c.masked.push_back(c.masked.front());  // a repeat
    }
    const float repetitions[] = {1.0f, 1.3f, 0.7f, 2.0f};
    const float frequencies[] = {0.0f, 0.5f, -0.25f};
    const float presences[] = {0.0f, -0.3f, 1.0f, 0.1f};
    c.params.repetition_penalty = repetitions[variant % 4];
    c.params.frequency_penalty = frequencies[variant % 3];
    c.params.presence_penalty = presences[(variant / 3) % 4];
    for (int i = 0; i < 40; ++i) c.prompt.push_back(token(rng));
    for (int i = 0; i < 30; ++i) c.output.push_back(token(rng));
    for (int i = 0; i < 10; ++i) c.output.push_back(c.output[i]);  // repeats count
    for (int i = 0; i < 5; ++i) c.output.push_back(c.prompt[i]);   // in both: penalised once
    return c;
}

// Sampler::process_logits, from the public pieces it is made of.
void host_processing(std::span<float> logits, const Case& c) {
    apply_logit_bias(logits, c.params.logit_bias);
    mask_tokens(logits, c.masked);
    PenaltyApplier penalties;
    if (c.params.repetition_penalty != 1.0f) {
        penalties.apply_repetition(logits, c.params.repetition_penalty, c.prompt, c.output);
    }
    if (c.params.frequency_penalty != 0.0f || c.params.presence_penalty != 0.0f) {
        penalties.apply_frequency_presence(logits, c.params.frequency_penalty,
                                           c.params.presence_penalty, c.output);
    }
}

bool same_bits(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) ||
           std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST(LogitEditPlannerTest, EditsReproduceTheHostProcessingBitwise) {
    std::mt19937 rng(7);
    LogitEditPlanner planner;  // one planner across rows, as a step reuses it
    std::vector<LogitEdit> edits;
    std::vector<std::vector<float>> rows, want;
    constexpr int kRows = 24;
    for (int r = 0; r < kRows; ++r) {
        const Case c = random_case(r, rng);
        std::vector<float> row(kVocab);
        std::normal_distribution<float> value(0.0f, 4.0f);
        for (float& v : row) v = value(rng);
        const float specials[] = {-0.0f, 0.0f, kInf, -kInf, 1e-30f, -1e-30f};
        for (size_t i = 0; i < std::size(specials); ++i) {
            row[c.prompt[i]] = specials[i];
            row[c.output[i]] = specials[(i + 3) % std::size(specials)];
        }
        std::vector<float> processed = row;
        host_processing(processed, c);
        const size_t first = edits.size();
        planner.plan(r, c.params, c.masked, c.prompt, c.output, edits);
        // One entry per touched token, all for this row.
        std::set<int32_t> tokens;
        for (size_t i = first; i < edits.size(); ++i) {
            EXPECT_EQ(edits[i].row, r);
            EXPECT_TRUE(tokens.insert(edits[i].token).second) << "token " << edits[i].token;
        }
        rows.push_back(row);
        want.push_back(processed);
    }
    for (const LogitEdit& e : edits) apply_edit(rows[e.row][e.token], e);
    for (int r = 0; r < kRows; ++r) {
        for (int32_t t = 0; t < kVocab; ++t) {
            ASSERT_TRUE(same_bits(rows[r][t], want[r][t]))
                << "row " << r << " token " << t << ": " << rows[r][t] << " vs " << want[r][t];
        }
    }
}

TEST(LogitEditPlannerTest, NothingToDoPlansNoEdit) {
    LogitEditPlanner planner;
    std::vector<LogitEdit> edits;
    const std::vector<int32_t> prompt = {1, 2, 3};
    const std::vector<int32_t> output = {4, 4};
    planner.plan(0, SamplingParams{}, {}, prompt, output, edits);
    EXPECT_TRUE(edits.empty());
}

TEST(LogitEditPlannerTest, EditsOfAnEarlierRowDoNotLeakIntoTheNext) {
    LogitEditPlanner planner;
    std::vector<LogitEdit> edits;
    SamplingParams first;
    first.logit_bias[5] = 1.5f;
    first.repetition_penalty = 1.2f;
    const std::vector<int32_t> prompt = {5, 6};
    planner.plan(0, first, {}, prompt, {}, edits);
    ASSERT_EQ(edits.size(), 2u);
    SamplingParams second;
    second.presence_penalty = 0.5f;
    const std::vector<int32_t> output = {5};
    planner.plan(1, second, {}, {}, output, edits);
    ASSERT_EQ(edits.size(), 3u);
    const LogitEdit& e = edits.back();
    EXPECT_EQ(e.row, 1);
    EXPECT_EQ(e.token, 5);
    EXPECT_TRUE(same_bits(e.bias, -0.0f));  // the identity, not row 0's bias
    EXPECT_EQ(e.repetition, 1.0f);
    EXPECT_EQ(e.subtract, 0.5f);
    EXPECT_EQ(e.mask, 0);
}

Sampler make_sampler(SamplingParams params) {
    return Sampler(std::move(params), SamplerOptions{.eos_token_ids = {kEos}, .seed_if_unset = 9});
}

TEST(SamplerPlanTest, GreedyRowsDrawNoNumber) {
    SamplingParams params;
    params.temperature = 0.0f;
    Sampler sampler = make_sampler(params);
    std::vector<LogitEdit> edits;
    const RowSampling row = sampler.plan(3, {}, {}, edits);
    EXPECT_LT(row.temperature, kGreedyTemperature);
    EXPECT_TRUE(edits.empty());
}

TEST(SamplerPlanTest, RandomRowsCarryTheKnobsAndTheRequestsStream) {
    SamplingParams params;
    params.temperature = 0.7f;
    params.top_k = -1;
    params.top_p = 0.9f;
    params.min_p = 0.05f;
    params.seed = 1234;
    Sampler sampler = make_sampler(params);
    SamplingRng rng(1234);
    std::vector<LogitEdit> edits;
    for (int step = 0; step < 3; ++step) {
        const RowSampling row = sampler.plan(0, {}, {}, edits);
        EXPECT_EQ(row.temperature, 0.7f);
        EXPECT_EQ(row.top_k, 0);  // -1 and 0 both keep every token
        EXPECT_EQ(row.top_p, 0.9f);
        EXPECT_EQ(row.min_p, 0.05f);
        EXPECT_EQ(row.u, rng.next_double()) << "step " << step;
    }
}

TEST(SamplerPlanTest, MinTokensMasksEosUntilEnoughOutputs) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.min_tokens = 2;
    params.stop_token_ids = {7};
    Sampler sampler = make_sampler(params);
    std::vector<LogitEdit> edits;
    const std::vector<int32_t> one = {11};
    sampler.plan(0, {}, one, edits);
    std::set<int32_t> masked;
    for (const LogitEdit& e : edits) {
        if (e.mask) masked.insert(e.token);
    }
    EXPECT_EQ(masked, (std::set<int32_t>{kEos, 7}));
    edits.clear();
    const std::vector<int32_t> two = {11, 12};
    sampler.plan(0, {}, two, edits);
    EXPECT_TRUE(edits.empty());
}

TEST(SamplerPlanTest, FinishReportsLogprobsOfTheRawRow) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.logprobs = 3;
    Sampler sampler = make_sampler(params);
    std::vector<float> raw(kVocab);
    for (int32_t t = 0; t < kVocab; ++t) raw[t] = std::sin(static_cast<float>(t));
    const SampleResult result = sampler.finish(42, raw);
    EXPECT_EQ(result.token, 42);
    ASSERT_TRUE(result.logprobs.has_value());
    const SampledLogprobs want = compute_sampled_logprobs(raw, 42, 3);
    EXPECT_EQ(result.logprobs->logprob, want.logprob);
    EXPECT_EQ(result.logprobs->rank, want.rank);
    EXPECT_EQ(result.logprobs->num_top, 3);

    Sampler plain = make_sampler(SamplingParams{.temperature = 0.0f});
    EXPECT_FALSE(plain.finish(42, {}).logprobs.has_value());
}

}  // namespace
}  // namespace se
