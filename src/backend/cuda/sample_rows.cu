#include <bit>
#include <cmath>
#include <cstdint>

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
// 11 bits, then a block scan from the highest digit down finds the bin where the sum crosses.
namespace se::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;  // two per thread in the scan
static_assert(kBins == 2 * kThreads);
constexpr int kUnroll = 4;                   // row loads in flight per thread
constexpr int32_t kCompactCapacity = 16384;  // keys kept in shared memory: 128 KB
constexpr size_t kCompactBytes = kCompactCapacity * sizeof(uint64_t);
// SamplingParams::is_greedy (engine/sampling/sampling_params.h): below this, argmax.
constexpr float kGreedyTemperature = 1e-5f;

// Fixed by the vocabulary for the whole launch.
struct KeyLayout {
    int id_bits;     // bit_width(vocab - 1)
    int total_bits;  // 32 + id_bits <= 63
    // 2^(63 - bit_width(vocab)): the fixed-point unit of a weight, so that the weights of a whole
    // row (each <= 1) sum below 2^63.
    float weight_scale;
};

// A logit's bits, ordered as the numbers: -0 and +0 are one key, as they compare equal on the
// CPU (the token id then breaks the tie).
__device__ __forceinline__ uint32_t monotone_bits(float x) {
    const uint32_t u = __float_as_uint(x == 0.0f ? 0.0f : x);
    return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float from_monotone_bits(uint32_t m) {
    return __uint_as_float((m & 0x80000000u) != 0 ? (m & 0x7fffffffu) : ~m);
}

__device__ __forceinline__ uint64_t make_key(float logit, int32_t token, int32_t vocab,
                                             const KeyLayout& k) {
    return (uint64_t{monotone_bits(logit)} << k.id_bits) | uint64_t(vocab - 1 - token);
}

__device__ __forceinline__ int32_t key_token(uint64_t key, int32_t vocab, const KeyLayout& k) {
    return vocab - 1 - static_cast<int32_t>(key & ((uint64_t{1} << k.id_bits) - 1));
}

__device__ __forceinline__ float key_logit(uint64_t key, const KeyLayout& k) {
    return from_monotone_bits(static_cast<uint32_t>(key >> k.id_bits));
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

struct Candidate {  // argmax.cu's order: the larger number, NaN below all, then the lower index
    float value;
    int32_t index;
};

__device__ __forceinline__ bool beats(Candidate a, Candidate b) {
    const bool a_nan = isnan(a.value);
    const bool b_nan = isnan(b.value);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.value != b.value) return a.value > b.value;
    return a.index < b.index;
}

// Where a level's scan found the crossing.
struct Crossing {
    int32_t bin;
    uint32_t count_before;  // tokens in higher bins
    uint32_t bin_count;
    uint64_t value_before;  // the summed value (count or mass) of the higher bins
    uint64_t total;         // of all bins
};

struct Shared {
    uint32_t hist_count[kBins];
    uint64_t hist_mass[kBins];
    uint64_t warp_value[kWarps];
    uint32_t warp_count[kWarps];
    float warp_max[kWarps];
    Candidate warp_best[kWarps];
    Crossing crossing;
    int32_t num_keys;  // keys appended to the compact buffer
};

// Per-row state of the search, identical in every thread.
struct RowState {
    const float* row;  // f32 [vocab]
    uint64_t* keys;    // u64 [kCompactCapacity], shared: a compacted superset of some tokens
    int32_t vocab;
    KeyLayout layout;
    int32_t set_size;  // upper bound on the tokens of the kept set
    bool set_in_smem;  // the compact buffer holds every token of the kept set
    int32_t num_keys;  // valid entries of the compact buffer
};

// Calls f(valid, key, logit, token) for every finite token of the row (token = -1 for a padding
// lane), every lane of a warp the same number of times so that f may use warp votes.
template <typename F>
__device__ __forceinline__ void for_each_row_token(const RowState& s, F&& f) {
    for (int32_t base = 0; base < s.vocab; base += kThreads * kUnroll) {
        float v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t i = base + u * kThreads + static_cast<int32_t>(threadIdx.x);
            v[u] = i < s.vocab ? __ldg(s.row + i) : NAN;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int32_t i = base + u * kThreads + static_cast<int32_t>(threadIdx.x);
            const bool valid = isfinite(v[u]);
            f(valid, valid ? make_key(v[u], i, s.vocab, s.layout) : 0, v[u], i < s.vocab ? i : -1);
        }
    }
}

