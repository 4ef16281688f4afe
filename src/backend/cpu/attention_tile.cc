#include "backend/cpu/attention_tile.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/simd.h"
#include "core/check.h"
#include "core/half.h"

namespace se::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Up to this many query vectors per KV head, the kernels read K and V straight from the cache.
constexpr int32_t kDirectMaxVectors = 8;
// Entries per softmax step (whole cache blocks): fewer max/exp/rescale passes per entry.
constexpr int32_t kChunkEntries = 64;
// Staged f32 values per chunk of keys (and of values): 64 KiB, L2-resident.
constexpr int64_t kStageFloats = 16384;
// Entries per KV partition (rounded up to whole chunks): the unit a long decode is split into
// for the threads. Small enough for 2 threads to share a 512-entry decode, large enough that a
// long prefill row spends nothing noticeable on folding partition states.
constexpr int32_t kPartitionEntries = 256;

// Geometry shared by the steps of one tile.
struct TileShape {
    int32_t num_vectors = 0;  // R = num_rows * group
    int32_t dp = 0;           // padded head_dim
    int32_t sp = 0;           // padded block size: stride of a score row
    int32_t limit0 = 0;       // last entry row 0 of the tile sees
};

struct F32Source {
    using T = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};
struct F16Source {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) { return load_f16x8(p); }
    static float load1(const uint16_t* p) { return f16_to_f32(*p); }
};
struct BF16Source {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) { return load_bf16x8(p); }
    static float load1(const uint16_t* p) { return bf16_to_f32(*p); }
};

// Keys or values read by the kernels: staged f32 rows (stride padded_head_dim) or the cache's
// own rows (stride num_kv_heads * head_dim), converted on the fly.
template <typename T>
struct Rows {
    const T* base = nullptr;
    int64_t stride = 0;  // elements between consecutive entries
};

