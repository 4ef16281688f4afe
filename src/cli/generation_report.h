// Printing one finished request: its logprobs and its throughput line.
#pragma once

#include "engine/engine.h"

namespace se::cli {

// "prompt 12 tokens, 850.1 tok/s | output 40 tokens, 120.3 tok/s | finish stop" on stderr.
void print_throughput(const RequestOutput& output);

// One line per output token with its logprob and the top alternatives, on stderr.
void print_logprobs(const Engine& engine, const RequestOutput& output);

}  // namespace se::cli
