#include "kv/kv_arena.h"

#include <fmt/core.h>

namespace se {

Expected<KvArena> KvArena::create(const KvArenaShape& shape, BackendMemory* memory) {
    if (shape.num_layers <= 0 || shape.num_planes <= 0 || shape.block_bytes <= 0 ||
        shape.num_blocks <= 0) {
        return invalid_argument(fmt::format(
            "KV arena: layers {}, planes {}, block bytes {}, blocks {}: all must be positive",
            shape.num_layers, shape.num_planes, shape.block_bytes, shape.num_blocks));
    }
    int64_t total = 0;
    if (__builtin_mul_overflow(shape.bytes_per_block_all_layers(), shape.num_blocks, &total)) {
        return resource_exhausted("KV arena size overflows 64 bits");
    }
    BackendMemory host;
    auto buffer =
        (memory != nullptr ? memory : &host)->allocate(static_cast<size_t>(shape.total_bytes()));
    if (!buffer.ok()) {
        return resource_exhausted(fmt::format("KV arena of {:.1f} MiB ({} blocks): {}",
                                              shape.total_bytes() / 1048576.0, shape.num_blocks,
                                              buffer.status().message()));
    }
    return KvArena(shape, std::move(buffer).value());
}

void* KvArena::plane(int32_t layer, int32_t plane) {
    SE_CHECK(layer >= 0 && layer < shape_.num_layers && plane >= 0 && plane < shape_.num_planes);
    const int64_t plane_bytes = shape_.num_blocks * shape_.block_bytes;
    const int64_t index = int64_t{layer} * shape_.num_planes + plane;
    return buffer_.as<uint8_t>() + index * plane_bytes;
}

}  // namespace se
