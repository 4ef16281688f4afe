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
// With fewer tiles than this many per thread, tiles run their KV partitions as separate items.
constexpr int64_t kItemsPerThread = 4;
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

// Thread `thread`'s buffers for tiles of up to max_rows query rows.
TileScratch tile_scratch(const PagedKvLayout& layout, const AttentionArgs& args, int32_t max_rows,
                         int thread, Scratch& scratch) {
    const int32_t dp = padded_head_dim(args.head_dim);
    const int32_t capacity = chunk_capacity(layout);
    const int64_t staged = int64_t{args.num_kv_heads} * capacity * dp;
    const int64_t max_vectors = int64_t{max_rows} * args.num_heads;
    const int64_t scores =
        int64_t{max_rows} * (args.num_heads / args.num_kv_heads) * padded_block_size(capacity);
    float* partition =
        scratch.thread_floats(thread, ScratchSlot::kPartition, max_vectors * (dp + 2));
    return {.queries = scratch.thread_floats(thread, ScratchSlot::kQueries, max_vectors * dp),
            .keys = scratch.thread_floats(thread, ScratchSlot::kKeys, staged),
            .values = scratch.thread_floats(thread, ScratchSlot::kValues, staged),
            .scores = scratch.thread_floats(thread, ScratchSlot::kScores, scores),
            .partition = tile_state(partition, max_vectors, dp)};
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

void PagedAttention::add_partitions(const Item& tile, int32_t partition,
                                    const AttentionArgs& args) {
    const auto num_parts = static_cast<int32_t>(ceil_div(tile.kv_end, partition));
    merges_.push_back({static_cast<int64_t>(items_.size()), num_parts});
    for (int32_t p = 0; p < num_parts; ++p) {
        Item item = tile;
        item.kv_begin = p * partition;
        item.kv_end = std::min(tile.kv_end, (p + 1) * partition);
        item.partial = partials_size_;
        partials_size_ += partial_floats(args, tile.num_rows);
        items_.push_back(item);
    }
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
    // Which tiles split changes nothing in the results (attention.h): only the threads' load.
    const bool split = num_tiles < kItemsPerThread * num_threads;
    const int32_t partition = partition_entries(kv.cache->layout);
    for (int32_t s = 0; s < static_cast<int32_t>(kv.seqs.size()); ++s) {
        const PagedSeq& seq = kv.seqs[s];
        if (seq.kv_len == 0 || seq.q_len == 0) continue;
        // Last tiles first: under the causal mask they are the longest.
        const int32_t num_seq_tiles = static_cast<int32_t>(ceil_div(seq.q_len, rows_per_tile));
        for (int32_t tile = num_seq_tiles - 1; tile >= 0; --tile) {
            const int32_t row_begin = tile * rows_per_tile;
            const int32_t num_rows = std::min(rows_per_tile, seq.q_len - row_begin);
            const Item item{s, row_begin, num_rows, 0,
                            seq.kv_len - seq.q_len + row_begin + num_rows};
            if (split && item.kv_end > partition) {
                add_partitions(item, partition, args);
            } else {
                items_.push_back(item);
            }
        }
    }
}

TileState PagedAttention::partial_state(const Item& item, const AttentionArgs& args,
                                        float* partials) {
    return tile_state(partials + item.partial, int64_t{item.num_rows} * args.num_heads,
                      padded_head_dim(args.head_dim));
}

void PagedAttention::merge(const Merge& mg, const PagedKvRead& kv, const AttentionArgs& args,
                           float* partials, TensorView out) const {
    const Item& first = items_[mg.first_item];
    const int32_t group = args.num_heads / args.num_kv_heads;
    const TileState into = partial_state(first, args, partials);
    const int64_t num_vectors = int64_t{first.num_rows} * args.num_heads;
    for (int64_t r = 0; r < num_vectors; ++r) {
        for (int32_t p = 1; p < mg.num_splits; ++p) {
            const TileState part = partial_state(items_[mg.first_item + p], args, partials);
            merge_partition(into, part, r, args.head_dim);
        }
        write_normalised(into, r, args.head_dim,
                         output_row(kv.seqs[first.seq], first, r, group, args, out));
    }
}

void PagedAttention::run_item(const Item& item, const Call& call, const TileScratch& ts,
                              float* own) const {
    const AttentionArgs& args = call.args;
    const PagedSeq& seq = call.kv.seqs[item.seq];
    const int32_t group = args.num_heads / args.num_kv_heads;
    const int32_t dp = padded_head_dim(args.head_dim);
    const int64_t num_vectors = int64_t{item.num_rows} * args.num_heads;
    const TileState state = item.partial >= 0 ? partial_state(item, args, call.partials)
                                              : tile_state(own, num_vectors, dp);
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
    int32_t max_rows = 0;
    for (const Item& item : items_) max_rows = std::max(max_rows, item.num_rows);
    float* partials = scratch.shared_floats(SharedSlot::kPartials, partials_size_);
    const auto num_items = static_cast<int64_t>(items_.size());
#pragma omp parallel num_threads(num_threads) if (num_threads > 1)
    {
        const int thread = omp_get_thread_num();
        const TileScratch ts = tile_scratch(kv.cache->layout, args, max_rows, thread, scratch);
        const int32_t dp = padded_head_dim(args.head_dim);
        float* own = scratch.thread_floats(thread, ScratchSlot::kAccum,
                                           int64_t{max_rows} * args.num_heads * (dp + 2));
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_items; ++i)
            run_item(items_[i], {q, kv, args, out, partials}, ts, own);
        const auto num_merges = static_cast<int64_t>(merges_.size());
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_merges; ++i) merge(merges_[i], kv, args, partials, out);
    }
}

}  // namespace se::cpu
