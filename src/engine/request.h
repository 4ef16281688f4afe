// What a caller gets back for a request: vLLM's RequestOutput shape (text, token ids, finish
// reason, logprobs, usage), and the deltas a streaming callback receives.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/sampling/stop_checker.h"
#include "engine/sampling/token_logprobs.h"
#include "kv/chain_cache.h"

namespace se {

using RequestId = int64_t;

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    int32_t cached_tokens = 0;  // prompt tokens whose KV was reused, not recomputed
    int32_t reused_tokens = 0;  // of those, the tokens a resumed chain's state covered
};

// The chain a request ran on (RequestOptions::chain_id) and what became of it.
struct ChainReport {
    std::string id;
    ChainStatus status = ChainStatus::kCreated;
};

struct RequestTimings {
    double queue_seconds = 0.0;        // arrival until the first step that worked on it
    double prefill_seconds = 0.0;      // steps that processed its prompt
    double decode_seconds = 0.0;       // steps that generated its tokens after the first
    double first_token_seconds = 0.0;  // arrival until the first output token (TTFT)
};

struct RequestOutput {
    RequestId id = 0;
    std::vector<int32_t> prompt_token_ids;
    std::string text;
    std::vector<int32_t> token_ids;
    std::optional<FinishReason> finish_reason;  // unset while running
    StopReason stop_reason;
    Status error;  // set when finish_reason is kAbort because something failed
    std::vector<SampledLogprobs> logprobs;  // one per output token when requested
    Usage usage;
    RequestTimings timings;
    std::optional<ChainReport> chain;  // set for requests that named a chain

    bool finished() const { return finish_reason.has_value(); }
};

// One streamed increment: the text that became safe to show and the tokens behind it.
struct StreamDelta {
    RequestId id = 0;
    std::string text;
    std::vector<int32_t> token_ids;
    std::optional<SampledLogprobs> logprobs;  // of the token of this delta, when requested
    std::optional<FinishReason> finish_reason;
    const RequestOutput* output = nullptr;  // the whole output so far (valid during the call)
};

using StreamCallback = std::function<void(const StreamDelta&)>;

}  // namespace se
