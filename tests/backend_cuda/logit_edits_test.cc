// cuda::apply_logit_edits against the CPU sampler's own edits (apply_logit_bias, mask_tokens,
// PenaltyApplier, in Sampler::process_logits' order), bitwise, on random rows whose edited
// tokens include -0, +0, NaN and infinities. The engine's LogitEditPlanner combines each
// request's edits into one entry per token.
#include "backend/cuda/logit_edits.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "engine/sampling/logit_edit_planner.h"
#include "engine/sampling/logits_processors.h"
#include "engine/sampling/sampling_params.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::upload;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// One request's edits, as SamplingParams and its token history state them.
struct RowEdits {
    std::map<int32_t, float> bias;
    bool min_tokens_active = false;
    std::vector<int32_t> masked;  // stop ids and EOS; may repeat
    float repetition = 1.0f;
    float frequency = 0.0f;
    float presence = 0.0f;
    std::vector<int32_t> prompt;
    std::vector<int32_t> output;
};

// The CPU sampler's edits (Sampler::process_logits).
void cpu_edits(std::span<float> logits, const RowEdits& e) {
    apply_logit_bias(logits, e.bias);
    if (e.min_tokens_active) mask_tokens(logits, e.masked);
    PenaltyApplier penalties;
    if (e.repetition != 1.0f) penalties.apply_repetition(logits, e.repetition, e.prompt, e.output);
    if (e.frequency != 0.0f || e.presence != 0.0f)
        penalties.apply_frequency_presence(logits, e.frequency, e.presence, e.output);
}

// The engine's combination (LogitEditPlanner, one planner across rows as a sampler step reuses
// it): one entry per token that any edit touches.
void combine(LogitEditPlanner& planner, int32_t row, const RowEdits& e,
             std::vector<LogitEdit>& out) {
    SamplingParams params;
    params.logit_bias = e.bias;
    params.repetition_penalty = e.repetition;
    params.frequency_penalty = e.frequency;
    params.presence_penalty = e.presence;
    planner.plan(
        row, params,
        e.min_tokens_active ? std::span<const int32_t>(e.masked) : std::span<const int32_t>(),
        e.prompt, e.output, out);
}

RowEdits random_edits(int32_t vocab, int variant, std::mt19937& rng) {
    std::uniform_int_distribution<int32_t> token(0, vocab - 1);
    std::normal_distribution<float> value(0.0f, 3.0f);
    RowEdits e;
    const int num_bias = variant % 3 == 0 ? 0 : 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < num_bias; ++i) e.bias[token(rng)] = value(rng);
    if (variant % 4 == 1) e.bias[token(rng)] = 0.0f;  // +0 turns a -0 logit into +0
    e.min_tokens_active = variant % 2 == 1;
    for (int i = 0; i < 3; ++i) e.masked.push_back(token(rng));
    e.masked.push_back(e.masked.front());
    const float repetitions[] = {1.0f, 1.3f, 0.7f, 2.0f};
    e.repetition = repetitions[variant % 4];
    const float frequencies[] = {0.0f, 0.5f, -0.25f};
    const float presences[] = {0.0f, -0.3f, 1.0f, 0.1f};
    e.frequency = frequencies[variant % 3];
    e.presence = presences[(variant / 3) % 4];
    for (int i = 0; i < 40; ++i) e.prompt.push_back(token(rng));
    for (int i = 0; i < 30; ++i) e.output.push_back(token(rng));
    for (int i = 0; i < 10; ++i) e.output.push_back(e.output[i]);  // repeats count
    for (int i = 0; i < 5; ++i) e.output.push_back(e.prompt[i]);   // in both, penalised once
    return e;
}

bool same_float(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) ||
           std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

class LogitEditsTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(LogitEditsTest, BitwiseAsTheCpuSampler) {
    const int32_t vocab = GetParam();
    constexpr int32_t kRows = 12;
    const int64_t stride = vocab + 3;
    std::mt19937 rng(static_cast<uint32_t>(vocab));
    std::vector<float> logits(kRows * stride, 7.0f);  // padding: must stay as it is
    std::vector<float> want = logits;
    std::vector<LogitEdit> edits;
    LogitEditPlanner planner;
    for (int32_t r = 0; r < kRows; ++r) {
        RowEdits e = random_edits(vocab, r, rng);
        std::vector<float> row = testing::random_floats(vocab, 100 + r, -10, 10);
        // Special values where the edits land.
        const float specials[] = {-0.0f, 0.0f, kNan, kInf, -kInf, 1e-30f, -1e-30f};
        for (size_t i = 0; i < std::size(specials); ++i) {
            row[e.prompt[i]] = specials[i];
            row[e.output[i]] = specials[(i + 3) % std::size(specials)];
        }
        if (!e.bias.empty()) row[e.bias.begin()->first] = -0.0f;
        std::copy(row.begin(), row.end(), logits.begin() + r * stride);
        cpu_edits(row, e);
        std::copy(row.begin(), row.end(), want.begin() + r * stride);
        combine(planner, r, e, edits);
    }
    const DeviceBuffer d_logits = upload(logits);
    const DeviceBuffer d_edits = upload(edits);
    const Status s = apply_logit_edits({.logits = d_logits.as<float>(),
                                        .edits = d_edits.as<LogitEdit>(),
                                        .row_stride = stride,
                                        .num_rows = kRows,
                                        .vocab = vocab,
                                        .num_edits = static_cast<int32_t>(edits.size())},
                                       nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const std::vector<float> got = download<float>(d_logits, logits.size());
    int failures = 0;
    for (size_t i = 0; i < got.size() && failures < 10; ++i) {
        if (!same_float(got[i], want[i])) {
            ADD_FAILURE() << "row " << i / stride << " token " << i % stride << ": got " << got[i]
                          << ", want " << want[i];
            ++failures;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LogitEditsTest, ::testing::Values(1000, 151936));

TEST(LogitEditsArgs, InvalidArgumentsNameTheField) {
    const DeviceBuffer d_logits = upload(std::vector<float>(8, 0.0f));
    const DeviceBuffer d_edits = upload(std::vector<LogitEdit>(1));
    const LogitEditsParams ok{.logits = d_logits.as<float>(),
                              .edits = d_edits.as<LogitEdit>(),
                              .row_stride = 8,
                              .num_rows = 1,
                              .vocab = 8,
                              .num_edits = 1};
    EXPECT_TRUE(apply_logit_edits(ok, nullptr).ok());
    const auto expect_invalid = [](LogitEditsParams p, const std::string& field) {
        testing::expect_invalid_argument(apply_logit_edits(p, nullptr), field);
    };
    LogitEditsParams p = ok;
    p.logits = nullptr;
    expect_invalid(p, "logits");
    p = ok;
    p.edits = nullptr;
    expect_invalid(p, "edits");
    p = ok;
    p.vocab = 0;
    expect_invalid(p, "vocab");
    p = ok;
    p.num_rows = -1;
    expect_invalid(p, "num_rows");
    p = ok;
    p.num_edits = -1;
    expect_invalid(p, "num_edits");
    p = ok;
    p.row_stride = 7;
    expect_invalid(p, "row_stride");
    testing::must_ok(cuda_status(cudaDeviceSynchronize(), "apply_logit_edits"));
}

}  // namespace
}  // namespace se::cuda
