// StepStaging's ways of sending a step's inputs (step_staging.h): queued copies, a graph step's
// host-only staging sent by one flush, and host copies that kernels read in place. Each device
// copy must hold the bytes staged, whichever way they went, and a flush must order the stream
// after its copy.
#include "backend/cuda/step_staging.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "backend/cuda/stream.h"
#include "cuda_test_util.h"

namespace se::cuda {
namespace {

using testing::must;
using testing::must_ok;

std::vector<int32_t> iota_from(int32_t first, size_t n) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), first);
    return v;
}

std::vector<int32_t> read_back(const int32_t* device, size_t n, cudaStream_t stream) {
    std::vector<int32_t> host(n, -1);
    must_ok(cuda_status(
        cudaMemcpyAsync(host.data(), device, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
        "read back"));
    must_ok(cuda_status(cudaStreamSynchronize(stream), "read back"));
    return host;
}

TEST(StepStagingTest, OneFlushSendsEverythingAGraphStepStaged) {
    const CudaStream stream = must(CudaStream::create());
    StepStaging staging = must(StepStaging::create(1 << 16));
    for (int32_t step = 0; step < 4; ++step) {  // both pairs of arenas, twice each
        must_ok(staging.begin_step(StagingSend::kHostOnly, stream.get()));
        const std::vector<int32_t> ids = iota_from(100 * step, 3);
        const std::vector<int32_t> table = iota_from(100 * step + 50, 1000);
        const int32_t* d_ids = must(staging.upload(std::span<const int32_t>(ids), stream.get()));
        StepStaging::Slot slot =
            must(staging.reserve(table.size() * sizeof(int32_t), stream.get()));
        std::copy(table.begin(), table.end(), static_cast<int32_t*>(slot.host));
        must_ok(staging.send(slot, stream.get()));  // host-only: nothing is sent yet
        must_ok(staging.flush(stream.get()));
        EXPECT_EQ(read_back(d_ids, ids.size(), stream.get()), ids) << "step " << step;
        EXPECT_EQ(read_back(static_cast<const int32_t*>(slot.device), table.size(), stream.get()),
                  table)
            << "step " << step;
        ASSERT_EQ(staging.trace().entries().size(), 2u);
        EXPECT_EQ(staging.trace().entries()[0].offset, 0u);
    }
}

TEST(StepStagingTest, QueuedStepsCopyEachUploadAndRefuseAFlush) {
    const CudaStream stream = must(CudaStream::create());
    StepStaging staging = must(StepStaging::create(256));
    must_ok(staging.begin_step(StagingSend::kQueue, stream.get()));
    const std::vector<int32_t> big = iota_from(7, 5000);  // grows the arena
    const int32_t* d_big = must(staging.upload(std::span<const int32_t>(big), stream.get()));
    EXPECT_EQ(read_back(d_big, big.size(), stream.get()), big);
    EXPECT_EQ(staging.arena_version(), 1u);
    const Status flushed = staging.flush(stream.get());
    EXPECT_EQ(flushed.code(), StatusCode::kFailedPrecondition) << flushed.to_string();
    EXPECT_NE(flushed.message().find("flush"), std::string::npos) << flushed.to_string();
}

TEST(StepStagingTest, AGraphStepCannotGrowTheArena) {
    const CudaStream stream = must(CudaStream::create());
    StepStaging staging = must(StepStaging::create(256));
    must_ok(staging.begin_step(StagingSend::kHostOnly, stream.get()));
    const auto grown = staging.reserve(4096, stream.get());
    ASSERT_FALSE(grown.ok());
    EXPECT_EQ(grown.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(grown.status().message().find("graph step"), std::string::npos);
}

// A kernel reads a host copy in place (SampleRowsPinned runs one that does): the copy lies in
// pinned memory that the device maps at the same address (unified addressing), and holds the
// bytes staged.
TEST(StepStagingTest, HostCopiesAreMappedAtTheirHostAddress) {
    const CudaStream stream = must(CudaStream::create());
    StepStaging staging = must(StepStaging::create(1 << 12));
    must_ok(staging.begin_step(StagingSend::kQueue, stream.get()));
    const std::vector<int32_t> rows = iota_from(-9, 17);
    const int32_t* h_rows = must(staging.host_copy(std::span<const int32_t>(rows), stream.get()));
    EXPECT_EQ(std::vector<int32_t>(h_rows, h_rows + rows.size()), rows);
    cudaPointerAttributes attributes{};
    must_ok(cuda_status(cudaPointerGetAttributes(&attributes, h_rows), "cudaPointerGetAttributes"));
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
    EXPECT_EQ(attributes.devicePointer, static_cast<const void*>(h_rows));
}

}  // namespace
}  // namespace se::cuda
