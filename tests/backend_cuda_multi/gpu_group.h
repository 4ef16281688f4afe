// Every visible GPU as one tensor-parallel group, for the multi-GPU tests: a CudaOps per GPU, the
// NCCL communicators over them, and one thread per rank (its GPU current), as the engine will
// run them. With fewer than 2 GPUs a test fails rather than skips: only machines with more run
// these tests (label multi_gpu).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "../backend_cuda/cuda_test_util.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/nccl_communicator.h"

namespace se::cuda::testing {

class GpuGroupTest : public ::testing::Test {
  protected:
    void SetUp() override {
        int count = 0;
        const cudaError_t error = cudaGetDeviceCount(&count);
        if (error != cudaSuccess) count = 0;
        ASSERT_GE(count, 2) << "the multi_gpu tests need 2 or more GPUs; this machine has " << count
                            << " (cudaGetDeviceCount: " << cudaGetErrorString(error) << ")";
        std::vector<CudaOps*> ranks;
        for (int device = 0; device < count; ++device) {
            ops_.push_back(must(CudaOps::create(
                {.device = device, .max_step_tokens = 64, .max_seqs = 4, .max_model_len = 64})));
            ranks.push_back(ops_.back().get());
        }
        comms_ = must(create_nccl_communicators(ranks));
    }

    int32_t size() const { return static_cast<int32_t>(ops_.size()); }

    // Runs body(rank, its communicator, its ops) on one thread per rank, the rank's GPU current,
    // and waits for all. A body reports through EXPECT (an ASSERT would leave the other ranks
    // waiting in a collective) or through results that the test checks afterwards.
    void run_ranks(const std::function<void(int32_t, Communicator&, CudaOps&)>& body) {
        std::vector<std::thread> threads;
        for (int32_t r = 0; r < size(); ++r) {
            threads.emplace_back([&, r] {
                CudaOps& ops = *ops_[static_cast<size_t>(r)];
                must_ok(cuda_status(cudaSetDevice(ops.device()), "cudaSetDevice"));
                body(r, *comms_[static_cast<size_t>(r)], ops);
            });
        }
        for (std::thread& t : threads) t.join();
    }

  private:
    std::vector<std::unique_ptr<CudaOps>> ops_;
    std::vector<std::unique_ptr<Communicator>> comms_;  // destroyed first
};

// Host values into `buf` on `stream`, waiting for the copy.
template <typename T>
void copy_in(const DeviceBuffer& buf, const std::vector<T>& host, cudaStream_t stream) {
    SE_CHECK(buf.size_bytes() >= host.size() * sizeof(T));
    must_ok(cuda_status(cudaMemcpyAsync(buf.data(), host.data(), host.size() * sizeof(T),
                                        cudaMemcpyHostToDevice, stream),
                        "copy in"));
    must_ok(cuda_status(cudaStreamSynchronize(stream), "copy in"));
}

// A device copy of `host` on the calling thread's GPU.
template <typename T>
DeviceBuffer to_device(const std::vector<T>& host, cudaStream_t stream) {
    DeviceBuffer buf = must(DeviceBuffer::allocate(host.size() * sizeof(T)));
    copy_in(buf, host, stream);
    return buf;
}

// `count` values of `buf` once `stream` has got there.
template <typename T>
std::vector<T> to_host(const DeviceBuffer& buf, size_t count, cudaStream_t stream) {
    std::vector<T> host(count);
    must_ok(cuda_status(
        cudaMemcpyAsync(host.data(), buf.data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream),
        "copy out"));
    must_ok(cuda_status(cudaStreamSynchronize(stream), "copy out"));
    return host;
}

// 0xff bytes (NaN as f32 and bf16) over `buf`, queued on `stream` (the tests' own poison() runs
// on the legacy stream, which the ranks' non-blocking streams do not wait for).
inline void poison(const DeviceBuffer& buf, cudaStream_t stream) {
    must_ok(cuda_status(cudaMemsetAsync(buf.data(), 0xff, buf.size_bytes(), stream), "poison"));
}

// Rank r's input to a reduction: with 2 ranks any floats (a sum of two is the same either way
// round); with more, multiples of 1/2 in [-8, 8], whose sums are exact in any order in f32 and
// in bf16, since NCCL does not add in rank order.
inline std::vector<float> rank_input(int32_t size, int32_t rank, int64_t n, uint32_t seed) {
    std::vector<float> v = random_floats(n, seed + static_cast<uint32_t>(rank));
    if (size > 2) {
        for (float& x : v) x = std::round(x * 16.0f) / 2.0f;
    }
    return v;
}

}  // namespace se::cuda::testing
