// cuda::gemv with GemvEpilogue::kRopeStore (a decode step's q, k and v projections, RoPE and the
// KV store in one launch) against the unfused path it replaces: the same launch with kStore into
// bf16 q, k and v, then qk_norm_rope without norms and with its store. The fused launch must give
// the same bits: every output feature's products are summed in the same order whichever rows
// share its tile, the two sums of a pair are rounded to bf16 as the projection stores them, and
// the rotation is the same function (rope_pair.cuh). The unfused path is checked against f64 and
// HF-style references by gemv_test.cc and qk_norm_rope_test.cc.
//
// At one row both paths also run with x's 1 / rms pending (GemvRowScale): the fused launch must
// scale every sum before its rounding exactly as kStore does.
//
// Compared: q's whole output buffer (rows past m and columns past n are a poisoned canary), both
// whole caches (they start as random bf16 values: only the rows' slots change, and slots outside
// the cache, -1 and num_slots, write nothing), and the k and v storage, which the fused launch
// never writes (poison).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/gemv.h"
#include "backend/cuda/qk_norm_rope.h"
#include "cuda_test_util.h"
#include "rope_tables.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::poisoned;
using testing::upload;
using testing::upload_bf16;

constexpr int64_t kNumSlots = 40;

struct Shape {
    int32_t q_heads = 0;
    int32_t kv_heads = 0;
    int32_t head_dim = 0;
    int64_t hidden = 0;  // k of the GEMV
    RopeStyle style = RopeStyle::kNeox;
};

struct Problem {
    Problem(int32_t m_in, const Shape& s) : m(m_in), shape(s) {
        const auto seed = static_cast<uint32_t>(900 + 17 * m + s.q_heads * s.head_dim + s.hidden);
        x = upload_bf16(testing::random_bf16_values(m * s.hidden, seed, -1.0f, 1.0f));
        wq = upload_bf16(testing::random_bf16_values(q_width() * s.hidden, seed + 1, -0.5f, 0.5f));
        wk = upload_bf16(testing::random_bf16_values(kv_width() * s.hidden, seed + 2, -0.5f, 0.5f));
        wv = upload_bf16(testing::random_bf16_values(kv_width() * s.hidden, seed + 3, -0.5f, 0.5f));
        // Positions from 0 to past 100K (large angles take sincosf's slow argument reduction).
        std::vector<int32_t> pos(m);
        for (int32_t i = 0; i < m; ++i) pos[i] = (i * 7919 + 3) % 131072;
        positions = upload(pos);
        inv_freq = upload(testing::llama3_inv_freq(s.head_dim));
        std::vector<int64_t> all(kNumSlots);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), std::mt19937(seed));
        std::vector<int64_t> rows(all.begin(), all.begin() + m);
        if (m > 2) {
            rows[1] = -1;
            rows[2] = kNumSlots;
        }
        slot_of_row = rows;
        slots = upload(rows);
        cache_start = testing::to_bf16(testing::random_floats(kNumSlots * kv_width(), seed + 4));
    }

    int64_t q_width() const { return int64_t{shape.q_heads} * shape.head_dim; }
    int64_t kv_width() const { return int64_t{shape.kv_heads} * shape.head_dim; }
    int64_t ldq() const { return q_width() + 8; }  // columns past n: a canary
    size_t q_elems() const { return static_cast<size_t>((m + 1) * ldq()); }  // a canary row too
    size_t kv_elems() const { return static_cast<size_t>(m * kv_width()); }
    size_t cache_elems() const { return cache_start.size(); }

    int32_t m;
    Shape shape;
    DeviceBuffer x, wq, wk, wv, positions, inv_freq, slots;
    std::vector<int64_t> slot_of_row;
    std::vector<uint16_t> cache_start;
};

// One path's outputs: q, the k and v storage, and the caches.
struct Outputs {
    explicit Outputs(const Problem& p)
        : q(poisoned(p.q_elems() * 2)),
          k(poisoned(p.kv_elems() * 2)),
          v(poisoned(p.kv_elems() * 2)),
          k_cache(upload(p.cache_start)),
          v_cache(upload(p.cache_start)) {}

    DeviceBuffer q, k, v, k_cache, v_cache;
};

GemvParams projections(const Problem& p, Outputs& out, GemvEpilogue epilogue,
                       const GemvRowScale& scale) {
    GemvParams g{.x = p.x.as<bf16>(),
                 .ldx = p.shape.hidden,
                 .m = p.m,
                 .k = p.shape.hidden,
                 .segments = {},
                 .num_segments = 3,
                 .epilogue = epilogue,
                 .x_scale = scale};
    g.segments[0] = {.w = p.wq.as<bf16>(), .y = out.q.data(), .n = p.q_width(), .ldy = p.ldq()};
    g.segments[1] = {
        .w = p.wk.as<bf16>(), .y = out.k.data(), .n = p.kv_width(), .ldy = p.kv_width()};
    g.segments[2] = {
        .w = p.wv.as<bf16>(), .y = out.v.data(), .n = p.kv_width(), .ldy = p.kv_width()};
    return g;
}