template <typename F>
__device__ __forceinline__ void for_each_compact_token(const RowState& s, F&& f) {
    for (int32_t base = 0; base < s.num_keys; base += kThreads) {
        const int32_t j = base + static_cast<int32_t>(threadIdx.x);
        const bool valid = j < s.num_keys;
        const uint64_t key = valid ? s.keys[j] : 0;
        f(valid, key, key_logit(key, s.layout), -1);
    }
}

// Appends the keys of the lanes that take one; one shared atomic per warp. Slots past the
// buffer's capacity are dropped (the caller knows whether everything fit).
__device__ __forceinline__ void append_key(bool take, uint64_t key, uint64_t* keys,
                                           int32_t* num_keys) {
    const unsigned mask = __ballot_sync(0xffffffffu, take);
    if (mask == 0) return;
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int leader = __ffs(static_cast<int>(mask)) - 1;
    int32_t base = 0;
    if (lane == leader) base = atomicAdd(num_keys, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader);
    const int32_t slot = base + __popc(mask & ((1u << lane) - 1u));
    if (take && slot < kCompactCapacity) keys[slot] = key;
}

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

// The scan of one level: bins in descending digit order (position j is bin num_bins - 1 - j),
// two positions per thread. The first position whose inclusive sum reaches `need` is the
// crossing; the value is the mass when `use_mass`, else the count. At level 0 the target
// depends on the total, so `need` is computed from it by `need_of(total)`.
template <typename NeedOf>
__device__ void scan_for_crossing(Shared& sh, int num_bins, bool use_mass, NeedOf need_of) {
    const int t = static_cast<int>(threadIdx.x);
    const int lane = t % 32;
    const int warp = t / 32;
    uint32_t c[2];
    uint64_t v[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        const int j = 2 * t + k;
        const int bin = num_bins - 1 - j;
        c[k] = j < num_bins ? sh.hist_count[bin] : 0;
        v[k] = j < num_bins ? (use_mass ? sh.hist_mass[bin] : c[k]) : 0;
    }
    const uint64_t v_incl = warp_inclusive_scan<unsigned long long>(v[0] + v[1]);
    const uint32_t c_incl = warp_inclusive_scan<unsigned>(c[0] + c[1]);
    if (lane == 31) {
        sh.warp_value[warp] = v_incl;
        sh.warp_count[warp] = c_incl;
    }
    __syncthreads();
    if (warp == 0) {
        const uint64_t wv = warp_inclusive_scan<unsigned long long>(sh.warp_value[lane]);
        const uint32_t wc = warp_inclusive_scan<unsigned>(sh.warp_count[lane]);
        __syncwarp();
        sh.warp_value[lane] = wv;  // now inclusive over warps
        sh.warp_count[lane] = wc;
        // Replaced below by the crossing, which exists because need <= total (target_of).
        if (lane == 0)
            sh.crossing = {
                .bin = 0, .count_before = 0, .bin_count = 0, .value_before = 0, .total = 0};
    }
    __syncthreads();
    const uint64_t total = sh.warp_value[kWarps - 1];
    const uint64_t need = need_of(total);
    uint64_t v_before = (warp > 0 ? sh.warp_value[warp - 1] : 0) + v_incl - (v[0] + v[1]);
    uint32_t c_before = (warp > 0 ? sh.warp_count[warp - 1] : 0) + c_incl - (c[0] + c[1]);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        if (v_before < need && v_before + v[k] >= need) {
            sh.crossing = {.bin = num_bins - 1 - (2 * t + k),
                           .count_before = c_before,
                           .bin_count = c[k],
                           .value_before = v_before,
                           .total = total};
        }
        v_before += v[k];
        c_before += c[k];
    }
    __syncthreads();
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

struct Found {
    uint64_t key;
    uint32_t count_through;  // tokens of the set at or before it in the canonical order
};

