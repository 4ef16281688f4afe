// cuda::qk_norm_rope on the q and k heads of fused q|k|v rows (v must keep its bits), two ways:
//   (a) bit for bit against head_rms_norm on q, head_rms_norm on k and rope, launched apart on
//       the same inputs: the fused kernel rounds at the same points;
//   (b) against ReferenceOps head_rms_norm then rope (f64, no rounding between them). Tolerance:
//       the rope test's 1e-5 absolute plus one bf16 rounding (kBf16RelTol) of the output; on a
//       normed head also the norm test's 1e-5 relative, and on its rotated elements the bf16
//       rounding between norm and rotation: kBf16RelTol of each of the pair's two values, which
//       the rotation turns into at most kBf16RelTol of the pair's length (|a c - b s| <=
//       |(a, b)|), a length the rotation keeps, so it is read from the reference output.
// Positions reach 131071 with a llama3-scaled table; norms on q, k, both or neither.
// With a store (the rotated k and the v rows also written into a paged cache in the same launch),
// (c) bit for bit against qk_norm_rope and then store_kv: the rows and both whole caches
// (written slots and every slot around them, which start as random bf16 values). Tokens go to
// shuffled slots, two of them outside the cache (-1 and num_slots), where nothing is written.
#include "backend/cuda/qk_norm_rope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/reference_ops.h"
#include "backend/cuda/head_rms_norm.h"
#include "backend/cuda/kv_store.h"
#include "backend/cuda/rope.h"
#include "cuda_test_util.h"
#include "rope_tables.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::upload;
using testing::upload_bf16;

constexpr float kEps = 1e-6f;

enum class Norms { kNone, kQ, kK, kBoth };
using Dims = std::pair<int32_t, int32_t>;                          // head_dim, rotary_dim
using Gqa = std::pair<int32_t, int32_t>;                           // num_q_heads, num_kv_heads
using QkParam = std::tuple<Norms, RopeStyle, Dims, Gqa, int32_t>;  // ..., num_tokens

// One case's host inputs: n fused rows [q heads | k heads | v heads] of bf16 values.
struct Case {
    Norms norms = Norms::kNone;
    RopeStyle style = RopeStyle::kNeox;
    int32_t head_dim = 0;
    int32_t rotary_dim = 0;
    int32_t num_q_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t n = 0;
    std::vector<float> qkv = {};          // bf16 values [n, row()]
    std::vector<float> q_weight = {};     // f32 [head_dim]; empty: q not normed
    std::vector<float> k_weight = {};     // f32 [head_dim]; empty: k not normed
    std::vector<int32_t> positions = {};  // i32 [n]
    std::vector<float> inv_freq = {};     // f32 [rotary_dim / 2]

    int64_t q_width() const { return int64_t{num_q_heads} * head_dim; }
    int64_t kv_width() const { return int64_t{num_kv_heads} * head_dim; }
    int64_t row() const { return q_width() + 2 * kv_width(); }
};

Case make_case(const QkParam& param) {
    const auto [norms, style, dims, gqa, n] = param;
    Case c{.norms = norms,
           .style = style,
           .head_dim = dims.first,
           .rotary_dim = dims.second,
           .num_q_heads = gqa.first,
           .num_kv_heads = gqa.second,
           .n = n};
    const auto seed = static_cast<uint32_t>(n * 1000 + c.head_dim * 10 + c.num_q_heads);
    c.qkv = testing::random_bf16_values(n * c.row(), seed, -2, 2);
    if (norms == Norms::kQ || norms == Norms::kBoth)
        c.q_weight = testing::random_floats(c.head_dim, seed + 1, 0.5f, 1.5f);
    if (norms == Norms::kK || norms == Norms::kBoth)
        c.k_weight = testing::random_floats(c.head_dim, seed + 2, 0.5f, 1.5f);
    // The largest position first (so n = 1 has it), then edges, then spread over 2^17.
    const std::vector<int32_t> fixed = {131071, 0, 1, 4095, 8192, 30000, 131070};
    for (int32_t t = 0; t < n; ++t)
        c.positions.push_back(t < static_cast<int32_t>(fixed.size()) ? fixed[t]
                                                                     : (t * 104729) % 131072);
    c.inv_freq = testing::llama3_inv_freq(c.rotary_dim);
    return c;
}

