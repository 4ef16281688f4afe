#include <cooperative_groups.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cuda/argmax_order.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/sample_rows.h"

// How a row is searched without sorting it. Every finite token gets the 64-bit key
//
//   bit  total_bits-1 ........... id_bits   id_bits-1 ........... 0
//        [ monotone bits of the f32 logit ][ vocab - 1 - token id   ]
//
// so that a larger key comes first in the canonical order (logit desc, id asc) and no two tokens
// share a key. Each threshold is the first key, in that order, at which a running sum (of ones for
// top-k, of fixed-point weights for top-p and the draw) reaches a target. A descent fixes the key
// 11 bits at a time: a histogram of the tokens that share the bits fixed so far, by their next
// 11 bits, then a scan from the highest digit down finds the bin where the sum crosses.
//
// A row belongs to a cluster of kClusterCtas CTAs (distributed shared memory, sm_90). Each CTA
// copies one contiguous chunk of the row into its shared memory once, and every later pass reads
// that copy:
//
//   token  0          chunk        2*chunk             7*chunk        vocab
//          [ CTA 0    )[ CTA 1     )[ ...              )[ CTA 7       )
//
// The histograms are exact integer sums, so where a token is counted changes no result: each
// level, every CTA histograms its chunk, the cluster sums the histograms (CTA r owns bins
// [256 r, 256 r + 256)), and every CTA reads the same sums and so takes the same path. The
// canonical order never depends on the chunks: ties between chunks are ordered by the key's id
// bits like any other.
namespace se::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kClusterCtas = 8;  // the portable cluster size: always schedulable
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kSliceBins = kBins / kClusterCtas;  // the bins each CTA of a cluster sums
constexpr int kPartials = kThreads / kSliceBins;  // threads summing one owned bin
constexpr int kRanksPerPartial = kClusterCtas / kPartials;
static_assert(kSliceBins * kClusterCtas == kBins && kPartials * kRanksPerPartial == kClusterCtas);
static_assert(kSliceBins % 32 == 0 && kSliceBins <= kThreads);
// A fixed-point mass (< 2^63) is histogrammed as 16-bit pieces in 32-bit bins, which are native
// shared atomics (ATOMS.ADD); a 64-bit shared atomicAdd compiles for sm_90 to a compare-and-swap
// loop (ATOMS.CAST.SPIN.64 in the SASS), which spins under the contention of the first level,
// where most tokens share a few bins. A bin sums at most kMaxChunk pieces < 2^16: below 2^32.
constexpr int kPieceBits = 16;
constexpr int kMaxPieces = 4;
constexpr int32_t kMaxChunk = 40960;  // 160 KB of f32 per CTA: vocab up to 327680
static_assert(int64_t{kMaxChunk} * ((1 << kPieceBits) - 1) < (int64_t{1} << 32));
constexpr int kLoadUnroll = 4;   // 16-byte loads in flight per thread: 64 KB per CTA
constexpr int kMaxDescents = 3;  // top-k, top-p, the draw
// SamplingParams::is_greedy (engine/sampling/sampling_params.h): below this, argmax.
constexpr float kGreedyTemperature = 1e-5f;

// Fixed by the vocabulary for the whole launch.
struct KeyLayout {
    int id_bits;     // bit_width(vocab - 1)
    int total_bits;  // 32 + id_bits <= 63
    // 2^(63 - bit_width(vocab)): the fixed-point unit of a weight, so that the weights of a whole
    // row (each <= 1) sum below 2^63.
    float weight_scale;
    int num_pieces;  // 16-bit pieces of a weight <= 2^(63 - bit_width(vocab)) in fixed point
};