// The radix descent. Each level reads the row (or the compact buffer, once what the descent
// still needs is there) once. A level that reads the row compacts into shared memory, when they
// fit, either every token of the set at or before the current bin (then the buffer holds the
// set the descent leaves behind, and the next steps read it too) or only the current bin.
__device__ Found descend(Shared& sh, RowState& s, const KeptSet& set, const Weighting& w,
                         const Descent& d) {
    const int total_bits = s.layout.total_bits;
    const bool use_mass = d.target != Target::kCount;
    const bool need_weight = use_mass || set.min_weight > 0.0f;
    uint64_t prefix = 0;
    int fixed = 0;
    uint64_t value_above = 0;
    uint32_t count_above = 0;
    uint64_t target = 0;
    int64_t bin_size = s.set_size;  // tokens of the set sharing the prefix (upper bound)
    bool read_smem = s.set_in_smem;
    bool set_compacted = false;
    while (fixed < total_bits) {
        const int width = min(kDigitBits, total_bits - fixed);
        const int shift = total_bits - fixed - width;
        const int num_bins = 1 << width;
        enum { kNone, kUpToBin, kBinOnly } mode = kNone;
        if (!read_smem) {
            if (count_above + bin_size <= kCompactCapacity) {
                mode = kUpToBin;
            } else if (bin_size <= kCompactCapacity) {
                mode = kBinOnly;
            }
        }
        for (int b = static_cast<int>(threadIdx.x); b < num_bins; b += kThreads) {
            sh.hist_count[b] = 0;
            sh.hist_mass[b] = 0;
        }
        if (threadIdx.x == 0) sh.num_keys = 0;
        __syncthreads();
        const auto visit = [&](bool valid, uint64_t key, float logit, int32_t) {
            float weight = 0.0f;
            if (valid && need_weight) weight = weight_of(logit, w);
            const bool in_set = valid && key >= set.key_lo && weight >= set.min_weight;
            const uint64_t high = key >> (shift + width);  // shift + width <= 63
            if (in_set && high == prefix) {
                const auto digit = static_cast<int>((key >> shift) & uint64_t(num_bins - 1));
                atomicAdd(&sh.hist_count[digit], 1u);
                if (use_mass) {
                    atomicAdd(reinterpret_cast<unsigned long long*>(&sh.hist_mass[digit]),
                              static_cast<unsigned long long>(fixed_point(weight, w)));
                }
            }
            if (mode != kNone) {
                const bool take = in_set && (mode == kUpToBin ? high >= prefix : high == prefix);
                append_key(take, key, s.keys, &sh.num_keys);
            }
        };
        if (read_smem) {
            for_each_compact_token(s, visit);
        } else {
            for_each_row_token(s, visit);
        }
        __syncthreads();
        if (mode != kNone) {
            s.num_keys = sh.num_keys;
            read_smem = true;
            set_compacted = mode == kUpToBin;
        }
        const bool first = fixed == 0;
        scan_for_crossing(sh, num_bins, use_mass, [&](uint64_t total) {
            if (first) target = target_of(d, total);
            return target - value_above;
        });
        const Crossing c = sh.crossing;
        value_above += c.value_before;
        count_above += c.count_before;
        bin_size = c.bin_count;
        prefix = (prefix << width) | static_cast<uint64_t>(c.bin);
        fixed += width;
    }
    if (set_compacted) s.set_in_smem = true;
    return {.key = prefix, .count_through = count_above + 1};
}

// Pass 0: the argmax candidate (for greedy rows and rows without a finite logit), the largest
// finite logit and how many there are; the finite tokens are compacted while they fit.
struct RowStats {
    Candidate best;
    float max_finite;
    int32_t num_finite;
};