// The case's inputs on the device; qkv is the buffer the kernels change.
struct DeviceCase {
    explicit DeviceCase(const Case& c)
        : qkv(upload_bf16(c.qkv)),
          positions(upload(c.positions)),
          inv_freq(upload(c.inv_freq)),
          q_weight(c.q_weight.empty() ? DeviceBuffer() : upload(c.q_weight)),
          k_weight(c.k_weight.empty() ? DeviceBuffer() : upload(c.k_weight)) {}

    bf16* q() const { return qkv.as<bf16>(); }
    bf16* k(const Case& c) const { return qkv.as<bf16>() + c.q_width(); }
    const float* q_norm() const { return q_weight.as<float>(); }  // null: no norm
    const float* k_norm() const { return k_weight.as<float>(); }

    DeviceBuffer qkv;
    DeviceBuffer positions;
    DeviceBuffer inv_freq;
    DeviceBuffer q_weight;  // empty: q not normed
    DeviceBuffer k_weight;  // empty: k not normed
};

QkNormRopeParams fused_params(const Case& c, const DeviceCase& d) {
    return {.q = d.q(),
            .k = d.k(c),
            .q_norm_weight = d.q_norm(),
            .k_norm_weight = d.k_norm(),
            .positions = d.positions.as<int32_t>(),
            .inv_freq = d.inv_freq.as<float>(),
            .q_row_stride = c.row(),
            .k_row_stride = c.row(),
            .num_tokens = c.n,
            .num_q_heads = c.num_q_heads,
            .num_kv_heads = c.num_kv_heads,
            .head_dim = c.head_dim,
            .rotary_dim = c.rotary_dim,
            .style = c.style,
            .eps = kEps,
            .store = {}};
}

void run_fused(const Case& c, const DeviceCase& d) {
    must_ok(qk_norm_rope(fused_params(c, d), nullptr));
}

// What a layer launches today: a norm per normed operand, then rope on both.
void run_split(const Case& c, const DeviceCase& d) {
    const auto norm = [&](bf16* x, const float* weight, int32_t num_heads) {
        if (weight == nullptr) return;
        must_ok(head_rms_norm({.x = x,
                               .weight = weight,
                               .row_stride = c.row(),
                               .num_rows = c.n,
                               .num_heads = num_heads,
                               .head_dim = c.head_dim,
                               .eps = kEps},
                              nullptr));
    };
    norm(d.q(), d.q_norm(), c.num_q_heads);
    norm(d.k(c), d.k_norm(), c.num_kv_heads);
    must_ok(rope({.q = d.q(),
                  .k = d.k(c),
                  .positions = d.positions.as<int32_t>(),
                  .inv_freq = d.inv_freq.as<float>(),
                  .q_row_stride = c.row(),
                  .k_row_stride = c.row(),
                  .num_tokens = c.n,
                  .num_q_heads = c.num_q_heads,
                  .num_kv_heads = c.num_kv_heads,
                  .head_dim = c.head_dim,
                  .rotary_dim = c.rotary_dim,
                  .style = c.style},
                 nullptr));
}

// Columns past q and k (the v heads) keep the input's bits.
void expect_v_untouched(const Case& c, const std::vector<uint16_t>& got) {
    const std::vector<uint16_t> in = testing::to_bf16(c.qkv);
    int failures = 0;
    for (int64_t t = 0; t < c.n && failures < 10; ++t) {
        for (int64_t col = c.q_width() + c.kv_width(); col < c.row() && failures < 10; ++col) {
            const int64_t i = t * c.row() + col;
            if (got[i] != in[i]) {
                ADD_FAILURE() << "v changed at token " << t << ", column " << col;
                ++failures;
            }
        }
    }
}

