// Engine requests and the step loop.
#include "engine/engine.h"

#include <fmt/core.h>
#include <xxhash.h>

#include <chrono>

namespace se {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int64_t Engine::kv_capacity_tokens() const {
    const CacheCapacity cap = method_.cache->capacity();
    return cap.num_blocks * cap.block_size / cap.entries_per_token;
}

Expected<RequestId> Engine::add_request(std::vector<int32_t> prompt, SamplingParams params,
                                        RequestOptions options) {
    const int32_t vocab = loaded_.config.vocab_size;
    SE_RETURN_IF_ERROR(params.validate(vocab));
    if (prompt.empty()) return invalid_argument("prompt is empty");
    for (int32_t id : prompt) {
        if (id < 0 || id >= vocab) {
            return invalid_argument(
                fmt::format("prompt token id {} is outside the vocabulary [0, {})", id, vocab));
        }
    }
    const auto prompt_len = static_cast<int32_t>(prompt.size());
    if (prompt_len >= max_model_len_) {
        return out_of_range(
            fmt::format("prompt has {} tokens; --max-model-len {} leaves no room "
                        "to generate",
                        prompt_len, max_model_len_));
    }
    const int32_t room = max_model_len_ - prompt_len;
    if (!params.max_tokens) {
        params.max_tokens = room;
    } else if (*params.max_tokens > room) {
        return out_of_range(
            fmt::format("prompt ({} tokens) + max_tokens ({}) exceeds "
                        "--max-model-len {}",
                        prompt_len, *params.max_tokens, max_model_len_));
    }
    // The last sampled token never needs KV.
    const int64_t most_tokens = int64_t{prompt_len} + *params.max_tokens - 1;
    if (!method_.cache->oracle().fits_alone(most_tokens)) {
        return resource_exhausted(
            fmt::format("request needs KV for up to {} tokens but the KV cache holds {} "
                        "(raise --kv-cache-memory or lower max_tokens)",
                        most_tokens, kv_capacity_tokens()));
    }
    const RequestId id = next_id_++;
    const uint64_t cache_ns = cache_namespace(options.cache_salt);
    std::optional<ChainStart> chain;
    if (!options.chain_id.empty()) {
        auto started = begin_chain(options.chain_id, cache_ns, prompt, id);
        if (!started.ok()) return started.status();
        chain = started.value();
    }
    auto seq = std::make_unique<Sequence>(
        SequenceOptions{.id = id,
                        .cache_ns = cache_ns,
                        .prompt = std::move(prompt),
                        .params = std::move(params),
                        .sampler = {.eos_token_ids = eos_token_ids_,
                                    .seed_if_unset = config_.seed * 0x9E3779B97F4A7C15ull +
                                                     static_cast<uint64_t>(id)},
                        .eos_token_ids = eos_token_ids_,
                        .on_delta = std::move(options.on_delta)},
        tokenizer_.get());
    if (chain) seq->start_chain(std::move(options.chain_id), *chain);
    scheduler_->add(seq.get());
    seqs_.emplace(id, std::move(seq));
    refresh_gauges();
    return id;
}

Expected<RequestId> Engine::add_request(std::string_view prompt, SamplingParams params,
                                        RequestOptions options) {
    if (!tokenizer_) return failed_precondition("the model has no tokenizer; send token ids");
    SE_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        tokenizer_->encode(prompt, {.add_special_tokens = true}));
    return add_request(std::move(ids), std::move(params), std::move(options));
}

uint64_t Engine::cache_namespace(const std::string& cache_salt) const {
    const std::string salted = fmt::format("{}|{}", cache_ns_base_, cache_salt);
    return XXH3_64bits(salted.data(), salted.size());
}

PrefixQuery Engine::prefix_query(const Sequence& seq) const {
    return {.ns = seq.cache_ns(), .tokens = seq.tokens()};
}

void Engine::abort(RequestId id) {
    drain_in_flight();  // the request may be in it
    auto it = seqs_.find(id);
    if (it == seqs_.end()) return;
    it->second->abort(cancelled(fmt::format("request {} was cancelled", id)));
    finish(*it->second);
}