// A logit's bits, ordered as the numbers: -0 and +0 are one key, as they compare equal on the
// CPU (the token id then breaks the tie).
__device__ __forceinline__ uint32_t monotone_bits(float x) {
    const uint32_t u = __float_as_uint(x == 0.0f ? 0.0f : x);
    return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ uint64_t make_key(float logit, int32_t token, int32_t vocab,
                                             const KeyLayout& k) {
    return (uint64_t{monotone_bits(logit)} << k.id_bits) | uint64_t(vocab - 1 - token);
}

__device__ __forceinline__ int32_t key_token(uint64_t key, int32_t vocab, const KeyLayout& k) {
    return vocab - 1 - static_cast<int32_t>(key & ((uint64_t{1} << k.id_bits) - 1));
}

// The CPU's weight: (logit - max) * (1 / temperature) in f32, each step rounded (no FMA), then
// expf (within 2 ulp; glibc's is within 1, so the two weights differ by at most 3 ulp).
struct Weighting {
    float max_logit;
    float inv_temperature;
    float scale;  // KeyLayout::weight_scale
};

__device__ __forceinline__ float weight_of(float logit, const Weighting& w) {
    return expf(__fmul_rn(__fsub_rn(logit, w.max_logit), w.inv_temperature));
}

// Scaling by a power of two is exact, so this rounds the weight once, to the nearest unit.
__device__ __forceinline__ uint64_t fixed_point(float weight, const Weighting& w) {
    return __float2ull_rn(weight * w.scale);
}

// The tokens still in play: finite, key >= key_lo (top-k, top-p), weight >= min_weight (min-p;
// 0 keeps every weight).
struct KeptSet {
    uint64_t key_lo;
    float min_weight;
};

template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T x) {
    const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        const T other = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += other;
    }
    return x;
}

// How a descent's target follows from the total of its set.
enum class Target { kCount, kTopP, kDraw };

struct Descent {
    Target target;
    uint64_t count;   // kCount: the top_k-th token
    double fraction;  // kTopP: top_p; kDraw: u
};

// kTopP: the last kept token is the first whose inclusive mass reaches ceil(top_p * total)
// (the CPU keeps a token while the mass before it is < top_p * total). kDraw: the first whose
// inclusive mass exceeds u * total, i.e. reaches floor(u * total) + 1. Both are clamped to
// [1, total], so the crossing exists and is a token of nonzero weight.
__device__ __forceinline__ uint64_t target_of(const Descent& d, uint64_t total) {
    if (d.target == Target::kCount) return d.count;
    const double x = d.fraction * static_cast<double>(total);
    uint64_t t = d.target == Target::kTopP ? static_cast<uint64_t>(ceil(x))
                                           : static_cast<uint64_t>(floor(x)) + 1;
    if (t > total) t = total;
    return t < 1 ? 1 : t;
}

// Where a level's scan found the crossing.
struct Crossing {
    int32_t bin;
    uint32_t bin_count;     // tokens of the set in the bin
    uint64_t value_before;  // the summed value (count or mass) of the higher bins
};

struct RowStats {
    ArgmaxCandidate best;  // the argmax rule's token: greedy rows, rows without a finite logit
    float max_finite;
    int32_t num_finite;
};

// One CTA's shared memory, followed by its chunk of the row (f32). Other CTAs of the cluster
// read hist_* (between a level's two cluster barriers), owned_* and slice_* (after the second),
// cta_stats and found_key; each is written again only after a cluster barrier that follows
// every such read.
struct alignas(16) Shared {
    uint32_t hist_count[kBins];
    uint32_t hist_piece[kMaxPieces][kBins];  // fixed-point mass, 16 bits at a time
    uint32_t partial_count[kPartials][kSliceBins];
    uint64_t partial_mass[kPartials][kSliceBins];
    uint32_t owned_count[kSliceBins];  // the cluster's bins [256 rank, 256 rank + 256)
    uint64_t owned_mass[kSliceBins];
    uint64_t slice_mass;  // the owned bins' totals
    uint32_t slice_count;
    uint32_t slice_counts[kClusterCtas];  // every CTA's slice totals, copied
    uint64_t slice_masses[kClusterCtas];
    uint64_t warp_value[kWarps];
    uint32_t warp_count[kWarps];
    ArgmaxCandidate warp_best[kWarps];
    float warp_max[kWarps];
    RowStats cta_stats;
    RowStats all_stats[kClusterCtas];
    uint64_t found_key[kMaxDescents];  // per descent: the key this CTA holds, else 0
    uint64_t found_keys[kClusterCtas];
    Crossing crossing;
    RowSampling row;  // the row's parameters, read once for the CTA
};
static_assert(sizeof(Shared) % 16 == 0);

