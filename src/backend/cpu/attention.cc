#include "backend/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention_tile.h"
#include "core/check.h"

namespace se::cpu {
namespace {

// Query vectors (rows x GQA heads) per tile: enough to amortise converting a KV block, few
// enough that the tile's state stays in L1/L2.
constexpr int32_t kTileQueries = 32;
// Split KV ranges until there are about this many items per thread ...
constexpr int64_t kItemsPerThread = 4;
// ... but never into splits shorter than this many entries.
constexpr int32_t kMinSplitEntries = 256;
// Below this many multiply-adds a call runs on one thread.
constexpr int64_t kSerialWork = 1 << 15;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

void check_args(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                const TensorView& out) {
    SE_CHECK(kv.cache != nullptr && kv.cache->layout.block_size > 0);
    const PagedKvLayout& layout = kv.cache->layout;
    SE_CHECK(args.num_heads > 0 && args.num_kv_heads > 0 && args.head_dim > 0 &&
                 args.num_heads % args.num_kv_heads == 0,
             "attention: %d heads, %d KV heads", args.num_heads, args.num_kv_heads);
    SE_CHECK(layout.num_kv_heads == args.num_kv_heads && layout.head_dim == args.head_dim,
             "attention: cache has %d KV heads of %d, args %d of %d", layout.num_kv_heads,
             layout.head_dim, args.num_kv_heads, args.head_dim);
    const int64_t width = int64_t{args.num_heads} * args.head_dim;
    SE_CHECK(q.cols == width && out.cols == width && out.rows == q.rows,
             "attention: q [%lld, %lld], out [%lld, %lld], %lld columns expected",
             static_cast<long long>(q.rows), static_cast<long long>(q.cols),
             static_cast<long long>(out.rows), static_cast<long long>(out.cols),
             static_cast<long long>(width));
    SE_CHECK(q.data != out.data, "attention: out must not alias q");
    for (const PagedSeq& seq : kv.seqs) {
        SE_CHECK(seq.q_len >= 0 && seq.q_start >= 0 && seq.q_start + seq.q_len <= q.rows,
                 "attention: rows [%d, +%d) of %lld", seq.q_start, seq.q_len,
                 static_cast<long long>(q.rows));
        SE_CHECK(seq.kv_len == 0 || seq.q_len <= seq.kv_len, "attention: q_len %d > kv_len %d",
                 seq.q_len, seq.kv_len);
        SE_CHECK(
            static_cast<int64_t>(seq.block_table.size()) >= ceil_div(seq.kv_len, layout.block_size),
            "attention: %zu blocks for %d entries", seq.block_table.size(), seq.kv_len);
    }
}

}  // namespace

// Where tile vector r (KV-head major, see attention_tile.h) of an item goes in `out`.
float* PagedAttention::output_row(const PagedSeq& seq, const Item& item, int64_t r, int32_t group,
                                  const AttentionArgs& args, TensorView out) {
    const int64_t per_kv_head = int64_t{item.num_rows} * group;
    const int64_t head = r / per_kv_head * group + r % group;
    const int64_t row = seq.q_start + item.row_begin + r % per_kv_head / group;
    return out.f32() + row * out.cols + head * args.head_dim;
}

int64_t PagedAttention::partial_floats(const AttentionArgs& args, int32_t num_rows) const {
    return int64_t{num_rows} * args.num_heads * (padded_head_dim(args.head_dim) + 2);
}

void PagedAttention::plan(const PagedKvRead& kv, const AttentionArgs& args, int32_t num_threads) {
    items_.clear();
    merges_.clear();
    partials_size_ = 0;
    const int32_t group = args.num_heads / args.num_kv_heads;
    const int32_t rows_per_tile = std::max(1, kTileQueries / group);
    int64_t num_tiles = 0;
    for (const PagedSeq& seq : kv.seqs) {
        if (seq.kv_len > 0) num_tiles += ceil_div(seq.q_len, rows_per_tile);
    }
    if (num_tiles == 0) return;
    const int64_t wanted = kItemsPerThread * num_threads;
    const int64_t splits_wanted = num_tiles < wanted ? ceil_div(wanted, num_tiles) : 1;
    const int32_t block_size = kv.cache->layout.block_size;
    for (int32_t s = 0; s < static_cast<int32_t>(kv.seqs.size()); ++s) {
        const PagedSeq& seq = kv.seqs[s];
        if (seq.kv_len == 0 || seq.q_len == 0) continue;
        // Last tiles first: under the causal mask they are the longest.
        const int32_t num_seq_tiles = static_cast<int32_t>(ceil_div(seq.q_len, rows_per_tile));
        for (int32_t tile = num_seq_tiles - 1; tile >= 0; --tile) {
            const int32_t row_begin = tile * rows_per_tile;
            const int32_t num_rows = std::min(rows_per_tile, seq.q_len - row_begin);
            const int32_t kv_end = seq.kv_len - seq.q_len + row_begin + num_rows;
            const int64_t splits = std::clamp<int64_t>(kv_end / kMinSplitEntries, 1, splits_wanted);
            const int32_t chunk =
                static_cast<int32_t>(ceil_div(ceil_div(kv_end, splits), block_size) * block_size);
            const int32_t num_splits = static_cast<int32_t>(ceil_div(kv_end, chunk));
            if (num_splits > 1)
                merges_.push_back({static_cast<int64_t>(items_.size()), num_splits});
            for (int32_t p = 0; p < num_splits; ++p) {
                Item item{s, row_begin, num_rows, p * chunk, std::min(kv_end, (p + 1) * chunk)};
                if (num_splits > 1) {
                    item.partial = partials_size_;
                    partials_size_ += partial_floats(args, num_rows);
                }
                items_.push_back(item);
            }
        }
    }
}

void PagedAttention::merge(const Merge& mg, const PagedKvRead& kv, const AttentionArgs& args,
                           const float* partials, TensorView out) const {
    const Item& first = items_[mg.first_item];
    const int32_t group = args.num_heads / args.num_kv_heads;
    const int32_t dp = padded_head_dim(args.head_dim);
    const int64_t num_vectors = int64_t{first.num_rows} * args.num_heads;
    for (int64_t r = 0; r < num_vectors; ++r) {
        float m_max = kNegInf;
        for (int32_t p = 0; p < mg.num_splits; ++p) {
            const float* st = partials + items_[mg.first_item + p].partial;
            m_max = std::max(m_max, st[num_vectors * dp + r]);
        }
        float* dst = output_row(kv.seqs[first.seq], first, r, group, args, out);
        std::fill(dst, dst + args.head_dim, 0.0f);
        float l_sum = 0.0f;
        for (int32_t p = 0; p < mg.num_splits && m_max != kNegInf; ++p) {
            const float* st = partials + items_[mg.first_item + p].partial;
            const float m = st[num_vectors * dp + r];
            if (m == kNegInf) continue;
            const float w = std::exp(m - m_max);
            l_sum += w * st[num_vectors * (dp + 1) + r];
            for (int32_t d = 0; d < args.head_dim; ++d) dst[d] += w * st[r * dp + d];
        }
        const float inv = l_sum > 0.0f ? 1.0f / l_sum : 0.0f;
        for (int32_t d = 0; d < args.head_dim; ++d) dst[d] *= inv;
    }
}

void PagedAttention::run_item(const Item& item, const Call& call, const TileScratch& ts,
                              float* own) const {
    const AttentionArgs& args = call.args;
    const PagedSeq& seq = call.kv.seqs[item.seq];
    const int32_t group = args.num_heads / args.num_kv_heads;
    const int32_t dp = padded_head_dim(args.head_dim);
    const int64_t num_vectors = int64_t{item.num_rows} * args.num_heads;
    float* base = item.partial >= 0 ? call.partials + item.partial : own;
    const TileState state{
        .o = base, .m = base + num_vectors * dp, .l = base + num_vectors * (dp + 1)};
    run_attention_tile({.q = call.q.f32(),
                        .q_stride = call.q.cols,
                        .cache = call.kv.cache,
                        .seq = &seq,
                        .group = group,
                        .scale = args.scale,
                        .row_begin = item.row_begin,
                        .num_rows = item.num_rows,
                        .kv_begin = item.kv_begin,
                        .kv_end = item.kv_end},
                       ts, state);
    if (item.partial >= 0) return;  // merged after all splits ran
    for (int64_t r = 0; r < num_vectors; ++r)
        write_normalised(state, r, args.head_dim, output_row(seq, item, r, group, args, call.out));
}

void PagedAttention::run(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                         TensorView out, Scratch& scratch) {
    check_args(q, kv, args, out);
    const int64_t width = int64_t{args.num_heads} * args.head_dim;
    int64_t work = 0;
    for (const PagedSeq& seq : kv.seqs) {
        if (seq.kv_len == 0) {  // no entries: the rows are zero
            std::fill(out.f32() + seq.q_start * width,
                      out.f32() + (seq.q_start + seq.q_len) * width, 0.0f);
        }
        work += int64_t{seq.q_len} * seq.kv_len * width;
    }
    const int32_t num_threads = work < kSerialWork ? 1 : scratch.num_threads();
    plan(kv, args, num_threads);
    if (items_.empty()) return;
    const int32_t group = args.num_heads / args.num_kv_heads;
    const int32_t dp = padded_head_dim(args.head_dim);
    const int32_t capacity = chunk_capacity(kv.cache->layout);
    const int64_t staged_rows = int64_t{args.num_kv_heads} * capacity;
    int32_t max_rows = 0;
    for (const Item& item : items_) max_rows = std::max(max_rows, item.num_rows);
    const int64_t max_vectors = int64_t{max_rows} * args.num_heads;
    float* partials = scratch.shared_floats(SharedSlot::kPartials, partials_size_);
    const auto num_items = static_cast<int64_t>(items_.size());
#pragma omp parallel num_threads(num_threads) if (num_threads > 1)
    {
        const int thread = omp_get_thread_num();
        const TileScratch ts{
            .queries = scratch.thread_floats(thread, ScratchSlot::kQueries, max_vectors * dp),
            .keys = scratch.thread_floats(thread, ScratchSlot::kKeys, staged_rows * dp),
            .values = scratch.thread_floats(thread, ScratchSlot::kValues, staged_rows * dp),
            .scores =
                scratch.thread_floats(thread, ScratchSlot::kScores,
                                      int64_t{max_rows} * group * padded_block_size(capacity))};
        float* own = scratch.thread_floats(thread, ScratchSlot::kAccum, max_vectors * (dp + 2));
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_items; ++i)
            run_item(items_[i], {q, kv, args, out, partials}, ts, own);
        const auto num_merges = static_cast<int64_t>(merges_.size());
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_merges; ++i) merge(merges_[i], kv, args, partials, out);
    }
}

}  // namespace se::cpu