void Engine::apply_queue_moves(const ScheduledStep& step) {
    for (Sequence* seq : step.preempted) {
        drop_chain_of(*seq);
        method_.cache->release(seq->seq_id());
        seq->reset_for_recompute();
        metrics_.num_preemptions.inc();
    }
    reclaim_idle_chains(step.blocks);
    for (const Admission& a : step.admitted) {
        if (a.resumed) {  // its state is held already
            a.seq->set_status(SeqStatus::kRunning);
            continue;
        }
        const int32_t hit = method_.cache->attach_prefix(a.seq->seq_id(), prefix_query(*a.seq));
        SE_CHECK(hit == a.hit_tokens, "prefix hit %d differs from the planned %d", hit,
                 a.hit_tokens);
        if (hit > 0) a.seq->start_from_cached_prefix(hit);
        a.seq->set_status(SeqStatus::kRunning);
    }
    scheduler_->commit(step);
}

void Engine::step() {
    // Pruning jobs run between batches, so no request reads a block while it moves.
    if (!prune_queue_.empty()) {
        drain_in_flight();
        run_prune_job();
    }
    if (in_flight_ && queue_overlapped_step()) return;
    drain_in_flight();
    std::optional<ScheduledStep> step = scheduler_->plan();
    if (!step) return;
    apply_queue_moves(*step);
    if (step->seqs.empty()) {  // the step only preempted
        refresh_gauges();
        return;
    }
    const auto start = Clock::now();
    Expected<StepLogits> result = runner_->execute(*step);
    if (!result.ok()) {
        recover_from_failed_step(*step);
        return;
    }
    after_forward(*step, result.value(),
                  std::chrono::duration<double>(Clock::now() - start).count());
}

void Engine::after_forward(const ScheduledStep& step, StepLogits& out, double seconds) {
    record_forward(step, seconds);
    if (can_overlap(step, out)) {
        // The next step() queues the next decode step before it takes these tokens.
        const Status queued = runner_->queue_sample(out);
        SE_CHECK(queued.ok(), "sampling on the %s backend: %s", device_name().data(),
                 queued.to_string().c_str());
        in_flight_ = InFlight{.seqs = out.seqs};
        return;
    }
    if (out.on_backend) {
        const auto sample_start = Clock::now();
        const Status sampled = runner_->sample_on_backend(out, sampled_tokens_);
        stats_.backend_sample_seconds +=
            std::chrono::duration<double>(Clock::now() - sample_start).count();
        // The logits and the device are beyond use if the backend cannot sample them.
        SE_CHECK(sampled.ok(), "sampling on the %s backend: %s", device_name().data(),
                 sampled.to_string().c_str());
    }
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const std::span<float> row(out.logits.f32_row(static_cast<int64_t>(i)),
                                   static_cast<size_t>(out.logits.cols));
        append_token(*out.seqs[i], out.on_backend ? sampled_tokens_[i] : -1, row, out.on_backend);
    }
    refresh_gauges();
}

void Engine::record_forward(const ScheduledStep& step, double seconds) {
    const bool prefill = step.plan.phase == StepPhase::kPrefill;
    ++stats_.num_steps;
    (prefill ? stats_.prefill_seconds : stats_.decode_seconds) += seconds;
    (prefill ? stats_.prefill_tokens : stats_.decode_tokens) += step.plan.num_tokens();
    metrics_.iteration_tokens_total.observe(step.plan.num_tokens());
    for (size_t i = 0; i < step.seqs.size(); ++i) {
        Sequence* seq = step.seqs[i];
        const int32_t before = seq->num_computed_tokens();
        seq->advance(step.plan.seqs[i].num_new_tokens);
        seq->add_step_time(seconds, prefill);
        // Once the prompt's KV is complete, later requests with the same prefix may reuse it.
        if (before < seq->num_prompt_tokens() &&
            seq->num_computed_tokens() >= seq->num_prompt_tokens()) {
            method_.cache->publish_prefix(
                seq->seq_id(),
                {.ns = seq->cache_ns(),
                 .tokens = std::span(seq->tokens())
                               .first(static_cast<size_t>(seq->num_prompt_tokens()))});
        }
    }
}

