// What a seam between two dependent steps of a decode step costs on the GPU, with no work on
// either side: the question a persistent decode kernel turns on (docs/benchmarks.md, eighteenth
// run: every small kernel of a batch-1 step costs 1.5-3 us a layer). Each step is G CTAs of 256
// threads whose thread 0 reads the value CTA (b + 1) % G wrote in the step before and writes it
// plus one, so every step depends on every CTA of the one before, as a GEMV depends on all of x.
//
//   kernels, pdl:    one kernel per step, launched as the engine launches them (pdl.cuh: wait,
//                    then work, then let the next one launch), K of them in one CUDA graph
//   kernels, plain:  the same launches without programmatic dependent launch
//   barrier:         one cooperative launch of G co-resident CTAs that runs K steps, each ended
//                    by a grid barrier (a release add on a counter, an acquire spin on it)
//
// us per seam = the mean time of the K steps. After the run every value must be K (each step adds
// one along a cycle of G CTAs); "ok" says whether it was.
//
// Measured (H200, 2026-12-04, docs/benchmarks.md, twentieth run; 1, 2 and 3 CTAs an SM): kernels
// on PDL 0.80 / 0.85 / 0.86 us a seam, plain kernels 1.08 / 1.12 / 1.14, the barrier 1.19 / 1.44 /
// 1.71 (every CTA's add on one counter): a persistent kernel would not hand over faster than the
// engine's launches already do.
//
// Usage: se_cuda_seam_bench [--steps K]   (default 2000; grids of 1, 2 and 3 CTAs an SM)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/pdl.cuh"
#include "cuda_device_sms.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t load_relaxed(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint32_t load_acquire(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void add_release(uint32_t* p, uint32_t v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// One step: out[b] = in[(b + 1) % G] + 1.
__device__ __forceinline__ void step(const uint32_t* in, uint32_t* out) {
    if (threadIdx.x != 0) return;
    const uint32_t g = gridDim.x;
    out[blockIdx.x] = load_relaxed(in + (blockIdx.x + 1) % g) + 1;
}

__global__ void __launch_bounds__(kThreads) step_kernel(const uint32_t* in, uint32_t* out) {
    pdl_wait();  // in is the previous kernel's output
    step(in, out);
    pdl_launch_dependents();
}

// K steps in one launch, buffers a and b in turn, a grid barrier after each.
__global__ void __launch_bounds__(kThreads)
    barrier_kernel(uint32_t* a, uint32_t* b, uint32_t* counter, int32_t steps) {
    for (int32_t i = 0; i < steps; ++i) {
        step(i % 2 == 0 ? a : b, i % 2 == 0 ? b : a);
        __syncthreads();
        if (threadIdx.x == 0) {
            add_release(counter, 1);
            const uint32_t target = static_cast<uint32_t>(i + 1) * gridDim.x;
            while (load_acquire(counter) < target) {
            }
        }
        __syncthreads();
    }
}

enum class Mode { kPdl, kPlain, kBarrier };

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::kPdl:
            return "kernels, pdl";
        case Mode::kPlain:
            return "kernels, plain";
        case Mode::kBarrier:
            return "barrier";
    }
    return "?";
}

Status zero(DeviceBuffer& buf, cudaStream_t stream) {
    return cudaMemsetAsync(buf.data(), 0, buf.size_bytes(), stream) == cudaSuccess
               ? Status()
               : internal_error("cudaMemsetAsync");
}

// Runs K steps of G CTAs in `mode`, prints a JSON line.
Status run(Mode mode, int32_t ctas, int32_t steps) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::allocate(sizeof(uint32_t) * ctas));
    SE_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(sizeof(uint32_t) * ctas));
    SE_ASSIGN_OR_RETURN(DeviceBuffer counter, DeviceBuffer::allocate(sizeof(uint32_t)));
    auto* pa = a.as<uint32_t>();
    auto* pb = b.as<uint32_t>();
    auto* pc = counter.as<uint32_t>();
    const auto launch_chain = [&](cudaStream_t stream) -> Status {
        SE_RETURN_IF_ERROR(zero(a, stream));
        for (int32_t i = 0; i < steps; ++i) {
            const uint32_t* in = i % 2 == 0 ? pa : pb;
            uint32_t* out = i % 2 == 0 ? pb : pa;
            const cudaError_t e =
                mode == Mode::kPdl
                    ? launch_pdl(step_kernel, dim3(ctas), dim3(kThreads), 0, stream, in, out)
                    : (step_kernel<<<ctas, kThreads, 0, stream>>>(in, out), cudaGetLastError());
            if (e != cudaSuccess) return internal_error(cudaGetErrorString(e));
        }
        return Status();
    };
    const auto launch_barrier = [&](cudaStream_t stream) -> Status {
        SE_RETURN_IF_ERROR(zero(a, stream));
        SE_RETURN_IF_ERROR(zero(counter, stream));
        int32_t n = steps;
        void* args[] = {&pa, &pb, &pc, &n};
        const cudaError_t e =
            cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(barrier_kernel), dim3(ctas),
                                        dim3(kThreads), args, 0, stream);
        return e == cudaSuccess ? Status() : internal_error(cudaGetErrorString(e));
    };
    double ms = 0.0;
    if (mode == Mode::kBarrier) {
        SE_ASSIGN_OR_RETURN(ms, mean_launch_ms(1, 3, launch_barrier));
    } else {
        // One graph of the K launches (and the zeroing), as decode steps replay them.
        SE_ASSIGN_OR_RETURN(ms, mean_graph_launch_ms(1, launch_chain));
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return internal_error("the run failed");
    std::vector<uint32_t> last(ctas);
    const void* src = steps % 2 == 0 ? a.data() : b.data();
    if (cudaMemcpy(last.data(), src, sizeof(uint32_t) * ctas, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
        return internal_error("cudaMemcpy");
    }
    bool ok = true;
    for (uint32_t v : last) ok = ok && v == static_cast<uint32_t>(steps);
    std::printf(
        "{\"mode\": \"%s\", \"ctas\": %d, \"steps\": %d, \"us_per_seam\": %.3f, \"ok\": %s}\n",
        mode_name(mode), ctas, steps, ms * 1e3 / steps, ok ? "true" : "false");
    return ok ? Status() : internal_error("a step read a value its predecessor had not written");
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    int32_t steps = 2000;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--steps" && i + 1 < argc) {
            steps = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: se_cuda_seam_bench [--steps K]\n");
            return 2;
        }
    }
    if (steps < 2 || steps % 2 != 0) {
        std::fprintf(stderr, "se_cuda_seam_bench: --steps %d: an even count >= 2\n", steps);
        return 2;
    }
    const se::Expected<int32_t> sms = se::cuda::device_sms();
    if (!sms.ok()) {
        std::fprintf(stderr, "se_cuda_seam_bench: %s\n", sms.status().to_string().c_str());
        return 1;
    }
    int failed = 0;
    for (int per_sm = 1; per_sm <= 3; ++per_sm) {
        for (se::cuda::Mode mode :
             {se::cuda::Mode::kPdl, se::cuda::Mode::kPlain, se::cuda::Mode::kBarrier}) {
            const se::Status s = se::cuda::run(mode, *sms * per_sm, steps);
            if (!s.ok()) {
                std::fprintf(stderr, "se_cuda_seam_bench: %s\n", s.to_string().c_str());
                failed = 1;
            }
        }
    }
    return failed;
}
