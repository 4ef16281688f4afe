// Runs one scheduled step through the model: gathers the step's token ids and positions, drives
// the sparse controller around the forward pass, and hands back the logits of the sequences that
// sample this step.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_buffer.h"
#include "engine/scheduler.h"
#include "model/decoder_model.h"
#include "sparse/sparse_controller.h"

namespace se {

struct StepLogits {
    std::vector<Sequence*> seqs;  // sequences that sample this step
    TensorView logits;            // f32 [seqs.size(), vocab], row i for seqs[i]
};

class ModelRunner {
  public:
    ModelRunner(DecoderModel& model, SparseController& controller)
        : model_(model), controller_(controller) {}

    // Fails (changing nothing) when the method cannot reserve KV room for the step.
    Expected<StepLogits> execute(const ScheduledStep& step);

  private:
    DecoderModel& model_;
    SparseController& controller_;
    std::vector<int32_t> token_ids_;   // i32 [num_tokens]
    std::vector<int32_t> positions_;   // i32 [num_tokens]
    std::vector<int32_t> logit_rows_;  // i32 [num sampling seqs]
    HostBuffer logits_;                // f32 [num sampling seqs, vocab]
};

}  // namespace se
