#include "core/host_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace se {
namespace {

TEST(HostBufferTest, SmallBufferIsZeroedAndAligned) {
    HostBuffer b(1000);
    ASSERT_EQ(b.size(), 1000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], 0);
}

TEST(HostBufferTest, LargeBufferIsZeroedWritableAndMovable) {
    auto b = HostBuffer::allocate(size_t{8} << 20);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->data()[0], 0);
    EXPECT_EQ(b->data()[b->size() - 1], 0);
    b->data()[12345] = 7;
    HostBuffer moved = std::move(b).value();
    EXPECT_EQ(moved.data()[12345], 7);
    EXPECT_EQ(moved.size(), size_t{8} << 20);
}

TEST(HostBufferTest, ImpossibleAllocationIsAStatus) {
    auto b = HostBuffer::allocate(size_t{1} << 62);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
}

TEST(HostBufferTest, EmptyBuffer) {
    HostBuffer b;
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace se
