// The engine: requests in, tokens out. Owns the model, the method (runtime + cache manager), the
// scheduler and the sequences; each step() runs one scheduled batch end to end:
//
//   schedule -> reserve KV (cache manager) -> forward (model through the sparse controller)
//            -> sample, detokenize, stop checks, stream -> release finished sequences
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "model/decoder_model.h"
#include "model/model_loader.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"
#include "tokenizer/chat_template/chat_context.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace se {

class Engine {
  public:
    static Expected<std::unique_ptr<Engine>> create(const EngineConfig& config);
    ~Engine();

    const ModelConfig& model_config() const { return loaded_.config; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    int32_t max_model_len() const { return max_model_len_; }
    const EngineConfig& config() const { return config_; }
    int64_t kv_capacity_tokens() const;

    // Queues a request. Errors (the request is not queued) name the bad field: an invalid
    // sampling parameter, an empty prompt, or a prompt longer than max_model_len.
    Expected<RequestId> add_request(std::vector<int32_t> prompt, SamplingParams params,
                                    StreamCallback on_delta = {});
    // Tokenizes with the tokenizer's special tokens (BOS where the model adds one).
    Expected<RequestId> add_request(std::string_view prompt, SamplingParams params,
                                    StreamCallback on_delta = {});

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
    bool has_work() const { return scheduler_.has_work(); }

    // Outputs of requests that finished since the last call.
    std::vector<RequestOutput> take_finished();

    // Runs `prompts` to completion (vLLM's LLM.generate): outputs in input order.
    Expected<std::vector<RequestOutput>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                                  const SamplingParams& params);

    const EngineStats& stats() const { return stats_; }

  private:
    explicit Engine(const EngineConfig& config) : config_(config), scheduler_(config.scheduler) {}
    Status init();
    void finish(Sequence& seq);
    void handle_out_of_memory(const ScheduledStep& step, const Status& error);

    EngineConfig config_;
    LoadedModel loaded_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<ChatTemplate> chat_template_;
    std::vector<int32_t> eos_token_ids_;
    int32_t max_model_len_ = 0;
    std::unique_ptr<CpuOps> ops_;
    std::unique_ptr<DecoderModel> model_;
    Method method_;
    std::unique_ptr<SparseController> controller_;
    std::unique_ptr<ModelRunner> runner_;
    Scheduler scheduler_;
    std::map<RequestId, std::unique_ptr<Sequence>> seqs_;
    std::vector<RequestOutput> finished_;
    RequestId next_id_ = 1;
    EngineStats stats_;
};

}  // namespace se
