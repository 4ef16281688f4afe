// cuda::prefill_attention against ReferenceOps::attention (f64, full causal softmax) over paged
// bf16 caches with scattered block tables, for each of its kernels (prefill_kernel.h: mma.sync
// everywhere, the wgmma variants on compute capability 9.0 only), every kernel against one
// reference per case: block sizes 16 and 32 (and 8, 64, 256 at one GQA ratio and head dim), GQA
// ratios 1, 3, 4, 8, head dims 64 and 128; ragged
// batches mixing fresh prompts, chunks over a cached prefix (kv_len > q_len), decode rows (q_len 1)
// and empty sequences (q_len 0), lengths off the 64-row, 64-key and block grids, a 2000-row
// sequence over many tiles, q as a column slice of fused qkv rows and out rows wider than the
// heads. Outputs are NaN-poisoned before every launch. A batched launch must equal, bit for bit,
// each sequence launched alone, and a launch with a looser max_q_len; and every wgmma variant
// must equal the first (kWgmma) bit for bit, as they sum the same products in the same order.
// A launch that has not finished after kHangSeconds ends the process (a hung barrier phase).
//
// Tolerance, random inputs (q in [-2, 2], K and V in [-1, 1], all bf16): like FlashAttention-2,
// the kernel rounds the softmax weights p (in [0, 1], relative to the running max) to bf16 before
// P·V, while the sum l it divides by adds the unrounded f32 weights. Round-to-nearest bf16 keeps 8
// significant bits, so |p~ - p| <= 2^-9 p and
//   |Σ p~ v - Σ p v| / l  <=  2^-9 Σ p |v| / l  <=  2^-9 max|v|  =  1.95e-3
// in the worst case (every rounding in the same direction). Scores, exponentials and f32 sums add
// a few 1e-6 and the output's own bf16 rounding is kBf16RelTol of its value; so 2e-3 absolute
// plus kBf16RelTol relative. Typical errors are far smaller (the roundings are independent), but
// the bound is what holds for every row. A missed key, a wrong mask or a wrong block shifts a row
// seeing n keys by about |v_key - out| / n (0.5 / n), which exceeds 2e-3 only for n below ~250:
// the rows at the start of every fresh prompt and each decode row over a short cache. So a second
// test makes every row sensitive: with K = 0 all scores are 0, every weight is exactly 1 (no bf16
// rounding of p), and out is the plain mean of V over the visible keys, exact up to f32 sums
// (relative 2^-24 per add, under 1e-5 here): tolerance 2e-5 + kBf16RelTol, against a shift of
// about 0.5 / 2100 = 2.4e-4 for one missed or extra key in the longest row. That test's reference
// is the running mean of V (exactly what the f64 softmax gives with zero scores), so it checks
// every row at O(kv_len) cost; the random tests check every row of sequences up to 256 tokens and
// a deterministic sample of the 2000-token one (checked_token), which keeps the f64 reference
// from dominating the run.
#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include "backend/cpu/reference_ops.h"
#include "core/half.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::download_bf16;
using testing::poison;
using testing::poisoned;
using testing::upload;

constexpr int32_t kNumKvHeads = 2;
constexpr int32_t kSpareBlocks = 3;   // blocks nobody owns: reading them would be a bug
constexpr int32_t kTablePadding = 2;  // -1 entries past each table's end
constexpr int32_t kOutPadding = 16;   // out rows are this much wider than the heads

struct SeqLens {
    int32_t q_len;
    int32_t kv_len;  // >= q_len; the cached prefix is kv_len - q_len
};

// A paged bf16 cache of random values (or zero keys), sequences whose blocks are scattered over
// it, and their query rows inside wider (fused qkv) rows.
struct PrefillFixture {
    PagedKvLayout layout;
    int32_t num_heads = 0;
    int64_t q_row_stride = 0;
    std::vector<int32_t> q_starts, q_lens, kv_lens;
    int32_t num_tokens = 0;
    std::vector<std::vector<int32_t>> tables;
    std::vector<int32_t> padded_tables;  // i32 [num_seqs, table_stride]
    int32_t table_stride = 0;
    std::vector<uint16_t> k_cache, v_cache;
    int64_t num_blocks = 0;
    std::vector<float> q;  // bf16 values [num_tokens, q_row_stride]

