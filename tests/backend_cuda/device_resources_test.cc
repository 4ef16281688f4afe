// DeviceBuffer, CudaStream and CudaEvent: ownership moves, CUDA failures come back as Status.
#include <gtest/gtest.h>

#include <utility>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/event.h"
#include "backend/cuda/stream.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::must;

TEST(DeviceBuffer, MoveTransfersOwnership) {
    DeviceBuffer a = must(DeviceBuffer::allocate(1 << 20));
    void* const data = a.data();
    ASSERT_NE(data, nullptr);
    DeviceBuffer b = std::move(a);
    EXPECT_EQ(b.data(), data);
    EXPECT_EQ(b.size_bytes(), size_t{1} << 20);
    EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
    a = std::move(b);
    EXPECT_EQ(a.data(), data);
}

TEST(DeviceBuffer, ZeroBytesIsEmpty) {
    const DeviceBuffer a = must(DeviceBuffer::allocate(0));
    EXPECT_EQ(a.data(), nullptr);
}

TEST(DeviceBuffer, OutOfMemoryIsResourceExhausted) {
    const Expected<DeviceBuffer> a = DeviceBuffer::allocate(size_t{1} << 50);  // 1 PiB
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(a.status().message().find("cudaMalloc"), std::string::npos);
    EXPECT_NE(a.status().message().find("cudaErrorMemoryAllocation"), std::string::npos)
        << a.status().message();
    // The failed allocation is reported once: neither the next call nor the next launch's
    // status sees it again.
    EXPECT_TRUE(must(DeviceBuffer::allocate(256)).data() != nullptr);
    EXPECT_TRUE(launch_status("no launch").ok());
}

TEST(CudaStreamAndEvent, TimeAnEmptyStretch) {
    const CudaStream stream = must(CudaStream::create());
    const CudaEvent start = must(CudaEvent::create(EventKind::kTiming));
    const CudaEvent end = must(CudaEvent::create(EventKind::kTiming));
    ASSERT_TRUE(start.record(stream.get()).ok());
    const DeviceBuffer buf = must(DeviceBuffer::allocate(1 << 20));
    ASSERT_TRUE(cuda_status(cudaMemsetAsync(buf.data(), 0, 1 << 20, stream.get()), "memset").ok());
    ASSERT_TRUE(end.record(stream.get()).ok());
    ASSERT_TRUE(end.synchronize().ok());
    ASSERT_TRUE(stream.synchronize().ok());
    const Expected<float> ms = CudaEvent::elapsed_ms(start, end);
    ASSERT_TRUE(ms.ok()) << ms.status().to_string();
    EXPECT_GE(*ms, 0.0f);
}

TEST(CudaStatus, CarriesTheCallAndCudaText) {
    const Status s = cuda_status(cudaErrorInvalidValue, "cudaMemcpy of the logits");
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("cudaMemcpy of the logits"), std::string::npos);
    EXPECT_NE(s.message().find("cudaErrorInvalidValue"), std::string::npos) << s.message();
    EXPECT_TRUE(cuda_status(cudaSuccess, "anything").ok());
}

}  // namespace
}  // namespace se::cuda
