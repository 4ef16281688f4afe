// Test-only: one method on a small dummy-weight decoder, driven step by step the way the engine
// drives it (ragged prefill chunks for every prompt at once, then greedy decode steps for all),
// so tests can compare logits across methods and inspect the method's cache between steps.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "model/decoder_model.h"
#include "model/model_loader.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"
#include "support/test_files.h"

namespace se::testing {

struct HarnessOptions {
    int32_t num_layers = 6;
    int32_t num_heads = 8;
    int32_t num_kv_heads = 2;
    int32_t head_dim = 16;
    int32_t vocab = 96;
    int32_t block_size = 16;
    int64_t kv_cache_bytes = int64_t{64} << 20;
    int32_t max_step_tokens = 64;  // the engine's prefill chunk, as the method is told
    int32_t num_threads = 1;
    uint64_t seed = 1;
};

// The logits each prompt sampled (final prefill position, then each decode step) and the greedy
// tokens they gave.
struct HarnessRun {
    std::vector<std::vector<std::vector<float>>> logits;  // [prompt][step] f32 [vocab]
    std::vector<std::vector<int32_t>> tokens;             // [prompt][step]
};

class MethodHarness {
  public:
    // Fails the calling test (via the returned status) when the method refuses the knobs.
    static Expected<std::unique_ptr<MethodHarness>> create(const std::string& method,
                                                           const nlohmann::json& knobs,
                                                           HarnessOptions options = {});

    const ModelConfig& config() const { return loaded_.config; }
    Method& method() { return method_; }
    SparseController& controller() { return *controller_; }

    // Prefills every prompt in chunks of at most `chunk` tokens (all prompts in each step), then
    // runs `decode_steps` greedy decode steps for all of them. `after_step` (optional) runs after
    // every step with the step's plan. Sequences are released at the end unless keep is set.
    HarnessRun run(const std::vector<std::vector<int32_t>>& prompts, int32_t chunk,
                   int32_t decode_steps,
                   const std::function<void(const StepPlan&)>& after_step = nullptr,
                   bool keep = false);

    // One sequence carried on across calls, as a conversation that never ends: prefills
    // tokens[from:] (the first `from` are computed already; 0 starts sequence `seq`) in chunks of
    // at most `chunk`, then runs `decode_steps` greedy decode steps. Returns the greedy tokens it
    // sampled (1 + decode_steps); the sequence stays, with tokens.size() + decode_steps computed.
    std::vector<int32_t> extend(SeqId seq, const std::vector<int32_t>& tokens, int32_t from,
                                int32_t chunk, int32_t decode_steps);

    // The sequence ids the last run used, in prompt order.
    const std::vector<SeqId>& last_seq_ids() const { return ids_; }

  private:
    MethodHarness() = default;
    // Runs one step; returns the logits of the rows in `logit_rows`.
    std::vector<float> step(const StepPlan& plan, const std::vector<int32_t>& tokens,
                            const std::vector<int32_t>& positions,
                            const std::vector<int32_t>& logit_rows);

    TempDir dir_;
    HarnessOptions options_;
    LoadedModel loaded_;
    std::unique_ptr<CpuOps> ops_;
    std::unique_ptr<DecoderModel> model_;
    nlohmann::json knobs_;
    Method method_;
    std::unique_ptr<SparseController> controller_;
    std::vector<SeqId> ids_;
    SeqId next_seq_ = 1;
};

// config.json of the Llama-shaped dummy model the harness runs (load it with load_format dummy).
nlohmann::json dummy_llama_config(const HarnessOptions& options);

// Writes that config.json into `dir`, for an Engine over the same model.
void write_dummy_llama(const TempDir& dir, const HarnessOptions& options = {});

// Random ordinary token ids in [1, vocab).
std::vector<int32_t> random_tokens(uint64_t seed, int32_t len, int32_t vocab);

}  // namespace se::testing
