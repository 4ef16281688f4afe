// Paged prefill attention on the GPU (backend/cuda/prefill_attention.h): one sequence, bf16, 32
// query heads over 8 KV heads, head_dim 128, 16-token blocks, at three shapes: an 8K and a 32K
// prompt in one chunk, and a 32K prompt's last 8K chunk over its 24K cached prefix. Prints one
// JSON line per shape and kernel (prefill_kernel.h: "mma" everywhere; "wgmma", "wgmma_overlap",
// "wgmma_tma" where the device runs them, compute capability 9.0; "auto" is what the library
// picks) with the mean kernel time over timed launches (CUDA events) and TFLOP/s of the causal
// work: 2 matmuls * 2 flops * heads * head_dim * (keys visible to each row, summed).
// bench/prefill-attention runs it beside PyTorch SDPA on identical shapes. A kernel whose first
// launch has not finished after a minute stops the run (a hang, not a slow kernel).
//
// Usage: se_cuda_prefill_attention_bench [--iters N] [--kernel LIST]
//   LIST: comma-separated kernel names, or "all" (the default: every kernel the device runs);
//   "both" is mma,wgmma.
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/event.h"
#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/prefill_kernel.h"
#include "backend/cuda/stream.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int32_t kHeads = 32;
constexpr int32_t kKvHeads = 8;
constexpr int32_t kHeadDim = 128;
constexpr int32_t kBlock = 16;
constexpr int kWarmup = 3;
constexpr double kHangSeconds = 60.0;

struct NamedKernel {
    const char* name;
    PrefillKernel kernel;
};

constexpr NamedKernel kKernels[] = {{"mma", PrefillKernel::kMmaSync},
                                    {"wgmma", PrefillKernel::kWgmma},
                                    {"wgmma_overlap", PrefillKernel::kWgmmaOverlap},
                                    {"wgmma_tma", PrefillKernel::kWgmmaTma},
                                    {"auto", PrefillKernel::kAuto}};

std::optional<NamedKernel> kernel_named(const std::string& name) {
    for (const NamedKernel& k : kKernels) {
        if (name == k.name) return k;
    }
    return std::nullopt;
}

// One launch, then a bounded wait: a kernel that hangs ends the run with an error instead of
// holding the GPU.
Status launch_once_bounded(const PrefillAttentionParams& p, PrefillKernel kernel) {
    SE_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    SE_RETURN_IF_ERROR(prefill_attention(p, kernel, stream.get()));
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kHangSeconds);
    cudaError_t e = cudaErrorNotReady;
    while ((e = cudaStreamQuery(stream.get())) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > deadline) {
            fmt::print(stderr, "error: the kernel still runs after {} s: a hang\n", kHangSeconds);
            std::exit(2);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (e != cudaSuccess) return internal_error(std::string("kernel: ") + cudaGetErrorString(e));
    return Status();
}

struct Shape {
    int32_t q_len;
    int32_t kv_len;  // the last q_len entries are the chunk's own
};

// Causal flops: row i of the chunk sees prefix + i + 1 keys.
double causal_flops(const Shape& s) {
    const double prefix = s.kv_len - s.q_len;
    const double q = s.q_len;
    const double visible = prefix * q + q * (q + 1) / 2;
    return 4.0 * kHeads * kHeadDim * visible;
}

Expected<DeviceBuffer> filled(size_t bytes, int byte) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(bytes));
    if (cudaMemset(buf.data(), byte, bytes) != cudaSuccess) return internal_error("cudaMemset");
    return buf;
}

Expected<DeviceBuffer> uploaded(const std::vector<int32_t>& host) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(host.size() * 4));
    if (cudaMemcpy(buf.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice) !=
        cudaSuccess) {
        return internal_error("cudaMemcpy");
    }
    return buf;
}