// Element index of the rotation partner of element e (< rotary_dim) inside a head.
int32_t partner(const Case& c, int32_t e) {
    const int32_t half = c.rotary_dim / 2;
    switch (c.style) {
        case RopeStyle::kNeox:
            return e < half ? e + half : e - half;
        case RopeStyle::kInterleaved:
            return e ^ 1;
    }
    return e;
}

// The reference q|k part of each row: f64 norms, then the f64 rotation; v columns copied.
std::vector<float> reference(const Case& c) {
    std::vector<float> want = c.qkv;
    const RopeArgs args{.inv_freq = c.inv_freq, .style = c.style, .head_dim = c.head_dim};
    for (int32_t t = 0; t < c.n; ++t) {
        float* q = want.data() + t * c.row();
        float* k = q + c.q_width();
        if (!c.q_weight.empty()) {
            ReferenceOps().head_rms_norm({DType::kF32, q, 1, c.q_width()}, c.head_dim,
                                         {DType::kF32, c.q_weight.data(), 1, c.head_dim}, kEps);
        }
        if (!c.k_weight.empty()) {
            ReferenceOps().head_rms_norm({DType::kF32, k, 1, c.kv_width()}, c.head_dim,
                                         {DType::kF32, c.k_weight.data(), 1, c.head_dim}, kEps);
        }
        // q and k heads of a row are adjacent: one [1, (Hq + Hkv) * head_dim] view.
        ReferenceOps().rope({DType::kF32, q, 1, c.q_width() + c.kv_width()},
                            std::span(c.positions).subspan(t, 1), args);
    }
    return want;
}

class QkNormRopeTest : public ::testing::TestWithParam<QkParam> {};

TEST_P(QkNormRopeTest, EqualsSplitKernelsBitForBit) {
    const Case c = make_case(GetParam());
    const DeviceCase fused(c);
    const DeviceCase split(c);
    run_fused(c, fused);
    run_split(c, split);
    testing::expect_same_bf16_bits(fused.qkv, split.qkv, c.qkv.size(), c.row(), "q|k|v token");
    expect_v_untouched(c, download<uint16_t>(fused.qkv, c.qkv.size()));
}

// A paged cache of 24 blocks of 16 entries for the case's k and v (both start with the same
// random bits), and the slot of every token.
struct CacheCase {
    static constexpr int64_t kNumSlots = 24 * 16;

    explicit CacheCase(const Case& c) {
        std::vector<int64_t> all(kNumSlots);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), std::mt19937(static_cast<uint32_t>(c.n)));
        slots.assign(all.begin(), all.begin() + c.n);
        if (c.n > 2) {
            slots[1] = -1;
            slots[2] = kNumSlots;
        }
        start = testing::to_bf16(testing::random_floats(kNumSlots * c.kv_width(), 9));
    }

    std::vector<int64_t> slots;   // i64 [n]
    std::vector<uint16_t> start;  // bf16 [kNumSlots, kv_width]
};

// One run's cache on the device.
struct DeviceCache {
    explicit DeviceCache(const CacheCase& cc)
        : slots(upload(cc.slots)), k(upload(cc.start)), v(upload(cc.start)) {}

    DeviceBuffer slots;
    DeviceBuffer k;
    DeviceBuffer v;
};

