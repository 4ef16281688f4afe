// cuda::decode_attention against ReferenceOps::attention (f64, full softmax) over paged bf16
// caches with scattered block tables: block sizes 8 to 256 (128 and 256 are longer than the
// shortest partitions, which then start inside a block), GQA ratios 1, 3, 4, 8, head dims 64 and
// 128, ragged batches with empty sequences, lengths off the block, tile (16) and partition grids,
// long sequences split over many partitions, and batches large enough that the partition rule
// (decode_partition.h) picks its longest partitions (2048 keys). Every case also runs at every
// other partition size.
//
// A batched launch must also equal, bit for bit, the same sequences launched one by one (the
// FlashInfer check: no sequence sees another's data), a launch with a much looser max_kv_len (the
// larger grid of a CUDA graph's bucket: its extra partitions must do nothing), and the same launch
// merged by the second kernel instead of the last block (both merges add in one order). Outputs
// are bit-reproducible only between launches that split a sequence into the same partitions, so
// each of these passes the batch's partition size. After every launch the merge counters must be
// zero again, as the next launch (or graph replay) needs them. The balanced split
// (decode_balance.h) runs every case too, at block counts from one block for the whole batch to
// more blocks than tiles, under each merge (the last block's, where the partials fit, and the
// second kernel's must agree bit for bit); its outputs depend on the whole batch's lengths, so
// only a looser bound and the merge must leave its bits alone.
//
// Tolerance: one bf16 rounding of the output (kBf16RelTol) plus 2e-5 absolute. Inputs are bf16
// values in [-1, 1] (K, V) and [-2, 2] (q); the kernel's f32 scores, exponentials and weighted
// sums of up to 4000 keys differ from f64 by a few 1e-6 of the output's scale (V's), so 2e-5
// leaves a margin of about 5 while a wrong merge, a wrong block or a missed key moves outputs by
// 1e-3 or more.
#include "backend/cuda/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/reference_ops.h"
#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_whole_rule.h"
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

// A paged bf16 cache of random values, sequences whose blocks are scattered over it, and their
// query rows inside wider (fused qkv) rows.
struct DecodeFixture {
    PagedKvLayout layout;
    int32_t num_heads = 0;
    int64_t q_row_stride = 0;
    std::vector<int32_t> kv_lens;
    std::vector<std::vector<int32_t>> tables;
    std::vector<int32_t> padded_tables;  // i32 [num_seqs, table_stride]
    int32_t table_stride = 0;
    std::vector<uint16_t> k_cache;
    std::vector<uint16_t> v_cache;
    int64_t num_blocks = 0;
    std::vector<float> q;  // bf16 values [num_seqs, q_row_stride]

    int32_t num_seqs() const { return static_cast<int32_t>(kv_lens.size()); }
    int64_t width() const { return int64_t{num_heads} * layout.head_dim; }
};

