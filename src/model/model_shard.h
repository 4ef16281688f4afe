// Megatron-style tensor parallelism over `size` ranks: what part of a Llama-family decoder rank r
// holds and computes.
//
//   q, k, v, gate, up   column-parallel: rank r computes query heads [r H/N, (r+1) H/N), KV heads
//                       [r Hk/N, (r+1) Hk/N) and MLP columns [r I/N, (r+1) I/N) (weight rows)
//   o, down             row-parallel: the matching input columns; each rank's product is a partial
//                       sum that the group's all-reduce completes
//   embedding, LM head  vocabulary-parallel: rows [r V', min(V, (r+1) V')), V' = ceil(V / N);
//                       the embedding's parts are all-reduced, the logits' columns all-gathered
//   norms, o bias       replicated (the o bias is added by rank 0 alone, before the all-reduce)
//
// The KV cache follows the KV heads: each rank stores and attends over its own heads only.
#pragma once

#include <cstdint>

#include "core/expected.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace se {

struct ModelShard {
    int32_t rank = 0;
    int32_t size = 1;
    ModelConfig full;   // the whole model
    ModelConfig local;  // the rank's: heads, KV heads, intermediate size and vocab_size (its rows)
    int64_t vocab_first = 0;  // the first vocabulary row the rank holds
    int64_t vocab_shard = 0;  // V': rows per rank (the last rank may hold fewer)
};

// invalid_argument naming the model dimension `size` does not divide (attention heads, KV heads,
// intermediate size) or a vocabulary too small to give every rank a row.
Expected<ModelShard> shard_model(const ModelConfig& full, int32_t rank, int32_t size);

// The rank's weights under the same names and the rank's shapes: views into `full` where the
// rank's part is whole rows, copies (owned by the result) where it is columns (o, down, the q/k/v
// biases are views too). `full` must outlive the result. Fails naming a weight whose column
// split falls inside a quantization block.
Expected<WeightStore> shard_weights(const ModelShard& shard, const WeightStore& full);

}  // namespace se
