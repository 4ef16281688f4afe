// Paged decode attention on the GPU (backend/cuda/decode_attention.h) at the shapes of the
// decode benchmark in BENCHMARKS.md: bf16, 32 query heads over 8 KV heads, head_dim 128, 16-token
// blocks, every sequence of the batch at the full context. Prints one JSON line per shape with
// the mean kernel time over timed launches (CUDA events) and the effective KV bandwidth: the
// bytes of K and V the launch must read (batch * context * kv_heads * head_dim * 2 bytes * 2),
// divided by the time. bench/decode-attention runs it beside PyTorch SDPA on identical shapes.
//
// Usage: se_cuda_decode_attention_bench [--iters N]
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/decode_attention.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/event.h"
#include "backend/cuda/stream.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int32_t kHeads = 32;
constexpr int32_t kKvHeads = 8;
constexpr int32_t kHeadDim = 128;
constexpr int32_t kBlock = 16;
constexpr int kWarmup = 5;

struct Shape {
    int32_t batch;
    int32_t context;
};

Expected<DeviceBuffer> filled(size_t bytes, int byte) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(bytes));
    if (cudaMemset(buf.data(), byte, bytes) != cudaSuccess) return internal_error("cudaMemset");
    return buf;
}

Status run(const Shape& s, int iters) {
    const int64_t entries = int64_t{s.batch} * s.context;
    const int64_t kv_bytes = entries * kKvHeads * kHeadDim * 2;  // one of K, V
    const int32_t blocks_per_seq = s.context / kBlock;
    // 0x3c3c as bf16 is about 0.0115: finite scores, a softmax over every key.
    SE_ASSIGN_OR_RETURN(DeviceBuffer k, filled(static_cast<size_t>(kv_bytes), 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer v, filled(static_cast<size_t>(kv_bytes), 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer q, filled(size_t(s.batch) * kHeads * kHeadDim * 2, 0x3c));
    SE_ASSIGN_OR_RETURN(DeviceBuffer out,
                        DeviceBuffer::allocate(size_t(s.batch) * kHeads * kHeadDim * 2));
    std::vector<int32_t> table(static_cast<size_t>(s.batch) * blocks_per_seq);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    const std::vector<int32_t> lens(static_cast<size_t>(s.batch), s.context);
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_table, DeviceBuffer::allocate(table.size() * 4));
    SE_ASSIGN_OR_RETURN(DeviceBuffer d_lens, DeviceBuffer::allocate(lens.size() * 4));
    cudaMemcpy(d_table.data(), table.data(), table.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_lens.data(), lens.data(), lens.size() * 4, cudaMemcpyHostToDevice);
    const int32_t partition = decode_partition_size(s.batch, s.context);
    const int64_t ws_floats =
        decode_attention_workspace_floats(s.batch, kHeads, kHeadDim, s.context, partition);
    SE_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::allocate(size_t(ws_floats) * 4));
    // Zero once: every launch leaves the merge counters zero.
    SE_ASSIGN_OR_RETURN(DeviceBuffer counters, filled(size_t(s.batch) * kKvHeads * 4, 0));
    // The timing stream does not wait for the legacy stream's memsets.
    if (cudaDeviceSynchronize() != cudaSuccess) return internal_error("cudaDeviceSynchronize");

    const DecodeAttentionParams p{.q = q.as<bf16>(),
                                  .k_blocks = k.as<bf16>(),
                                  .v_blocks = v.as<bf16>(),
                                  .block_tables = d_table.as<int32_t>(),
                                  .kv_lens = d_lens.as<int32_t>(),
                                  .out = out.as<bf16>(),
                                  .workspace = ws.as<float>(),
                                  .merge_counters = counters.as<uint32_t>(),
                                  .q_row_stride = kHeads * kHeadDim,
                                  .block_table_stride = blocks_per_seq,
                                  .max_kv_len = s.context,
                                  .num_seqs = s.batch,
                                  .num_heads = kHeads,
                                  .num_kv_heads = kKvHeads,
                                  .head_dim = kHeadDim,
                                  .block_size = kBlock,
                                  .partition = partition,
                                  .scale = 0.08838834764831845f};
    SE_ASSIGN_OR_RETURN(const double ms, mean_launch_ms(kWarmup, iters, [&](cudaStream_t stream) {
                            return decode_attention(p, stream);
                        }));
    const double tb_per_s = 2.0 * static_cast<double>(kv_bytes) / (ms * 1e-3) / 1e12;
    fmt::print(
        "{{\"impl\": \"sparse-engine\", \"batch\": {}, \"context\": {}, \"ms\": {:.4f}, "
        "\"kv_tb_per_s\": {:.3f}}}\n",
        s.batch, s.context, ms, tb_per_s);
    return Status();
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    int iters = 20;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
    }
    const std::vector<se::cuda::Shape> shapes = {{1, 32768}, {16, 32768}, {64, 8192}, {8, 131072}};
    for (const auto& shape : shapes) {
        se::Status status = se::cuda::run(shape, iters);
        if (!status.ok()) {
            fmt::print(stderr, "error: {}x{}: {}\n", shape.batch, shape.context,
                       status.to_string());
            return 1;
        }
    }
    return 0;
}