    int32_t num_seqs() const { return static_cast<int32_t>(q_lens.size()); }
    int64_t width() const { return int64_t{num_heads} * layout.head_dim; }
    int64_t out_row_stride() const { return width() + kOutPadding; }
};

struct FixtureOptions {
    int32_t block_size = 16;
    int32_t group = 1;
    int32_t head_dim = 128;
    bool zero_keys = false;  // every score 0: uniform weights
    uint32_t seed = 1;
};

PrefillFixture make_fixture(const std::vector<SeqLens>& seqs, const FixtureOptions& o) {
    PrefillFixture f;
    f.layout = {DType::kBF16, o.block_size, kNumKvHeads, o.head_dim};
    f.num_heads = kNumKvHeads * o.group;
    f.q_row_stride = f.width() + 2 * f.layout.entry_elems();
    f.num_blocks = kSpareBlocks;
    int32_t max_blocks = 0;
    for (const SeqLens& s : seqs) {
        f.q_starts.push_back(f.num_tokens);
        f.q_lens.push_back(s.q_len);
        f.kv_lens.push_back(s.kv_len);
        f.num_tokens += s.q_len;
        const int32_t n = (s.kv_len + o.block_size - 1) / o.block_size;
        f.num_blocks += n;
        max_blocks = std::max(max_blocks, n);
    }
    std::vector<int32_t> ids(f.num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(o.seed));
    f.table_stride = max_blocks + kTablePadding;
    f.padded_tables.assign(seqs.size() * f.table_stride, -1);
    size_t next = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        const int32_t n = (seqs[s].kv_len + o.block_size - 1) / o.block_size;
        f.tables.emplace_back(ids.begin() + next, ids.begin() + next + n);
        std::copy_n(ids.begin() + next, n, f.padded_tables.begin() + s * f.table_stride);
        next += n;
    }
    const int64_t cache_elems = f.num_blocks * f.layout.block_elems();
    f.k_cache = o.zero_keys ? std::vector<uint16_t>(cache_elems, 0)
                            : testing::to_bf16(testing::random_floats(cache_elems, o.seed + 1));
    f.v_cache = testing::to_bf16(testing::random_floats(cache_elems, o.seed + 2));
    f.q = testing::random_bf16_values(int64_t{std::max(f.num_tokens, 1)} * f.q_row_stride,
                                      o.seed + 3, -2, 2);
    return f;
}

constexpr int32_t kFullReferenceRows = 256;  // sequences up to this q_len: every row checked

// Whether query token `i` of a q_len-token sequence is checked against the f64 reference. A
// longer sequence's reference rows cost O(kv_len) each (10-36 s a test for the 2000-row one), so
// it checks its first kFullReferenceRows tokens (the short rows, where one wrong key moves the
// output most), its last 32 and every 7th in between: 7 is odd, so the sample meets every residue
// of the power-of-two warp, m-tile and CTA grids (8 to 128 tokens), i.e. every (warp, lane, row)
// position of the kernel, at every tile of keys. About 5x less reference work.
bool checked_token(int32_t i, int32_t q_len) {
    return q_len <= kFullReferenceRows || i < kFullReferenceRows || i >= q_len - 32 || i % 7 == 3;
}

// ReferenceOps::attention for the checked tokens only: token i of a sequence is the decode row of
// the same sequence cut at kv_len prefix + i + 1 (what the causal rule lets it see).
struct SampledReference {
    std::vector<int32_t> tokens;  // global rows of q and out, ascending
    std::vector<float> out;       // f32 [tokens.size(), width]
};