TEST_P(QkNormRopeTest, StoreEqualsRopeThenStoreKvBitForBit) {
    const Case c = make_case(GetParam());
    const CacheCase cc(c);
    const DeviceCase fused(c);
    const DeviceCase split(c);
    const DeviceCache fused_cache(cc);
    const DeviceCache split_cache(cc);
    bf16* const fused_v = fused.k(c) + c.kv_width();
    QkNormRopeParams p = fused_params(c, fused);
    p.store = {.v = fused_v,
               .v_row_stride = c.row(),
               .slots = fused_cache.slots.as<int64_t>(),
               .k_blocks = fused_cache.k.as<bf16>(),
               .v_blocks = fused_cache.v.as<bf16>(),
               .num_slots = CacheCase::kNumSlots};
    must_ok(qk_norm_rope(p, nullptr));
    run_fused(c, split);
    must_ok(store_kv({.k = split.k(c),
                      .v = split.k(c) + c.kv_width(),
                      .slots = split_cache.slots.as<int64_t>(),
                      .k_blocks = split_cache.k.as<bf16>(),
                      .v_blocks = split_cache.v.as<bf16>(),
                      .row_stride = c.row(),
                      .num_slots = CacheCase::kNumSlots,
                      .num_tokens = c.n,
                      .entry_elems = static_cast<int32_t>(c.kv_width())},
                     nullptr));
    testing::expect_same_bf16_bits(fused.qkv, split.qkv, c.qkv.size(), c.row(), "q|k|v token");
    testing::expect_same_bf16_bits(fused_cache.k, split_cache.k, cc.start.size(), c.kv_width(),
                                   "k cache slot");
    testing::expect_same_bf16_bits(fused_cache.v, split_cache.v, cc.start.size(), c.kv_width(),
                                   "v cache slot");
    // The comparison must see writes: token 0's slot no longer holds the starting bits.
    const std::vector<uint16_t> k = download<uint16_t>(fused_cache.k, cc.start.size());
    const auto at = static_cast<size_t>(cc.slots[0] * c.kv_width());
    EXPECT_FALSE(std::equal(k.begin() + at, k.begin() + at + c.kv_width(), cc.start.begin() + at))
        << "token 0's key was not written";
}

TEST_P(QkNormRopeTest, MatchesReference) {
    const Case c = make_case(GetParam());
    const DeviceCase d(c);
    run_fused(c, d);
    const std::vector<uint16_t> raw = download<uint16_t>(d.qkv, c.qkv.size());
    expect_v_untouched(c, raw);
    const std::vector<float> got = testing::from_bf16(raw);
    const std::vector<float> want = reference(c);

    int failures = 0;
    for (int64_t t = 0; t < c.n; ++t) {
        for (int64_t col = 0; col < c.q_width() + c.kv_width() && failures < 10; ++col) {
            const int64_t i = t * c.row() + col;
            const bool is_q = col < c.q_width();
            const bool normed = !(is_q ? c.q_weight : c.k_weight).empty();
            const auto e = static_cast<int32_t>(col % c.head_dim);
            float tol =
                1e-5f + (testing::kBf16RelTol + (normed ? 1e-5f : 0.0f)) * std::fabs(want[i]);
            if (normed && e < c.rotary_dim) {
                const float other = want[i - e + partner(c, e)];
                tol += (testing::kBf16RelTol + 1e-5f) * std::hypot(want[i], other);
            }
            if (!(std::fabs(got[i] - want[i]) <= tol)) {  // NaN fails
                ADD_FAILURE() << (is_q ? "q" : "k") << " at token " << t << ", column " << col
                              << ": got " << got[i] << ", want " << want[i] << " (tolerance " << tol
                              << ")";
                ++failures;
            }
        }
    }
}

std::string param_name(const ::testing::TestParamInfo<QkParam>& info) {
    const auto [norms, style, dims, gqa, n] = info.param;
    const char* norm_names[] = {"nonorm", "qnorm", "knorm", "qknorm"};
    return std::string(norm_names[static_cast<int>(norms)]) +
           (style == RopeStyle::kNeox ? "_neox" : "_interleaved") + "_dim" +
           std::to_string(dims.first) + "_rot" + std::to_string(dims.second) + "_heads" +
           std::to_string(gqa.first) + "x" + std::to_string(gqa.second) + "_n" + std::to_string(n);
}

// Head dims on 8, 16 and 32 lanes; partial rotary dims, one (24) whose neox pairs do not line up
// with 8-element slices; GQA 4 and none; 1, 7 and 300 tokens (blocks partly and fully used).
INSTANTIATE_TEST_SUITE_P(
    Cases, QkNormRopeTest,
    ::testing::Combine(::testing::Values(Norms::kNone, Norms::kQ, Norms::kK, Norms::kBoth),
                       ::testing::Values(RopeStyle::kNeox, RopeStyle::kInterleaved),
                       ::testing::Values(Dims{64, 64}, Dims{64, 24}, Dims{128, 128}, Dims{128, 64},
                                         Dims{256, 256}),
                       ::testing::Values(Gqa{32, 8}, Gqa{4, 4}), ::testing::Values(1, 7, 300)),
    param_name);