// scores[r, j] = q_r . k_j for NR query vectors and entries [0, num_entries), four entries at a
// time so that one pass over a key chunk serves 4 * NR dot products.
template <int NR, typename Source>
void qk_rows(const float* q, Rows<typename Source::T> keys, int32_t num_entries, const TileShape& s,
             float* scores) {
    int32_t j = 0;
    for (; j + 4 <= num_entries; j += 4) {
        __m256 acc[NR][4];
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r)
            acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = _mm256_setzero_ps();
        const auto* k = keys.base + j * keys.stride;
        for (int32_t d = 0; d < s.dp; d += 8) {
            __m256 kv[4];
#pragma GCC unroll 8
            for (int c = 0; c < 4; ++c) kv[c] = Source::load8(k + c * keys.stride + d);
#pragma GCC unroll 8
            for (int r = 0; r < NR; ++r) {
                const __m256 qv = _mm256_loadu_ps(q + r * s.dp + d);
#pragma GCC unroll 8
                for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_fmadd_ps(qv, kv[c], acc[r][c]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r)
            _mm_storeu_ps(scores + r * s.sp + j, hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    }
    for (; j < num_entries; ++j) {
        __m256 acc[NR];
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
        for (int32_t d = 0; d < s.dp; d += 8) {
            const __m256 kv = Source::load8(keys.base + j * keys.stride + d);
#pragma GCC unroll 8
            for (int r = 0; r < NR; ++r)
                acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * s.dp + d), kv, acc[r]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) scores[r * s.sp + j] = hsum_pairs(acc[r]);  // as hsum4
    }
}

// o[r, d0 : d0 + 8W] += sum_j p[r, j] v_j[d0 : d0 + 8W] for NR query vectors.
template <int NR, int W, typename Source>
void pv_chunk(const float* p, Rows<typename Source::T> values, int32_t num_entries,
              const TileShape& s, int32_t d0, float* o) {
    __m256 acc[NR][W];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
        for (int c = 0; c < W; ++c) acc[r][c] = _mm256_loadu_ps(o + r * s.dp + d0 + 8 * c);
    }
    for (int32_t j = 0; j < num_entries; ++j) {
        __m256 v[W];
#pragma GCC unroll 8
        for (int c = 0; c < W; ++c)
            v[c] = Source::load8(values.base + j * values.stride + d0 + 8 * c);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
            const __m256 pr = _mm256_broadcast_ss(p + r * s.sp + j);
#pragma GCC unroll 8
            for (int c = 0; c < W; ++c) acc[r][c] = _mm256_fmadd_ps(pr, v[c], acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
        for (int c = 0; c < W; ++c) _mm256_storeu_ps(o + r * s.dp + d0 + 8 * c, acc[r][c]);
    }
}

// o[r, :] += sum_j p[r, j] v_j for NR query vectors: 32 columns at a time (8 independent
// accumulators for NR = 2), then 8.
template <int NR, typename Source>
void pv_rows(const float* p, Rows<typename Source::T> values, int32_t num_entries,
             const TileShape& s, float* o) {
    int32_t d = 0;
    for (; d + 32 <= s.dp; d += 32) pv_chunk<NR, 4, Source>(p, values, num_entries, s, d, o);
    for (; d < s.dp; d += 8) pv_chunk<NR, 1, Source>(p, values, num_entries, s, d, o);
}

template <typename Source>
void qk_block(const float* queries, Rows<typename Source::T> keys, int32_t r_first,
              int32_t num_entries, const TileShape& s, float* scores) {
    int32_t r = r_first;
    for (; r + 3 <= s.num_vectors; r += 3)
        qk_rows<3, Source>(queries + r * s.dp, keys, num_entries, s, scores + r * s.sp);
    switch (s.num_vectors - r) {
        case 2:
            return qk_rows<2, Source>(queries + r * s.dp, keys, num_entries, s, scores + r * s.sp);
        case 1:
            return qk_rows<1, Source>(queries + r * s.dp, keys, num_entries, s, scores + r * s.sp);
    }
}

template <typename Source>
void pv_block(const float* p, Rows<typename Source::T> values, int32_t r_first, int32_t num_entries,
              const TileShape& s, float* o) {
    int32_t r = r_first;
    for (; r + 2 <= s.num_vectors; r += 2)
        pv_rows<2, Source>(p + r * s.sp, values, num_entries, s, o + r * s.dp);
    if (r < s.num_vectors) pv_rows<1, Source>(p + r * s.sp, values, num_entries, s, o + r * s.dp);
}

// Turns score row `row` (entries [0, sp), entries past the block already -inf) into
// probabilities against the updated running maximum, and rescales the vector's state.
void softmax_update(float* row, const TileShape& s, float* o, float* m, float* l) {
    __m256 vmax = _mm256_set1_ps(kNegInf);
    for (int32_t j = 0; j < s.sp; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(row + j));
    const float block_max = hmax(vmax);
    if (block_max == kNegInf) {  // nothing visible in this block: contributes nothing
        std::fill(row, row + s.sp, 0.0f);
        return;
    }
    const float m_new = std::max(*m, block_max);
    const __m256 vm = _mm256_set1_ps(m_new);
    __m256 vsum = _mm256_setzero_ps();
    for (int32_t j = 0; j < s.sp; j += 8) {
        const __m256 p = exp256(_mm256_sub_ps(_mm256_loadu_ps(row + j), vm));
        _mm256_storeu_ps(row + j, p);
        vsum = _mm256_add_ps(vsum, p);
    }
    if (m_new != *m) {
        const float corr = std::exp(*m - m_new);  // 0 while m was -inf
        *l *= corr;
        const __m256 vc = _mm256_set1_ps(corr);
        for (int32_t d = 0; d < s.dp; d += 8)
            _mm256_storeu_ps(o + d, _mm256_mul_ps(vc, _mm256_loadu_ps(o + d)));
        *m = m_new;
    }
    *l += hsum(vsum);
}

// dst f32 [num_kv_heads, head_rows, dp] (rows [0, num_entries)) from consecutive cache entries
// src [num_entries, num_kv_heads, head_dim]: one sequential pass over the cache.
template <typename Source>
void stage_entries(const void* src_bytes, int32_t num_entries, const PagedKvLayout& layout,
                   int64_t head_rows, int32_t dp, float* dst) {
    const auto* src = static_cast<const typename Source::T*>(src_bytes);
    const int32_t dim = layout.head_dim;
    for (int32_t j = 0; j < num_entries; ++j) {
        for (int32_t h = 0; h < layout.num_kv_heads; ++h) {
            const auto* in = src + (int64_t{j} * layout.num_kv_heads + h) * dim;
            float* out = dst + (h * head_rows + j) * dp;
            int32_t d = 0;
            for (; d + 8 <= dim; d += 8) _mm256_storeu_ps(out + d, Source::load8(in + d));
            for (; d < dim; ++d) out[d] = Source::load1(in + d);
        }
    }
}

// Cache slot of entry e of the tile's sequence.
int64_t slot_of(const AttentionTile& t, int32_t e) {
    const PagedKvLayout& layout = t.cache->layout;
    const int32_t block = t.seq->block_table[e / layout.block_size];
    SE_CHECK(block >= 0 && block < t.cache->num_blocks, "attention: block id %d of %lld", block,
             static_cast<long long>(t.cache->num_blocks));
    return int64_t{block} * layout.block_size + e % layout.block_size;
}

// A run of consecutive cache slots within a chunk (the part of the chunk in one block).
struct Segment {
    int64_t slot = 0;  // cache slot of the run's first entry
    int32_t col = 0;   // its column in the chunk's score rows
    int32_t count = 0;
};

// Entries [e0, e1) as runs of consecutive slots; returns how many (at most kChunkEntries).
int32_t split_segments(const AttentionTile& t, int32_t e0, int32_t e1, Segment* segments) {
    const int32_t block_size = t.cache->layout.block_size;
    int32_t n = 0;
    for (int32_t e = e0; e < e1;) {
        const int32_t end = std::min(e1, (e / block_size + 1) * block_size);
        segments[n++] = {slot_of(t, e), e - e0, end - e};
        e = end;
    }
    return n;
}

// Slice `part` of num_kv_heads of the next chunk [e, e + capacity), prefetched while KV head
// `part` of the current chunk is processed: spread out, the requests do not stall the core.
void prefetch_slice(const AttentionTile& t, int32_t e, int32_t kv_end, int32_t capacity,
                    int32_t part) {
    const PagedKvLayout& layout = t.cache->layout;
    const int32_t end = std::min(kv_end, e - e % layout.block_size + capacity);
    const int64_t entry_bytes = layout.entry_elems() * dtype_block_bytes(layout.dtype);
    for (int32_t b = e; b < end;) {
        const int32_t run_end = std::min(end, (b / layout.block_size + 1) * layout.block_size);
        const int64_t bytes = (run_end - b) * entry_bytes;
        const int64_t from = bytes * part / layout.num_kv_heads / 64 * 64;
        const int64_t to = bytes * (part + 1) / layout.num_kv_heads;
        const int64_t offset = slot_of(t, b) * entry_bytes;
        for (int64_t x = from; x < to; x += 64) {
            _mm_prefetch(static_cast<const char*>(t.cache->k_blocks) + offset + x, _MM_HINT_T1);
            _mm_prefetch(static_cast<const char*>(t.cache->v_blocks) + offset + x, _MM_HINT_T1);
        }
        b = run_end;
    }
}

// Keys and values of a chunk's segments, for every KV head: f32 [num_kv_heads, capacity, dp].
template <typename Source>
void stage_chunk(const AttentionTile& t, const Segment* segments, int32_t num_segments, int32_t dp,
                 const TileScratch& scratch) {
    const PagedKvLayout& layout = t.cache->layout;
    const int64_t entry_bytes = layout.entry_elems() * dtype_block_bytes(layout.dtype);
    const int64_t capacity = chunk_capacity(layout);
    for (int32_t i = 0; i < num_segments; ++i) {
        const Segment& seg = segments[i];
        const auto* k = static_cast<const uint8_t*>(t.cache->k_blocks) + seg.slot * entry_bytes;
        const auto* v = static_cast<const uint8_t*>(t.cache->v_blocks) + seg.slot * entry_bytes;
        stage_entries<Source>(k, seg.count, layout, capacity, dp, scratch.keys + seg.col * dp);
        stage_entries<Source>(v, seg.count, layout, capacity, dp, scratch.values + seg.col * dp);
    }
}

// Scaled queries in KV-head-major order, and zero padding of the staged keys and values.
void stage_queries(const AttentionTile& t, int32_t dp, const TileScratch& scratch) {
    const PagedKvLayout& layout = t.cache->layout;
    const int64_t staged = int64_t{layout.num_kv_heads} * chunk_capacity(layout) * dp;
    if (dp != layout.head_dim) {  // staged rows keep zero padding past head_dim
        std::fill(scratch.keys, scratch.keys + staged, 0.0f);
        std::fill(scratch.values, scratch.values + staged, 0.0f);
    }
    const int64_t num_vectors = int64_t{layout.num_kv_heads} * t.num_rows * t.group;
    for (int64_t r = 0; r < num_vectors; ++r) {
        const int64_t g = r / (t.num_rows * t.group);
        const int64_t i = r / t.group % t.num_rows;
        const int64_t head = g * t.group + r % t.group;
        const float* src =
            t.q + (t.seq->q_start + t.row_begin + i) * t.q_stride + head * layout.head_dim;
        float* dst = scratch.queries + r * dp;
        for (int32_t d = 0; d < dp; ++d) dst[d] = d < layout.head_dim ? src[d] * t.scale : 0.0f;
    }
}

// The state before any entry: nothing seen.
void reset_state(const TileState& state, int64_t num_vectors, int32_t dp) {
    std::fill(state.o, state.o + num_vectors * dp, 0.0f);
    std::fill(state.m, state.m + num_vectors, kNegInf);
    std::fill(state.l, state.l + num_vectors, 0.0f);
}

// Where one KV head reads one segment of a chunk.
template <typename T>
struct SegmentRows {
    Rows<T> keys;
    Rows<T> values;
    int32_t col = 0;
    int32_t count = 0;
};

// One KV head's query vectors against the chunk of entries [e0, e0 + num_entries): scores,
// causal mask, one softmax update, values.
template <typename Source>
void attend_chunk(const AttentionTile& t, const TileShape& s, int32_t e0, int32_t num_entries,
                  const float* queries, const SegmentRows<typename Source::T>* segments,
                  int32_t num_segments, float* scores, const TileState& state) {
    // Rows are in position order: those that see entry e0 are a suffix of the tile.
    const int32_t r_first = std::max(0, e0 - s.limit0) * t.group;
    for (int32_t i = 0; i < num_segments; ++i) {
        qk_block<Source>(queries, segments[i].keys, r_first, segments[i].count, s,
                         scores + segments[i].col);
    }
    for (int32_t r = r_first; r < s.num_vectors; ++r) {
        float* row = scores + r * s.sp;
        const int32_t visible = std::min(num_entries, s.limit0 + r / t.group + 1 - e0);
        std::fill(row + visible, row + s.sp, kNegInf);
        softmax_update(row, s, state.o + r * s.dp, state.m + r, state.l + r);
    }
    for (int32_t i = 0; i < num_segments; ++i) {
        pv_block<Source>(scores + segments[i].col, segments[i].values, r_first, segments[i].count,
                         s, state.o);
    }
}

// The state of KV head g's query vectors within the tile's state.
TileState head_state(const TileState& state, const TileShape& s, int32_t g) {
    const int64_t vectors = int64_t{g} * s.num_vectors;
    return {.o = state.o + vectors * s.dp, .m = state.m + vectors, .l = state.l + vectors};
}

// Runs the tile chunk by chunk. Few query vectors per KV head (decode): each key and value is
// used by one pass only, so the kernels read the cache's rows in place. Many (prefill): each
// chunk is converted to f32 once and serves all of them. The conversion is exact and the
// kernels' arithmetic per (vector, entry) the same, so both give the same bits.
template <typename Source>
void run_chunks(const AttentionTile& t, const TileShape& s, bool direct, const TileScratch& scratch,
                const TileState& state) {
    const PagedKvLayout& layout = t.cache->layout;
    const int32_t capacity = chunk_capacity(layout);
    const int64_t stride = layout.entry_elems();
    const auto* k_cache = static_cast<const typename Source::T*>(t.cache->k_blocks);
    const auto* v_cache = static_cast<const typename Source::T*>(t.cache->v_blocks);
    Segment segments[kChunkEntries];
    SE_CHECK(t.kv_begin % capacity == 0, "attention: range starts at %d", t.kv_begin);
    for (int32_t e0 = t.kv_begin; e0 < t.kv_end;) {
        const int32_t e1 = std::min(t.kv_end, e0 + capacity);
        const int32_t num_segments = split_segments(t, e0, e1, segments);
        if (!direct) stage_chunk<Source>(t, segments, num_segments, s.dp, scratch);
        for (int32_t g = 0; g < layout.num_kv_heads; ++g) {
            prefetch_slice(t, e1, t.kv_end, capacity, g);
            const float* queries = scratch.queries + int64_t{g} * s.num_vectors * s.dp;
            if (direct) {
                SegmentRows<typename Source::T> rows[kChunkEntries];
                for (int32_t i = 0; i < num_segments; ++i) {
                    const int64_t offset = segments[i].slot * stride + int64_t{g} * layout.head_dim;
                    rows[i] = {{k_cache + offset, stride},
                               {v_cache + offset, stride},
                               segments[i].col,
                               segments[i].count};
                }
                attend_chunk<Source>(t, s, e0, e1 - e0, queries, rows, num_segments, scratch.scores,
                                     head_state(state, s, g));
            } else {
                const int64_t head = int64_t{g} * capacity * s.dp;
                const SegmentRows<float> rows{
                    {scratch.keys + head, s.dp}, {scratch.values + head, s.dp}, 0, e1 - e0};
                attend_chunk<F32Source>(t, s, e0, e1 - e0, queries, &rows, 1, scratch.scores,
                                        head_state(state, s, g));
            }
        }
        e0 = e1;
    }
}

}  // namespace