// This CTA's part of the row, copied into shared memory: values[j] is token begin + j.
struct Chunk {
    const float* values;
    int32_t begin;
    int32_t size;
    int32_t vocab;
    KeyLayout layout;
};

// Copies `size` logits from global `src` to shared `dst`, where dst and src are congruent
// modulo 16 bytes (the caller offsets dst by src's misalignment), so the body moves as 16-byte
// vectors on both sides. Only [src, src + size) is read: padding after a row is never touched.
__device__ void load_chunk(const float* src, float* dst, int32_t size) {
    const int t = static_cast<int>(threadIdx.x);
    const auto misalign = static_cast<int32_t>((reinterpret_cast<uintptr_t>(src) / 4) % 4);
    const int32_t head = min(size, (4 - misalign) % 4);
    const int32_t num_vecs = (size - head) / 4;
    const int32_t tail = head + 4 * num_vecs;
    if (t < head) dst[t] = __ldg(src + t);
    if (t < size - tail) dst[tail + t] = __ldg(src + tail + t);
    const auto* src4 = reinterpret_cast<const float4*>(src + head);
    auto* dst4 = reinterpret_cast<float4*>(dst + head);
    for (int32_t base = 0; base < num_vecs; base += kThreads * kLoadUnroll) {
        float4 v[kLoadUnroll];
#pragma unroll
        for (int u = 0; u < kLoadUnroll; ++u) {
            const int32_t i = base + u * kThreads + t;
            if (i < num_vecs) v[u] = __ldg(src4 + i);
        }
#pragma unroll
        for (int u = 0; u < kLoadUnroll; ++u) {
            const int32_t i = base + u * kThreads + t;
            if (i < num_vecs) dst4[i] = v[u];
        }
    }
}

// Calls f(valid, key, logit, token) for every token of the chunk (valid: finite; token -1 for a
// padding lane), every thread of the CTA the same number of times so that f may use warp votes.
template <typename F>
__device__ __forceinline__ void for_each_chunk_token(const Chunk& c, F&& f) {
    for (int32_t base = 0; base < c.size; base += kThreads) {
        const int32_t j = base + static_cast<int32_t>(threadIdx.x);
        const float v = j < c.size ? c.values[j] : NAN;
        const bool valid = isfinite(v);
        const int32_t token = j < c.size ? c.begin + j : -1;
        f(valid, valid ? make_key(v, token, c.vocab, c.layout) : 0, v, token);
    }
}

