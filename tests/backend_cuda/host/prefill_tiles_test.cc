// The CTA and KV-tile arithmetic of prefill attention (prefill_tiles.h), checked on the CPU
// against a row-by-row statement of the causal rule: every packed row of every sequence belongs to
// exactly one CTA, every key a row sees lies in a KV tile the CTA reads, the unmasked tiles
// hold only keys every row of the CTA sees, and each warp's end key is the last key its rows see. A
// wrong bound here would drop or leak keys on the GPU.
#include "backend/cuda/prefill_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace se::cuda {
namespace {

struct Seq {
    int32_t q_len;
    int32_t kv_len;
};

void check_tiles(const std::vector<Seq>& seqs, int32_t group) {
    int32_t max_q_len = 0;
    for (const Seq& s : seqs) max_q_len = std::max(max_q_len, s.q_len);
    const int32_t num_seqs = static_cast<int32_t>(seqs.size());
    const int32_t tiles = prefill_tiles_per_seq(max_q_len, group);
    std::vector<std::vector<int>> owner(seqs.size());  // CTAs holding each packed row
    for (size_t s = 0; s < seqs.size(); ++s) owner[s].assign(seqs[s].q_len * group, 0);

    for (int32_t cta = 0; cta < num_seqs * tiles; ++cta) {
        const PrefillCta c = prefill_cta(cta, num_seqs, tiles);
        ASSERT_GE(c.seq, 0);
        ASSERT_LT(c.seq, num_seqs);
        ASSERT_GE(c.tile, 0);
        ASSERT_LT(c.tile, tiles);
        const Seq& s = seqs[c.seq];
        const int32_t prefix = s.kv_len - s.q_len;
        const PrefillTileRange r = prefill_tile_range(c.tile, s.q_len, s.kv_len, group);
        ASSERT_LE(r.num_full_kv_tiles, r.num_kv_tiles);
        ASSERT_LE(r.end_key, s.kv_len);
        ASSERT_LE(r.num_kv_tiles * kPrefillTileKeys - r.end_key, kPrefillTileKeys - 1);
        int32_t max_last = -1;
        for (int32_t row = r.first_row; row < r.first_row + r.num_rows; ++row) {
            ++owner[c.seq][row];
            const int32_t last = r.last_key(row, group, prefix);
            EXPECT_EQ(last, prefix + row / group) << "row " << row;
            EXPECT_LT(last, r.num_kv_tiles * kPrefillTileKeys) << "row " << row;
            EXPECT_GE(last + 1, r.num_full_kv_tiles * kPrefillTileKeys) << "row " << row;
            max_last = std::max(max_last, last);
        }
        EXPECT_EQ(r.end_key, max_last + 1) << "cta " << cta;
        // Rows of the CTA past the sequence (never written) stay inside the keys it reads.
        for (int32_t row = r.first_row + r.num_rows; row < r.first_row + kPrefillTileRows; ++row)
            EXPECT_LT(r.last_key(row, group, prefix), r.end_key);
        // A warp computes keys [0, warp end): every key its rows see, and no tile past the
        // CTA's; it may skip what lies beyond only because no row of it sees that.
        for (int32_t warp = 0; warp < kPrefillWarps; ++warp) {
            const int32_t end = prefill_warp_end_key(r, warp, group, prefix);
            const int32_t first = r.first_row + warp * kPrefillWarpRows;
            const int32_t stop = std::min(first + kPrefillWarpRows, r.first_row + r.num_rows);
            int32_t warp_last = -1;
            for (int32_t row = first; row < stop; ++row)
                warp_last = std::max(warp_last, prefix + row / group);
            EXPECT_EQ(end, warp_last + 1) << "cta " << cta << " warp " << warp;
            EXPECT_LE(end, r.end_key);
        }
    }
    for (size_t s = 0; s < seqs.size(); ++s) {
        for (size_t row = 0; row < owner[s].size(); ++row)
            ASSERT_EQ(owner[s][row], 1) << "sequence " << s << " row " << row;
    }
}

TEST(PrefillTiles, RaggedChunkedBatch) {
    const std::vector<Seq> seqs = {{1, 1},    {17, 17}, {0, 0},     {0, 40},     {64, 64},
                                   {65, 300}, {1, 900}, {200, 263}, {2000, 2000}};
    for (int32_t group : {1, 2, 3, 4, 8}) check_tiles(seqs, group);
}

TEST(PrefillTiles, PrefixOnTileEdges) {
    for (int32_t prefix : {0, 1, 63, 64, 65, 127, 128}) {
        for (int32_t q_len : {1, 15, 16, 63, 64, 65, 130})
            check_tiles({{q_len, q_len + prefix}}, 4);
    }
}

TEST(PrefillTiles, LongestTilesComeFirst) {
    // Grid x = 0 is the last tile of sequence 0; each later tile index follows every sequence.
    EXPECT_EQ(prefill_cta(0, 3, 5).tile, 4);
    EXPECT_EQ(prefill_cta(2, 3, 5).seq, 2);
    EXPECT_EQ(prefill_cta(3, 3, 5).tile, 3);
    EXPECT_EQ(prefill_tiles_per_seq(0, 4), 0);
    EXPECT_EQ(prefill_tiles_per_seq(kPrefillTileRows / 4, 4), 1);
    EXPECT_EQ(prefill_tiles_per_seq(kPrefillTileRows / 4 + 1, 4), 2);
}

TEST(PrefillTiles, WarpsOnTheDiagonal) {
    // A fresh 32-token prompt, group 4: one CTA of 128 rows, warp w holds tokens 8w .. 8w + 7.
    const PrefillTileRange r = prefill_tile_range(0, 32, 32, 4);
    for (int32_t warp = 0; warp < kPrefillWarps; ++warp)
        EXPECT_EQ(prefill_warp_end_key(r, warp, 4, 0), 8 * warp + 8);
    // 9 tokens: warp 1 holds only row 32 (token 8), warps 2 and 3 nothing.
    const PrefillTileRange short_r = prefill_tile_range(0, 9, 9, 4);
    EXPECT_EQ(prefill_warp_end_key(short_r, 1, 4, 0), 9);
    EXPECT_EQ(prefill_warp_end_key(short_r, 2, 4, 0), 0);
    EXPECT_EQ(prefill_warp_end_key(short_r, 3, 4, 0), 0);
}

TEST(PrefillTiles, FullTilesNeedNoMask) {
    // 8192 cached entries, then a 64-row tile of group 1: every row sees keys [0, 8192].
    const PrefillTileRange r = prefill_tile_range(0, 64, 8192 + 64, 1);
    EXPECT_EQ(r.num_full_kv_tiles, 8192 / kPrefillTileKeys);
    EXPECT_EQ(r.num_kv_tiles, 8192 / kPrefillTileKeys + 1);
    EXPECT_EQ(r.end_key, 8192 + 64);
}

}  // namespace
}  // namespace se::cuda