SampledReference reference(const PrefillFixture& f, float scale) {
    SampledReference r;
    std::vector<PagedSeq> seqs;
    for (int32_t s = 0; s < f.num_seqs(); ++s) {
        const int32_t prefix = f.kv_lens[s] - f.q_lens[s];
        for (int32_t i = 0; i < f.q_lens[s]; ++i) {
            if (!checked_token(i, f.q_lens[s])) continue;
            seqs.push_back({static_cast<int32_t>(r.tokens.size()), 1, prefix + i + 1, f.tables[s]});
            r.tokens.push_back(f.q_starts[s] + i);
        }
    }
    const int32_t num_rows = static_cast<int32_t>(r.tokens.size());
    std::vector<float> q(num_rows * f.width());
    for (int32_t t = 0; t < num_rows; ++t) {
        std::copy_n(f.q.begin() + r.tokens[t] * f.q_row_stride, f.width(),
                    q.begin() + t * f.width());
    }
    const PagedKvCache cache{f.layout, const_cast<uint16_t*>(f.k_cache.data()),
                             const_cast<uint16_t*>(f.v_cache.data()), f.num_blocks};
    r.out.resize(q.size());
    ReferenceOps().attention({DType::kF32, q.data(), num_rows, f.width()}, {&cache, seqs},
                             {.num_heads = f.num_heads,
                              .num_kv_heads = kNumKvHeads,
                              .head_dim = f.layout.head_dim,
                              .scale = scale},
                             {DType::kF32, r.out.data(), num_rows, f.width()});
    return r;
}

// The reference with K = 0, for every row: all scores are 0, so the softmax is uniform and
// token i's output is the mean of V over keys [0, prefix + i], kept as f64 running sums (the same
// value ReferenceOps computes, in O(kv_len) per sequence instead of O(kv_len^2)).
std::vector<float> uniform_reference(const PrefillFixture& f) {
    const int32_t group = f.num_heads / kNumKvHeads;
    const int32_t dim = f.layout.head_dim;
    const int32_t bs = f.layout.block_size;
    std::vector<float> out(f.num_tokens * f.width());
    std::vector<double> sum(kNumKvHeads * dim);
    for (int32_t s = 0; s < f.num_seqs(); ++s) {
        const int32_t prefix = f.kv_lens[s] - f.q_lens[s];
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int32_t key = 0; key < f.kv_lens[s]; ++key) {
            const int64_t slot = int64_t{f.tables[s][key / bs]} * bs + key % bs;
            for (int32_t e = 0; e < kNumKvHeads * dim; ++e)
                sum[e] += bf16_to_f32(f.v_cache[slot * kNumKvHeads * dim + e]);
            const int32_t i = key - prefix;  // the token whose last visible key this is
            if (i < 0) continue;
            float* row = out.data() + (f.q_starts[s] + i) * f.width();
            for (int32_t h = 0; h < f.num_heads; ++h) {
                for (int32_t d = 0; d < dim; ++d)
                    row[h * dim + d] = static_cast<float>(sum[(h / group) * dim + d] / (key + 1));
            }
        }
    }
    return out;
}

constexpr double kHangSeconds = 60.0;  // the longest launch here takes milliseconds

std::string kernel_name(PrefillKernel kernel) {
    switch (kernel) {
        case PrefillKernel::kAuto:
            return "auto";
        case PrefillKernel::kMmaSync:
            return "mma";
        case PrefillKernel::kWgmma:
            return "wgmma";
        case PrefillKernel::kWgmmaOverlap:
            return "wgmma_overlap";
        case PrefillKernel::kWgmmaTma:
            return "wgmma_tma";
    }
    return "unknown";
}

// Every kernel the tests run, the wgmma ones (from kWgmma on) only where they can run.
std::vector<PrefillKernel> kernels_that_run(int32_t head_dim) {
    std::vector<PrefillKernel> kernels;
    for (PrefillKernel k : {PrefillKernel::kMmaSync, PrefillKernel::kWgmma,
                            PrefillKernel::kWgmmaOverlap, PrefillKernel::kWgmmaTma}) {
        if (resolve_prefill_kernel({.head_dim = head_dim}, k).ok()) kernels.push_back(k);
    }
    return kernels;
}

