// The results of `sparse-engine eval`, printed as a markdown table or one JSON object.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/request.h"
#include "eval/eval_sample.h"

namespace se::cli {

struct EvalSampleResult {
    eval::EvalSample sample;
    std::string answer;  // the generated text after the answer prefix
    bool correct = false;
    int32_t num_answer_tokens = 0;

    // Takes the request's generated text as the answer and scores it.
    void take_answer(const RequestOutput& out);
};

// One task's batch; the times are the engine's prefill and decode steps while it ran.
struct EvalTaskResult {
    std::string task;
    std::vector<EvalSampleResult> samples;
    int64_t num_prefill_tokens = 0;
    double prefill_seconds = 0.0;
    int64_t num_decode_tokens = 0;
    double decode_seconds = 0.0;
    double wall_seconds = 0.0;

    int32_t num_correct() const;
    double accuracy() const;
    double mean_prompt_tokens() const;
    // Fills the token counts and times from the engine's counters around the run.
    void record_engine_work(const EngineStats& before, const EngineStats& after, double seconds);
};

struct EvalRun {
    std::string model;
    std::string method;
    nlohmann::json sparse_config;
    int32_t context_len = 0;
    int32_t num_samples = 0;
    uint64_t seed = 0;
    int32_t threads = 0;
    int32_t turns = 1;  // prompts arrived in this many turns (cli/eval_turns.h)
    int32_t prune_after_turns = 0;
    double prune_keep_ratio = 0.0;
    std::vector<EvalTaskResult> tasks;
};

// One table row per task, plus the mean accuracy over tasks.
void print_eval_markdown(const EvalRun& run);

// {"method", "sparse_config", "context_len", ..., "accuracy", "tasks": [{"task", "accuracy",
// ..., "samples": [{"index", "correct", "answer", ...}]}]}
void print_eval_json(const EvalRun& run);

}  // namespace se::cli
