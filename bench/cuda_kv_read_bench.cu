// The read ceiling of decode attention's KV cache layout on the GPU: kernels that fetch K and V
// the way the balanced split's first pass does (decode_balanced.cu: one block of four warps per KV
// head and range of the batch's keys, each warp's 16-key tiles through a cp.async ring) but do no
// arithmetic, in two orders of the same bytes and with the heads of a slot in one block, beside
// a flat read of both buffers and the device-to-device copy of BENCHMARKS.md.
//
//   paged: the cache's layout, [slot][kv_head][head_dim]: a (key, head) row is 256 bytes, and
//          a head's consecutive keys are kv_heads * 256 bytes apart
//   head-major pages: [block][kv_head][slot in block][head_dim]: a head's 16 keys of a block
//          are 4 KB in one piece
//   paged, the 8 KV heads in one block: the cache's layout, block r of 8 warps reading head w
//          with warp w, so that one block fetches whole 2 KB slots (one block per SM)
//   flat: every byte of K and V once, in address order, 16-byte streaming loads from a grid
//          of 4 CTAs per SM (the read roofline of this device)
//
// The ranges are the balanced split's: the batch's tiles split evenly into `ranges` per head
// (33 on 132 SMs: two blocks per SM). Sequences' blocks are consecutive, as the attention bench's
// tables are, so a range crosses sequences without a table lookup. KV TB/s = bytes of K and V /
// mean kernel time (CUDA events, 20 launches after 5).
//
// Usage: se_cuda_kv_read_bench [--shapes BxC,...]   (default 16x32768,64x8192,8x131072)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_tile.cuh"
#include "backend/cuda/device_buffer.h"
#include "cuda_launch_timing.h"
#include "cuda_read_bench.cuh"

namespace se::cuda {
namespace {

// The first pass's pipeline (decode_tile.cuh), at head_dim 128, so that this follows the kernel.
using decode::kStages;    // tiles per warp ring: two in flight while one is consumed
using decode::kTileKeys;  // keys a warp takes per step
using decode::kWarps;     // of a block of the split
constexpr int kKvHeads = 8;
constexpr int kChunks = decode::Tile<128>::kChunks;    // 16-byte chunks of a row
constexpr int kTileBytes = decode::Tile<128>::kBytes;  // K or V of one tile
constexpr int kBlockKeys = 16;                         // keys of a cache block
constexpr int kBlocksPerSm = kDecodeBlocksPerSm;

enum class Order { kPaged, kHeadMajorPages };

using decode::cp_async_commit;
using decode::cp_async_wait;
using read_bench::launched;

// Index (in 16-byte chunks) of chunk c of key `key`, head h.
template <Order kOrder>
__device__ __forceinline__ int64_t chunk_index(int64_t key, int h, int c) {
    if constexpr (kOrder == Order::kPaged) return (key * kKvHeads + h) * kChunks + c;
    const int64_t block = key / kBlockKeys;
    return ((block * kKvHeads + h) * kBlockKeys + key % kBlockKeys) * kChunks + c;
}

// Block (h, r) of the split: the tiles [tiles * r / R, tiles * (r + 1) / R) of head h, warp w
// taking every fourth tile from w. kHeadsTogether: block r of 8 warps, warp w reading head w of
// every tile of the range, so that a block fetches whole 2 KB slots (one block per SM, the same
// bytes in flight per SM). Each warp's tiles go through a ring of kStages stages (K, then V).
template <Order kOrder, bool kHeadsTogether>
__global__ void __launch_bounds__(kHeadsTogether ? kKvHeads * 32 : kWarps * 32,
                                  kHeadsTogether ? 1 : kBlocksPerSm)
    ring_read(const uint4* k, const uint4* v, int64_t keys, uint32_t* sink) {
    extern __shared__ __align__(128) uint8_t smem[];
    constexpr int kStep = kHeadsTogether ? 1 : kWarps;  // between a warp's tiles
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int h = kHeadsTogether ? warp : static_cast<int>(blockIdx.x);
    const int64_t ranges = kHeadsTogether ? gridDim.x : gridDim.y;
    const int64_t range = kHeadsTogether ? blockIdx.x : blockIdx.y;
    const int first = kHeadsTogether ? 0 : warp;
    const int64_t tiles = keys / kTileKeys;
    const int64_t begin = tiles * range / ranges;
    const int64_t span = tiles * (range + 1) / ranges - begin;
    const int64_t mine = first < span ? (span - first + kStep - 1) / kStep : 0;
    const auto ring =
        static_cast<uint32_t>(__cvta_generic_to_shared(smem + warp * kStages * 2 * kTileBytes));
    const auto copy = [&](int64_t i) {
        const int64_t tile = begin + first + i * kStep;
        const uint32_t stage = ring + static_cast<uint32_t>(i % kStages) * 2 * kTileBytes;
        const int c = lane % kChunks;
#pragma unroll
        for (int j = 0; j < kTileKeys * kChunks / 32; ++j) {
            const int row = lane / kChunks + j * (32 / kChunks);
            const int64_t at = chunk_index<kOrder>(tile * kTileKeys + row, h, c);
            const uint32_t dst = stage + row * kChunks * 16 + c * 16;
            decode::cp_async_16(dst, k + at, 16);
            decode::cp_async_16(dst + kTileBytes, v + at, 16);
        }
    };
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
        if (i < mine) copy(i);
        cp_async_commit();
    }
    uint32_t acc = 0;
    for (int64_t i = 0; i < mine; ++i) {
        cp_async_wait<kStages - 2>();
        __syncwarp();
        if (i + kStages - 1 < mine) copy(i + kStages - 1);
        cp_async_commit();
        const uint32_t stage = ring + static_cast<uint32_t>(i % kStages) * 2 * kTileBytes;
        uint32_t word = 0;
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(word) : "r"(stage + lane * 4) : "memory");
        acc ^= word;
    }
    cp_async_wait<0>();
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads; never true for the fill below
}

