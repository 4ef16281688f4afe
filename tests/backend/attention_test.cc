// CpuOps::attention against ReferenceOps over paged caches: block sizes, GQA ratios, head
// dims, cache dtypes, ragged batches (prefill chunks, decode rows, empty sequences), shuffled
// block tables, long contexts that split the KV range.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/kv_store.h"
#include "backend/cpu/reference_ops.h"
#include "backend_test_util.h"

namespace se {
namespace {

constexpr int32_t kNumKvHeads = 2;

struct SeqSpec {
    int32_t q_len = 0;
    int32_t kv_len = 0;
};

// A paged cache filled with random values, and sequences whose blocks are scattered over it.
struct KvFixture {
    PagedKvCache cache;
    std::vector<uint8_t> k_bytes;
    std::vector<uint8_t> v_bytes;
    std::vector<std::vector<int32_t>> tables;
    std::vector<PagedSeq> seqs;
    int32_t num_rows = 0;
};

KvFixture make_fixture(const std::vector<SeqSpec>& specs, const PagedKvLayout& layout,
                       uint32_t seed) {
    KvFixture f;
    int64_t num_blocks = 3;  // spare blocks nobody owns: reading them would be a bug
    for (const SeqSpec& s : specs)
        num_blocks += (s.kv_len + layout.block_size - 1) / layout.block_size;
    std::vector<int32_t> ids(num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
    const int64_t elems = num_blocks * layout.block_elems();
    const int64_t bytes = elems * dtype_block_bytes(layout.dtype);
    f.k_bytes.resize(bytes);
    f.v_bytes.resize(bytes);
    cpu::convert_from_f32(testing::random_floats(elems, seed + 1).data(), layout.dtype,
                          f.k_bytes.data(), elems);
    cpu::convert_from_f32(testing::random_floats(elems, seed + 2).data(), layout.dtype,
                          f.v_bytes.data(), elems);
    f.cache = {layout, f.k_bytes.data(), f.v_bytes.data(), num_blocks};
    size_t next = 0;
    for (const SeqSpec& s : specs) {
        const int32_t n = (s.kv_len + layout.block_size - 1) / layout.block_size;
        f.tables.emplace_back(ids.begin() + next, ids.begin() + next + n);
        next += n;
    }
    for (size_t i = 0; i < specs.size(); ++i) {
        f.seqs.push_back({f.num_rows, specs[i].q_len, specs[i].kv_len, f.tables[i]});
        f.num_rows += specs[i].q_len;
    }
    return f;
}

using AttentionParam = std::tuple<int32_t, int32_t, int32_t, DType>;  // block, group, dim, dtype

class AttentionTest : public ::testing::TestWithParam<AttentionParam> {
  protected:
    void check(const std::vector<SeqSpec>& specs, uint32_t seed) {
        const auto [block_size, group, head_dim, dtype] = GetParam();
        const PagedKvLayout layout{dtype, block_size, kNumKvHeads, head_dim};
        const KvFixture f = make_fixture(specs, layout, seed);
        const AttentionArgs args{.num_heads = kNumKvHeads * group,
                                 .num_kv_heads = kNumKvHeads,
                                 .head_dim = head_dim,
                                 .scale = 1.0f / std::sqrt(static_cast<float>(head_dim))};
        const int64_t width = int64_t{args.num_heads} * head_dim;
        const std::vector<float> q = testing::random_floats(f.num_rows * width, seed + 3, -2, 2);
        const PagedKvRead read{&f.cache, f.seqs};

        std::vector<float> want = testing::nan_filled(f.num_rows * width);
        ReferenceOps().attention(testing::f32_cview(q, f.num_rows, width), read, args,
                                 testing::f32_view(want, f.num_rows, width));
        for (int threads = 1; threads <= 2; ++threads) {
            CpuOps ops({.num_threads = threads});
            for (int call = 0; call < 2; ++call) {  // the second call reuses the scratch
                std::vector<float> got = testing::nan_filled(f.num_rows * width);
                ops.attention(testing::f32_cview(q, f.num_rows, width), read, args,
                              testing::f32_view(got, f.num_rows, width));
                testing::expect_all_near(got, want, 2e-6f, 2e-5f,
                                         "threads=" + std::to_string(threads));
            }
        }
    }
};

TEST_P(AttentionTest, RaggedBatchOfPrefillChunksDecodeRowsAndEmptySequences) {
    check({{37, 100},  // a prefill chunk after 63 cached entries
           {1, 77},    // decode
           {0, 0},     // empty
           {45, 45},   // a whole prompt
           {2, 0},     // no entries: zero rows
           {1, 1},     // first decode entry
           {0, 50},    // nothing to compute this step
           {5, 33}},
          11);
}

TEST_P(AttentionTest, LongDecodeSplitsTheKvRange) {
    check({{1, 1000}}, 12);
}

TEST_P(AttentionTest, ShortChunkOverLongContextSplitsTheKvRange) {
    check({{3, 700}, {1, 530}}, 13);
}

TEST_P(AttentionTest, PrefillWithManyTiles) {
    check({{100, 130}}, 14);
}

std::string param_name(const ::testing::TestParamInfo<AttentionParam>& info) {
    const auto [block_size, group, head_dim, dtype] = info.param;
    return "block" + std::to_string(block_size) + "_gqa" + std::to_string(group) + "_dim" +
           std::to_string(head_dim) + "_" + std::string(dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(
    Paged, AttentionTest,
    ::testing::Combine(::testing::Values(16, 32), ::testing::Values(1, 3, 4, 8),
                       ::testing::Values(64, 128),
                       ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
    param_name);

// Head dims that are not multiples of 8 and odd block sizes take the padded paths.
INSTANTIATE_TEST_SUITE_P(OddShapes, AttentionTest,
                         ::testing::Combine(::testing::Values(5, 16), ::testing::Values(2),
                                            ::testing::Values(36, 20),
                                            ::testing::Values(DType::kF32, DType::kF16)),
                         param_name);

}  // namespace
}  // namespace se
