// cuda::qk_norm_rope with a store (the rotated k and the v rows written into the paged cache in
// the same launch) against the two launches it replaces, qk_norm_rope and then store_kv, on the
// same inputs: the q|k|v rows and both whole caches (written slots and every slot around them,
// which start as random bf16 values) must be equal bit for bit. Tokens go to shuffled slots of
// caches of block size 16 and 32, two of them to slots outside the cache (-1 and num_slots),
// for which neither path writes anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/kv_store.h"
#include "backend/cuda/qk_norm_rope.h"
#include "cuda_test_util.h"
#include "rope_tables.h"

namespace se::cuda {
namespace {

using testing::download;
using testing::must_ok;
using testing::upload;
using testing::upload_bf16;

constexpr float kEps = 1e-6f;
constexpr int64_t kNumBlocks = 24;

// block size, head dim, (num_q_heads, num_kv_heads), tokens, q and k normed
using StoreParam = std::tuple<int32_t, int32_t, std::pair<int32_t, int32_t>, int32_t, bool>;

struct StoreCase {
    int32_t block_size = 0;
    int32_t head_dim = 0;
    int32_t num_q_heads = 0;
    int32_t num_kv_heads = 0;
    int32_t n = 0;
    std::vector<float> qkv = {};       // bf16 values [n, row()]: q heads | k heads | v heads
    std::vector<float> q_weight = {};  // f32 [head_dim]; empty: not normed
    std::vector<float> k_weight = {};  // f32 [head_dim]; empty: not normed
    std::vector<int32_t> positions = {};
    std::vector<int64_t> slots = {};   // i64 [n]
    std::vector<uint16_t> cache = {};  // bf16 [num_slots, entry]: both caches' starting bits
    std::vector<float> inv_freq = {};

    int64_t entry() const { return int64_t{num_kv_heads} * head_dim; }
    int64_t q_width() const { return int64_t{num_q_heads} * head_dim; }
    int64_t row() const { return q_width() + 2 * entry(); }
    int64_t num_slots() const { return kNumBlocks * block_size; }
};

StoreCase make_case(const StoreParam& param) {
    const auto [block_size, head_dim, gqa, n, normed] = param;
    StoreCase c{.block_size = block_size,
                .head_dim = head_dim,
                .num_q_heads = gqa.first,
                .num_kv_heads = gqa.second,
                .n = n};
    const auto seed = static_cast<uint32_t>(n * 100 + head_dim + block_size);
    c.qkv = testing::random_bf16_values(n * c.row(), seed, -2, 2);
    if (normed) {
        c.q_weight = testing::random_floats(head_dim, seed + 1, 0.5f, 1.5f);
        c.k_weight = testing::random_floats(head_dim, seed + 2, 0.5f, 1.5f);
    }
    c.slots.resize(static_cast<size_t>(c.num_slots()));
    std::iota(c.slots.begin(), c.slots.end(), 0);
    std::shuffle(c.slots.begin(), c.slots.end(), std::mt19937(seed));
    c.slots.resize(static_cast<size_t>(n));
    if (n > 2) {
        c.slots[1] = -1;
        c.slots[2] = c.num_slots();
    }
    for (int32_t t = 0; t < n; ++t) c.positions.push_back((t * 7919 + 5) % 131072);
    c.cache = testing::to_bf16(testing::random_floats(c.num_slots() * c.entry(), seed + 3));
    c.inv_freq = testing::llama3_inv_freq(head_dim);
    return c;
}

// One path's device state: the rows it rewrites and the two caches it writes.
struct DeviceState {
    explicit DeviceState(const StoreCase& c)
        : qkv(upload_bf16(c.qkv)), k_cache(upload(c.cache)), v_cache(upload(c.cache)) {}

    bf16* q() const { return qkv.as<bf16>(); }
    bf16* k(const StoreCase& c) const { return qkv.as<bf16>() + c.q_width(); }
    bf16* v(const StoreCase& c) const { return qkv.as<bf16>() + c.q_width() + c.entry(); }