int32_t chunk_capacity(const PagedKvLayout& layout) {
    const int64_t fit =
        kStageFloats / (int64_t{layout.num_kv_heads} * padded_head_dim(layout.head_dim));
    const int64_t blocks = std::min<int64_t>(kChunkEntries, fit) / layout.block_size;
    return static_cast<int32_t>(std::max<int64_t>(1, blocks) * layout.block_size);
}

int32_t partition_entries(const PagedKvLayout& layout) {
    const int32_t capacity = chunk_capacity(layout);
    return (kPartitionEntries + capacity - 1) / capacity * capacity;
}

// One partition's range of the tile into `state` (reset first).
void run_partition(const AttentionTile& t, const TileShape& s, const TileScratch& scratch,
                   const TileState& state) {
    const PagedKvLayout& layout = t.cache->layout;
    reset_state(state, int64_t{layout.num_kv_heads} * s.num_vectors, s.dp);
    const bool direct = s.num_vectors <= kDirectMaxVectors && s.dp == layout.head_dim;
    switch (layout.dtype) {
        case DType::kF32:
            return run_chunks<F32Source>(t, s, direct, scratch, state);
        case DType::kF16:
            return run_chunks<F16Source>(t, s, direct, scratch, state);
        case DType::kBF16:
            return run_chunks<BF16Source>(t, s, direct, scratch, state);
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kI32:
            break;
    }
    SE_CHECK(false, "attention: KV cache dtype %s", dtype_name(layout.dtype).data());
}