// The argmax candidate, the largest finite logit and how many there are, over the whole row:
// each CTA reduces its chunk, then every CTA combines all of them (a total order, a max and a
// sum: one answer in every thread of the cluster).
__device__ RowStats row_stats(Shared& sh, const cg::cluster_group& cluster, const Chunk& c) {
    ArgmaxCandidate best{NAN, INT32_MAX};  // loses to every element, NaN ones included
    float max_finite = -INFINITY;
    int32_t num_finite = 0;
    for_each_chunk_token(c, [&](bool valid, uint64_t, float logit, int32_t token) {
        if (token >= 0 && beats(ArgmaxCandidate{logit, token}, best))
            best = ArgmaxCandidate{logit, token};
        if (valid) {
            max_finite = fmaxf(max_finite, logit);
            ++num_finite;
        }
    });
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const ArgmaxCandidate other{__shfl_xor_sync(0xffffffffu, best.value, off),
                                    __shfl_xor_sync(0xffffffffu, best.index, off)};
        if (beats(other, best)) best = other;
        max_finite = fmaxf(max_finite, __shfl_xor_sync(0xffffffffu, max_finite, off));
        num_finite += __shfl_xor_sync(0xffffffffu, num_finite, off);
    }
    const int t = static_cast<int>(threadIdx.x);
    if (t % 32 == 0) {
        sh.warp_best[t / 32] = best;
        sh.warp_max[t / 32] = max_finite;
        sh.warp_count[t / 32] = static_cast<uint32_t>(num_finite);
    }
    __syncthreads();
    if (t == 0) {
        RowStats r{sh.warp_best[0], sh.warp_max[0], 0};
        for (int i = 0; i < kWarps; ++i) {
            if (beats(sh.warp_best[i], r.best)) r.best = sh.warp_best[i];
            r.max_finite = fmaxf(r.max_finite, sh.warp_max[i]);
            r.num_finite += static_cast<int32_t>(sh.warp_count[i]);
        }
        sh.cta_stats = r;
    }
    cluster.sync();
    if (t < kClusterCtas) sh.all_stats[t] = *cluster.map_shared_rank(&sh.cta_stats, t);
    __syncthreads();
    RowStats r = sh.all_stats[0];
    for (int i = 1; i < kClusterCtas; ++i) {
        if (beats(sh.all_stats[i].best, r.best)) r.best = sh.all_stats[i].best;
        r.max_finite = fmaxf(r.max_finite, sh.all_stats[i].max_finite);
        r.num_finite += sh.all_stats[i].num_finite;
    }
    return r;
}

// Adds the taking lanes' tokens to this CTA's histogram. Lanes of a warp with the same digit
// add as one (a count and `num_pieces` piece sums, by their leader), so the shared atomics see
// no conflicts within a warp however the logits cluster.
__device__ __forceinline__ void add_to_histogram(Shared& sh, bool take, int digit, uint64_t mass,
                                                 int num_pieces) {
    const unsigned takers = __ballot_sync(0xffffffffu, take);
    if (!take) return;
    const unsigned group = __match_any_sync(takers, digit);
    const bool leader = static_cast<int>(threadIdx.x % 32) == __ffs(static_cast<int>(group)) - 1;
    if (leader) atomicAdd(&sh.hist_count[digit], static_cast<unsigned>(__popc(group)));
#pragma unroll
    for (int q = 0; q < kMaxPieces; ++q) {
        if (q >= num_pieces) break;
        const auto piece = static_cast<unsigned>((mass >> (kPieceBits * q)) & 0xffffu);
        const unsigned sum = __reduce_add_sync(group, piece);  // <= 32 pieces: no overflow
        if (leader) atomicAdd(&sh.hist_piece[q][digit], sum);
    }
}

// Between the level's two cluster barriers: this CTA sums its slice of bins over the cluster's
// histograms (thread t reads bin t % 256 of kRanksPerPartial CTAs) and the slice's totals.
__device__ void reduce_slice(Shared& sh, const cg::cluster_group& cluster, int num_pieces) {
    const int t = static_cast<int>(threadIdx.x);
    const int bin_in_slice = t % kSliceBins;
    const int part = t / kSliceBins;
    const int bin = static_cast<int>(cluster.block_rank()) * kSliceBins + bin_in_slice;
    uint32_t count = 0;
    uint64_t mass = 0;
#pragma unroll
    for (int k = 0; k < kRanksPerPartial; ++k) {
        const Shared* other = cluster.map_shared_rank(&sh, part * kRanksPerPartial + k);
        count += other->hist_count[bin];
#pragma unroll
        for (int q = 0; q < kMaxPieces; ++q) {
            if (q < num_pieces) mass += uint64_t{other->hist_piece[q][bin]} << (kPieceBits * q);
        }
    }
    sh.partial_count[part][bin_in_slice] = count;
    sh.partial_mass[part][bin_in_slice] = mass;
    __syncthreads();
    if (t < kSliceBins) {
        count = 0;
        mass = 0;
#pragma unroll
        for (int k = 0; k < kPartials; ++k) {
            count += sh.partial_count[k][t];
            mass += sh.partial_mass[k][t];
        }
        sh.owned_count[t] = count;
        sh.owned_mass[t] = mass;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            count += __shfl_xor_sync(0xffffffffu, count, off);
            mass += __shfl_xor_sync(0xffffffffu, mass, off);
        }
        if (t % 32 == 0) {
            sh.warp_count[t / 32] = count;
            sh.warp_value[t / 32] = mass;
        }
    }
    __syncthreads();
    if (t == 0) {
        uint32_t c = 0;
        uint64_t m = 0;
        for (int w = 0; w < kSliceBins / 32; ++w) {
            c += sh.warp_count[w];
            m += sh.warp_value[w];
        }
        sh.slice_count = c;
        sh.slice_mass = m;
    }
}

