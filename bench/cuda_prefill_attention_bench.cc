// Paged prefill attention on the GPU (backend/cuda/prefill_attention.h): one sequence, bf16, 32
// query heads over 8 KV heads, head_dim 128, 16-token blocks, at three shapes: an 8K and a 32K
// prompt in one chunk, and a 32K prompt's last 8K chunk over its 24K cached prefix. Prints one
// JSON line per shape and kernel (prefill_kernel.h: "mma" everywhere, "wgmma" where the device
// runs it, compute capability 9.0) with the mean kernel time over timed launches (CUDA events)
// and TFLOP/s of the causal work: 2 matmuls * 2 flops * heads * head_dim * (keys visible to each
// row, summed). bench/prefill-attention runs it beside PyTorch SDPA on identical shapes.
//
// Usage: se_cuda_prefill_attention_bench [--iters N] [--kernel mma|wgmma|both]  (default both)
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <cstdlib>
#include <string>
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

Status run(const Shape& s, PrefillKernel kernel, int iters) {
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
                                   .scale = 0.08838834764831845f};
    SE_ASSIGN_OR_RETURN(const double ms, mean_launch_ms(kWarmup, iters, [&](cudaStream_t stream) {
                            return prefill_attention(p, kernel, stream);
                        }));
    fmt::print(
        "{{\"impl\": \"sparse-engine\", \"kernel\": \"{}\", \"q_len\": {}, \"kv_len\": {}, "
        "\"ms\": {:.4f}, \"tflops\": {:.1f}}}\n",
        kernel == PrefillKernel::kWgmma ? "wgmma" : "mma", s.q_len, s.kv_len, ms,
        causal_flops(s) / (ms * 1e-3) / 1e12);
    return Status();
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    using se::cuda::PrefillKernel;
    int iters = 10;
    std::string which = "both";
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
        if (std::string(argv[i]) == "--kernel") which = argv[i + 1];
    }
    std::vector<PrefillKernel> kernels;
    if (which == "mma" || which == "both") kernels.push_back(PrefillKernel::kMmaSync);
    if (which == "wgmma" || which == "both") {
        // Only where it runs, unless asked for by name (then its refusal is the error).
        const bool runs = se::cuda::resolve_prefill_kernel({.head_dim = se::cuda::kHeadDim},
                                                           PrefillKernel::kWgmma)
                              .ok();
        if (runs || which == "wgmma") kernels.push_back(PrefillKernel::kWgmma);
        if (!runs && which == "both") fmt::print(stderr, "wgmma kernel: not on this device\n");
    }
    if (kernels.empty()) {
        fmt::print(stderr, "error: --kernel {} (mma, wgmma or both)\n", which);
        return 1;
    }
    const std::vector<se::cuda::Shape> shapes = {{8192, 8192}, {32768, 32768}, {8192, 32768}};
    for (const auto& shape : shapes) {
        for (const PrefillKernel kernel : kernels) {
            se::Status status = se::cuda::run(shape, kernel, iters);
            if (!status.ok()) {
                fmt::print(stderr, "error: q_len {} kv_len {}: {}\n", shape.q_len, shape.kv_len,
                           status.to_string());
                return 1;
            }
        }
    }
    return 0;
}
