// The engine: requests in, tokens out. Owns the model, the method (runtime + cache manager), the
// scheduler and the sequences; each step() runs one scheduled batch end to end:
//
//   (a queued pruning job runs first, between batches: engine_prune.cc)
//   plan (scheduler, asking the method's MemoryOracle)
//     -> preempt (release KV) / admit (attach cached prefix) -> reserve KV (cache manager)
//     -> forward (model through the sparse controller) -> sample, detokenize, stop, stream
//     -> publish prompt KV to the prefix cache -> release finished sequences -> metrics
//
// Overlapped decode steps (--async-scheduling, engine_overlap.cc). Where the backend samples and
// can feed its sampled tokens to the next forward pass (Ops::overlaps_steps), a decode step whose
// requests all allow it (Sequence::can_overlap, MethodRuntime::overlaps_steps, one rank) leaves
// its tokens on their way to the host, and the next step() queues step N + 1 first (each request
// a placeholder token that the backend fills from N's draw), then takes N's tokens:
//
//   host    plan N+1 | queue N+1 | take N's tokens, stream, stop | plan N+2 | queue N+2 | ...
//   device  ...... N ......|...... N+1 .............................|...... N+2 ........
//
// so the device never waits for the host between decode steps. A request that N ended (EOS, a
// stop string) had one token computed in N+1 for nothing; it is dropped from N+1's results.
// Anything else (a waiting request, a prefill, preemption, a prune job, abort) takes N's tokens
// first and runs as without overlap; requests see the same tokens either way.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/ops.h"
#include "engine/backend_factory.h"
#include "engine/chain_aware_oracle.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/metrics/engine_metrics.h"
#include "engine/model_runner.h"
#include "engine/prune_job.h"
#include "engine/rank_threads.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/prefix_pruner.h"
#include "model/decoder_model.h"
#include "model/model_loader.h"
#include "model/model_shard.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"
#include "tokenizer/chat_template/chat_context.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace se {

struct RequestOptions {
    StreamCallback on_delta;  // called for every streamed increment; may be empty
    std::string cache_salt;   // requests with different salts never share prefix-cache blocks
    // Continue (or start) the Chain Cache chain of this id (methods that evict only; see
    // kv/chain_cache.h). Refused while the chain is busy (failed_precondition) or after it was
    // reclaimed (gone); the output's `chain` says created, resumed or invalidated.
    std::string chain_id;
};

class Engine {
  public:
    static Expected<std::unique_ptr<Engine>> create(const EngineConfig& config);
    ~Engine();

    const ModelConfig& model_config() const { return loaded_.config; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    bool has_tokenizer() const { return tokenizer_ != nullptr; }
    int32_t max_model_len() const { return max_model_len_; }
    const EngineConfig& config() const { return config_; }
    // Tokens of full history (every layer) the KV pool holds.
    int64_t kv_capacity_tokens() const;
    // The backend the model runs on: "cpu" or "cuda".
    std::string_view device_name() const { return ops_->name(); }

    // Queues a request. Errors (the request is not queued) name the bad field: an invalid
    // sampling parameter, an empty prompt, a prompt longer than max_model_len, or a request
    // that could not fit in the KV cache even alone.
    Expected<RequestId> add_request(std::vector<int32_t> prompt, SamplingParams params,
                                    RequestOptions options = {});
    // Tokenizes with the tokenizer's special tokens (BOS where the model adds one).
    Expected<RequestId> add_request(std::string_view prompt, SamplingParams params,
                                    RequestOptions options = {});

    // Renders a conversation with the model's chat template (as transformers'
    // apply_chat_template does); the tokenizer's special tokens are filled in.
    Expected<std::string> render_chat(ChatTemplateInputs inputs) const;
    // Chat prompt as token ids (with add_generation_prompt): the template writes special tokens
    // itself, so the tokenizer adds none.
    Expected<std::vector<int32_t>> chat_prompt_ids(const nlohmann::ordered_json& messages) const;

    // Cancels a request at any point; it finishes with finish reason abort and frees its KV.
    void abort(RequestId id);

    // Runs one step; a no-op when there is no work.
    void step();
    bool has_work() const {
        return scheduler_->has_work() || !prune_queue_.empty() || in_flight_.has_value();
    }

    // Outputs of requests that finished since the last call.
    std::vector<RequestOutput> take_finished();

    // Runs `prompts` to completion (vLLM's LLM.generate): outputs in input order.
    Expected<std::vector<RequestOutput>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                                  const SamplingParams& params);