    DeviceBuffer qkv;
    DeviceBuffer k_cache;
    DeviceBuffer v_cache;
};

// Inputs both paths share.
struct SharedInputs {
    explicit SharedInputs(const StoreCase& c)
        : positions(upload(c.positions)),
          slots(upload(c.slots)),
          inv_freq(upload(c.inv_freq)),
          q_weight(c.q_weight.empty() ? DeviceBuffer() : upload(c.q_weight)),
          k_weight(c.k_weight.empty() ? DeviceBuffer() : upload(c.k_weight)) {}

    DeviceBuffer positions;
    DeviceBuffer slots;
    DeviceBuffer inv_freq;
    DeviceBuffer q_weight;
    DeviceBuffer k_weight;
};

QkNormRopeParams rope_params(const StoreCase& c, const SharedInputs& in, const DeviceState& d) {
    return {.q = d.q(),
            .k = d.k(c),
            .q_norm_weight = in.q_weight.as<float>(),
            .k_norm_weight = in.k_weight.as<float>(),
            .positions = in.positions.as<int32_t>(),
            .inv_freq = in.inv_freq.as<float>(),
            .q_row_stride = c.row(),
            .k_row_stride = c.row(),
            .num_tokens = c.n,
            .num_q_heads = c.num_q_heads,
            .num_kv_heads = c.num_kv_heads,
            .head_dim = c.head_dim,
            .rotary_dim = c.head_dim,
            .style = RopeStyle::kNeox,
            .eps = kEps,
            .store = {}};
}

QkNormRopeStore store_of(const StoreCase& c, const SharedInputs& in, const DeviceState& d) {
    return {.v = d.v(c),
            .v_row_stride = c.row(),
            .slots = in.slots.as<int64_t>(),
            .k_blocks = d.k_cache.as<bf16>(),
            .v_blocks = d.v_cache.as<bf16>(),
            .num_slots = c.num_slots()};
}

void run_split(const StoreCase& c, const SharedInputs& in, const DeviceState& d) {
    must_ok(qk_norm_rope(rope_params(c, in, d), nullptr));
    must_ok(store_kv({.k = d.k(c),
                      .v = d.v(c),
                      .slots = in.slots.as<int64_t>(),
                      .k_blocks = d.k_cache.as<bf16>(),
                      .v_blocks = d.v_cache.as<bf16>(),
                      .row_stride = c.row(),
                      .num_slots = c.num_slots(),
                      .num_tokens = c.n,
                      .entry_elems = static_cast<int32_t>(c.entry())},
                     nullptr));
}

// The first few differing elements of one buffer, by (row, column) of `cols` columns.
void expect_same_bits(const DeviceBuffer& got, const DeviceBuffer& want, size_t count, int64_t cols,
                      const std::string& what) {
    const std::vector<uint16_t> g = download<uint16_t>(got, count);
    const std::vector<uint16_t> w = download<uint16_t>(want, count);
    int failures = 0;
    for (size_t i = 0; i < count && failures < 10; ++i) {
        if (g[i] != w[i]) {
            ADD_FAILURE() << what << " row " << i / cols << ", column " << i % cols << ": fused 0x"
                          << std::hex << g[i] << ", split 0x" << w[i] << std::dec;
            ++failures;
        }
    }
}

class QkNormRopeStoreTest : public ::testing::TestWithParam<StoreParam> {};

TEST_P(QkNormRopeStoreTest, EqualsRopeThenStoreBitForBit) {
    const StoreCase c = make_case(GetParam());
    const SharedInputs in(c);
    const DeviceState fused(c);
    const DeviceState split(c);
    QkNormRopeParams p = rope_params(c, in, fused);
    p.store = store_of(c, in, fused);
    must_ok(qk_norm_rope(p, nullptr));
    run_split(c, in, split);
    expect_same_bits(fused.qkv, split.qkv, c.qkv.size(), c.row(), "q|k|v");
    expect_same_bits(fused.k_cache, split.k_cache, c.cache.size(), c.entry(), "k cache");
    expect_same_bits(fused.v_cache, split.v_cache, c.cache.size(), c.entry(), "v cache");
    // The test must see a write: token 0's slot now holds its rotated k, not the starting bits.
    const std::vector<uint16_t> k_cache = download<uint16_t>(fused.k_cache, c.cache.size());
    const auto at = static_cast<size_t>(c.slots[0] * c.entry());
    EXPECT_FALSE(
        std::equal(k_cache.begin() + at, k_cache.begin() + at + c.entry(), c.cache.begin() + at))
        << "token 0's key was not written";
}

std::string param_name(const ::testing::TestParamInfo<StoreParam>& info) {
    const auto [block_size, head_dim, gqa, n, normed] = info.param;
    return "bs" + std::to_string(block_size) + "_dim" + std::to_string(head_dim) + "_heads" +
           std::to_string(gqa.first) + "x" + std::to_string(gqa.second) + "_n" + std::to_string(n) +
           (normed ? "_normed" : "");
}

// Head dims on 8 and 16 lanes, GQA 4, 8 and none, one token and ragged counts up to a chunk.
INSTANTIATE_TEST_SUITE_P(Cases, QkNormRopeStoreTest,
                         ::testing::Combine(::testing::Values(16, 32), ::testing::Values(64, 128),
                                            ::testing::Values(std::pair{32, 8}, std::pair{16, 4},
                                                              std::pair{4, 4}),
                                            ::testing::Values(1, 37, 300), ::testing::Bool()),
                         param_name);

// A store's fields are checked like the rest; each rejection names the field.
TEST(QkNormRopeStoreArgs, BadFieldsAreNamed) {
    DeviceBuffer buf = testing::poisoned(1 << 16);
    const QkNormRopeStore valid{.v = buf.as<bf16>(),
                                .v_row_stride = 2 * 128,
                                .slots = buf.as<int64_t>(),
                                .k_blocks = buf.as<bf16>(),
                                .v_blocks = buf.as<bf16>(),
                                .num_slots = 16};
    QkNormRopeParams p{.q = buf.as<bf16>(),
                       .k = buf.as<bf16>(),
                       .positions = buf.as<int32_t>(),
                       .inv_freq = buf.as<float>(),
                       .q_row_stride = 4 * 128,
                       .k_row_stride = 2 * 128,
                       .num_tokens = 0,
                       .num_q_heads = 4,
                       .num_kv_heads = 2,
                       .head_dim = 128,
                       .rotary_dim = 128,
                       .store = valid};
    EXPECT_TRUE(qk_norm_rope(p, nullptr).ok());
    const auto expect_invalid = [&](QkNormRopeStore s, const std::string& field) {
        QkNormRopeParams bad = p;
        bad.store = s;
        testing::expect_invalid_argument(qk_norm_rope(bad, nullptr), field);
    };
    QkNormRopeStore s = valid;
    s.v = nullptr;
    expect_invalid(s, "store.v");
    s = valid;
    s.v_blocks = nullptr;
    expect_invalid(s, "store.v_blocks");
    s = valid;
    s.k_blocks = nullptr;
    expect_invalid(s, "store.k_blocks");
    s = valid;
    s.slots = nullptr;
    expect_invalid(s, "store.slots");
    s = valid;
    s.v_row_stride = 128;
    expect_invalid(s, "store.v_row_stride");
    s = valid;
    s.v_row_stride = 2 * 128 + 4;
    expect_invalid(s, "store.v_row_stride");
    s = valid;
    s.k_blocks = buf.as<bf16>() + 1;
    expect_invalid(s, "store.k_blocks");
    s = valid;
    s.num_slots = -1;
    expect_invalid(s, "store.num_slots");
}

}  // namespace
}  // namespace se::cuda