// After the level's second cluster barrier: the position, in descending bin order over the
// cluster's sums, whose inclusive value first reaches `need` (>= 1, <= the total: target_of).
// The slices' totals pick the slice; a scan of its 256 bins (read from their owner) the bin.
// At the first level the target follows from the total, through `target`.
__device__ Crossing cluster_crossing(Shared& sh, const cg::cluster_group& cluster, bool use_mass,
                                     const Descent& d, bool first, uint64_t& target,
                                     uint64_t value_above) {
    const int t = static_cast<int>(threadIdx.x);
    const int lane = t % 32;
    const int warp = t / 32;
    if (t < kClusterCtas) {
        const Shared* other = cluster.map_shared_rank(&sh, t);
        sh.slice_counts[t] = other->slice_count;
        sh.slice_masses[t] = other->slice_mass;
    }
    if (t == 0) sh.crossing = {.bin = 0, .bin_count = 0, .value_before = 0};
    __syncthreads();
    uint64_t total = 0;
    for (int r = 0; r < kClusterCtas; ++r)
        total += use_mass ? sh.slice_masses[r] : sh.slice_counts[r];
    if (first) target = target_of(d, total);
    const uint64_t need = target - value_above;
    int slice = 0;
    uint64_t before = 0;  // value of the higher slices
    for (int r = kClusterCtas - 1; r >= 0; --r) {
        const uint64_t v = use_mass ? sh.slice_masses[r] : sh.slice_counts[r];
        slice = r;
        if (before + v >= need) break;
        before += v;
    }
    const Shared* owner = cluster.map_shared_rank(&sh, slice);
    const int bin_in_slice = kSliceBins - 1 - t;  // position t, highest bin first
    uint32_t c = 0;
    uint64_t v = 0;
    if (t < kSliceBins) {
        c = owner->owned_count[bin_in_slice];
        v = use_mass ? owner->owned_mass[bin_in_slice] : c;
    }
    const uint64_t v_incl = warp_inclusive_scan<unsigned long long>(v);
    if (lane == 31 && t < kSliceBins) sh.warp_value[warp] = v_incl;
    __syncthreads();
    if (t < kSliceBins) {
        uint64_t v_before = before + v_incl - v;
        for (int w = 0; w < warp; ++w) v_before += sh.warp_value[w];
        if (v_before < need && v_before + v >= need) {
            sh.crossing = {
                .bin = slice * kSliceBins + bin_in_slice, .bin_count = c, .value_before = v_before};
        }
    }
    __syncthreads();
    return sh.crossing;
}

// The one key of the set whose high bits are `prefix` (the key's bits from `shift` up), when the
// descent's bin holds a single token: its CTA publishes it, every CTA takes it.
__device__ uint64_t find_single_key(Shared& sh, const cg::cluster_group& cluster, const Chunk& c,
                                    const KeptSet& set, const Weighting& w, uint64_t prefix,
                                    int shift, int slot) {
    const bool need_weight = set.min_weight > 0.0f;
    for_each_chunk_token(c, [&](bool valid, uint64_t key, float logit, int32_t) {
        if (!valid || key < set.key_lo || (key >> shift) != prefix) return;
        if (need_weight && weight_of(logit, w) < set.min_weight) return;
        sh.found_key[slot] = key;
    });
    cluster.sync();
    const int t = static_cast<int>(threadIdx.x);
    if (t < kClusterCtas) sh.found_keys[t] = *cluster.map_shared_rank(&sh.found_key[slot], t);
    __syncthreads();
    uint64_t key = 0;  // a finite token's key is never 0: its logit bits are not all zero
    for (int r = 0; r < kClusterCtas; ++r) key = sh.found_keys[r] > key ? sh.found_keys[r] : key;
    return key;
}