bool Engine::append_token(Sequence& seq, int32_t token, std::span<float> raw_logits,
                          bool on_backend) {
    const bool done =
        on_backend ? seq.append_sampled(token, raw_logits) : seq.sample_and_append(raw_logits);
    metrics_.generation_tokens.inc();
    if (auto itl = seq.last_inter_token_seconds(); itl && seq.output().token_ids.size() > 1) {
        metrics_.inter_token_latency_seconds.observe(*itl);
    }
    if (seq.output().token_ids.size() == 1) {
        metrics_.time_to_first_token_seconds.observe(seq.output().timings.first_token_seconds);
    }
    if (done) finish(seq);
    return done;
}

void Engine::recover_from_failed_step(const ScheduledStep& step) {
    // The oracle's answers and the cache manager disagreed (a planning bug, or a method whose
    // costs are estimates): give the newest sequence of the step back to the queue; nothing
    // is lost, it recomputes later.
    Sequence* victim = step.seqs.back();
    ScheduledStep undo;
    undo.plan.phase = step.plan.phase;
    undo.preempted.push_back(victim);
    apply_queue_moves(undo);
}

void Engine::finish(Sequence& seq) {
    const RequestOutput& out = seq.output();
    if (!park_chain(seq)) method_.cache->release(seq.seq_id());
    scheduler_->remove(&seq);
    metrics_.prompt_tokens.inc(out.usage.prompt_tokens);
    metrics_.request_success[static_cast<size_t>(*out.finish_reason)].inc();
    metrics_.e2e_request_latency_seconds.observe(
        std::chrono::duration<double>(Clock::now() - seq.arrival()).count());
    metrics_.request_queue_time_seconds.observe(out.timings.queue_seconds);
    metrics_.request_prompt_tokens.observe(out.usage.prompt_tokens);
    metrics_.request_generation_tokens.observe(out.usage.completion_tokens);
    finished_.push_back(out);
    seqs_.erase(seq.id());
    refresh_gauges();
}

void Engine::refresh_gauges() {
    metrics_.num_requests_running.set(scheduler_->num_running());
    metrics_.num_requests_waiting.set(scheduler_->num_waiting());
    const CacheCapacity cap = method_.cache->capacity();
    metrics_.kv_cache_usage_perc.set(
        cap.num_blocks == 0 ? 0.0
                            : static_cast<double>(cap.num_blocks - cap.num_free_blocks) /
                                  static_cast<double>(cap.num_blocks));
    const RadixCacheStats prefix = method_.cache->prefix_cache_stats();
    metrics_.prefix_cache_queries.inc(prefix.num_query_tokens -
                                      metrics_.prefix_cache_queries.value());
    metrics_.prefix_cache_hits.inc(prefix.num_hit_tokens - metrics_.prefix_cache_hits.value());
}

std::string Engine::render_metrics() const {
    return metrics_.render(config_.served_model_name.empty() ? loaded_.source_path
                                                             : config_.served_model_name);
}

std::vector<RequestOutput> Engine::take_finished() {
    return std::exchange(finished_, {});
}

Expected<std::vector<RequestOutput>> Engine::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) {
    std::vector<RequestId> ids;
    for (const auto& prompt : prompts) {
        auto id = add_request(prompt, params);
        if (!id.ok()) {
            for (RequestId queued : ids) abort(queued);
            take_finished();
            return id.status();
        }
        ids.push_back(id.value());
    }
    std::map<RequestId, RequestOutput> done;
    while (done.size() < ids.size()) {
        SE_CHECK(has_work(), "requests outstanding but nothing to schedule");
        step();
        for (RequestOutput& out : take_finished()) done.emplace(out.id, std::move(out));
    }
    std::vector<RequestOutput> outputs;
    for (RequestId id : ids) outputs.push_back(std::move(done.at(id)));
    return outputs;
}

}  // namespace se