void run_attention_tile(const AttentionTile& t, const TileScratch& scratch,
                        const TileState& state) {
    const PagedKvLayout& layout = t.cache->layout;
    const int32_t partition = partition_entries(layout);
    SE_CHECK(t.kv_begin % partition == 0, "attention: range starts at %d", t.kv_begin);
    const TileShape s{.num_vectors = t.num_rows * t.group,
                      .dp = padded_head_dim(layout.head_dim),
                      .sp = padded_block_size(chunk_capacity(layout)),
                      .limit0 = t.seq->kv_len - t.seq->q_len + t.row_begin};
    stage_queries(t, s.dp, scratch);
    const int64_t num_vectors = int64_t{layout.num_kv_heads} * s.num_vectors;
    for (int32_t p0 = t.kv_begin; p0 < t.kv_end; p0 += partition) {
        AttentionTile part = t;
        part.kv_begin = p0;
        part.kv_end = std::min(t.kv_end, p0 + partition);
        if (p0 == t.kv_begin) {  // folding into a state that saw nothing is a copy: skip it
            run_partition(part, s, scratch, state);
            continue;
        }
        run_partition(part, s, scratch, scratch.partition);
        for (int64_t r = 0; r < num_vectors; ++r)
            merge_partition(state, scratch.partition, r, layout.head_dim);
    }
}

