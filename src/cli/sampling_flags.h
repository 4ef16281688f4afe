// Sampling flags (vLLM SamplingParams names, dashed).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/sampling/sampling_params.h"

namespace se::cli {

struct SamplingFlags {
    SamplingParams params;
    int32_t max_tokens = 256;  // 0: until the context is full
    int32_t logprobs = -1;     // -1: none
    uint64_t request_seed = 0;
    bool has_request_seed = false;
};

void add_sampling_flags(CLI::App& app, SamplingFlags& flags);

// The flags as SamplingParams (validated later against the vocabulary by the engine).
SamplingParams to_sampling_params(const SamplingFlags& flags);

}  // namespace se::cli
