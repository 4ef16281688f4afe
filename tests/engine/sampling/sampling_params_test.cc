#include "engine/sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace se {
namespace {

constexpr int32_t kVocab = 100;

TEST(SamplingParamsTest, DefaultsMatchVllm) {
    SamplingParams p;
    EXPECT_EQ(p.temperature, 1.0f);
    EXPECT_EQ(p.top_p, 1.0f);
    EXPECT_EQ(p.top_k, 0);
    EXPECT_EQ(p.min_p, 0.0f);
    EXPECT_FALSE(p.seed.has_value());
    EXPECT_EQ(p.max_tokens, 16);
    EXPECT_EQ(p.min_tokens, 0);
    EXPECT_EQ(p.presence_penalty, 0.0f);
    EXPECT_EQ(p.frequency_penalty, 0.0f);
    EXPECT_EQ(p.repetition_penalty, 1.0f);
    EXPECT_TRUE(p.stop.empty());
    EXPECT_TRUE(p.stop_token_ids.empty());
    EXPECT_FALSE(p.include_stop_str_in_output);
    EXPECT_FALSE(p.ignore_eos);
    EXPECT_FALSE(p.logprobs.has_value());
    EXPECT_TRUE(p.skip_special_tokens);
    EXPECT_TRUE(p.logit_bias.empty());
    EXPECT_FALSE(p.is_greedy());
    EXPECT_TRUE(p.validate(kVocab).ok());
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
    SamplingParams p{
        .temperature = 0.0f,
        .top_p = 1.0f,
        .top_k = -1,
        .min_p = 1.0f,
        .seed = 0,
        .max_tokens = 1,
        .min_tokens = 1,
        .presence_penalty = -2.0f,
        .frequency_penalty = 2.0f,
        .repetition_penalty = 0.01f,
        .stop = {"x"},
        .stop_token_ids = {0, kVocab - 1},
        .logprobs = kMaxLogprobs,
        .logit_bias = {{0, -100.0f}, {kVocab - 1, 100.0f}},
    };
    EXPECT_TRUE(p.validate(kVocab).ok());
    EXPECT_TRUE(p.is_greedy());
    p.max_tokens.reset();
    p.min_tokens = 1000;  // no max_tokens: the context bounds the output instead
    p.logprobs = 0;
    EXPECT_TRUE(p.validate(kVocab).ok());
}

struct BadCase {
    std::function<void(SamplingParams&)> edit;
    std::string message;
};

TEST(SamplingParamsTest, RejectionsNameTheFieldAndTheValue) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<BadCase> cases = {
        {[](auto& p) { p.temperature = -0.5f; }, "temperature must be finite and >= 0, got -0.5"},
        {[&](auto& p) { p.temperature = inf; }, "temperature must be finite and >= 0, got inf"},
        {[](auto& p) { p.top_p = 1.5f; }, "top_p must be in (0, 1], got 1.5"},
        {[](auto& p) { p.top_p = 0.0f; }, "top_p must be in (0, 1], got 0"},
        {[&](auto& p) { p.top_p = nan; }, "top_p must be in (0, 1], got nan"},
        {[](auto& p) { p.top_k = -2; }, "top_k must be -1 or 0 (off) or >= 1, got -2"},
        {[](auto& p) { p.min_p = 1.5f; }, "min_p must be in [0, 1], got 1.5"},
        {[](auto& p) { p.min_p = -0.25f; }, "min_p must be in [0, 1], got -0.25"},
        {[](auto& p) { p.presence_penalty = 2.5f; },
         "presence_penalty must be in [-2, 2], got 2.5"},
        {[](auto& p) { p.frequency_penalty = -3.0f; },
         "frequency_penalty must be in [-2, 2], got -3"},
        {[](auto& p) { p.repetition_penalty = 0.0f; },
         "repetition_penalty must be finite and > 0, got 0"},
        {[](auto& p) { p.max_tokens = 0; }, "max_tokens must be >= 1, got 0"},
        {[](auto& p) { p.min_tokens = -1; }, "min_tokens must be >= 0, got -1"},
        {[](auto& p) { p.min_tokens = 20; }, "min_tokens must be <= max_tokens (16), got 20"},
        {[](auto& p) { p.logprobs = 21; }, "logprobs must be in [0, 20], got 21"},
        {[](auto& p) { p.logprobs = -1; }, "logprobs must be in [0, 20], got -1"},
        {[](auto& p) {
             p.stop = {"a", ""};
         },
         "stop[1] must not be empty"},
        {[](auto& p) {
             p.stop_token_ids = {5, kVocab};
         },
         "stop_token_ids[1] must be in [0, 100), got 100"},
        {[](auto& p) { p.stop_token_ids = {-3}; }, "stop_token_ids[0] must be in [0, 100), got -3"},
        {[](auto& p) {
             p.logit_bias = {{-1, 1.0f}};
         },
         "logit_bias token id must be in [0, 100), got -1"},
        {[&](auto& p) {
             p.logit_bias = {{3, inf}};
         },
         "logit_bias[3] must be finite, got inf"},
    };
    for (const BadCase& c : cases) {
        SamplingParams p;
        c.edit(p);
        const Status s = p.validate(kVocab);
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
        EXPECT_EQ(s.message(), c.message);
    }
}

}  // namespace
}  // namespace se
