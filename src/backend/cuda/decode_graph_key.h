// Which decode steps the CUDA backend runs as graphs, and under which key: plain C++, so the CPU
// tests check it.
//
// A graph replays the kernels of the step it captured with the same launch scalars, so a step may
// reuse a graph only when every scalar its ops derive from the step is a function of the key. In
// a decode step (one token per sequence, every one sampled) the number of tokens fixes all of them
// but decode attention's two: its grid and workspace follow the longest KV, and its block tables
// a row stride. Graph steps launch it with the KV bucket as max_kv_len (kernels skip partitions
// past a sequence's own kv_len) and rows as wide as a max_model_len sequence needs:
//
//   max_kv_len   1 .. 256   257 .. 512   513 .. 1024   ...   .. max_model_len
//   kv_bucket    256        512          1024          ...   max_model_len
//
// Attention of one sequence is bit-identical across launches whose (num_seqs, max_kv_len) pick
// the same partition size (decode_partition.h), and the partition rule reads max_kv_len rounded
// up as the bucket rounds it, so a graph step picks the partition of the same step run eagerly.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>

#include "backend/step_shape.h"

namespace se::cuda {

inline constexpr int32_t kDecodeGraphMinBucket = 256;  // keys: short sequences share one graph

struct DecodeGraphKey {
    int32_t num_tokens = 0;  // = sequences: one token each
    int32_t kv_bucket = 0;   // decode attention's max_kv_len in every graph of this key
    int32_t arena = 0;       // which pair of staging arenas the graph's copies read (set by
                             // DecodeGraphs::begin_step; steps alternate between two)

    friend auto operator<=>(const DecodeGraphKey&, const DecodeGraphKey&) = default;
};

// The next power of two >= max_kv_len, at least kDecodeGraphMinBucket, at most max_model_len.
constexpr int32_t decode_kv_bucket(int32_t max_kv_len, int32_t max_model_len) {
    int64_t bucket = kDecodeGraphMinBucket;
    while (bucket < max_kv_len) bucket *= 2;
    return static_cast<int32_t>(bucket < max_model_len ? bucket : max_model_len);
}

// Block-table entries of a max_model_len sequence: the row stride of graph steps.
constexpr int32_t decode_table_stride(int32_t max_model_len, int32_t block_size) {
    return (max_model_len + block_size - 1) / block_size;
}

// The key of a step that may run as a graph; nullopt for every other step (prefill, mixed, empty,
// or sizes beyond what the backend was built for).
constexpr std::optional<DecodeGraphKey> decode_graph_key(const StepShape& shape,
                                                         int32_t max_model_len, int32_t max_seqs) {
    if (!shape.decode || shape.num_seqs <= 0 || shape.num_tokens != shape.num_seqs ||
        shape.num_seqs > max_seqs || shape.max_kv_len <= 0 || shape.max_kv_len > max_model_len) {
        return std::nullopt;
    }
    return DecodeGraphKey{.num_tokens = shape.num_tokens,
                          .kv_bucket = decode_kv_bucket(shape.max_kv_len, max_model_len)};
}

}  // namespace se::cuda