void run_unfused(const Problem& p, Outputs& out, const GemvRowScale& scale) {
    must_ok(gemv(projections(p, out, GemvEpilogue::kStore, scale), nullptr));
    must_ok(qk_norm_rope({.q = out.q.as<bf16>(),
                          .k = out.k.as<bf16>(),
                          .positions = p.positions.as<int32_t>(),
                          .inv_freq = p.inv_freq.as<float>(),
                          .q_row_stride = p.ldq(),
                          .k_row_stride = p.kv_width(),
                          .num_tokens = p.m,
                          .num_q_heads = p.shape.q_heads,
                          .num_kv_heads = p.shape.kv_heads,
                          .head_dim = p.shape.head_dim,
                          .rotary_dim = p.shape.head_dim,
                          .style = p.shape.style,
                          .store = {.v = out.v.as<bf16>(),
                                    .v_row_stride = p.kv_width(),
                                    .slots = p.slots.as<int64_t>(),
                                    .k_blocks = out.k_cache.as<bf16>(),
                                    .v_blocks = out.v_cache.as<bf16>(),
                                    .num_slots = kNumSlots}},
                         nullptr));
}

GemvRopeStore rope_of(const Problem& p, Outputs& out) {
    return {.positions = p.positions.as<int32_t>(),
            .inv_freq = p.inv_freq.as<float>(),
            .slots = p.slots.as<int64_t>(),
            .k_blocks = out.k_cache.as<bf16>(),
            .v_blocks = out.v_cache.as<bf16>(),
            .num_slots = kNumSlots,
            .head_dim = p.shape.head_dim,
            .style = p.shape.style};
}

// device: spaced over the SMs as CudaOps launches it (see expect_fused_equals_unfused), or not.
void run_fused(const Problem& p, Outputs& out, const GemvDevice* device,
               const GemvRowScale& scale) {
    GemvParams g = projections(p, out, GemvEpilogue::kRopeStore, scale);
    g.rope = rope_of(p, out);
    g.device = device;
    must_ok(gemv(g, nullptr));
}

void expect_poisoned(const DeviceBuffer& buf, size_t count, const std::string& what) {
    const std::vector<uint16_t> bits = download<uint16_t>(buf, count);
    const auto written =
        std::count_if(bits.begin(), bits.end(), [](uint16_t b) { return b != 0xffff; });
    EXPECT_EQ(written, 0) << what << " was written";
}

// device: the fused launch spaced over the SMs as CudaOps launches it (at most 8 rows and few
// tiles: SmolLM2's q|k|v and gate|up at batch 1), or not (nullptr). scale: x's pending 1 / rms
// (m = 1), or none.
void expect_fused_equals_unfused(const Problem& p, const GemvDevice* device,
                                 const GemvRowScale& scale) {
    Outputs want(p);
    run_unfused(p, want, scale);
    Outputs got(p);
    run_fused(p, got, device, scale);
    testing::expect_same_bf16_bits(got.q, want.q, p.q_elems(), p.ldq(), "q");
    testing::expect_same_bf16_bits(got.k_cache, want.k_cache, p.cache_elems(), p.kv_width(),
                                   "k cache");
    testing::expect_same_bf16_bits(got.v_cache, want.v_cache, p.cache_elems(), p.kv_width(),
                                   "v cache");
    expect_poisoned(got.k, p.kv_elems(), "the k storage");
    expect_poisoned(got.v, p.kv_elems(), "the v storage");
    // The comparison must see writes: row 0's k entry no longer holds the starting bits, and q's
    // first row is no longer poison.
    const std::vector<uint16_t> k = download<uint16_t>(got.k_cache, p.cache_elems());
    const auto at = static_cast<size_t>(p.slot_of_row[0] * p.kv_width());
    EXPECT_FALSE(
        std::equal(k.begin() + at, k.begin() + at + p.kv_width(), p.cache_start.begin() + at))
        << "row 0's key was not written";
    const std::vector<uint16_t> q = download<uint16_t>(got.q, p.q_elems());
    EXPECT_NE(q[0], 0xffff) << "q was not written";
}