// The fixture on the device, and launches over any contiguous range of its sequences.
class DeviceFixture {
  public:
    explicit DeviceFixture(const PrefillFixture& f)
        : f_(f),
          q_(testing::upload_bf16(f.q)),
          k_(upload(f.k_cache)),
          v_(upload(f.v_cache)),
          tables_(upload(f.padded_tables)),
          q_starts_(upload(f.q_starts)),
          q_lens_(upload(f.q_lens)),
          kv_lens_(upload(f.kv_lens)),
          out_(poisoned(2 * std::max(f.num_tokens, 1) * f.out_row_stride())) {}

    // The heads of every output row after one launch of `kernel` over sequences
    // [first, first + count); rows of other sequences stay NaN.
    std::vector<float> run(PrefillKernel kernel, int32_t first, int32_t count, int32_t max_q_len,
                           float scale) {
        poison(out_);
        const Status s = prefill_attention(
            {.q = q_.as<bf16>(),
             .k_blocks = k_.as<bf16>(),
             .v_blocks = v_.as<bf16>(),
             .block_tables = tables_.as<int32_t>() + int64_t{first} * f_.table_stride,
             .q_start = q_starts_.as<int32_t>() + first,
             .q_len = q_lens_.as<int32_t>() + first,
             .kv_len = kv_lens_.as<int32_t>() + first,
             .out = out_.as<bf16>(),
             .q_row_stride = f_.q_row_stride,
             .out_row_stride = f_.out_row_stride(),
             .block_table_stride = f_.table_stride,
             .num_seqs = count,
             .num_tokens = f_.num_tokens,
             .max_q_len = max_q_len,
             .num_heads = f_.num_heads,
             .num_kv_heads = kNumKvHeads,
             .head_dim = f_.layout.head_dim,
             .block_size = f_.layout.block_size,
             .num_blocks = f_.num_blocks,
             .scale = scale},
            kernel, nullptr);
        EXPECT_TRUE(s.ok()) << s.to_string();
        testing::sync_or_abort(kHangSeconds, "prefill_attention (" + kernel_name(kernel) + ")");
        const std::vector<float> rows = download_bf16(out_, f_.num_tokens * f_.out_row_stride());
        std::vector<float> heads(f_.num_tokens * f_.width());
        for (int32_t t = 0; t < f_.num_tokens; ++t) {
            std::copy_n(rows.begin() + t * f_.out_row_stride(), f_.width(),
                        heads.begin() + t * f_.width());
        }
        return heads;
    }

  private:
    const PrefillFixture& f_;
    DeviceBuffer q_, k_, v_, tables_, q_starts_, q_lens_, kv_lens_, out_;
};

std::vector<float> rows_of(const PrefillFixture& f, const std::vector<float>& out, int32_t seq) {
    const auto begin = out.begin() + f.q_starts[seq] * f.width();
    return {begin, begin + f.q_lens[seq] * f.width()};
}

// block size, group, head dim
using PrefillParam = std::tuple<int32_t, int32_t, int32_t>;

