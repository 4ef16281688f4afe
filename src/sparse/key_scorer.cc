#include "sparse/key_scorer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/float_elems.h"

namespace se {
namespace {

// q . k over d floats with eight running sums (which the compiler turns into one vector).
float dot(const float* q, const float* k, int32_t d) {
    float acc[8] = {};
    int32_t i = 0;
    for (; i + 8 <= d; i += 8) {
        for (int32_t l = 0; l < 8; ++l) acc[l] += q[i + l] * k[i + l];
    }
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < d; ++i) sum += q[i] * k[i];
    return sum;
}

}  // namespace

KeyScorer::KeyScorer(const PagedKvCache& cache, std::span<const int32_t> block_table,
                     int32_t num_entries, const AttentionArgs& args)
    : args_(args), num_entries_(num_entries) {
    const PagedKvLayout& l = cache.layout;
    SE_CHECK(l.num_kv_heads == args.num_kv_heads && l.head_dim == args.head_dim,
             "key scorer: arguments do not match the cache layout");
    SE_CHECK(
        num_entries >= 0 && num_entries <= static_cast<int64_t>(block_table.size()) * l.block_size,
        "key scorer: %d entries in %zu blocks", num_entries, block_table.size());
    const int64_t entry = l.entry_elems();
    keys_.resize(static_cast<size_t>(num_entries * entry));
    for (int32_t j = 0; j < num_entries; ++j) {
        const int64_t slot =
            int64_t{block_table[j / l.block_size]} * l.block_size + j % l.block_size;
        for (int64_t e = 0; e < entry; ++e) {
            keys_[j * entry + e] = load_float(l.dtype, cache.k_blocks, slot * entry + e);
        }
    }
}

void KeyScorer::score(const float* q, int32_t visible, ScoreMode mode, std::span<float> out) const {
    SE_CHECK(visible >= 0 && visible <= num_entries_, "key scorer: %d visible of %d", visible,
             num_entries_);
    SE_CHECK(out.size() >= static_cast<size_t>(args_.num_heads) * visible);
    const int32_t d = args_.head_dim;
    const int32_t group = args_.num_heads / args_.num_kv_heads;
    const int64_t entry = int64_t{args_.num_kv_heads} * d;
    for (int32_t h = 0; h < args_.num_heads; ++h) {
        const float* qh = q + int64_t{h} * d;
        const float* k = keys_.data() + int64_t{h / group} * d;
        float* row = out.data() + int64_t{h} * visible;
        for (int32_t j = 0; j < visible; ++j) {
            row[j] = dot(qh, k + j * entry, d) * args_.scale;
        }
        if (mode == ScoreMode::kLogits || visible == 0) continue;
        const float max = *std::max_element(row, row + visible);
        double total = 0.0;
        for (int32_t j = 0; j < visible; ++j) total += std::exp(double{row[j]} - max);
        for (int32_t j = 0; j < visible; ++j) {
            row[j] = static_cast<float>(std::exp(double{row[j]} - max) / total);
        }
    }
}

}  // namespace se
