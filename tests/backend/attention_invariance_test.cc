// Row invariance of CpuOps::attention (the contract of src/backend/cpu/attention.h): the output
// of the query at position p of a sequence has the same bits whether it is computed as a decode
// row (q_len 1), as any row of any prefill chunking, alone or in a step with other sequences,
// with 1 or 2 threads. The reference is the decode row alone on one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/kv_store.h"
#include "backend_test_util.h"

namespace se {
namespace {

constexpr int32_t kNumKvHeads = 2;
constexpr int32_t kChunkSizes[] = {1, 3, 16, 64};

// Rows [begin, end) of sequence `seq` in one step: they see entries [0, end).
struct Part {
    int32_t seq = 0;
    int32_t begin = 0;
    int32_t end = 0;
};

// Sequences of the given lengths in one paged cache (blocks shuffled), with a query per position.
class Sequences {
  public:
    Sequences(const std::vector<int32_t>& lengths, const PagedKvLayout& layout,
              const AttentionArgs& args, uint32_t seed)
        : lengths_(lengths), args_(args), width_(int64_t{args.num_heads} * args.head_dim) {
        int64_t num_blocks = 0;
        for (int32_t len : lengths) num_blocks += (len + layout.block_size - 1) / layout.block_size;
        std::vector<int32_t> ids(num_blocks);
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
        const int64_t elems = num_blocks * layout.block_elems();
        k_bytes_.resize(elems * dtype_block_bytes(layout.dtype));
        v_bytes_.resize(k_bytes_.size());
        cpu::convert_from_f32(testing::random_floats(elems, seed + 1).data(), layout.dtype,
                              k_bytes_.data(), elems);
        cpu::convert_from_f32(testing::random_floats(elems, seed + 2).data(), layout.dtype,
                              v_bytes_.data(), elems);
        cache_ = {layout, k_bytes_.data(), v_bytes_.data(), num_blocks};
        size_t next = 0;
        for (size_t s = 0; s < lengths.size(); ++s) {
            const int32_t n = (lengths[s] + layout.block_size - 1) / layout.block_size;
            tables_.emplace_back(ids.begin() + next, ids.begin() + next + n);
            next += n;
            queries_.push_back(
                testing::random_floats(lengths[s] * width_, seed + 10 + s, -2.0f, 2.0f));
        }
    }

    int32_t length(int32_t seq) const { return lengths_[seq]; }
    int64_t width() const { return width_; }

    // Outputs of one step holding `parts` in order: f32 [sum of part rows, width].
    std::vector<float> run(const std::vector<Part>& parts, CpuOps& ops) const {
        std::vector<PagedSeq> seqs;
        std::vector<float> q;
        int32_t rows = 0;
        for (const Part& p : parts) {
            seqs.push_back({rows, p.end - p.begin, p.end, tables_[p.seq]});
            const float* src = queries_[p.seq].data() + p.begin * width_;
            q.insert(q.end(), src, src + (p.end - p.begin) * width_);
            rows += p.end - p.begin;
        }
        std::vector<float> out = testing::nan_filled(rows * width_);
        ops.attention(testing::f32_cview(q, rows, width_), {&cache_, seqs}, args_,
                      testing::f32_view(out, rows, width_));
        return out;
    }

  private:
    std::vector<int32_t> lengths_;
    AttentionArgs args_;
    int64_t width_;
    std::vector<uint8_t> k_bytes_;
    std::vector<uint8_t> v_bytes_;
    PagedKvCache cache_;
    std::vector<std::vector<int32_t>> tables_;
    std::vector<std::vector<float>> queries_;
};

// Positions worth checking: the first ones, block, chunk and partition edges, the last ones.
std::vector<int32_t> probe_positions(int32_t length) {
    std::vector<int32_t> probes;
    for (int32_t p :
         {0,   1,   2,   15,  16,  17,  31,   32,   63,   64,   65,   100,        255,       256,
          257, 511, 512, 513, 767, 768, 1023, 1024, 1500, 2047, 2048, length - 2, length - 1}) {
        if (p >= 0 && p < length) probes.push_back(p);
    }
    std::sort(probes.begin(), probes.end());
    probes.erase(std::unique(probes.begin(), probes.end()), probes.end());
    return probes;
}

using Key = std::pair<int32_t, int32_t>;  // sequence, position

using InvarianceParam = std::tuple<int32_t, int32_t, int32_t, DType>;  // block, group, dim, dtype

class AttentionInvarianceTest : public ::testing::TestWithParam<InvarianceParam> {
  protected:
    void build(const std::vector<int32_t>& lengths) {
        const auto [block_size, group, head_dim, dtype] = GetParam();
        args_ = {.num_heads = kNumKvHeads * group,
                 .num_kv_heads = kNumKvHeads,
                 .head_dim = head_dim,
                 .scale = 1.0f / std::sqrt(static_cast<float>(head_dim))};
        seqs_.emplace(lengths, PagedKvLayout{dtype, block_size, kNumKvHeads, head_dim}, args_,
                      static_cast<uint32_t>(block_size * 1000 + group * 10 + head_dim));
        CpuOps one({.num_threads = 1});
        for (int32_t s = 0; s < static_cast<int32_t>(lengths.size()); ++s) {
            for (int32_t p : probe_positions(lengths[s]))
                reference_[{s, p}] = seqs_->run({{s, p, p + 1}}, one);
        }
    }

