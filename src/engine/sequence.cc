#include "engine/sequence.h"

namespace se {

Sequence::Sequence(SequenceOptions options, const Tokenizer* tokenizer)
    : cache_ns_(options.cache_ns),
      seq_id_(options.seq_id != 0 ? options.seq_id : options.id),
      tokens_(std::move(options.prompt)),
      num_prompt_tokens_(static_cast<int32_t>(tokens_.size())),
      sampler_(options.params, options.sampler),
      stop_checker_(options.params, options.eos_token_ids),
      on_delta_(std::move(options.on_delta)),
      arrival_(Clock::now()) {
    output_.id = options.id;
    output_.prompt_token_ids = tokens_;
    output_.usage.prompt_tokens = num_prompt_tokens_;
    if (tokenizer != nullptr) {
        decoder_.emplace(*tokenizer,
                         DecodeOptions{.skip_special_tokens = options.params.skip_special_tokens});
    }
}

void Sequence::advance(int32_t count) {
    SE_CHECK(count >= 0 && num_computed_tokens_ + count <= num_tokens());
    num_computed_tokens_ += count;
}

void Sequence::start_from_cached_prefix(int32_t num_tokens) {
    SE_CHECK(num_computed_tokens_ == 0 && num_tokens < this->num_tokens());
    num_computed_tokens_ = num_tokens;
    // Usage reports what the first admission reused, as vLLM's cached_tokens does.
    if (!admitted_before_) output_.usage.cached_tokens = num_tokens;
    admitted_before_ = true;
}

void Sequence::start_chain(std::string id, const ChainStart& start) {
    SE_CHECK(num_computed_tokens_ == 0 && !admitted_before_ && start.reused_tokens < num_tokens());
    output_.chain = ChainReport{.id = std::move(id), .status = start.status};
    seq_id_ = start.seq;
    num_computed_tokens_ = start.reused_tokens;
    output_.usage.cached_tokens = start.reused_tokens;
    output_.usage.reused_tokens = start.reused_tokens;
    admitted_before_ = start.reused_tokens > 0;
}

void Sequence::invalidate_chain() {
    if (output_.chain) output_.chain->status = ChainStatus::kInvalidated;
}

std::string_view Sequence::chain_id() const {
    return output_.chain ? std::string_view(output_.chain->id) : std::string_view();
}

void Sequence::reset_for_recompute() {
    num_computed_tokens_ = 0;
    status_ = SeqStatus::kWaiting;
    ++num_preemptions_;
}

bool Sequence::sample_and_append(std::span<float> logits) {
    SE_CHECK(status_ == SeqStatus::kRunning && num_pending_tokens() == 0);
    const std::span<const int32_t> all(tokens_);
    return append(
        sampler_.sample(logits, all.first(num_prompt_tokens_), all.subspan(num_prompt_tokens_)));
}

RowSampling Sequence::plan_sample(int32_t row, std::vector<LogitEdit>& edits) {
    SE_CHECK(status_ == SeqStatus::kRunning && num_pending_tokens() == 0);
    const std::span<const int32_t> all(tokens_);
    return sampler_.plan(row, all.first(num_prompt_tokens_), all.subspan(num_prompt_tokens_),
                         edits);
}

bool Sequence::append_sampled(int32_t token, std::span<const float> raw_logits) {
    SE_CHECK(status_ == SeqStatus::kRunning && num_pending_tokens() == 0);
    if (pending_token_) {
        // The step after this one ran on the placeholder's place (its KV is computed): the
        // token takes it, and the sequence is where a plain step would have left it.
        tokens_.pop_back();
        pending_token_ = false;
    }
    return append(sampler_.finish(token, raw_logits));
}

void Sequence::push_pending_token() {
    SE_CHECK(status_ == SeqStatus::kRunning && num_pending_tokens() == 0 && !pending_token_ &&
             num_computed_tokens_ >= num_prompt_tokens_);
    tokens_.push_back(kPendingToken);
    pending_token_ = true;
}

void Sequence::drop_pending_token() {
    SE_CHECK(pending_token_ && num_computed_tokens_ < num_tokens());
    tokens_.pop_back();
    pending_token_ = false;
}

bool Sequence::can_overlap() const {
    const SamplingParams& p = sampler_.params();
    return !p.logprobs && p.repetition_penalty == 1.0f && p.frequency_penalty == 0.0f &&
           p.presence_penalty == 0.0f && !output_.chain;
}

bool Sequence::ends_at_next_token() const {
    const std::optional<int32_t>& max_tokens = sampler_.params().max_tokens;
    return max_tokens && static_cast<int32_t>(output_.token_ids.size()) + 1 >= *max_tokens;
}

bool Sequence::append(const SampleResult& result) {
    tokens_.push_back(result.token);
    output_.token_ids.push_back(result.token);
    output_.usage.completion_tokens = static_cast<int32_t>(output_.token_ids.size());
    if (result.logprobs) output_.logprobs.push_back(*result.logprobs);
    const Clock::time_point now = Clock::now();
    if (output_.token_ids.size() == 1) {
        output_.timings.first_token_seconds = std::chrono::duration<double>(now - arrival_).count();
    } else {
        last_itl_ = std::chrono::duration<double>(now - last_token_time_).count();
    }
    last_token_time_ = now;

    // The sampler only returns ids inside the vocabulary the logits cover.
    std::string piece;
    if (decoder_) {
        Expected<std::string> text = decoder_->push(result.token);
        SE_CHECK(text.ok(), "%s", text.status().to_string().c_str());
        piece = std::move(text).value();
    }
    StopDecision decision =
        stop_checker_.on_token(result.token, piece, output_.usage.completion_tokens);
    if (decision.finished()) {
        output_.finish_reason = decision.finish_reason;
        output_.stop_reason = decision.stop_reason;
        // Bytes the stream decoder still holds (an unfinished UTF-8 sequence) end the text,
        // unless a stop string cut the text before them.
        if (!std::holds_alternative<std::string>(decision.stop_reason)) {
            if (decoder_) decision.emit_text += decoder_->flush();
        }
        status_ = SeqStatus::kFinished;
    }
    output_.text += decision.emit_text;
    emit(std::move(decision.emit_text), result.logprobs, result.token);
    return decision.finished();
}

void Sequence::abort(Status error) {
    if (status_ == SeqStatus::kFinished) return;
    output_.finish_reason = FinishReason::kAbort;
    output_.error = std::move(error);
    status_ = SeqStatus::kFinished;
    emit({}, std::nullopt, -1);
}

void Sequence::add_step_time(double seconds, bool prefill) {
    if (!started_) {
        output_.timings.queue_seconds =
            std::chrono::duration<double>(Clock::now() - arrival_).count() - seconds;
        started_ = true;
    }
    (prefill ? output_.timings.prefill_seconds : output_.timings.decode_seconds) += seconds;
}

void Sequence::emit(std::string text, std::optional<SampledLogprobs> logprobs, int32_t token) {
    if (!on_delta_) return;
    StreamDelta delta{.id = output_.id,
                      .text = std::move(text),
                      .token_ids = {},
                      .logprobs = logprobs,
                      .finish_reason = output_.finish_reason,
                      .output = &output_};
    if (token >= 0) delta.token_ids.push_back(token);
    on_delta_(delta);
}

}  // namespace se