    const EngineStats& stats() const { return stats_; }
    const EngineMetrics& metrics() const { return metrics_; }
    // Prometheus text of metrics().
    std::string render_metrics() const;
    CacheCapacity cache_capacity() const { return method_.cache->capacity(); }
    // The method's cache manager, read-only (inspection by tests and tools).
    const CacheManager& cache_manager() const { return *method_.cache; }
    RadixCacheStats prefix_cache_stats() const { return method_.cache->prefix_cache_stats(); }
    // Drops every prefix-cache block no request uses.
    void flush_prefix_cache() { method_.cache->flush_prefix_cache(); }

    // Frees an idle chain's state now (not_found for an unknown id, failed_precondition while a
    // request runs on it); a later request with the id starts a new chain.
    Status release_chain(const std::string& id);
    // An idle chain's last turn as token ids (prompt and generated tokens); errors as
    // ChainCache::idle (not_found, gone, failed_precondition while busy).
    Expected<std::vector<int32_t>> chain_transcript(const std::string& id) const;
    ChainCacheStats chain_stats() const { return chains_->stats(); }

    // Operations on a cached prefix (the token ids its requests sent, with their cache salt);
    // failed_precondition when the method keeps no prefix cache, not_found (delete, priority)
    // when the prefix's whole blocks are not all cached.
    Expected<RadixInspection> inspect_prefix(std::span<const int32_t> tokens,
                                             const std::string& cache_salt = {}) const;
    Expected<int32_t> delete_prefix_subtree(std::span<const int32_t> tokens,
                                            const std::string& cache_salt = {});
    Expected<int32_t> set_prefix_priority(std::span<const int32_t> tokens,
                                          const std::string& cache_salt, EvictionPriority priority);

    // Queues a Prefix-Cache Pruning job (engine/prune_job.h), which runs at the start of the
    // next step; returns its id. Refused (nothing queued) when the method cannot prune or the
    // request is malformed; everything that depends on the cache is reported by the job.
    Expected<int64_t> submit_prune(PruneJobRequest request);
    // A job's state and result; nullopt for an unknown (or long forgotten) id.
    std::optional<PruneJobResult> prune_job(int64_t id) const;

