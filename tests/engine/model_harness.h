// A model with the dense method, driven step by step the way the engine drives it, so tests can
// read the logits of every position of ragged, chunked prefill batches, on the CPU or on the GPU
// (`device` as --device names it: the weights are uploaded and the KV cache is bf16 there).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "model/decoder_model.h"
#include "model/model_loader.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"

namespace se::testing {

class ModelHarness {
  public:
    // enforce_eager: as --enforce-eager (the GPU runs no CUDA graphs).
    ModelHarness(const std::string& model_path, int32_t num_threads, int32_t block_size = 16,
                 const std::string& device = "cpu", bool enforce_eager = false);

    const ModelConfig& config() const { return loaded_.config; }
    Ops& ops() const { return *ops_; }

    // Runs the prompts through prefill in chunks of at most `chunk` tokens per sequence per step
    // (all prompts in every step: a ragged batch) and returns, per prompt, the logits of every
    // position: f32 [len, vocab] row-major. The sequences are released afterwards.
    std::vector<std::vector<float>> prefill_logits(const std::vector<std::vector<int32_t>>& prompts,
                                                   int32_t chunk);

    // Prefills the prompts in one step, then decodes greedily (host argmax) until prompt i has
    // num_tokens[i] tokens; a sequence leaves the batch when it has its count, so the decode
    // batches shrink. Returns, per prompt, the logits each of its tokens was drawn from:
    // f32 [num_tokens[i], vocab], the first row from the prefill step. Decode steps say they are
    // (ForwardBatch::shape), so a GPU backend may run them as graphs.
    std::vector<std::vector<float>> greedy_logits(const std::vector<std::vector<int32_t>>& prompts,
                                                  const std::vector<int32_t>& num_tokens);

  private:
    LoadedModel loaded_;
    std::unique_ptr<Ops> ops_;
    std::unique_ptr<DecoderModel> model_;
    Method method_;
    std::unique_ptr<SparseController> controller_;
    SeqId next_seq_ = 1;
};

// Largest |a[i] - b[i]|; NaN anywhere counts as infinite.
double max_abs_diff(const float* a, const float* b, size_t n);

}  // namespace se::testing