// Field checks: each rejection names the field.
Status check(const QkNormRopeParams& p) {
    return qk_norm_rope(p, nullptr);
}

QkNormRopeParams valid_params() {
    return {.q_row_stride = 4 * 128,
            .k_row_stride = 2 * 128,
            .num_tokens = 1,
            .num_q_heads = 4,
            .num_kv_heads = 2,
            .head_dim = 128,
            .rotary_dim = 128,
            .store = {}};
}

void expect_invalid(const QkNormRopeParams& p, const std::string& field) {
    testing::expect_invalid_argument(check(p), field);
}

TEST(QkNormRopeArgs, BadFieldsAreNamed) {
    QkNormRopeParams p = valid_params();
    p.head_dim = 60;
    expect_invalid(p, "head_dim");
    p = valid_params();
    p.head_dim = 264;
    p.rotary_dim = 64;
    p.q_row_stride = 4 * 264;
    p.k_row_stride = 2 * 264;
    expect_invalid(p, "head_dim");
    p = valid_params();
    p.rotary_dim = 63;
    expect_invalid(p, "rotary_dim");
    p = valid_params();
    p.rotary_dim = 136;
    expect_invalid(p, "rotary_dim");
    p = valid_params();
    p.rotary_dim = 0;
    expect_invalid(p, "rotary_dim");
    p = valid_params();
    p.q_row_stride = 3 * 128;
    expect_invalid(p, "q_row_stride");
    p = valid_params();
    p.k_row_stride = 2 * 128 + 4;
    expect_invalid(p, "k_row_stride");
    p = valid_params();
    p.k_row_stride = 128;
    expect_invalid(p, "k_row_stride");
    p = valid_params();
    p.style = static_cast<RopeStyle>(7);
    expect_invalid(p, "style");
}

// A store's fields are checked like the rest; each rejection names the field.
TEST(QkNormRopeArgs, BadStoreFieldsAreNamed) {
    const DeviceBuffer buf = testing::poisoned(1 << 16);
    QkNormRopeParams p = valid_params();
    p.num_tokens = 0;
    const QkNormRopeStore valid{.v = buf.as<bf16>(),
                                .v_row_stride = 2 * 128,
                                .slots = buf.as<int64_t>(),
                                .k_blocks = buf.as<bf16>(),
                                .v_blocks = buf.as<bf16>(),
                                .num_slots = 16};
    p.store = valid;
    EXPECT_TRUE(check(p).ok());
    const auto expect_bad = [&](const QkNormRopeStore& s, const std::string& field) {
        QkNormRopeParams bad = p;
        bad.store = s;
        expect_invalid(bad, field);
    };
    QkNormRopeStore s = valid;
    s.v = nullptr;
    expect_bad(s, "store.v");
    s = valid;
    s.v_blocks = nullptr;
    expect_bad(s, "store.v_blocks");
    s = valid;
    s.k_blocks = nullptr;
    expect_bad(s, "store.k_blocks");
    s = valid;
    s.slots = nullptr;
    expect_bad(s, "store.slots");
    s = valid;
    s.v_row_stride = 128;
    expect_bad(s, "store.v_row_stride");
    s = valid;
    s.v_row_stride = 2 * 128 + 4;
    expect_bad(s, "store.v_row_stride");
    s = valid;
    s.k_blocks = buf.as<bf16>() + 1;
    expect_bad(s, "store.k_blocks");
    s = valid;
    s.num_slots = -1;
    expect_bad(s, "store.num_slots");
}

TEST(QkNormRopeArgs, NoTokensIsANoOp) {
    QkNormRopeParams p = valid_params();
    p.num_tokens = 0;
    EXPECT_TRUE(check(p).ok());
}

}  // namespace
}  // namespace se::cuda
