// Runs one scheduled step through the model: gathers the step's token ids and positions, drives
// the sparse controller around the forward pass, and hands back the logits of the sequences that
// sample this step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/rank_threads.h"
#include "engine/scheduler.h"
#include "model/decoder_model.h"
#include "sparse/sparse_controller.h"

namespace se {

struct StepLogits {
    std::vector<Sequence*> seqs;  // sequences that sample this step
    // f32 [seqs.size(), vocab], row i for seqs[i], in host memory. When the backend samples
    // (on_backend), the logits stayed in its memory and only the rows of sequences that want
    // logprobs are copied here, before sampling changes them.
    TensorView logits;
    bool on_backend = false;
};

// One rank of a tensor-parallel group: its model shard and the controller of its method copy.
struct RankModel {
    DecoderModel* model = nullptr;
    SparseController* controller = nullptr;
};

class ModelRunner {
  public:
    ModelRunner(DecoderModel& model, SparseController& controller)
        : model_(model), controller_(controller) {}
    // Tensor parallelism: ranks[0] is the model that samples (its ops hold the logits); every
    // rank runs each step on its thread of `threads`.
    ModelRunner(std::vector<RankModel> ranks, RankThreads& threads);

    // Fails (changing nothing) when the method cannot reserve KV room for the step.
    //
    // An overlapped decode step (engine.h) names, for each of step.seqs, the row of the last
    // backend sampling that drew its input token (fed_rows[i] >= 0; that token is a placeholder
    // on the host), or -1 where the host holds it. Empty: every token is on the host.
    Expected<StepLogits> execute(const ScheduledStep& step, std::span<const int32_t> fed_rows = {});

    // Where the backend samples (Ops::samples_on_device): draws every sequence's token of
    // `out` there; tokens[i] is for out.seqs[i].
    Status sample_on_backend(const StepLogits& out, std::vector<int32_t>& tokens);

    // The same in two halves, so that the next step can be queued in between (Ops::sample_async):
    // queue the draws of `out`, then take the tokens of the oldest sampling queued, one for
    // each of its rows.
    Status queue_sample(const StepLogits& out);
    Status take_sampled(std::vector<int32_t>& tokens, size_t num_rows);

    // Allocates the logits of steps that sample up to `max_rows` sequences up front.
    Status reserve(int64_t max_rows);

  private:
    // Plans the draw of every sequence of `out` (rows_, edits_); the logits they read.
    TensorView plan_samples(const StepLogits& out);
    // begin_step on every rank; they must agree (each holds the same blocks).
    Status begin_step_all(const StepPlan& plan);
    void forward_all(const ForwardBatch& batch, const TensorView& logits);

    DecoderModel& model_;
    SparseController& controller_;
    std::vector<RankModel> ranks_;  // tensor parallelism: every rank, rank 0 first
    RankThreads* threads_ = nullptr;
    std::vector<BackendBuffer> rank_logits_;  // [rank] f32 [rows, vocab] of ranks 1..
    std::vector<Status> rank_status_;
    std::vector<int32_t> token_ids_;   // i32 [num_tokens]
    std::vector<int32_t> positions_;   // i32 [num_tokens]
    std::vector<int32_t> logit_rows_;  // i32 [num sampling seqs]
    // f32 [num sampling seqs, vocab]: where the model writes them (backend memory), and where
    // the sampler reads them (the same buffer when the backend's memory is the host's).
    BackendBuffer device_logits_;
    BackendBuffer host_logits_;
    // Backend sampling's inputs, reused across steps.
    std::vector<LogitEdit> edits_;
    std::vector<RowSampling> rows_;
};

}  // namespace se