void merge_partition(const TileState& into, const TileState& part, int64_t r, int32_t head_dim) {
    const int32_t dp = padded_head_dim(head_dim);
    const float m_part = part.m[r];
    if (m_part == kNegInf) return;  // the vector saw no entry of the partition
    float* o = into.o + r * dp;
    const float* o_part = part.o + r * dp;
    if (into.m[r] == kNegInf) {
        std::copy(o_part, o_part + dp, o);
        into.m[r] = m_part;
        into.l[r] = part.l[r];
        return;
    }
    const float m_new = std::max(into.m[r], m_part);
    const float a = std::exp(into.m[r] - m_new);  // one of a, b is exactly 1
    const float b = std::exp(m_part - m_new);
    into.l[r] = std::fma(part.l[r], b, into.l[r] * a);
    const __m256 va = _mm256_set1_ps(a);
    const __m256 vb = _mm256_set1_ps(b);
    for (int32_t d = 0; d < dp; d += 8) {
        const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(o + d), va);
        _mm256_storeu_ps(o + d, _mm256_fmadd_ps(_mm256_loadu_ps(o_part + d), vb, scaled));
    }
    into.m[r] = m_new;
}

void write_normalised(const TileState& state, int64_t r, int32_t head_dim, float* out) {
    const int32_t dp = padded_head_dim(head_dim);
    const float l = state.l[r];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const float* o = state.o + r * dp;
    for (int32_t d = 0; d < head_dim; ++d) out[d] = o[d] * inv;
}

}  // namespace se::cpu