  private:
    explicit Engine(const EngineConfig& config) : config_(config) {}
    Status init();
    Status init_tokenizer();
    Status init_backend();
    // What rank `ops` may give its KV cache (its device's memory, on a GPU).
    Expected<int64_t> kv_cache_bytes(const Ops& ops) const;
    int64_t max_step_tokens() const;
    Status init_method();
    // Tensor parallelism (engine_ranks.cc). Rank 0 is ops_, model_, controller_ and method_;
    // ranks 1.. are followers_. Every rank's work runs on its own thread.
    int32_t tp_size() const { return config_.tensor_parallel_size; }
    // fn(r) for every rank (concurrently with tensor parallelism, each on its thread with its
    // backend bound); the first failure, naming its rank.
    Status for_each_rank(const std::function<Status(int32_t)>& fn);
    Ops& rank_ops(int32_t rank) const;
    DecoderModel& rank_model(int32_t rank) const;
    SparseController& rank_controller(int32_t rank) const;
    // Rank r's own cache manager (the engine's method_.cache is them all, mirrored).
    CacheManager& rank_cache(int32_t rank) const;
    Communicator* rank_comm(int32_t rank) const;
    Status init_rank_backends(const BackendRequest& request);
    Status init_models();
    Status init_rank_methods(const PagedKvLayout& kv_layout, int64_t kv_bytes,
                             const AttentionArgs& args);
    Status init_chains();
    // Chain Cache steps (engine_chains.cc).
    Expected<ChainStart> begin_chain(const std::string& id, uint64_t fingerprint,
                                     std::span<const int32_t> prompt, SeqId new_seq);
    bool park_chain(const Sequence& seq);
    void drop_chain_of(Sequence& seq);
    void reclaim_idle_chains(int64_t blocks_needed);
    PrefixQuery prefix_query(const Sequence& seq) const;
    uint64_t cache_namespace(const std::string& cache_salt) const;
    // Prefix-Cache Pruning (engine_prune.cc).
    Expected<RadixCache*> prefix_cache() const;
    // op on rank 0's prefix cache and, with tensor parallelism, every other rank's (they must
    // answer alike); rank 0's answer.
    Expected<int32_t> on_every_prefix_cache(
        const std::function<Expected<int32_t>(RadixCache&)>& op);
    void run_prune_job();
    Status prune(const PruneJobRequest& request, PruneJobResult& result);
    Status prune_prefix(const PruneJobRequest& request, PruneJobResult& result);
    Status prune_chain(const PruneJobRequest& request, PruneJobResult& result);
    // What the scoring passes of a job read: the state's tokens, the candidate positions, and
    // how to start a temporary sequence on the state before a position (attach or fork).
    struct PruneScoring {
        std::span<const int32_t> tokens;
        std::span<const int32_t> candidates;  // ascending
        int32_t window_align = 1;             // the observation window starts at a multiple of this
        std::function<Status(SeqId, int32_t)> start;
    };
    Expected<std::vector<float>> score_for_prune(const PruneJobRequest& request,
                                                 const PruneScoring& scoring);
    void apply_queue_moves(const ScheduledStep& step);
    void after_forward(const ScheduledStep& step, StepLogits& out, double seconds);
    // The step ran: its requests advance, the step's time and tokens are counted.
    void record_forward(const ScheduledStep& step, double seconds);
    // A request's sampled token is appended: metrics, and finish when it ended the request.
    // Returns whether it did.
    bool append_token(Sequence& seq, int32_t token, std::span<float> raw_logits, bool on_backend);
    // Overlapped decode steps (engine_overlap.cc).
    bool can_overlap(const ScheduledStep& step, const StepLogits& out) const;
    bool queue_overlapped_step();
    // Takes the in-flight step's tokens (nothing to do without one).
    void drain_in_flight();
    // The tokens of the oldest sampling queued, for `seqs` (null: a request already finished);
    // a request they end is also dropped from in_flight_.
    void take_tokens(std::span<Sequence* const> seqs);
    void finish(Sequence& seq);
    void recover_from_failed_step(const ScheduledStep& step);
    void refresh_gauges();

    EngineConfig config_;
    LoadedModel loaded_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<ChatTemplate> chat_template_;
    std::vector<int32_t> eos_token_ids_;
    int32_t max_model_len_ = 0;
    uint64_t cache_ns_base_ = 0;
    // Declared before every backend: a communicator outlives the ops whose CUDA graphs captured
    // its collectives (nccl_communicator.h).
    std::vector<std::unique_ptr<Communicator>> comms_;
    std::unique_ptr<Ops> ops_;
    std::unique_ptr<DecoderModel> model_;
    Method method_;
    std::unique_ptr<SparseController> controller_;
    // Tensor parallelism: each rank's shard of the model and its weights (device copies on a
    // GPU), ranks 1.. and their threads.
    struct FollowerRank {
        std::unique_ptr<Ops> ops;
        std::unique_ptr<DecoderModel> model;
        std::unique_ptr<MethodRuntime> runtime;  // its cache manager: rank r of method_.cache
        std::unique_ptr<SparseController> controller;
    };
    std::vector<ModelShard> shards_;
    std::vector<WeightStore> rank_weights_;
    std::unique_ptr<RankThreads> rank_threads_;
    std::vector<FollowerRank> followers_;
    std::unique_ptr<ChainCache> chains_;
    std::unique_ptr<ChainAwareOracle> oracle_;
    std::unique_ptr<ModelRunner> runner_;
    std::vector<int32_t> sampled_tokens_;  // tokens a backend drew this step, per sampling seq
    // The decode step queued last whose tokens the host has not taken: its sampling requests,
    // null where a request ended before (overlapped steps).
    struct InFlight {
        std::vector<Sequence*> seqs;
    };
    std::optional<InFlight> in_flight_;
    std::unique_ptr<Scheduler> scheduler_;
    std::map<RequestId, std::unique_ptr<Sequence>> seqs_;
    std::vector<RequestOutput> finished_;
    std::deque<std::pair<int64_t, PruneJobRequest>> prune_queue_;
    std::map<int64_t, PruneJobResult> prune_jobs_;
    int64_t next_prune_id_ = 1;
    RequestId next_id_ = 1;
    EngineStats stats_;
    EngineMetrics metrics_;
};

}  // namespace se