__device__ RowStats row_stats(Shared& sh, RowState& s) {
    if (threadIdx.x == 0) sh.num_keys = 0;
    __syncthreads();
    Candidate best{NAN, INT32_MAX};  // loses to every element, NaN ones included
    float max_finite = -INFINITY;
    uint32_t num_finite = 0;
    for_each_row_token(s, [&](bool valid, uint64_t key, float logit, int32_t token) {
        if (token >= 0) {
            const Candidate c{logit, token};
            if (beats(c, best)) best = c;
        }
        if (valid) {
            max_finite = fmaxf(max_finite, logit);
            ++num_finite;
        }
        append_key(valid, key, s.keys, &sh.num_keys);
    });
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const Candidate other{__shfl_xor_sync(0xffffffffu, best.value, off),
                              __shfl_xor_sync(0xffffffffu, best.index, off)};
        if (beats(other, best)) best = other;
        max_finite = fmaxf(max_finite, __shfl_xor_sync(0xffffffffu, max_finite, off));
        num_finite += __shfl_xor_sync(0xffffffffu, num_finite, off);
    }
    const int warp = static_cast<int>(threadIdx.x / 32);
    if (threadIdx.x % 32 == 0) {
        sh.warp_best[warp] = best;
        sh.warp_max[warp] = max_finite;
        sh.warp_count[warp] = num_finite;
    }
    __syncthreads();
    RowStats r{sh.warp_best[0], sh.warp_max[0], 0};
    for (int i = 0; i < kWarps; ++i) {  // every thread, in the same order: one answer
        if (beats(sh.warp_best[i], r.best)) r.best = sh.warp_best[i];
        r.max_finite = fmaxf(r.max_finite, sh.warp_max[i]);
        r.num_finite += static_cast<int32_t>(sh.warp_count[i]);
    }
    s.num_keys = min(sh.num_keys, kCompactCapacity);
    s.set_size = r.num_finite;
    s.set_in_smem = r.num_finite <= kCompactCapacity;
    __syncthreads();  // sh.warp_* and sh.num_keys are reused
    return r;
}

__global__ void __launch_bounds__(kThreads, 1)
    sample_rows_kernel(SampleRowsParams p, KeyLayout layout) {
    __shared__ Shared sh;
    extern __shared__ uint64_t compact_keys[];  // u64 [kCompactCapacity]
    RowState s{.row = p.logits + int64_t{blockIdx.x} * p.row_stride,
               .keys = compact_keys,
               .vocab = p.vocab,
               .layout = layout,
               .set_size = 0,
               .set_in_smem = false,
               .num_keys = 0};
    const RowSampling r = p.rows[blockIdx.x];
    const RowStats stats = row_stats(sh, s);
    if (r.temperature < kGreedyTemperature || stats.num_finite == 0) {
        if (threadIdx.x == 0) p.out[blockIdx.x] = stats.best.index;
        return;
    }
    const Weighting w{.max_logit = stats.max_finite,
                      .inv_temperature = __fdiv_rn(1.0f, r.temperature),
                      .scale = layout.weight_scale};
    KeptSet set{.key_lo = 0, .min_weight = 0.0f};
    if (r.top_k >= 1 && r.top_k < stats.num_finite) {
        const Descent d{.target = Target::kCount, .count = uint64_t(r.top_k), .fraction = 0.0};
        set.key_lo = descend(sh, s, set, w, d).key;
        s.set_size = r.top_k;
    }
    if (r.top_p < 1.0f) {
        const Descent d{.target = Target::kTopP, .count = 0, .fraction = double{r.top_p}};
        const Found f = descend(sh, s, set, w, d);
        set.key_lo = f.key;
        s.set_size = static_cast<int32_t>(f.count_through);
    }
    // The largest weight left is the top token's, exp(0) = 1, so min_p * max_weight is min_p.
    if (r.min_p > 0.0f) set.min_weight = r.min_p;
    const Descent d{.target = Target::kDraw, .count = 0, .fraction = r.u};
    const int32_t token = key_token(descend(sh, s, set, w, d).key, p.vocab, layout);
    if (threadIdx.x == 0)
        p.out[blockIdx.x] = token >= 0 && token < p.vocab ? token : stats.best.index;
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
    const auto vocab = static_cast<uint32_t>(p.vocab);
    const auto id_bits = static_cast<int>(std::bit_width(vocab - 1));
    const KeyLayout layout{
        .id_bits = id_bits,
        .total_bits = 32 + id_bits,
        .weight_scale = std::ldexp(1.0f, 63 - static_cast<int>(std::bit_width(vocab)))};
    SE_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        sample_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kCompactBytes));
    sample_rows_kernel<<<p.num_rows, kThreads, kCompactBytes, stream>>>(p, layout);
    return launch_status("sample_rows");
}

}  // namespace se::cuda
