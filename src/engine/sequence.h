// One request as the engine runs it: its tokens, how many of them have KV computed, and the
// per-request sampling, detokenization and stop state.
//
//   tokens:  [ prompt ............................ | output ........ ]
//            [ computed (KV stored) ...... ) [ still to run ..... ]
//                                       num_computed_tokens
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/stop_checker.h"
#include "kv/paged_kv_store.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace se {

enum class SeqStatus : uint8_t { kWaiting, kRunning, kFinished };

struct SequenceOptions {
    RequestId id = 0;
    uint64_t cache_ns = 0;  // prefix-cache namespace (model, dtype, method, knobs, salt)
    std::vector<int32_t> prompt;
    SamplingParams params;
    SamplerOptions sampler;
    std::vector<int32_t> eos_token_ids;
    StreamCallback on_delta;  // may be empty
    SeqId seq_id = 0;         // the id of its KV state in the cache manager (0: the request id)
};

class Sequence {
  public:
    using Clock = std::chrono::steady_clock;

    // `tokenizer` may be null (a model without one): outputs then carry token ids only.
    Sequence(SequenceOptions options, const Tokenizer* tokenizer);

    RequestId id() const { return output_.id; }
    uint64_t cache_ns() const { return cache_ns_; }
    SeqId seq_id() const { return seq_id_; }
    SeqStatus status() const { return status_; }
    void set_status(SeqStatus status) { status_ = status; }

    const std::vector<int32_t>& tokens() const { return tokens_; }
    int32_t num_tokens() const { return static_cast<int32_t>(tokens_.size()); }
    int32_t num_prompt_tokens() const { return num_prompt_tokens_; }
    int32_t num_computed_tokens() const { return num_computed_tokens_; }
    // Tokens whose KV is not computed yet (the prompt's rest, or the last sampled token, or
    // everything after a preemption).
    int32_t num_pending_tokens() const { return num_tokens() - num_computed_tokens_; }
    // One new token per step from here on; otherwise the sequence is (re)filling its KV.
    bool is_decoding() const {
        return num_computed_tokens_ >= num_prompt_tokens_ && num_pending_tokens() == 1;
    }

    // Records that the step computed KV for `count` more tokens.
    void advance(int32_t count);
    // Starts the sequence from a cached prefix of `num_tokens` tokens.
    void start_from_cached_prefix(int32_t num_tokens);
    // Runs the request on chain `id` as `start` decided: under the chain's sequence id, and, when
    // it resumed, continuing from the state of its first reused_tokens tokens (before admission).
    void start_chain(std::string id, const ChainStart& start);
    // The chain's state was dropped while the request ran (preempted): reported as invalidated.
    void invalidate_chain();
    // The chain the request runs on ("" for none).
    std::string_view chain_id() const;
    // Waiting with KV already computed: a resumed chain, whose state the cache manager holds.
    bool resumes_state() const {
        return status_ == SeqStatus::kWaiting && num_computed_tokens_ > 0;
    }
    // Forgets every computed KV entry (preemption by recompute); tokens and sampling state stay.
    void reset_for_recompute();
    int32_t num_preemptions() const { return num_preemptions_; }

    // Samples the next token from `logits` (f32 [vocab], modified), detokenizes it, checks stop
    // conditions and streams the delta. Returns true when the request has finished.
    bool sample_and_append(std::span<float> logits);

    // The same when a backend samples (Sampler::plan / finish): plan_sample() appends this
    // step's logit edits for row `row`; append_sampled() takes the backend's token, with the raw
    // logits row when the request wants logprobs (wants_raw_logits()).
    RowSampling plan_sample(int32_t row, std::vector<LogitEdit>& edits);
    bool append_sampled(int32_t token, std::span<const float> raw_logits);
    bool wants_raw_logits() const { return sampler_.params().logprobs.has_value(); }

    // Overlapped decode steps (engine.h). The next step is queued before this step's token is
    // on the host: push_pending_token() appends a placeholder (kPendingToken) for it, which the
    // next step reads on the backend instead (ModelRunner::execute's fed rows), and
    // append_sampled() then puts the real token in its place. drop_pending_token() takes the
    // placeholder back when that step is not run after all.
    static constexpr int32_t kPendingToken = -1;
    void push_pending_token();
    void drop_pending_token();
    bool has_pending_token() const { return pending_token_; }
    // Whether the next step's draw can be planned without this step's token: no logprobs to
    // return, no penalty that reads the generated tokens, no Chain Cache state to park.
    bool can_overlap() const;
    // Whether the token of the step that has just run is certain to end the request (its
    // max_tokens), whatever it is: no later step is queued for it.
    bool ends_at_next_token() const;

    // Ends the request without a natural stop (cancelled or failed).
    void abort(Status error);

    // Adds to the per-request timings.
    void add_step_time(double seconds, bool prefill);

    const RequestOutput& output() const { return output_; }
    const Clock::time_point& arrival() const { return arrival_; }
    // Seconds between the last two output tokens (unset before the second token).
    std::optional<double> last_inter_token_seconds() const { return last_itl_; }

  private:
    bool append(const SampleResult& result);
    void emit(std::string text, std::optional<SampledLogprobs> logprobs, int32_t token);

    uint64_t cache_ns_ = 0;
    SeqId seq_id_ = 0;
    std::vector<int32_t> tokens_;
    int32_t num_prompt_tokens_ = 0;
    int32_t num_computed_tokens_ = 0;
    SeqStatus status_ = SeqStatus::kWaiting;
    Sampler sampler_;
    StopChecker stop_checker_;
    std::optional<StreamDecoder> decoder_;
    StreamCallback on_delta_;
    RequestOutput output_;
    Clock::time_point arrival_;
    bool started_ = false;
    Clock::time_point last_token_time_;
    std::optional<double> last_itl_;
    bool admitted_before_ = false;
    int32_t num_preemptions_ = 0;
    bool pending_token_ = false;  // tokens_.back() is kPendingToken
};

}  // namespace se