class PrefillAttentionTest : public ::testing::TestWithParam<PrefillParam> {
  protected:
    void check(const std::vector<SeqLens>& seqs, bool zero_keys, uint32_t seed) {
        const auto [block_size, group, head_dim] = GetParam();
        const PrefillFixture f = make_fixture(seqs, {.block_size = block_size,
                                                     .group = group,
                                                     .head_dim = head_dim,
                                                     .zero_keys = zero_keys,
                                                     .seed = seed});
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        const int32_t max_q_len = *std::max_element(f.q_lens.begin(), f.q_lens.end());
        DeviceFixture dev(f);
        const std::vector<float> want = zero_keys ? uniform_reference(f) : std::vector<float>{};
        const SampledReference sampled = zero_keys ? SampledReference{} : reference(f, scale);

        std::vector<float> first_wgmma;
        for (const PrefillKernel kernel : kernels_that_run(head_dim)) {
            SCOPED_TRACE("kernel " + kernel_name(kernel));
            const std::vector<float> got = dev.run(kernel, 0, f.num_seqs(), max_q_len, scale);
            if (zero_keys) {
                testing::expect_all_near(got, want, 2e-5f, testing::kBf16RelTol, "out");
            } else {
                std::vector<float> got_rows;
                for (int32_t t : sampled.tokens) {
                    got_rows.insert(got_rows.end(), got.begin() + t * f.width(),
                                    got.begin() + (t + 1) * f.width());
                }
                testing::expect_all_near(got_rows, sampled.out, 2e-3f, testing::kBf16RelTol, "out");
            }
            // A looser bound sizes a larger grid; the extra CTAs must do nothing.
            testing::expect_all_equal(dev.run(kernel, 0, f.num_seqs(), max_q_len + 100, scale), got,
                                      "max_q_len + 100 vs batch");
            for (int32_t s = 0; s < f.num_seqs(); ++s) {
                const std::vector<float> alone = dev.run(kernel, s, 1, f.q_lens[s], scale);
                testing::expect_all_equal(rows_of(f, alone, s), rows_of(f, got, s),
                                          "sequence " + std::to_string(s) + " alone");
            }
            if (kernel == PrefillKernel::kMmaSync) continue;
            if (first_wgmma.empty()) {
                first_wgmma = got;
            } else {
                testing::expect_all_equal(got, first_wgmma, "vs the wgmma kernel");
            }
        }
    }
};

// Fresh prompts, chunks over cached prefixes, decode rows, empty sequences, around the 64-row,
// 64-key and block edges.
const std::vector<SeqLens> kRaggedBatch = {{1, 1},   {17, 17},  {0, 0},   {0, 40},
                                           {1, 300}, {65, 300}, {64, 64}, {200, 263},
                                           {33, 33}, {1, 37},   {16, 80}, {130, 130}};

TEST_P(PrefillAttentionTest, RaggedChunkedBatch) {
    check(kRaggedBatch, /*zero_keys=*/false, 21);
}

TEST_P(PrefillAttentionTest, LongSequenceOverManyTiles) {
    check({{2000, 2000}}, /*zero_keys=*/false, 22);
}

TEST_P(PrefillAttentionTest, UniformWeightsSeeExactlyTheCausalKeys) {
    std::vector<SeqLens> seqs = kRaggedBatch;
    seqs.push_back({1500, 2100});  // a long chunk over a 600-entry prefix
    check(seqs, /*zero_keys=*/true, 23);
}

TEST_P(PrefillAttentionTest, AllSequencesEmpty) {
    check({{0, 0}, {0, 5}, {0, 0}}, /*zero_keys=*/false, 24);
}

INSTANTIATE_TEST_SUITE_P(
    Paged, PrefillAttentionTest,
    ::testing::Combine(::testing::Values(16, 32), ::testing::Values(1, 3, 4, 8),
                       ::testing::Values(64, 128)),
    testing::paged_attention_param_name<::testing::TestParamInfo<PrefillParam>>);

// The other block sizes: the wgmma kernel's producers look each row's (cp.async) or box's (TMA)
// block up by page within a 128-key tile (16 pages of 8 keys, 2 of 64, half of one of 256).
INSTANTIATE_TEST_SUITE_P(
    PagedBlockSizes, PrefillAttentionTest,
    ::testing::Combine(::testing::Values(8, 64, 256), ::testing::Values(3), ::testing::Values(128)),
    testing::paged_attention_param_name<::testing::TestParamInfo<PrefillParam>>);

