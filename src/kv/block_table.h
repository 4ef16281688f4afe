// One sequence's blocks. Logical length (tokens processed) and physical length (entries resident)
// are kept apart: methods that evict entries make them differ.
//
//   tokens processed:  [0 ............................................ num_tokens)
//   entries resident:  [0 ............ num_entries)   (== num_tokens for dense caches)
//   blocks:            [ b0 | b1 | b2 | ... ]          entry j in blocks[j / block_size]
#pragma once

#include <cstdint>
#include <vector>

namespace se {

struct BlockTable {
    std::vector<int32_t> blocks;
    int32_t num_entries = 0;  // physical
    int32_t num_tokens = 0;   // logical
    // A sequence that started on a pruned cached prefix (kv/radix_cache.h) has holes: entries
    // [0, prefix_end) are the prefix's blocks, of which only prefix_live hold KV; its own
    // entries start at prefix_end, at token prefix_tokens.
    //
    //   entries:  [ prefix blocks, rows not in prefix_live unused | own entries ... num_entries)
    //             0                                      prefix_end
    //   tokens:   [ 0 ............................ prefix_tokens | own tokens ... num_tokens)
    bool holed = false;
    int32_t prefix_end = 0;
    int32_t prefix_tokens = 0;
    std::vector<int32_t> prefix_live;       // i32 [resident prefix entries] ascending entry ids
    std::vector<int32_t> prefix_positions;  // i32 [resident prefix entries] token of each

    int32_t capacity(int32_t block_size) const {
        return static_cast<int32_t>(blocks.size()) * block_size;
    }
    int64_t slot(int32_t entry, int32_t block_size) const {
        return int64_t{blocks[entry / block_size]} * block_size + entry % block_size;
    }
};

}  // namespace se