    // Every probed row among `parts` (run as one step) against the decode row alone.
    void check_step(const std::vector<Part>& parts, CpuOps& ops, const std::string& what) {
        const std::vector<float> out = seqs_->run(parts, ops);
        const int64_t width = seqs_->width();
        int64_t row = 0;
        for (const Part& part : parts) {
            for (int32_t p = part.begin; p < part.end; ++p, ++row) {
                const auto it = reference_.find({part.seq, p});
                if (it == reference_.end()) continue;
                if (std::memcmp(out.data() + row * width, it->second.data(),
                                width * sizeof(float)) != 0) {
                    ADD_FAILURE() << what << ", " << ops.num_threads() << " threads: sequence "
                                  << part.seq << " position " << p << " (rows [" << part.begin
                                  << ", " << part.end << ") of the step) differs from decode";
                    return;
                }
            }
        }
    }

    // Each probe inside its chunk of every chunking, the sequence on its own in the step.
    void check_chunkings(int32_t seq, CpuOps& ops) {
        const int32_t length = seqs_->length(seq);
        check_step({{seq, 0, length}}, ops, "whole prompt");
        for (int32_t size : kChunkSizes) {
            int32_t last_begin = -1;
            for (int32_t p : probe_positions(length)) {
                const int32_t begin = p - p % size;
                if (begin == last_begin) continue;  // already checked with an earlier probe
                last_begin = begin;
                check_step({{seq, begin, std::min(length, begin + size)}}, ops,
                           "chunk of " + std::to_string(size));
            }
        }
    }

    AttentionArgs args_;
    std::optional<Sequences> seqs_;
    std::map<Key, std::vector<float>> reference_;
};

TEST_P(AttentionInvarianceTest, DecodeRowsEqualEveryPrefillChunking) {
    build({700, 130, 37});
    for (int threads = 1; threads <= 2; ++threads) {
        CpuOps ops({.num_threads = threads});
        for (int32_t s = 0; s < 3; ++s) {
            for (int32_t p : probe_positions(seqs_->length(s)))
                check_step({{s, p, p + 1}}, ops, "decode");
            check_chunkings(s, ops);
        }
    }
}

TEST_P(AttentionInvarianceTest, RowsEqualDecodeInsideMixedSteps) {
    build({700, 130, 37});
    for (int threads = 1; threads <= 2; ++threads) {
        CpuOps ops({.num_threads = threads});
        for (int32_t p : probe_positions(700)) {
            const int32_t p1 = p % 130;
            const int32_t begin = p - p % 16;
            // A prefill chunk, a decode row and a whole prompt of other lengths, in both orders.
            check_step({{0, begin, std::min(700, begin + 16)}, {1, p1, p1 + 1}, {2, 0, 37}}, ops,
                       "mixed step");
            check_step({{2, 0, 37}, {1, 0, p1 + 1}, {0, p, p + 1}}, ops, "mixed step");
        }
        // Many decode rows in one step: no tile splits its KV range.
        std::vector<Part> decodes;
        for (int32_t p : probe_positions(700)) decodes.push_back({0, p, p + 1});
        check_step(decodes, ops, "many decode rows");
    }
}

std::string param_name(const ::testing::TestParamInfo<InvarianceParam>& info) {
    const auto [block_size, group, head_dim, dtype] = info.param;
    return "block" + std::to_string(block_size) + "_gqa" + std::to_string(group) + "_dim" +
           std::to_string(head_dim) + "_" + std::string(dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(Paged, AttentionInvarianceTest,
                         ::testing::Combine(::testing::Values(16, 32), ::testing::Values(1, 3, 4),
                                            ::testing::Values(64, 128),
                                            ::testing::Values(DType::kF32, DType::kF16,
                                                              DType::kBF16)),
                         param_name);

// Head dims that are not multiples of 8 and odd block sizes take the padded paths.
INSTANTIATE_TEST_SUITE_P(OddShapes, AttentionInvarianceTest,
                         ::testing::Combine(::testing::Values(5), ::testing::Values(2),
                                            ::testing::Values(36), ::testing::Values(DType::kF32)),
                         param_name);

// Contexts of a few thousand entries: many partitions, split decode rows.
class LongAttentionInvarianceTest : public AttentionInvarianceTest {};

TEST_P(LongAttentionInvarianceTest, DecodeRowsEqualPrefillChunks) {
    build({2100});
    for (int threads = 1; threads <= 2; ++threads) {
        CpuOps ops({.num_threads = threads});
        for (int32_t p : probe_positions(2100)) check_step({{0, p, p + 1}}, ops, "decode");
        check_chunkings(0, ops);
    }
}

INSTANTIATE_TEST_SUITE_P(SmolLm2Like, LongAttentionInvarianceTest,
                         ::testing::Values(InvarianceParam{16, 3, 64, DType::kF16},
                                           InvarianceParam{32, 4, 128, DType::kBF16}),
                         param_name);

}  // namespace
}  // namespace se