DecodeFixture make_fixture(const std::vector<int32_t>& kv_lens, int32_t block_size, int32_t group,
                           int32_t head_dim, uint32_t seed) {
    DecodeFixture f;
    f.layout = {DType::kBF16, block_size, kNumKvHeads, head_dim};
    f.num_heads = kNumKvHeads * group;
    f.q_row_stride = f.width() + 2 * f.layout.entry_elems();
    f.kv_lens = kv_lens;
    f.num_blocks = kSpareBlocks;
    int32_t max_blocks = 0;
    for (int32_t len : kv_lens) {
        const int32_t n = (len + block_size - 1) / block_size;
        f.num_blocks += n;
        max_blocks = std::max(max_blocks, n);
    }
    std::vector<int32_t> ids(f.num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
    f.table_stride = max_blocks + kTablePadding;
    f.padded_tables.assign(kv_lens.size() * f.table_stride, -1);
    size_t next = 0;
    for (size_t s = 0; s < kv_lens.size(); ++s) {
        const int32_t n = (kv_lens[s] + block_size - 1) / block_size;
        f.tables.emplace_back(ids.begin() + next, ids.begin() + next + n);
        std::copy_n(ids.begin() + next, n, f.padded_tables.begin() + s * f.table_stride);
        next += n;
    }
    const int64_t cache_elems = f.num_blocks * f.layout.block_elems();
    f.k_cache = testing::to_bf16(testing::random_floats(cache_elems, seed + 1));
    f.v_cache = testing::to_bf16(testing::random_floats(cache_elems, seed + 2));
    f.q = testing::random_bf16_values(kv_lens.size() * f.q_row_stride, seed + 3, -2, 2);
    return f;
}

std::vector<float> reference(const DecodeFixture& f, float scale) {
    std::vector<float> q(f.num_seqs() * f.width());
    for (int32_t s = 0; s < f.num_seqs(); ++s)
        std::copy_n(f.q.begin() + s * f.q_row_stride, f.width(), q.begin() + s * f.width());
    const PagedKvCache cache{f.layout, const_cast<uint16_t*>(f.k_cache.data()),
                             const_cast<uint16_t*>(f.v_cache.data()), f.num_blocks};
    std::vector<PagedSeq> seqs;
    for (int32_t s = 0; s < f.num_seqs(); ++s) seqs.push_back({s, 1, f.kv_lens[s], f.tables[s]});
    std::vector<float> out(q.size());
    ReferenceOps().attention({DType::kF32, q.data(), f.num_seqs(), f.width()}, {&cache, seqs},
                             {.num_heads = f.num_heads,
                              .num_kv_heads = kNumKvHeads,
                              .head_dim = f.layout.head_dim,
                              .scale = scale},
                             {DType::kF32, out.data(), f.num_seqs(), f.width()});
    return out;
}

// Which sequences one launch takes, and how it splits and merges them.
struct Launch {
    int32_t first = 0;  // sequences [first, first + count) of the fixture
    int32_t count = 0;
    int32_t max_kv_len = 0;
    int32_t partition = 0;
    DecodeMerge merge = DecodeMerge::kAuto;
    int32_t balanced_blocks = 0;  // > 0: the balanced split, with this many blocks per KV head
    bool whole = false;           // one block per (sequence, KV head), no workspace
    bool two_per_sm = false;      // ... two blocks an SM, not one (with whole)
};

// The fixture on the device, and launches over any contiguous range of its sequences.
class DeviceFixture {
  public:
    explicit DeviceFixture(const DecodeFixture& f)
        : f_(f),
          q_(testing::upload_bf16(f.q)),
          k_(upload(f.k_cache)),
          v_(upload(f.v_cache)),
          tables_(upload(f.padded_tables)),
          lens_(upload(f.kv_lens)),
          out_(poisoned(2 * f.num_seqs() * f.width())),
          counters_(upload(std::vector<uint32_t>(std::max(f.num_seqs(), 1) * kNumKvHeads, 0u))) {}

    // Output rows of the launch's sequences, into a NaN-poisoned output with a NaN-poisoned
    // workspace.
    std::vector<float> run(const Launch& l, float scale) {
        const int64_t floats =
            l.whole ? 0
            : l.balanced_blocks > 0
                ? decode_balanced_workspace_floats(f_.num_heads, f_.layout.head_dim,
                                                   l.balanced_blocks)
                : decode_attention_workspace_floats(l.count, f_.num_heads, f_.layout.head_dim,
                                                    l.max_kv_len, l.partition);
        // At least one float: whole sequences need none, and a null buffer poisons nothing.
        const DeviceBuffer workspace = poisoned(sizeof(float) * std::max<int64_t>(floats, 1));
        poison(out_);
        const Status s = decode_attention(
            {.q = q_.as<bf16>() + l.first * f_.q_row_stride,
             .k_blocks = k_.as<bf16>(),
             .v_blocks = v_.as<bf16>(),
             .block_tables = tables_.as<int32_t>() + int64_t{l.first} * f_.table_stride,
             .kv_lens = lens_.as<int32_t>() + l.first,
             .out = out_.as<bf16>(),
             .workspace = workspace.as<float>(),
             .merge_counters = counters_.as<uint32_t>(),
             .q_row_stride = f_.q_row_stride,
             .block_table_stride = f_.table_stride,
             .max_kv_len = l.max_kv_len,
             .num_seqs = l.count,
             .num_heads = f_.num_heads,
             .num_kv_heads = kNumKvHeads,
             .head_dim = f_.layout.head_dim,
             .block_size = f_.layout.block_size,
             .partition = l.partition,
             .merge = l.merge,
             .balanced_blocks = l.balanced_blocks,
             .whole_sequences = l.whole,
             .whole_two_per_sm = l.two_per_sm,
             .scale = scale},
            nullptr);
        EXPECT_TRUE(s.ok()) << s.to_string();
        std::vector<float> out = download_bf16(out_, l.count * f_.width());
        const std::vector<uint32_t> counters =
            testing::download<uint32_t>(counters_, counters_.size_bytes() / sizeof(uint32_t));
        EXPECT_EQ(std::count(counters.begin(), counters.end(), 0u),
                  static_cast<std::ptrdiff_t>(counters.size()))
            << "merge counters left non-zero";
        return out;
    }

  private:
    const DecodeFixture& f_;
    DeviceBuffer q_, k_, v_, tables_, lens_, out_, counters_;
};

using DecodeParam = std::tuple<int32_t, int32_t, int32_t>;  // block size, group, head dim

class DecodeAttentionTest : public ::testing::TestWithParam<DecodeParam> {
  protected:
    // want_partition: the partition size the rule must give the batch (0: any).
    void check(const std::vector<int32_t>& kv_lens, uint32_t seed, int32_t want_partition = 0) {
        const auto [block_size, group, head_dim] = GetParam();
        const DecodeFixture f = make_fixture(kv_lens, block_size, group, head_dim, seed);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        const int32_t max_kv_len = *std::max_element(kv_lens.begin(), kv_lens.end());
        const int32_t partition = decode_partition_size(f.num_seqs(), max_kv_len);
        if (want_partition != 0) {
            ASSERT_EQ(partition, want_partition);
        }
        const std::vector<float> want = reference(f, scale);
        DeviceFixture dev(f);

        const Launch batch{.count = f.num_seqs(), .max_kv_len = max_kv_len, .partition = partition};
        const std::vector<float> got = dev.run(batch, scale);
        testing::expect_all_near(got, want, 2e-5f, testing::kBf16RelTol, "out");
        for (DecodeMerge merge :
             {DecodeMerge::kLastBlock, DecodeMerge::kSecondKernel, DecodeMerge::kCluster}) {
            Launch forced = batch;
            forced.merge = merge;
            testing::expect_all_equal(dev.run(forced, scale), got, "forced merge vs auto");
        }
        // A graph step's bound: a far larger grid (whose partials may then be too many for one
        // block or one cluster, merged by the second kernel), under each merge.
        for (DecodeMerge merge :
             {DecodeMerge::kAuto, DecodeMerge::kLastBlock, DecodeMerge::kCluster}) {
            Launch loose = batch;
            loose.max_kv_len = 16 * max_kv_len + 300;
            loose.merge = merge;
            testing::expect_all_equal(dev.run(loose, scale), got, "max_kv_len 16x + 300");
        }
        for (int32_t s = 0; s < f.num_seqs(); ++s) {
            const Launch alone{
                .first = s, .count = 1, .max_kv_len = kv_lens[s], .partition = partition};
            const std::vector<float> row(got.begin() + s * f.width(),
                                         got.begin() + (s + 1) * f.width());
            testing::expect_all_equal(dev.run(alone, scale), row,
                                      "sequence " + std::to_string(s) + " alone");
        }
        // Every other size: partitions shorter than a block, one tile per warp, many partials.
        for (int32_t size = kDecodeMinPartition; size <= kDecodeMaxPartition; size *= 2) {
            if (size == partition) continue;
            const std::string what = "partition " + std::to_string(size);
            Launch other = batch;
            other.partition = size;
            other.merge = DecodeMerge::kLastBlock;
            const std::vector<float> last_block = dev.run(other, scale);
            testing::expect_all_near(last_block, want, 2e-5f, testing::kBf16RelTol, what);
            other.merge = DecodeMerge::kSecondKernel;
            testing::expect_all_equal(dev.run(other, scale), last_block, what + ", second kernel");
            other.merge = DecodeMerge::kCluster;  // a cluster where 2 .. 16 partitions
            testing::expect_all_equal(dev.run(other, scale), last_block, what + ", cluster");
        }
        check_balanced(f, dev, want, scale, max_kv_len);
        check_whole(f, dev, want, scale, max_kv_len);
    }

    // Whole sequences (decode_whole_rule.h), one block an SM and two an SM: one block per
    // (sequence, KV head) near the reference; a graph step's looser bound, each sequence alone
    // and the other spacing give the same bits (a block's work depends on none of them).
    void check_whole(const DecodeFixture& f, DeviceFixture& dev, const std::vector<float>& want,
                     float scale, int32_t max_kv_len) {
        std::vector<float> first;
        for (const bool two_per_sm : {false, true}) {
            const std::string what =
                two_per_sm ? "whole sequences, two an SM" : "whole sequences, one an SM";
            const Launch whole{.count = f.num_seqs(),
                               .max_kv_len = max_kv_len,
                               .whole = true,
                               .two_per_sm = two_per_sm};
            const std::vector<float> got = dev.run(whole, scale);
            testing::expect_all_near(got, want, 2e-5f, testing::kBf16RelTol, what);
            if (two_per_sm) {
                testing::expect_all_equal(got, first, what + " vs one an SM");
            } else {
                first = got;
            }
            Launch loose = whole;
            loose.max_kv_len = std::min(16 * max_kv_len + 300, kDecodeWholeMaxLen);
            testing::expect_all_equal(dev.run(loose, scale), got, what + ", looser bound");
            for (int32_t s = 0; s < f.num_seqs(); s += std::max(1, f.num_seqs() / 8)) {
                Launch alone = whole;
                alone.first = s;
                alone.count = 1;
                alone.max_kv_len = f.kv_lens[static_cast<size_t>(s)];
                const std::vector<float> row(got.begin() + s * f.width(),
                                             got.begin() + (s + 1) * f.width());
                testing::expect_all_equal(dev.run(alone, scale), row,
                                          what + ", sequence " + std::to_string(s) + " alone");
            }
        }
    }

    // The balanced split (decode_balance.h) at many block counts: one block for the batch, ranges
    // that start and end inside sequences and cross several, the rule's count on this GPU, and more
    // blocks than tiles (empty ranges); then a graph step's looser bound at one count, which must
    // not change a bit (the ranges follow the lengths, not the bound).
    void check_balanced(const DecodeFixture& f, DeviceFixture& dev, const std::vector<float>& want,
                        float scale, int32_t max_kv_len) {
        int64_t tiles = 0;
        for (int32_t len : f.kv_lens) tiles += decode_tiles(len);
        std::vector<int32_t> counts = {1, 2, 3, 7, 33, 100, static_cast<int32_t>(tiles) + 5};
        const int32_t rule =
            decode_balanced_blocks(f.num_seqs(), max_kv_len, kNumKvHeads, testing::num_sms());
        if (rule > 0) counts.push_back(rule);
        const Launch batch{.count = f.num_seqs(), .max_kv_len = max_kv_len};
        int32_t ran = 0;
        for (int32_t blocks : counts) {
            if (!decode_balanced_fits(f.num_seqs(), max_kv_len, blocks)) continue;
            Launch balanced = batch;
            balanced.balanced_blocks = blocks;
            const std::vector<float> got = dev.run(balanced, scale);
            const std::string what = "balanced, " + std::to_string(blocks) + " blocks";
            testing::expect_all_near(got, want, 2e-5f, testing::kBf16RelTol, what);
            ++ran;
            // The last block's merge and the second kernel's add in one order.
            for (DecodeMerge merge : {DecodeMerge::kLastBlock, DecodeMerge::kSecondKernel}) {
                Launch forced = balanced;
                forced.merge = merge;
                testing::expect_all_equal(dev.run(forced, scale), got, what + ", forced merge");
            }
            Launch loose = balanced;
            loose.max_kv_len = 16 * max_kv_len + 300;
            if (blocks >= 33 && decode_balanced_fits(f.num_seqs(), loose.max_kv_len, blocks)) {
                testing::expect_all_equal(
                    dev.run(loose, scale), got,
                    "balanced, " + std::to_string(blocks) + " blocks, max_kv_len 16x + 300");
            }
        }
        EXPECT_GE(ran, 3) << "block counts that fit the batch";
    }
};

TEST_P(DecodeAttentionTest, RaggedBatchWithEmptySequences) {
    // Around block (16, 32) and partition (256) edges, and several partitions.
    check({1, 17, 0, 255, 256, 257, 600, 33, 0, 1100}, 11, 512);
}

TEST_P(DecodeAttentionTest, LongSequenceOverManyPartitions) {
    check({4000}, 12, 128);
}

TEST_P(DecodeAttentionTest, OneSequenceOf1100TakesPartitionsOf64) {
    // The engine's batch-1 decode step: 18 partitions, merged by the last block.
    check({1100}, 16, 64);
}

TEST_P(DecodeAttentionTest, LengthsAroundTilesAndShortPartitions) {
    check({0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129}, 17, 64);
}

TEST_P(DecodeAttentionTest, AllSequencesEmpty) {
    check({0, 0, 0}, 13);
}

// lengths[i % size] for i < num_seqs: a batch of short sequences with a few long ones.
std::vector<int32_t> cycled(const std::vector<int32_t>& lengths, int32_t num_seqs) {
    std::vector<int32_t> out;
    for (int32_t i = 0; i < num_seqs; ++i) out.push_back(lengths[i % lengths.size()]);
    return out;
}

TEST_P(DecodeAttentionTest, BatchOf64ShortSequences) {
    // One partition each at the rule's size (written directly); the tile edges; merges at the
    // other sizes, around the 512 edge among them.
    check(cycled({0, 1, 15, 16, 17, 48, 511, 512, 513, 600, 3, 90}, 64), 14,
          kDecodeRuleMaxPartition);
}

TEST_P(DecodeAttentionTest, BatchOf128TakesTheLongestPartitions) {
    // The 1024 edge at the other sizes.
    check(cycled({1, 1023, 0, 1024, 7, 1025, 1100, 64, 200, 31}, 128), 15, kDecodeRuleMaxPartition);
}

INSTANTIATE_TEST_SUITE_P(
    Paged, DecodeAttentionTest,
    ::testing::Combine(::testing::Values(8, 16, 32, 128, 256), ::testing::Values(1, 3, 4, 8),
                       ::testing::Values(64, 128)),
    testing::paged_attention_param_name<::testing::TestParamInfo<DecodeParam>>);

// Which merge the launches take (decode_attention_merge): the tests above compare the merges, so
// they must each run somewhere. The benchmark's shapes (8 KV heads of 4 query heads), and groups
// of 8, whose merging block takes 4 heads at a time.
TEST(DecodeAttentionMerge, SecondKernelUnlessTheLastBlockIsAskedAndItsPartialsFit) {
    auto merge = [](int32_t num_seqs, int32_t max_kv_len, int32_t num_heads, int32_t head_dim,
                    DecodeMerge asked) {
        return decode_attention_merge({.max_kv_len = max_kv_len,
                                       .num_seqs = num_seqs,
                                       .num_heads = num_heads,
                                       .num_kv_heads = 8,
                                       .head_dim = head_dim,
                                       .partition = decode_partition_size(num_seqs, max_kv_len),
                                       .merge = asked});
    };
    constexpr DecodeMerge kAuto = DecodeMerge::kAuto;
    constexpr DecodeMerge kLast = DecodeMerge::kLastBlock;
    constexpr DecodeMerge kSecond = DecodeMerge::kSecondKernel;
    // kAuto is the engine's choice, the second kernel (decode_attention.h says why).
    EXPECT_EQ(merge(1, 1100, 32, 128, kAuto), kSecond);
    EXPECT_EQ(merge(16, 32768, 32, 128, kAuto), kSecond);
    EXPECT_EQ(merge(1, 1100, 32, 128, kLast), kLast);      // 18 x 4 rows of 528 B fit
    EXPECT_EQ(merge(16, 32768, 32, 128, kLast), kLast);    // ... whose 16 x 4 rows fit
    EXPECT_EQ(merge(1, 131072, 32, 128, kLast), kSecond);  // 64 x 4 rows (135 KB) do not
    EXPECT_EQ(merge(1, 32768, 64, 128, kLast), kLast);     // 2 rounds of 32 x 4 rows
    EXPECT_EQ(merge(1, 65536, 32, 64, kLast), kLast);      // 32 x 4 rows of 272 B fit 48 KB
    EXPECT_EQ(merge(1, 131072, 32, 64, kLast), kSecond);   // 64 x 4 do not
    EXPECT_EQ(merge(1, 1100, 32, 128, kSecond), kSecond);
}

// kCluster where the launch has 2 .. kDecodeMaxClusterParts partitions, else the second kernel;
// the balanced split and whole sequences take it as kAuto.
TEST(DecodeAttentionMerge, ClusterWhereTheLaunchHasAtMostSixteenPartitions) {
    auto merge = [](int32_t max_kv_len, int32_t partition) {
        return decode_attention_merge({.max_kv_len = max_kv_len,
                                       .num_seqs = 1,
                                       .num_heads = 32,
                                       .num_kv_heads = 8,
                                       .head_dim = 128,
                                       .partition = partition,
                                       .merge = DecodeMerge::kCluster});
    };
    EXPECT_EQ(merge(1152, 128), DecodeMerge::kCluster);       // 9 partitions
    EXPECT_EQ(merge(2048, 128), DecodeMerge::kCluster);       // 16
    EXPECT_EQ(merge(2049, 128), DecodeMerge::kSecondKernel);  // 17
    EXPECT_EQ(merge(1152, 64), DecodeMerge::kSecondKernel);   // 18
    EXPECT_EQ(merge(129, 128), DecodeMerge::kCluster);        // 2
    EXPECT_EQ(merge(128, 128), DecodeMerge::kSecondKernel);   // 1: nothing to merge
    EXPECT_EQ(decode_attention_merge({.max_kv_len = 1152,
                                      .num_seqs = 1,
                                      .num_heads = 32,
                                      .num_kv_heads = 8,
                                      .head_dim = 128,
                                      .merge = DecodeMerge::kCluster,
                                      .whole_sequences = true}),
              DecodeMerge::kAuto);
}

TEST(DecodeAttentionArgs, UnsupportedShapesAreStatuses) {
    const DecodeAttentionParams ok{.q_row_stride = 8 * 128,
                                   .num_seqs = 1,
                                   .num_heads = 8,
                                   .num_kv_heads = 2,
                                   .head_dim = 128,
                                   .block_size = 16,
                                   .partition = 64};
    DecodeAttentionParams p = ok;
    p.head_dim = 96;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p = ok;
    p.num_heads = 32;  // group 16
    p.q_row_stride = 32 * 128;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p = ok;
    p.block_size = 24;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p.block_size = 512;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    for (int32_t partition : {0, 32, 96, 4096}) {
        p = ok;
        p.partition = partition;
        testing::expect_invalid_argument(decode_attention(p, nullptr), "partition");
    }
    // 16 partitions merged by the last block need counters.
    p = ok;
    p.max_kv_len = 1000;
    p.merge = DecodeMerge::kLastBlock;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "merge_counters");
    // The balanced split: ranges longer than a block's table, counts out of range, too many
    // sequences.
    p = ok;
    p.max_kv_len = 2 * kDecodeBalancedMaxTiles * kDecodeTileKeys;
    p.balanced_blocks = 1;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "balanced_blocks 1");
    p.balanced_blocks = -1;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "balanced_blocks -1");
    p.balanced_blocks = 70000;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "balanced_blocks 70000");
    p = ok;
    p.num_seqs = kDecodeBalancedMaxSeqs + 1;
    p.balanced_blocks = 1024;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    // A negative bound on the lengths (whole sequences would read that many keys).
    p = ok;
    p.max_kv_len = -1;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "max_kv_len -1");
    p.whole_sequences = true;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "max_kv_len -1");
    // Whole sequences: longer than a block's table, or with the balanced split.
    p = ok;
    p.whole_sequences = true;
    p.max_kv_len = kDecodeWholeMaxLen + 1;
    EXPECT_EQ(decode_attention(p, nullptr).code(), StatusCode::kUnsupported);
    p.max_kv_len = 1000;
    p.balanced_blocks = 4;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "whole_sequences");
    // Two blocks an SM is a kind of whole-sequence launch, nothing without one.
    p = ok;
    p.whole_two_per_sm = true;
    testing::expect_invalid_argument(decode_attention(p, nullptr), "whole_two_per_sm");
    p = ok;
    p.num_seqs = 0;
    EXPECT_TRUE(decode_attention(p, nullptr).ok());
}

}  // namespace
}  // namespace se::cuda
