#include "backend/cpu/attention_gather.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/dequant.h"
#include "core/check.h"

namespace se::cpu {
namespace {

// The rows of K and V one item reads, converted to f32: [count, head_dim] each.
struct GatheredKv {
    std::vector<float> k;
    std::vector<float> v;
};

void gather_head(const PagedKvCache& cache, const GatherSeq& seq, std::span<const int32_t> entries,
                 int32_t kv_head, GatheredKv& out) {
    const PagedKvLayout& l = cache.layout;
    const int64_t elem_bytes = dtype_block_bytes(l.dtype);
    const auto count = static_cast<int64_t>(entries.size());
    out.k.resize(static_cast<size_t>(count * l.head_dim));
    out.v.resize(static_cast<size_t>(count * l.head_dim));
    for (int64_t i = 0; i < count; ++i) {
        const int32_t e = entries[i];
        SE_CHECK(e >= 0 && e / l.block_size < static_cast<int32_t>(seq.block_table.size()),
                 "attention_gather: entry %d outside a table of %zu blocks", e,
                 seq.block_table.size());
        const int64_t slot =
            int64_t{seq.block_table[e / l.block_size]} * l.block_size + e % l.block_size;
        const int64_t offset = (slot * l.num_kv_heads + kv_head) * l.head_dim * elem_bytes;
        dequantize_row(l.dtype, static_cast<const uint8_t*>(cache.k_blocks) + offset,
                       out.k.data() + i * l.head_dim, l.head_dim);
        dequantize_row(l.dtype, static_cast<const uint8_t*>(cache.v_blocks) + offset,
                       out.v.data() + i * l.head_dim, l.head_dim);
    }
}

void attend_gathered(const float* qv, const GatheredKv& kv, int64_t count, int32_t head_dim,
                     float scale, std::vector<float>& scores, float* dst) {
    std::fill(dst, dst + head_dim, 0.0f);
    if (count == 0) return;
    scores.resize(static_cast<size_t>(count));
    float max = -INFINITY;
    for (int64_t j = 0; j < count; ++j) {
        const float* k = kv.k.data() + j * head_dim;
        float dot = 0.0f;
        for (int32_t d = 0; d < head_dim; ++d) dot += qv[d] * k[d];
        scores[j] = dot * scale;
        max = std::max(max, scores[j]);
    }
    float total = 0.0f;
    for (int64_t j = 0; j < count; ++j) {
        scores[j] = std::exp(scores[j] - max);
        total += scores[j];
    }
    for (int64_t j = 0; j < count; ++j) {
        const float p = scores[j] / total;
        const float* v = kv.v.data() + j * head_dim;
        for (int32_t d = 0; d < head_dim; ++d) dst[d] += p * v[d];
    }
}

}  // namespace

void attention_gather(const ConstTensorView& q, const PagedKvGather& kv, const AttentionArgs& args,
                      TensorView out, int32_t num_threads) {
    SE_CHECK(kv.cache != nullptr && args.num_kv_heads == kv.cache->layout.num_kv_heads &&
                 args.head_dim == kv.cache->layout.head_dim &&
                 args.num_heads % args.num_kv_heads == 0,
             "attention_gather: arguments do not match the cache layout");
    SE_CHECK(q.cols == int64_t{args.num_heads} * args.head_dim && out.cols == q.cols &&
                 out.rows == q.rows && q.dtype == DType::kF32,
             "attention_gather: q [%lld, %lld], out [%lld, %lld]", static_cast<long long>(q.rows),
             static_cast<long long>(q.cols), static_cast<long long>(out.rows),
             static_cast<long long>(out.cols));
    const int32_t group = args.num_heads / args.num_kv_heads;
    const auto num_items = static_cast<int64_t>(kv.seqs.size()) * args.num_kv_heads;
#pragma omp parallel num_threads(num_threads) if (num_threads > 1 && num_items > 1)
    {
        GatheredKv gathered;
        std::vector<float> scores;
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < num_items; ++item) {
            const GatherSeq& seq = kv.seqs[item / args.num_kv_heads];
            const auto g = static_cast<int32_t>(item % args.num_kv_heads);
            SE_CHECK(
                seq.lists.size() == 1 || seq.lists.size() == static_cast<size_t>(args.num_kv_heads),
                "attention_gather: %zu entry lists for %d KV heads", seq.lists.size(),
                args.num_kv_heads);
            const std::vector<int32_t>& entries = seq.lists[seq.lists.size() == 1 ? 0 : g];
            gather_head(*kv.cache, seq, entries, g, gathered);
            for (int32_t i = 0; i < seq.q_len; ++i) {
                // Causal over the list: the last q_len listed entries are the step's own rows.
                const int64_t visible = std::max<int64_t>(
                    0, static_cast<int64_t>(entries.size()) - (seq.q_len - 1 - i));
                for (int32_t t = 0; t < group; ++t) {
                    const int64_t col = int64_t{g * group + t} * args.head_dim;
                    attend_gathered(q.f32() + (seq.q_start + i) * q.cols + col, gathered, visible,
                                    args.head_dim, args.scale, scores,
                                    out.f32_row(seq.q_start + i) + col);
                }
            }
        }
    }
}

void move_kv_entries(const PagedKvCache& cache, std::span<const int64_t> from,
                     std::span<const int64_t> to) {
    SE_CHECK(from.size() == to.size(), "move_kv: %zu sources, %zu destinations", from.size(),
             to.size());
    const int64_t entry_bytes = cache.layout.entry_elems() * dtype_block_bytes(cache.layout.dtype);
    const int64_t num_slots = cache.num_blocks * cache.layout.block_size;
    auto* k = static_cast<uint8_t*>(cache.k_blocks);
    auto* v = static_cast<uint8_t*>(cache.v_blocks);
    for (size_t i = 0; i < from.size(); ++i) {
        SE_CHECK(from[i] >= 0 && from[i] < num_slots && to[i] >= 0 && to[i] < num_slots,
                 "move_kv: slot %lld -> %lld of %lld", static_cast<long long>(from[i]),
                 static_cast<long long>(to[i]), static_cast<long long>(num_slots));
        if (from[i] == to[i]) continue;
        std::memmove(k + to[i] * entry_bytes, k + from[i] * entry_bytes,
                     static_cast<size_t>(entry_bytes));
        std::memmove(v + to[i] * entry_bytes, v + from[i] * entry_bytes,
                     static_cast<size_t>(entry_bytes));
    }
}

}  // namespace se::cpu
