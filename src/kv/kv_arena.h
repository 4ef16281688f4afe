// The memory behind a BlockPool: one allocation at start-up, carved into per-layer regions of
// num_blocks blocks each. What a block's bytes mean is the cache manager's choice; the arena only
// knows how many bytes one block of one layer takes in each of its planes (K and V, say).
//
//   arena: [ layer 0: plane 0 [num_blocks x block_bytes] | plane 1 [...] | layer 1: ... ]
#pragma once

#include <cstdint>

#include "backend/backend_memory.h"
#include "core/expected.h"

namespace se {

struct KvArenaShape {
    int32_t num_layers = 0;
    int32_t num_planes = 2;   // K and V for explicit caches
    int64_t block_bytes = 0;  // bytes of one block in one plane of one layer
    int64_t num_blocks = 0;

    int64_t bytes_per_block_all_layers() const {
        return int64_t{num_layers} * num_planes * block_bytes;
    }
    int64_t total_bytes() const { return bytes_per_block_all_layers() * num_blocks; }
};

class KvArena {
  public:
    // Fails with resource_exhausted naming the size when memory cannot be had. The memory comes
    // from `memory` (the backend's: device memory on a GPU), host memory when it is null.
    static Expected<KvArena> create(const KvArenaShape& shape, BackendMemory* memory = nullptr);

    const KvArenaShape& shape() const { return shape_; }
    // Start of [num_blocks x block_bytes] for (layer, plane).
    void* plane(int32_t layer, int32_t plane);

  private:
    KvArena(KvArenaShape shape, BackendBuffer buffer) : shape_(shape), buffer_(std::move(buffer)) {}

    KvArenaShape shape_;
    BackendBuffer buffer_;
};

}  // namespace se