// The radix descent over the cluster. Each level reads every CTA's chunk from shared memory
// once; a level whose crossing bin holds one token ends the descent through find_single_key
// (at vocab 128K and distinct logits that is after 2 or 3 levels, not 5).
__device__ uint64_t descend(Shared& sh, const cg::cluster_group& cluster, const Chunk& c,
                            const KeptSet& set, const Weighting& w, const Descent& d, int slot) {
    const int total_bits = c.layout.total_bits;
    const bool use_mass = d.target != Target::kCount;
    const bool need_weight = use_mass || set.min_weight > 0.0f;
    const int num_pieces = use_mass ? c.layout.num_pieces : 0;
    const int t = static_cast<int>(threadIdx.x);
    uint64_t prefix = 0;
    uint64_t value_above = 0;
    uint64_t target = 0;
    for (int fixed = 0; fixed < total_bits;) {
        const int width = min(kDigitBits, total_bits - fixed);
        const int shift = total_bits - fixed - width;
        for (int b = t; b < kBins; b += kThreads) {
            sh.hist_count[b] = 0;
#pragma unroll
            for (int q = 0; q < kMaxPieces; ++q) sh.hist_piece[q][b] = 0;
        }
        __syncthreads();
        for_each_chunk_token(c, [&](bool valid, uint64_t key, float logit, int32_t) {
            float weight = 0.0f;
            if (valid && need_weight) weight = weight_of(logit, w);
            const bool take = valid && key >= set.key_lo && weight >= set.min_weight &&
                              (key >> (shift + width)) == prefix;  // shift + width <= 63
            const auto digit = static_cast<int>((key >> shift) & uint64_t((1 << width) - 1));
            add_to_histogram(sh, take, digit, use_mass ? fixed_point(weight, w) : 0, num_pieces);
        });
        cluster.sync();  // every histogram is complete
        reduce_slice(sh, cluster, num_pieces);
        cluster.sync();  // every slice is summed; no CTA reads a histogram any more
        const Crossing x =
            cluster_crossing(sh, cluster, use_mass, d, fixed == 0, target, value_above);
        value_above += x.value_before;
        prefix = (prefix << width) | static_cast<uint64_t>(x.bin);
        fixed += width;
        if (x.bin_count == 1 && fixed < total_bits)
            return find_single_key(sh, cluster, c, set, w, prefix, total_bits - fixed, slot);
    }
    return prefix;
}