// m across both MMA shapes (<= 8 rows, up to 16); the 8B model's shape (GQA 4, head_dim 128,
// llama3 frequencies), SmolLM2's (GQA 3, head_dim 64, k 576), GQA 1 and 8 with interleaved pairs
// and a k that ends in a ragged quad.
TEST(GemvRopeStore, SameBitsAsGemvThenRopeAndStore) {
    const Shape shapes[] = {{32, 8, 128, 4096, RopeStyle::kNeox},
                            {9, 3, 64, 576, RopeStyle::kNeox},
                            {4, 4, 64, 200, RopeStyle::kInterleaved},
                            {8, 1, 128, 136, RopeStyle::kNeox},
                            {16, 2, 16, 64, RopeStyle::kInterleaved}};
    const GemvDevice device = testing::must(gemv_device());
    for (const int32_t m : {1, 3, 8, 9, 16}) {
        for (const Shape& s : shapes) {
            for (const GemvDevice* d : {static_cast<const GemvDevice*>(nullptr), &device}) {
                SCOPED_TRACE("m " + std::to_string(m) + ", heads " + std::to_string(s.q_heads) +
                             "/" + std::to_string(s.kv_heads) + ", head_dim " +
                             std::to_string(s.head_dim) + ", k " + std::to_string(s.hidden) +
                             (d ? ", spaced" : ""));
                const Problem p(m, s);
                expect_fused_equals_unfused(p, d, {});
                if (m != 1) continue;
                SCOPED_TRACE("x's 1 / rms pending");
                const DeviceBuffer sums = upload(
                    testing::random_floats((s.hidden + 15) / 16, 8200 + s.hidden, 0.0f, 64.0f));
                expect_fused_equals_unfused(p, d, {.sq_sums = sums.as<float>(), .eps = 1e-5f});
            }
        }
    }
}

class GemvRopeArgsTest : public ::testing::Test {
  protected:
    GemvParams valid() {
        GemvParams p{.x = buf_.as<bf16>(),
                     .ldx = 64,
                     .m = 2,
                     .k = 64,
                     .segments = {},
                     .num_segments = 3,
                     .epilogue = GemvEpilogue::kRopeStore};
        p.segments[0] = {.w = buf_.as<bf16>(), .y = y_.data(), .n = 128, .ldy = 128};
        p.segments[1] = {.w = buf_.as<bf16>(), .y = nullptr, .n = 64, .ldy = 64};
        p.segments[2] = {.w = buf_.as<bf16>(), .y = nullptr, .n = 64, .ldy = 64};
        p.rope = {.positions = zeros_.as<int32_t>(),
                  .inv_freq = zeros_.as<float>(),
                  .slots = zeros_.as<int64_t>(),
                  .k_blocks = cache_.as<bf16>(),
                  .v_blocks = cache_.as<bf16>(),
                  .num_slots = 4,
                  .head_dim = 64,
                  .style = RopeStyle::kNeox};
        return p;
    }

    DeviceBuffer buf_ = poisoned(1 << 16);
    DeviceBuffer y_ = poisoned(1 << 16);
    DeviceBuffer cache_ = poisoned(1 << 16);
    DeviceBuffer zeros_ = upload(std::vector<int64_t>(64, 0));
};

TEST_F(GemvRopeArgsTest, KAndVNeedNoOutput) {
    EXPECT_TRUE(gemv(valid(), nullptr).ok());
    must_ok(cuda_status(cudaDeviceSynchronize(), "gemv"));
}

TEST_F(GemvRopeArgsTest, NamesWhatIsWrong) {
    const auto expect_bad = [](const GemvParams& p, const std::string& mentions) {
        testing::expect_invalid_argument(gemv(p, nullptr), mentions);
    };
    GemvParams p = valid();
    p.num_segments = 2;
    expect_bad(p, "kRopeStore takes q, k and v");
    p = valid();
    p.rope.head_dim = 24;
    expect_bad(p, "rope.head_dim is 24, not a positive multiple of 16");
    p = valid();
    p.rope.head_dim = 0;
    expect_bad(p, "rope.head_dim is 0");
    p = valid();
    p.segments[0].n = 96;
    expect_bad(p, "segments[0].n 96 is not whole heads of 64");
    p = valid();
    p.segments[2].n = 128;
    expect_bad(p, "segments[2].n 128 != k's 64");
    p = valid();
    p.segments[0].y_dtype = DType::kF32;
    expect_bad(p, "segments[0].y_dtype");
    p = valid();
    p.segments[0].y = nullptr;
    expect_bad(p, "segments[0].y is null");
    p = valid();
    p.rope.style = static_cast<RopeStyle>(9);
    expect_bad(p, "rope.style is unknown");
    p = valid();
    p.rope.num_slots = -1;
    expect_bad(p, "rope.num_slots is -1");
    // Each pointer of the rotation and the store, cleared alone.
    const std::pair<std::string, void (*)(GemvRopeStore&)> clears[] = {
        {"rope.positions", [](GemvRopeStore& r) { r.positions = nullptr; }},
        {"rope.inv_freq", [](GemvRopeStore& r) { r.inv_freq = nullptr; }},
        {"rope.slots", [](GemvRopeStore& r) { r.slots = nullptr; }},
        {"rope.k_blocks", [](GemvRopeStore& r) { r.k_blocks = nullptr; }},
        {"rope.v_blocks", [](GemvRopeStore& r) { r.v_blocks = nullptr; }}};
    for (const auto& [field, clear] : clears) {
        p = valid();
        clear(p.rope);
        expect_bad(p, field + " is null");
    }
}

}  // namespace
}  // namespace se::cuda