// kAuto runs the TMA wgmma kernel exactly where it can run, and kMmaSync is always itself.
TEST(PrefillKernelChoice, AutoPicksWgmmaOnComputeCapability90) {
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, device), cudaSuccess);
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    for (int32_t head_dim : {64, 128}) {
        const Expected<PrefillKernel> chosen =
            resolve_prefill_kernel({.head_dim = head_dim}, PrefillKernel::kAuto);
        ASSERT_TRUE(chosen.ok()) << chosen.status().to_string();
        EXPECT_EQ(chosen.value(), sm90 ? PrefillKernel::kWgmmaTma : PrefillKernel::kMmaSync);
        const Expected<PrefillKernel> mma =
            resolve_prefill_kernel({.head_dim = head_dim}, PrefillKernel::kMmaSync);
        ASSERT_TRUE(mma.ok());
        EXPECT_EQ(mma.value(), PrefillKernel::kMmaSync);
        for (PrefillKernel k :
             {PrefillKernel::kWgmma, PrefillKernel::kWgmmaOverlap, PrefillKernel::kWgmmaTma}) {
            EXPECT_EQ(resolve_prefill_kernel({.head_dim = head_dim}, k).ok(), sm90);
        }
        // Past 2^31 cache slots TMA coordinates overflow: kAuto takes the cp.async kernel.
        const PrefillAttentionParams huge{
            .head_dim = head_dim, .block_size = 256, .num_blocks = int64_t{1} << 24};
        EXPECT_EQ(resolve_prefill_kernel(huge, PrefillKernel::kWgmmaTma).status().code(),
                  StatusCode::kUnsupported);
        EXPECT_EQ(resolve_prefill_kernel(huge, PrefillKernel::kAuto).value(),
                  sm90 ? PrefillKernel::kWgmmaOverlap : PrefillKernel::kMmaSync);
    }
}

// The two cheap references agree with each other (CPU only): with K = 0, the running mean of V
// equals ReferenceOps on the sampled decode rows, short and long sequences alike.
TEST(PrefillAttentionReference, UniformMeanMatchesReferenceOps) {
    std::vector<SeqLens> seqs = kRaggedBatch;
    seqs.push_back({400, 500});
    const PrefillFixture f =
        make_fixture(seqs, {.block_size = 16, .group = 4, .head_dim = 64, .zero_keys = true});
    const SampledReference sampled = reference(f, 0.125f);
    const std::vector<float> uniform = uniform_reference(f);
    std::vector<float> uniform_rows;
    for (int32_t t : sampled.tokens) {
        uniform_rows.insert(uniform_rows.end(), uniform.begin() + t * f.width(),
                            uniform.begin() + (t + 1) * f.width());
    }
    EXPECT_GT(sampled.tokens.size(), static_cast<size_t>(f.num_tokens - 400));
    testing::expect_all_near(uniform_rows, sampled.out, 1e-6f, 0.0f, "uniform vs ReferenceOps");
}

TEST(PrefillAttentionArgs, UnsupportedShapesAreStatuses) {
    const PrefillAttentionParams ok{.q_row_stride = 8 * 128,
                                    .out_row_stride = 8 * 128,
                                    .num_seqs = 1,
                                    .num_heads = 8,
                                    .num_kv_heads = 2,
                                    .head_dim = 128,
                                    .block_size = 16,
                                    .num_blocks = 4};
    PrefillAttentionParams p = ok;
    p.head_dim = 96;
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p = ok;
    p.num_heads = 32;  // group 16
    p.q_row_stride = p.out_row_stride = 32 * 128;
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p = ok;
    p.block_size = 24;
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p = ok;
    p.q_row_stride = 8 * 128 + 4;
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kInvalidArgument);
    p = ok;
    p.out_row_stride = 7 * 128;
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kInvalidArgument);
    p = ok;
    p.max_q_len = 5;
    p.num_blocks = 0;  // work, but no cache
    EXPECT_EQ(prefill_attention(p, nullptr).code(), StatusCode::kInvalidArgument);
    p = ok;
    p.num_seqs = 0;
    EXPECT_TRUE(prefill_attention(p, nullptr).ok());
    p = ok;
    p.max_q_len = 0;  // nothing to launch
    EXPECT_TRUE(prefill_attention(p, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
