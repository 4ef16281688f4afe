// How paged prefill attention (prefill_attention.h) cuts a ragged batch into CTAs, and which KV
// tiles a CTA reads. Shared by the kernel and the host tests (plain C++ too).
//
// A CTA owns kPrefillTileRows packed rows of one sequence and one KV head. Packed row r of a
// sequence is query token r / group of query head kv_head * group + r % group, so the heads of a
// GQA group share every K and V tile the CTA loads:
//
//   packed rows  | t0 h0 | t0 h1 | t0 h2 | t0 h3 | t1 h0 | ... (group 4)
//   tile 0       [ rows 0 .. 127 ] = tokens 0 .. 31, every head of the group
//   warps        [ 0: rows 0-31 ][ 1: 32-63 ][ 2: 64-95 ][ 3: 96-127 ]
//
// The sequence's entries are a cached prefix and the q_len new ones; token i sees [0, prefix + i]:
//
//   keys     [0 ...................... prefix + first] ( ...... prefix + last]
//             every row of the tile sees these          diagonal: masked per row
//   KV tiles [ 0 .. num_full_kv_tiles )                 [ .. num_kv_tiles )    rest: never read
//
// Grid x walks tiles from the last (the most keys) down, every sequence's tile t before any
// tile t - 1, so the longest CTAs start first and the short ones fill the tail.
//
// On the diagonal the warps of a CTA see different numbers of keys: a warp skips the keys from
// prefill_warp_end_key on (fully masked for its rows, so skipping them changes no bit of its
// output), and a warp without rows of the sequence computes nothing.
//
// Two kernels share this arithmetic with different KV tiles: the mma.sync kernel
// (prefill_attention.cu, 64 keys, 4 warps of 32 rows) and the wgmma kernel (sm90a/, 128 keys, 2
// consumer warpgroups of 64 rows). Both cut the rows the same way (kPrefillTileRows per CTA), so
// a sequence's rows land in the same CTAs under either.
#pragma once

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace se::cuda {

inline constexpr int32_t kPrefillTileRows = 128;  // packed query rows per CTA
inline constexpr int32_t kPrefillWarps = 4;       // warps per CTA
inline constexpr int32_t kPrefillWarpRows = kPrefillTileRows / kPrefillWarps;  // rows per warp
inline constexpr int32_t kPrefillTileKeys = 64;  // keys per KV tile of the mma.sync kernel
inline constexpr int32_t kWgmmaTileKeys = 128;   // keys per KV tile of the wgmma kernel
inline constexpr int32_t kWgmmaGroupRows = 64;   // packed rows of one wgmma consumer warpgroup

// Query tiles of the longest sequence: grid x is num_seqs times this.
SE_HOST_DEVICE inline int32_t prefill_tiles_per_seq(int32_t max_q_len, int32_t group) {
    const int64_t rows = int64_t{max_q_len} * group;
    return static_cast<int32_t>((rows + kPrefillTileRows - 1) / kPrefillTileRows);
}

// The sequence and query tile of CTA `cta` (blockIdx.x).
struct PrefillCta {
    int32_t seq = 0;
    int32_t tile = 0;
};

SE_HOST_DEVICE inline PrefillCta prefill_cta(int32_t cta, int32_t num_seqs, int32_t tiles_per_seq) {
    return {cta % num_seqs, tiles_per_seq - 1 - cta / num_seqs};
}

// What one CTA computes; num_rows 0 means nothing (the tile is past its sequence's q_len).
struct PrefillTileRange {
    int32_t first_row = 0;          // first packed row of the tile
    int32_t num_rows = 0;           // packed rows of the tile inside q_len * group
    int32_t end_key = 0;            // keys [0, end_key) are visible to some row of the tile
    int32_t num_full_kv_tiles = 0;  // KV tiles every row sees entirely: no mask
    int32_t num_kv_tiles = 0;       // KV tiles read, the last ones masked

    // The last key that packed row `row` (of the sequence) sees; -1 when none.
    SE_HOST_DEVICE int32_t last_key(int32_t row, int32_t group, int32_t prefix) const {
        const int32_t key = prefix + row / group;
        return key < end_key ? key : end_key - 1;  // rows past q_len: clamped, never written
    }
};

// prefix = kv_len - q_len (the cached entries); kv_len >= q_len. KV tiles hold tile_keys keys.
SE_HOST_DEVICE inline PrefillTileRange prefill_tile_range(int32_t tile, int32_t q_len,
                                                          int32_t kv_len, int32_t group,
                                                          int32_t tile_keys = kPrefillTileKeys) {
    PrefillTileRange r;
    r.first_row = tile * kPrefillTileRows;
    const int32_t seq_rows = q_len * group;
    if (r.first_row >= seq_rows) return r;
    r.num_rows =
        seq_rows - r.first_row < kPrefillTileRows ? seq_rows - r.first_row : kPrefillTileRows;
    const int32_t prefix = kv_len - q_len;
    const int32_t first_token = r.first_row / group;
    const int32_t last_token = (r.first_row + r.num_rows - 1) / group;
    r.end_key = prefix + last_token + 1;
    if (r.end_key <= 0) {  // kv_len < q_len breaks the contract: no keys, zero rows
        r.end_key = 0;
        return r;
    }
    const int32_t first_end = prefix + first_token + 1;  // keys the tile's first row sees
    r.num_full_kv_tiles = first_end > 0 ? first_end / tile_keys : 0;
    r.num_kv_tiles = (r.end_key + tile_keys - 1) / tile_keys;
    return r;
}

// What rows [first, first + count) of a CTA (offsets from its first row; those inside num_rows)
// see, in KV tiles of tile_keys keys: all zero when none of them is inside num_rows.
struct PrefillRowsSpan {
    int32_t end_key = 0;  // keys [0, end_key) hold every key they see; one sees end_key - 1
    int32_t num_full_kv_tiles = 0;  // KV tiles that each of them sees entirely: no mask
    int32_t num_kv_tiles = 0;       // KV tiles holding a key that one of them sees
};

SE_HOST_DEVICE inline PrefillRowsSpan prefill_rows_span(const PrefillTileRange& r, int32_t first,
                                                        int32_t count, int32_t group,
                                                        int32_t prefix, int32_t tile_keys) {
    PrefillRowsSpan s;
    if (first >= r.num_rows || r.end_key <= 0) return s;
    const int32_t last = first + count < r.num_rows ? first + count - 1 : r.num_rows - 1;
    s.end_key = r.last_key(r.first_row + last, group, prefix) + 1;
    if (s.end_key <= 0) return {};  // kv_len < q_len breaks the contract: no keys, zero rows
    // last_key grows with the row, so the first row sees the fewest keys.
    const int32_t first_end = r.last_key(r.first_row + first, group, prefix) + 1;
    s.num_full_kv_tiles = first_end > 0 ? first_end / tile_keys : 0;
    s.num_kv_tiles = (s.end_key + tile_keys - 1) / tile_keys;
    return s;
}

// Keys [0, end) hold every key that a row of warp `warp` of the CTA (inside the tile's num_rows)
// sees, and key end - 1 is seen by one; 0 when the warp has no such row.
SE_HOST_DEVICE inline int32_t prefill_warp_end_key(const PrefillTileRange& r, int32_t warp,
                                                   int32_t group, int32_t prefix) {
    return prefill_rows_span(r, warp * kPrefillWarpRows, kPrefillWarpRows, group, prefix,
                             kPrefillTileKeys)
        .end_key;
}

}  // namespace se::cuda
