// Decides when a request ends and which of its text may be streamed. Text arrives as one UTF-8
// delta per token; a stop string may span several deltas, so the longest suffix that could
// still grow into a stop string is held back until it either completes (and is cut) or stops
// matching (and is released):
//
//   stop = {"\n\n"}        text:  H e l l o \n | \n W o r l d
//   after "Hello\n":       emitted "Hello", held back "\n"
//   after "\nWorld":       match at 5 -> final text "Hello", finish "stop", stop_reason "\n\n"
//
// Precedence on one token: EOS, then stop_token_ids, then stop strings, then max_tokens. A
// natural stop on the last allowed token reports "stop" (vLLM V0; V1 does so for stop strings but
// reports "length" for EOS and stop ids there).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/sampling/sampling_params.h"

namespace se {

enum class FinishReason {
    kStop,    // EOS, a stop token id or a stop string
    kLength,  // max_tokens reached
    kAbort,   // cancelled or failed: set by the engine, never by StopChecker
};

// "stop" / "length" as the OpenAI API spells finish_reason; "abort" as vLLM does.
std::string_view finish_reason_name(FinishReason reason);

// vLLM's stop_reason: the matched stop string, the stop token id, or nothing (EOS, length).
using StopReason = std::variant<std::monostate, int32_t, std::string>;

struct StopDecision {
    std::optional<FinishReason> finish_reason;  // set once the request is finished
    StopReason stop_reason;
    std::string emit_text;  // text that became safe to stream with this token

    bool finished() const { return finish_reason.has_value(); }
};

// One per request; on_token must not be called again after a finished decision.
class StopChecker {
  public:
    // `eos_token_ids` end the request unless params.ignore_eos.
    StopChecker(const SamplingParams& params, std::vector<int32_t> eos_token_ids);

    // `text_delta` is the detokenized text of `token`; `num_output_tokens` counts the output
    // tokens including `token`. EOS and stop token ids that end the request add no text; no stop
    // condition applies while num_output_tokens <= min_tokens.
    StopDecision on_token(int32_t token, std::string_view text_delta, int32_t num_output_tokens);

    // Everything emitted so far; once finished, the request's final output text.
    std::string_view emitted_text() const { return std::string_view(text_).substr(0, emitted_); }
    bool finished() const { return finished_; }

  private:
    struct StopMatch {
        size_t index;  // into stop_
        size_t begin;  // byte offset in text_
    };

    std::optional<StopMatch> find_stop_string(size_t delta_begin) const;
    size_t held_back_length() const;
    StopDecision finish(FinishReason reason, StopReason stop_reason, size_t text_end);
    std::string take_emit_text(size_t text_end);

    std::vector<std::string> stop_;
    std::vector<int32_t> stop_token_ids_;
    std::vector<int32_t> eos_token_ids_;  // empty when ignore_eos
    bool include_stop_str_in_output_ = false;
    int32_t min_tokens_ = 0;
    std::optional<int32_t> max_tokens_;

    std::string text_;    // every byte of output text received (cut to the final text on finish)
    size_t emitted_ = 0;  // prefix of text_ already handed out
    bool finished_ = false;
};

}  // namespace se
