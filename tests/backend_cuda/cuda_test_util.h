// Helpers of the CUDA differential tests: device buffers filled from host vectors, outputs
// poisoned with NaN before every kernel run, bf16 rounding on the host, and comparisons in which
// NaN never passes.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ios>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../backend/backend_test_util.h"
#include "backend/cuda/activations.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/device_buffer.h"
#include "core/check.h"
#include "core/half.h"

namespace se::cuda::testing {

// One bf16 rounding: half an ulp with 8 significant bits is at most 2^-8 of the value. The
// kernels compute in f32 and round once on the way out, and the references compute in f64 from
// the same bf16 inputs, so a correct kernel is within this of the reference plus the small
// absolute slack each test states for its f32 arithmetic.
inline constexpr float kBf16RelTol = 1.0f / 256.0f;

// The value of an Expected, or the test process stops with its Status: a CUDA failure in a
// helper means no result to compare. ctest runs every test in its own process.
template <typename T>
T must(Expected<T> e) {
    SE_CHECK(e.ok(), "%s", e.status().to_string().c_str());
    return std::move(e).value();
}

inline void must_ok(const Status& s) {
    SE_CHECK(s.ok(), "%s", s.to_string().c_str());
}

using se::testing::random_floats;  // the CPU backend tests' seeded inputs

// SMs of the current device, for the launch rules that depend on them.
inline int32_t num_sms() {
    int device = 0;
    int sms = 0;
    must_ok(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
    must_ok(cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                        "cudaDeviceGetAttribute"));
    return sms;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
    return out;
}

inline std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
    return out;
}

// Random values already rounded to bf16, so the kernel and the reference see the same inputs.
inline std::vector<float> random_bf16_values(int64_t n, uint32_t seed, float lo = -1.0f,
                                             float hi = 1.0f) {
    return from_bf16(to_bf16(random_floats(n, seed, lo, hi)));
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& host) {
    DeviceBuffer buf = must(DeviceBuffer::allocate(host.size() * sizeof(T)));
    must_ok(cuda_status(
        cudaMemcpy(buf.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
        "upload"));
    return buf;
}

// bf16 on the device from f32 values on the host (rounded to nearest even).
inline DeviceBuffer upload_bf16(const std::vector<float>& host) {
    return upload(to_bf16(host));
}

// A buffer of `num_bytes` filled with 0xff bytes: NaN as f32 and as bf16, so an element the
// kernel forgot to write fails the comparison.
inline DeviceBuffer poisoned(size_t num_bytes) {
    DeviceBuffer buf = must(DeviceBuffer::allocate(num_bytes));
    must_ok(cuda_status(cudaMemset(buf.data(), 0xff, num_bytes), "poison"));
    return buf;
}

inline void poison(const DeviceBuffer& buf) {
    must_ok(cuda_status(cudaMemset(buf.data(), 0xff, buf.size_bytes()), "poison"));
}

// Waits for the legacy default stream to drain, or ends the test process after `seconds`: a
// kernel that hangs (a barrier phase that never completes) would otherwise hold the GPU until the
// job's own timeout. The process's exit tears the context and the kernel down.
inline void sync_or_abort(double seconds, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (cudaStreamQuery(nullptr) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "%s: still running after %.0f s: aborting the tests\n",
                         what.c_str(), seconds);
            std::abort();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

template <typename T>
std::vector<T> download(const DeviceBuffer& buf, size_t count) {
    std::vector<T> host(count);
    must_ok(cuda_status(cudaDeviceSynchronize(), "kernel"));
    must_ok(
        cuda_status(cudaMemcpy(host.data(), buf.data(), count * sizeof(T), cudaMemcpyDeviceToHost),
                    "download"));
    return host;
}

inline std::vector<float> download_bf16(const DeviceBuffer& buf, size_t count) {
    return from_bf16(download<uint16_t>(buf, count));
}

// Two bf16 buffers of `count` elements equal bit for bit; the first few elements that differ are
// reported by (row, column) of rows of `cols`.
inline void expect_same_bf16_bits(const DeviceBuffer& got, const DeviceBuffer& want, size_t count,
                                  int64_t cols, const std::string& what) {
    const std::vector<uint16_t> g = download<uint16_t>(got, count);
    const std::vector<uint16_t> w = download<uint16_t>(want, count);
    int failures = 0;
    for (size_t i = 0; i < count && failures < 10; ++i) {
        if (g[i] == w[i]) continue;
        ADD_FAILURE() << what << " [" << static_cast<int64_t>(i) / cols << ", "
                      << static_cast<int64_t>(i) % cols << "] bits 0x" << std::hex << g[i]
                      << ", want 0x" << w[i] << std::dec;
        ++failures;
    }
}

// Every element within abs_tol + rel_tol * |want| of want; NaN never passes.
inline void expect_all_near(const std::vector<float>& got, const std::vector<float>& want,
                            float abs_tol, float rel_tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int failures = 0;
    for (size_t i = 0; i < got.size() && failures < 10; ++i) {
        const float tol = abs_tol + rel_tol * std::fabs(want[i]);
        if (!(std::fabs(got[i] - want[i]) <= tol)) {
            ADD_FAILURE() << what << " at " << i << ": got " << got[i] << ", want " << want[i]
                          << " (tolerance " << tol << ")";
            ++failures;
        }
    }
}

// Bitwise equality of two f32 arrays (a NaN in either fails: NaN != NaN).
inline void expect_all_equal(const std::vector<float>& got, const std::vector<float>& want,
                             const std::string& what) {
    expect_all_near(got, want, 0.0f, 0.0f, what);
}

// "block16_gqa4_dim128": the test name of the paged attention tests' parameters (block size, GQA
// group, head dim).
template <typename ParamInfo>
std::string paged_attention_param_name(const ParamInfo& info) {
    const auto [block_size, group, head_dim] = info.param;
    return "block" + std::to_string(block_size) + "_gqa" + std::to_string(group) + "_dim" +
           std::to_string(head_dim);
}

// A kernel's argument check refused the call and named what was wrong.
inline void expect_invalid_argument(const Status& s, const std::string& mentions) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << mentions << ": " << s.to_string();
    EXPECT_NE(s.message().find(mentions), std::string::npos) << s.to_string();
}

}  // namespace se::cuda::testing
