#include "kv/kv_arena.h"

#include <gtest/gtest.h>

#include <cstring>

namespace se {
namespace {

TEST(KvArenaTest, PlanesAreDisjointAndCoverTheArena) {
    KvArenaShape shape{.num_layers = 3, .num_planes = 2, .block_bytes = 256, .num_blocks = 5};
    auto arena = KvArena::create(shape);
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    const int64_t plane_bytes = 5 * 256;
    auto* base = static_cast<uint8_t*>(arena->plane(0, 0));
    for (int32_t layer = 0; layer < 3; ++layer) {
        for (int32_t plane = 0; plane < 2; ++plane) {
            auto* p = static_cast<uint8_t*>(arena->plane(layer, plane));
            EXPECT_EQ(p - base, (layer * 2 + plane) * plane_bytes);
            std::memset(p, layer * 2 + plane + 1, plane_bytes);
        }
    }
    EXPECT_EQ(static_cast<uint8_t*>(arena->plane(2, 1))[plane_bytes - 1], 6);
    EXPECT_EQ(shape.total_bytes(), 3 * 2 * plane_bytes);
}

TEST(KvArenaTest, RejectsEmptyShapeNamingTheFields) {
    auto arena =
        KvArena::create({.num_layers = 2, .num_planes = 2, .block_bytes = 0, .num_blocks = 4});
    ASSERT_FALSE(arena.ok());
    EXPECT_NE(arena.status().message().find("block bytes 0"), std::string::npos);
}

TEST(KvArenaTest, ImpossibleSizeIsResourceExhausted) {
    auto arena = KvArena::create({.num_layers = 1000,
                                  .num_planes = 2,
                                  .block_bytes = int64_t{1} << 30,
                                  .num_blocks = 1 << 10});
    ASSERT_FALSE(arena.ok());
    EXPECT_EQ(arena.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace se
