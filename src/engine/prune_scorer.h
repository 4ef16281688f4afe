// Attention scores for Prefix-Cache Pruning, from a scoring pass: a prefill of some query tokens
// on a temporary sequence that starts from a cached prefix (holes included), run through the
// method's own controller so it attends exactly as a request would. Nothing it computes stays:
// the sequence is released at the end. For candidate positions c of the cached prefix,
//
//   P_{l,h,i}(c) = softmax over the entries query row i of head h sees in layer l, at c
//   score(c)     = max_{l,h} mean_i P_{l,h,i}(c)      (kMean: an observation window)
//                = max_{l,h,i} P_{l,h,i}(c)           (kMax: KVzip's reconstruction replay)
//
//   context (cached, read)        queries (computed, dropped)
//   [0 ........................ C)[C ........... C + q)        positions of the query tokens
//        ^ candidates lie here
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/decoder_model.h"
#include "sparse/full_cache_manager.h"
#include "sparse/sparse_controller.h"

namespace se {

enum class RowReduction : uint8_t { kMean, kMax };

struct ScoringPass {
    uint64_t ns = 0;                      // the cache namespace of the prefix
    std::span<const int32_t> context;     // the cached prefix to read, whole blocks
    std::span<const int32_t> queries;     // tokens whose queries score, at C, C + 1, ...
    std::span<const int32_t> candidates;  // ascending positions in [0, C) to score
    RowReduction rows = RowReduction::kMean;
};

class PruneScorer {
  public:
    PruneScorer(DecoderModel& model, SparseController& controller, FullCacheManager& cache)
        : model_(model), controller_(controller), cache_(cache) {}

    // Runs one pass on the temporary sequence `seq` (released before returning) and raises
    // scores[k] to the pass's score of candidates[k] where higher. Fails when the context is
    // not wholly cached or the pool has no room for the query tokens.
    Status run(SeqId seq, const ScoringPass& pass, std::span<float> scores);

  private:
    DecoderModel& model_;
    SparseController& controller_;
    FullCacheManager& cache_;
};

}  // namespace se