__global__ void __cluster_dims__(kClusterCtas, 1, 1) __launch_bounds__(kThreads, 1)
    sample_rows_kernel(SampleRowsParams p, KeyLayout layout, int32_t chunk_size) {
    extern __shared__ __align__(16) unsigned char smem[];  // Shared, then f32 [chunk_size + 4]
    Shared& sh = *reinterpret_cast<Shared*>(smem);
    const cg::cluster_group cluster = cg::this_cluster();
    const int t = static_cast<int>(threadIdx.x);
    const int32_t row = static_cast<int32_t>(blockIdx.x) / kClusterCtas;
    const int32_t begin = min(static_cast<int32_t>(cluster.block_rank()) * chunk_size, p.vocab);
    const float* src = p.logits + int64_t{row} * p.row_stride + begin;
    float* values = reinterpret_cast<float*>(smem + sizeof(Shared)) +
                    (reinterpret_cast<uintptr_t>(src) / 4) % 4;  // congruent with src mod 16 B
    const Chunk c{.values = values,
                  .begin = begin,
                  .size = min(chunk_size, p.vocab - begin),
                  .vocab = p.vocab,
                  .layout = layout};
    // The parameters may lie in pinned host memory (a bus round trip): one thread loads them,
    // issued before the row's loads so that the two latencies overlap.
    RowSampling mine{};
    if (t == 0) mine = p.rows[row];
    load_chunk(src, values, c.size);
    if (t < kMaxDescents) sh.found_key[t] = 0;
    if (t == 0) sh.row = mine;
    __syncthreads();
    const RowSampling r = sh.row;
    const RowStats stats = row_stats(sh, cluster, c);
    int32_t token = stats.best.index;
    if (r.temperature >= kGreedyTemperature && stats.num_finite > 0) {
        const Weighting w{.max_logit = stats.max_finite,
                          .inv_temperature = __fdiv_rn(1.0f, r.temperature),
                          .scale = layout.weight_scale};
        KeptSet set{.key_lo = 0, .min_weight = 0.0f};
        if (r.top_k >= 1 && r.top_k < stats.num_finite) {
            const Descent d{.target = Target::kCount, .count = uint64_t(r.top_k), .fraction = 0.0};
            set.key_lo = descend(sh, cluster, c, set, w, d, 0);
        }
        if (r.top_p < 1.0f) {
            const Descent d{.target = Target::kTopP, .count = 0, .fraction = double{r.top_p}};
            set.key_lo = descend(sh, cluster, c, set, w, d, 1);
        }
        // The largest weight left is the top token's, exp(0) = 1, so min_p * max_weight is min_p.
        if (r.min_p > 0.0f) set.min_weight = r.min_p;
        const Descent d{.target = Target::kDraw, .count = 0, .fraction = r.u};
        const int32_t drawn = key_token(descend(sh, cluster, c, set, w, d, 2), p.vocab, layout);
        if (drawn >= 0 && drawn < p.vocab) token = drawn;
    }
    if (cluster.block_rank() == 0 && t == 0) {
        p.out[row] = token;
        if (p.host_out != nullptr) p.host_out[row] = token;
    }
    cluster.sync();  // no CTA leaves while another may still read its shared memory
}

}  // namespace

Status sample_rows(const SampleRowsParams& p, cudaStream_t stream) {
    if (p.vocab <= 0) return invalid_argument("sample_rows: vocab must be positive");
    if (p.row_stride < p.vocab) return invalid_argument("sample_rows: row_stride < vocab");
    if (p.num_rows < 0) return invalid_argument("sample_rows: num_rows is negative");
    if (p.num_rows == 0) return Status::ok_status();
    if (p.logits == nullptr) return invalid_argument("sample_rows: logits is null");
    if (p.rows == nullptr) return invalid_argument("sample_rows: rows is null");
    if (p.out == nullptr) return invalid_argument("sample_rows: out is null");
    if (p.num_rows > INT32_MAX / kClusterCtas)
        return invalid_argument("sample_rows: num_rows " + std::to_string(p.num_rows) +
                                " too large");
    const int32_t chunk_size = (p.vocab + kClusterCtas - 1) / kClusterCtas;
    if (chunk_size > kMaxChunk) {
        return invalid_argument("sample_rows: vocab " + std::to_string(p.vocab) + " exceeds " +
                                std::to_string(kClusterCtas * kMaxChunk));
    }
    const auto vocab = static_cast<uint32_t>(p.vocab);
    const auto id_bits = static_cast<int>(std::bit_width(vocab - 1));
    const int unit_bits = 63 - static_cast<int>(std::bit_width(vocab));
    const KeyLayout layout{.id_bits = id_bits,
                           .total_bits = 32 + id_bits,
                           .weight_scale = std::ldexp(1.0f, unit_bits),
                           .num_pieces = (unit_bits + kPieceBits) / kPieceBits};
    const size_t smem_bytes = sizeof(Shared) + (size_t(chunk_size) + 4) * sizeof(float);
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        sample_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
    sample_rows_kernel<<<p.num_rows * kClusterCtas, kThreads, smem_bytes, stream>>>(p, layout,
                                                                                    chunk_size);
    return launch_status("sample_rows");
}

}  // namespace se::cuda