struct Shape {
    int64_t batch;
    int64_t context;
};

template <Order kOrder, bool kHeadsTogether>
Expected<double> time_ring(const DeviceBuffer& k, const DeviceBuffer& v, int64_t keys, int ranges,
                           uint32_t* sink) {
    constexpr int kBlockWarps = kHeadsTogether ? kKvHeads : kWarps;
    constexpr int kSmem = kBlockWarps * kStages * 2 * kTileBytes;
    const auto kernel = ring_read<kOrder, kHeadsTogether>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) !=
        cudaSuccess) {
        return internal_error("cudaFuncSetAttribute");
    }
    const dim3 grid = kHeadsTogether ? dim3(static_cast<unsigned>(ranges))
                                     : dim3(kKvHeads, static_cast<unsigned>(ranges));
    return mean_launch_ms(5, 20, [&](cudaStream_t stream) {
        kernel<<<grid, kBlockWarps * 32, kSmem, stream>>>(k.as<uint4>(), v.as<uint4>(), keys, sink);
        return launched(cudaSuccess);
    });
}

Status run(const Shape& s, int sms) {
    const int64_t keys = s.batch * s.context;
    const auto bytes = static_cast<size_t>(keys * kKvHeads * kChunks * 16);  // K, and V as much
    SE_ASSIGN_OR_RETURN(const DeviceBuffer k, DeviceBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(const DeviceBuffer v, DeviceBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(const DeviceBuffer sink, DeviceBuffer::allocate(4));
    if (cudaMemset(k.data(), 0x3c, bytes) != cudaSuccess ||
        cudaMemset(v.data(), 0x3c, bytes) != cudaSuccess) {
        return internal_error("cudaMemset");
    }
    const double kv_bytes = 2.0 * static_cast<double>(bytes);
    const auto row = [&](const std::string& what, int ranges, double ms) {
        // printf: fmt's compile-time format checks do not build under nvcc.
        std::printf("| %lldx%lld | %s | %s | %.4f | %.2f |\n", static_cast<long long>(s.batch),
                    static_cast<long long>(s.context), what.c_str(),
                    ranges > 0 ? std::to_string(ranges).c_str() : "-", ms,
                    kv_bytes / (ms * 1e-3) / 1e12);
    };
    uint32_t* out = sink.as<uint32_t>();
    // The balanced split's blocks: two per SM over the KV heads, or more for longer batches.
    const int wave = sms * kBlocksPerSm / kKvHeads;
    for (int ranges : {wave, 2 * wave}) {
        SE_ASSIGN_OR_RETURN(const double paged,
                            (time_ring<Order::kPaged, false>(k, v, keys, ranges, out)));
        row("paged, a block per KV head", ranges, paged);
        SE_ASSIGN_OR_RETURN(const double hnd,
                            (time_ring<Order::kHeadMajorPages, false>(k, v, keys, ranges, out)));
        row("head-major pages, a block per KV head", ranges, hnd);
    }
    SE_ASSIGN_OR_RETURN(const double together,
                        (time_ring<Order::kPaged, true>(k, v, keys, sms, out)));
    row("paged, the 8 KV heads in one block", sms, together);
    const int64_t chunks = static_cast<int64_t>(bytes / 16);
    SE_ASSIGN_OR_RETURN(const double flat, mean_launch_ms(5, 20, [&](cudaStream_t stream) {
                            read_bench::flat_read<<<sms * 4, 256, 0, stream>>>(
                                k.as<uint4>(), v.as<uint4>(), chunks, out);
                            return launched(cudaSuccess);
                        }));
    row("flat read", 0, flat);
    // BENCHMARKS.md's reference: a device-to-device copy of K into V, read and write counted.
    SE_ASSIGN_OR_RETURN(const double copy, mean_launch_ms(2, 10, [&](cudaStream_t stream) {
                            return launched(cudaMemcpyAsync(v.data(), k.data(), bytes,
                                                            cudaMemcpyDeviceToDevice, stream));
                        }));
    row("device-to-device copy (read + write)", 0, copy);
    return Status();
}

Expected<std::vector<Shape>> parse_shapes(const std::string& list) {
    return read_bench::parse_pairs<Shape>(
        list,
        [](int64_t batch, int64_t context) {
            return context % kBlockKeys == 0 && batch * context <= (int64_t{1} << 24);
        },
        "BATCHxCONTEXT (context a multiple of 16, at most 2^24 keys in all)");
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    using se::cuda::Shape;
    return se::cuda::read_bench::shape_main(
        argc, argv, "16x32768,64x8192,8x131072",
        "| batch x context | read | ranges per KV head | ms | KV TB/s "
        "|\n|---|---|---:|---:|---:|\n",
        se::cuda::parse_shapes, se::cuda::run,
        [](const Shape& s) { return std::to_string(s.batch) + "x" + std::to_string(s.context); });
}