Status run(const Shape& s, const NamedKernel& kernel, int iters) {
    const size_t kv_bytes = size_t(s.kv_len) * kKvHeads * kHeadDim * 2;  // one of K, V
    const size_t q_bytes = size_t(s.q_len) * kHeads * kHeadDim * 2;
    const int32_t num_blocks = (s.kv_len + kBlock - 1) / kBlock;
    // 0x3c3c as bf16 is about 0.0115: finite scores, a softmax over every visible key.
    SE_ASSIGN_OR_RETURN(DeviceBuffer k, filled(kv_bytes, 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer v, filled(kv_bytes, 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer q, filled(q_bytes, 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::allocate(q_bytes));
    std::vector<int32_t> table(num_blocks);
    for (int32_t i = 0; i < num_blocks; ++i) table[i] = i;
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_table, uploaded(table));
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_q_start, uploaded({0}));
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_q_len, uploaded({s.q_len}));
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_kv_len, uploaded({s.kv_len}));

    const PrefillAttentionParams p{.q = q.as<bf16>(),
                                   .k_blocks = k.as<bf16>(),
                                   .v_blocks = v.as<bf16>(),
                                   .block_tables = d_table.as<int32_t>(),
                                   .q_start = d_q_start.as<int32_t>(),
                                   .q_len = d_q_len.as<int32_t>(),
                                   .kv_len = d_kv_len.as<int32_t>(),
                                   .out = out.as<bf16>(),
                                   .q_row_stride = kHeads * kHeadDim,
                                   .out_row_stride = kHeads * kHeadDim,
                                   .block_table_stride = num_blocks,
                                   .num_seqs = 1,
                                   .num_tokens = s.q_len,
                                   .max_q_len = s.q_len,
                                   .num_heads = kHeads,
                                   .num_kv_heads = kKvHeads,
                                   .head_dim = kHeadDim,
                                   .block_size = kBlock,
                                   .num_blocks = num_blocks,
                                   .scale = 0.08838834764831845f};
    SE_RETURN_IF_ERROR(launch_once_bounded(p, kernel.kernel));
    SE_ASSIGN_OR_RETURN(const double ms, mean_launch_ms(kWarmup, iters, [&](cudaStream_t stream) {
                            return prefill_attention(p, kernel.kernel, stream);
                        }));
    fmt::print(
        "{{\"impl\": \"sparse-engine\", \"kernel\": \"{}\", \"q_len\": {}, \"kv_len\": {}, "
        "\"ms\": {:.4f}, \"tflops\": {:.1f}}}\n",
        kernel.name, s.q_len, s.kv_len, ms, causal_flops(s) / (ms * 1e-3) / 1e12);
    return Status();
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    using se::cuda::NamedKernel;
    int iters = 10;
    std::string which = "all";
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
        if (std::string(argv[i]) == "--kernel") which = argv[i + 1];
    }
    if (which == "both") which = "mma,wgmma";
    std::vector<NamedKernel> kernels;
    if (which == "all") {
        // Every kernel the device runs ("auto" is one of them, under its own name).
        for (const NamedKernel& k : se::cuda::kKernels) {
            if (se::cuda::resolve_prefill_kernel({.head_dim = se::cuda::kHeadDim}, k.kernel).ok()) {
                kernels.push_back(k);
            } else {
                fmt::print(stderr, "{} kernel: not on this device\n", k.name);
            }
        }
    } else {
        // Named ones run or fail: a refusal is the error.
        size_t start = 0;
        while (start <= which.size()) {
            const size_t comma = std::min(which.find(',', start), which.size());
            const std::string name = which.substr(start, comma - start);
            const std::optional<NamedKernel> k = se::cuda::kernel_named(name);
            if (!k) {
                fmt::print(stderr,
                           "error: --kernel {}: unknown kernel '{}' (mma, wgmma, wgmma_overlap, "
                           "wgmma_tma, auto; or all, both)\n",
                           which, name);
                return 1;
            }
            kernels.push_back(*k);
            start = comma + 1;
        }
    }
    const std::vector<se::cuda::Shape> shapes = {{8192, 8192}, {32768, 32768}, {8192, 32768}};
    for (const auto& shape : shapes) {
        for (const NamedKernel& kernel : kernels) {
            se::Status status = se::cuda::run(shape, kernel, iters);
            if (!status.ok()) {
                fmt::print(stderr, "error: {} at q_len {} kv_len {}: {}\n", kernel.name,
                           shape.q_len, shape.kv_len, status.to_string());
                return 1;
            }
        }
    }
    return 0;
}
