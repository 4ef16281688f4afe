// The CTA and KV-tile arithmetic of prefill attention (prefill_tiles.h), checked on the CPU
// against a row-by-row statement of the causal rule: every packed row of every sequence belongs to
// exactly one CTA, every key a row sees lies in a KV tile the CTA reads, the unmasked tiles
// hold only keys every row of the CTA sees, and each warp's (wgmma: consumer warpgroup's) end key
// is the last key its rows see. Both kernels' geometries: 64-key tiles and 32-row warps
// (mma.sync), 128-key tiles and 64-row warpgroups (wgmma). A wrong bound here would drop or leak
// keys on the GPU.
#include "backend/cuda/prefill_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace se::cuda {
namespace {

struct Seq {
    int32_t q_len;
    int32_t kv_len;
};

// The two kernels' KV tiles and row split: keys per tile, and rows per warp (mma.sync) or per
// consumer warpgroup (wgmma).
struct Geometry {
    int32_t tile_keys;
    int32_t part_rows;
};
constexpr Geometry kMmaSync = {kPrefillTileKeys, kPrefillWarpRows};
constexpr Geometry kWgmma = {kWgmmaTileKeys, kWgmmaGroupRows};

void check_tiles(const std::vector<Seq>& seqs, int32_t group, Geometry geo) {
    const int32_t tile_keys = geo.tile_keys;
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
        const PrefillTileRange r = prefill_tile_range(c.tile, s.q_len, s.kv_len, group, tile_keys);
        ASSERT_LE(r.num_full_kv_tiles, r.num_kv_tiles);
        ASSERT_LE(r.end_key, s.kv_len);
        ASSERT_LE(r.num_kv_tiles * tile_keys - r.end_key, tile_keys - 1);
        int32_t max_last = -1;
        for (int32_t row = r.first_row; row < r.first_row + r.num_rows; ++row) {
            ++owner[c.seq][row];
            const int32_t last = r.last_key(row, group, prefix);
            EXPECT_EQ(last, prefix + row / group) << "row " << row;
            EXPECT_LT(last, r.num_kv_tiles * tile_keys) << "row " << row;
            EXPECT_GE(last + 1, r.num_full_kv_tiles * tile_keys) << "row " << row;
            max_last = std::max(max_last, last);
        }
        EXPECT_EQ(r.end_key, max_last + 1) << "cta " << cta;
        // Rows of the CTA past the sequence (never written) stay inside the keys it reads.
        for (int32_t row = r.first_row + r.num_rows; row < r.first_row + kPrefillTileRows; ++row)
            EXPECT_LT(r.last_key(row, group, prefix), r.end_key);
        // A warp (warpgroup) computes keys [0, its end): every key its rows see, and no tile
        // past the CTA's; it may skip what lies beyond only because no row of it sees that. It
        // leaves its first num_full_kv_tiles tiles unmasked: each of its rows sees all of them.
        for (int32_t part = 0; part < kPrefillTileRows / geo.part_rows; ++part) {
            const PrefillRowsSpan span =
                prefill_rows_span(r, part * geo.part_rows, geo.part_rows, group, prefix, tile_keys);
            const int32_t first = r.first_row + part * geo.part_rows;
            const int32_t stop = std::min(first + geo.part_rows, r.first_row + r.num_rows);
            int32_t part_last = -1;
            int32_t part_first_end = -1;
            for (int32_t row = first; row < stop; ++row) {
                part_last = std::max(part_last, prefix + row / group);
                if (part_first_end < 0) part_first_end = prefix + row / group + 1;
            }
            const std::string where =
                "cta " + std::to_string(cta) + " part " + std::to_string(part);
            EXPECT_EQ(span.end_key, part_last + 1) << where;
            EXPECT_LE(span.end_key, r.end_key) << where;
            EXPECT_LE(span.num_kv_tiles, r.num_kv_tiles) << where;
            EXPECT_LE(span.num_full_kv_tiles, span.num_kv_tiles) << where;
            EXPECT_GE(span.num_kv_tiles * tile_keys, span.end_key) << where;
            EXPECT_LT((span.num_kv_tiles - 1) * tile_keys, std::max(span.end_key, 1)) << where;
            if (stop > first) {
                EXPECT_LE(span.num_full_kv_tiles * tile_keys, part_first_end) << where;
                EXPECT_GT((span.num_full_kv_tiles + 1) * tile_keys, part_first_end) << where;
                // Rows of the part past the sequence (computed, never written) see only keys the
                // part reads, so that they stay finite.
                for (int32_t row = stop; row < first + geo.part_rows; ++row)
                    EXPECT_LT(r.last_key(row, group, prefix), span.num_kv_tiles * tile_keys);
            } else {
                EXPECT_EQ(span.num_kv_tiles, 0) << where;
            }
            if (geo.part_rows == kPrefillWarpRows && tile_keys == kPrefillTileKeys) {
                EXPECT_EQ(prefill_warp_end_key(r, part, group, prefix), span.end_key) << where;
            }
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
    for (int32_t group : {1, 2, 3, 4, 8}) {
        check_tiles(seqs, group, kMmaSync);
        check_tiles(seqs, group, kWgmma);
    }
}

TEST(PrefillTiles, PrefixOnTileEdges) {
    for (int32_t prefix : {0, 1, 63, 64, 65, 127, 128, 129, 255, 256}) {
        for (int32_t q_len : {1, 15, 16, 63, 64, 65, 130, 257}) {
            for (int32_t group : {1, 3, 4}) {
                check_tiles({{q_len, q_len + prefix}}, group, kMmaSync);
                check_tiles({{q_len, q_len + prefix}}, group, kWgmma);
            }
        }
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
    // The same rows in 128-key tiles, and each consumer warpgroup's share (group 1: warpgroup 1
    // holds tokens 64 .. 127 of a 128-token tile).
    const PrefillTileRange w = prefill_tile_range(0, 64, 8192 + 64, 1, kWgmmaTileKeys);
    EXPECT_EQ(w.num_full_kv_tiles, 8192 / kWgmmaTileKeys);
    EXPECT_EQ(w.num_kv_tiles, 8192 / kWgmmaTileKeys + 1);
    const PrefillTileRange fresh = prefill_tile_range(1, 256, 256, 1, kWgmmaTileKeys);
    const PrefillRowsSpan lo = prefill_rows_span(fresh, 0, kWgmmaGroupRows, 1, 0, kWgmmaTileKeys);
    const PrefillRowsSpan hi = prefill_rows_span(fresh, 64, kWgmmaGroupRows, 1, 0, kWgmmaTileKeys);
    EXPECT_EQ(lo.end_key, 192);
    EXPECT_EQ(lo.num_full_kv_tiles, 1);
    EXPECT_EQ(lo.num_kv_tiles, 2);
    EXPECT_EQ(hi.end_key, 256);
    EXPECT_EQ(hi.num_full_kv_tiles, 1);  // row 192 sees keys [0, 193): one whole tile
    EXPECT_EQ(hi.num_kv_tiles, 2);
}

}  // namespace
}  // namespace se::cuda
