// Attention scores for pruning, from a scoring pass: a prefill of some query tokens on a
// temporary sequence that the caller started as a copy (or a shared read) of the cached state,
// run through the method's own controller so it attends exactly as a request would. The caller
// releases the sequence afterwards: nothing the pass computes stays. For candidate positions c,
//
//   P_{l,h,i}(c) = softmax over the entries query row i of head h sees in layer l, at c
//                  (0 in a layer that holds no entry for c)
//   score(c)     = max_{l,h} mean_i P_{l,h,i}(c)      (kMean: an observation window)
//                = max_{l,h,i} P_{l,h,i}(c)           (kMax: a reconstruction replay)
//
//   state the sequence starts with (read)    queries (computed, dropped)
//   [0 ................................... C)[C ........... C + q)      token positions
//        ^ candidates lie here
#pragma once

#include <cstdint>
#include <span>

#include "model/decoder_model.h"
#include "sparse/cache_manager.h"
#include "sparse/sparse_controller.h"

namespace se {

enum class RowReduction : uint8_t { kMean, kMax };

struct ScoringPass {
    SeqId seq = 0;                        // started on the state, C tokens processed
    int32_t context_len = 0;              // C
    std::span<const int32_t> queries;     // tokens whose queries score, at C, C + 1, ...
    std::span<const int32_t> candidates;  // ascending positions in [0, C) to score
    RowReduction rows = RowReduction::kMean;
};

class PruneScorer {
  public:
    PruneScorer(DecoderModel& model, SparseController& controller, CacheManager& cache)
        : model_(model), controller_(controller), cache_(cache) {}

    // Runs one pass and raises scores[k] to the pass's score of candidates[k] where higher.
    // Fails (resource_exhausted) when the pool has no room for the query tokens.
    Status run(const ScoringPass& pass, std::span<float> scores);

  private:
    DecoderModel& model_;
    SparseController& controller_;
    CacheManager& cache_;
};

}  // namespace se
