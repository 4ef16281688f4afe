// Test-only: checks shared by the tests of observation-window eviction methods (token-shared, one
// lane per layer, sink + top of the pooled window scores + window), built on naive_window.h and
// token_data.h: what a lane holds, the naive kept set of one (sequence, layer), and the
// masked-dense reference of one output row.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "sparse/evicting_cache_manager.h"
#include "support/methods/contract_driver.h"
#include "support/methods/naive_window.h"
#include "support/methods/token_data.h"

namespace se::testing {

inline EvictingCacheManager& cache_of(ContractDriver& d) {
    return dynamic_cast<EvictingCacheManager&>(*d.method().cache);
}

inline NaiveHeads heads_of(const ContractDriver& d) {
    return {.num_heads = d.args().num_heads,
            .num_kv_heads = d.args().num_kv_heads,
            .head_dim = d.args().head_dim,
            .scale = d.args().scale};
}

// The token positions layer `layer` of `seq` holds, ascending.
inline std::vector<int32_t> positions(EvictingCacheManager& cache, SeqId seq, int32_t layer) {
    const auto p = cache.entry_positions(seq, cache.lane(layer));
    return {p.begin(), p.end()};
}

inline std::vector<int32_t> first_positions(int32_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    return p;
}

inline int64_t blocks_in_use(EvictingCacheManager& cache) {
    return cache.capacity().num_blocks - cache.capacity().num_free_blocks;
}

// The knobs of one layer's keep rule, as the naive side reads them.
struct WindowKeepRule {
    int32_t window = 0;
    int32_t sink = 0;
    int32_t kernel = 1;
    bool max_pool = true;
    int32_t selected = 0;  // entries kept outside the window, the sinks included
};

// The rule, written out for one (sequence, layer) holding the entries of positions `resident`
// after `len` tokens: score them with the queries of positions [len - w, len), each seeing the
// resident entries up to itself, and keep sink + top + window (entry indices, ascending).
struct NaiveKeep {
    std::vector<int32_t> keep;
    std::vector<double> scores;  // by entry index, over [0, n - w)
};

inline NaiveKeep naive_keep(const TokenData& data, const NaiveHeads& heads,
                            const WindowKeepRule& rule, int32_t seq, int32_t layer,
                            const std::vector<int32_t>& resident, int32_t len) {
    const auto n = static_cast<int32_t>(resident.size());
    std::vector<const float*> keys, queries;
    std::vector<int32_t> visible;
    for (int32_t p : resident) keys.push_back(data.k(seq, layer, p));
    for (int32_t p = len - rule.window; p < len; ++p) {
        queries.push_back(data.q(seq, layer, p));
        visible.push_back(static_cast<int32_t>(
            std::count_if(resident.begin(), resident.end(), [&](int32_t r) { return r <= p; })));
    }
    NaiveKeep out;
    out.scores = naive_window_scores(heads, keys, queries, visible, n - rule.window, rule.kernel,
                                     rule.max_pool);
    for (int32_t j = 0; j < rule.sink; ++j) out.keep.push_back(j);
    for (int32_t j : naive_top_k(out.scores, rule.sink, rule.selected - rule.sink)) {
        out.keep.push_back(j);
    }
    for (int32_t j = n - rule.window; j < n; ++j) out.keep.push_back(j);
    return out;
}

// Expects (seq, layer) to hold what the rule keeps of `resident` (modulo ties) and returns the
// positions it holds.
inline std::vector<int32_t> expect_kept(ContractDriver& d, const TokenData& data,
                                        const WindowKeepRule& rule, int32_t seq, int32_t layer,
                                        const std::vector<int32_t>& resident, int32_t len) {
    const std::vector<int32_t> got = positions(cache_of(d), seq + 1, layer);
    const NaiveKeep want = naive_keep(data, heads_of(d), rule, seq, layer, resident, len);
    std::vector<int32_t> got_entries;
    for (int32_t p : got) {
        auto it = std::lower_bound(resident.begin(), resident.end(), p);
        EXPECT_TRUE(it != resident.end() && *it == p) << "kept position " << p << " was evicted";
        got_entries.push_back(static_cast<int32_t>(it - resident.begin()));
    }
    EXPECT_TRUE(same_modulo_ties(got_entries, want.keep, want.scores, 1e-6))
        << "seq " << seq << " layer " << layer << " after " << len << " tokens";
    return got;
}

// Expects row `row` of every layer's output to be softmax attention of token `pos` of `seq` over
// exactly the tokens at positions `read`.
inline void expect_reads(const ContractDriver& d, const TokenData& data,
                         const std::vector<std::vector<float>>& outs, int32_t row, int32_t seq,
                         int32_t layer, int32_t pos, const std::vector<int32_t>& read) {
    const int32_t dim = d.args().head_dim;
    const int32_t group = d.args().num_heads / d.args().num_kv_heads;
    const int64_t width = int64_t{d.args().num_heads} * dim;
    for (int32_t h = 0; h < d.args().num_heads; ++h) {
        std::vector<const float*> ks, vs;
        for (int32_t p : read) {
            ks.push_back(data.k(seq, layer, p) + (h / group) * dim);
            vs.push_back(data.v(seq, layer, p) + (h / group) * dim);
        }
        const auto want =
            naive_attention(data.q(seq, layer, pos) + h * dim, ks, vs, dim, d.args().scale);
        for (int32_t x = 0; x < dim; ++x) {
            EXPECT_NEAR(outs[layer][row * width + h * dim + x], want[x], 1e-5)
                << "seq " << seq << " layer " << layer << " head " << h;
        }
    }
}

// The GQA shapes and pooling kinds the rule tests run over.
struct WindowCase {
    int32_t num_heads;
    int32_t num_kv_heads;
    bool max_pool;
};

inline void PrintTo(const WindowCase& c, std::ostream* os) {
    *os << c.num_heads << " heads, " << c.num_kv_heads << " KV heads, "
        << (c.max_pool ? "max" : "avg") << " pooling";
}

inline auto window_cases() {
    return ::testing::Values(WindowCase{8, 8, true}, WindowCase{8, 2, true}, WindowCase{8, 1, true},
                             WindowCase{8, 8, false}, WindowCase{8, 2, false},
                             WindowCase{8, 1, false});
}

inline std::string window_case_name(const ::testing::TestParamInfo<WindowCase>& info) {
    const WindowCase& c = info.param;
    return "G" + std::to_string(c.num_heads / c.num_kv_heads) + (c.max_pool ? "Max" : "Avg");
}

}  // namespace se::testing
