// The read ceiling of the decode GEMV's weight stream (gemv.cu) on the GPU: kernels that fetch a
// weight [n, k] (bf16) in the GEMV's pattern but do no arithmetic, beside variants that change
// one thing each, and a flat read of the same bytes. Whatever separates the GEMV's rate from the
// flat read's is either here (the pattern) or in the GEMV's own work (MMAs, x, the reduction).
//
//   gemv: a CTA of 8 warps per 16-row tile, lane (g, t) loading 16 bytes of rows g and g + 8 at
//         element 32q + 8t of the warp's quads q (4 quads a round, 8 warps apart), so that one
//         load instruction touches 8 rows, 64 bytes each; each round's loads are all consumed
//         before the next round is issued (the GEMV's MMAs wait for them); 3 CTAs per SM
//   gemv, 4 CTAs: the same at 4 CTAs per SM (a third more bytes in flight)
//   gemv, 8 quads: the same with 8 quads a round (twice the bytes in flight per warp)
//   gemv, persistent: 3 CTAs per SM that walk the tiles (no CTA start and end per tile)
//   span 2, span 4: the GEMV's CTAs and rounds, but the S (2 or 4) lane groups of a span read S
//         adjacent 64-byte pieces of one row per instruction (S x 64 contiguous bytes; 8 / S rows
//         an instruction), the order a GEMV could restore by exchanging registers within the span
//   rows: the GEMV's CTAs and rounds, but each load instruction reads 512 contiguous bytes of one
//         row (the bytes a round reads are the same; which lane reads them is not)
//   flat: every byte once, in address order, 16-byte streaming loads from 4 CTAs of 256 per SM
//
// TB/s = n * k * 2 bytes / mean kernel time (CUDA events, 20 launches after 5), plain launches
// (the GEMV's own bench launches as programmatic dependent launches, which overlap).
//
// Measured (H200, 2026-12-04, docs/benchmarks.md, eighteenth run): more bytes in flight changed
// nothing, walking tiles lost, and the row order read 5-8% faster (gate/up 61.4 -> 57.0 us, LM head
// 251 -> 240, flat 54.2 and 232); the same row order in the GEMV's loads made it slower (gate/up at
// m = 1 57.4 -> 60.0 us), so the pattern is not what holds the GEMV under the flat read. Spans
// (H200, 2026-12-06, twenty-fifth run): gate|up 61.5 (gemv) -> 57.9 (span 2) / 57.7 (span 4) us,
// LM head 251 -> 245 / 244, o 10.7 -> 10.3 / 10.4; in the GEMV itself, the registers exchanged
// within each span, batch-1 decode steps did not gain on the H200 (4.016 -> 4.032 ms at span 2)
// though they did on an H100 (5.439 -> 5.348).
//
// Usage: se_cuda_gemv_read_bench [--shapes NxK,...]   (default 4096x4096,28672x4096,128256x4096:
//        o, gate|up and the LM head of an 8B model)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "cuda_launch_timing.h"
#include "cuda_read_bench.cuh"

namespace se::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kTileRows = 16;
constexpr int kVec = 8;  // bf16 per 16-byte load

using read_bench::launched;

// 16 bytes read once: no L1 allocation, a 256-byte L2 fetch (gemv.cu's load_streamed).
__device__ __forceinline__ uint4 load_streamed(const uint16_t* src) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src));
    return v;
}

enum class Pattern { kGemv, kRows, kSpan2, kSpan4 };

// Tile `tile` of w: kUnroll quads a round per warp, rounds until k is covered.
template <Pattern kPattern, int kUnroll>
__device__ __forceinline__ uint32_t read_tile(const uint16_t* w, int64_t k, int64_t tile) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int64_t row0 = tile * kTileRows;
    const int64_t quads = k / 32;
    uint32_t acc = 0;
    for (int64_t q0 = 0; q0 < quads; q0 += kWarps * kUnroll) {
        uint4 x[2 * kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if constexpr (kPattern != Pattern::kRows) {
                // Lane groups of S (the GEMV's pattern is S = 1): group g reads row g - s + u % S
                // (s = g % S) and rows 8 on, at the quad that is its own within the span, so
                // that S groups read S adjacent quads of one row per instruction.
                constexpr int S = kPattern == Pattern::kGemv    ? 1
                                  : kPattern == Pattern::kSpan2 ? 2
                                                                : 4;
                const int g = lane / 4;
                const int t = lane % 4;
                const int s = g % S;
                const int row = g - s + u % S;
                const int64_t quad = q0 + (u / S) * kWarps * S + S * warp + s;
                const int64_t col = quad * 32 + t * kVec;
                x[2 * u] = load_streamed(w + (row0 + row) * k + col);
                x[2 * u + 1] = load_streamed(w + (row0 + row + 8) * k + col);
            } else {
                // The round's 16 rows x (kWarps * kUnroll * 64 bytes), as 512-byte pieces: piece
                // s of the round is row s % 16, bytes (s / 16) * 512 of the round's span.
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int s = (warp * kUnroll + u) * 2 + h;
                    const int64_t col = q0 * 32 + (s / kTileRows) * 256 + lane * kVec;
                    x[2 * u + h] = load_streamed(w + (row0 + s % kTileRows) * k + col);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 2 * kUnroll; ++i) acc ^= x[i].x ^ x[i].w;
    }
    return acc;
}

template <Pattern kPattern, int kUnroll, int kMinCtas, bool kPersistent>
__global__ void __launch_bounds__(kWarps * 32, kMinCtas)
    tile_read(const uint16_t* w, int64_t k, int64_t tiles, uint32_t* sink) {
    uint32_t acc = 0;
    if constexpr (kPersistent) {
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x)
            acc ^= read_tile<kPattern, kUnroll>(w, k, t);
    } else {
        acc = read_tile<kPattern, kUnroll>(w, k, blockIdx.x);
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads; never true for the fill below
}

struct Shape {
    int64_t n;
    int64_t k;
};

Status run(const Shape& s, int sms) {
    const auto bytes = static_cast<size_t>(s.n * s.k * 2);
    SE_ASSIGN_OR_RETURN(const DeviceBuffer w, DeviceBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(const DeviceBuffer sink, DeviceBuffer::allocate(4));
    if (cudaMemset(w.data(), 0x3c, bytes) != cudaSuccess) return internal_error("cudaMemset");
    const auto* wp = w.as<uint16_t>();
    uint32_t* out = sink.as<uint32_t>();
    const int64_t tiles = s.n / kTileRows;
    const auto row = [&](const char* what, double ms) {
        // printf: fmt's compile-time format checks do not build under nvcc.
        std::printf("| %lldx%lld | %s | %.4f | %.2f |\n", static_cast<long long>(s.n),
                    static_cast<long long>(s.k), what, ms * 1e3,
                    static_cast<double>(bytes) / (ms * 1e-3) / 1e12);
    };
    const auto time = [&](auto kernel, int64_t grid) {
        return mean_launch_ms(5, 20, [&](cudaStream_t stream) {
            kernel<<<static_cast<unsigned>(grid), kWarps * 32, 0, stream>>>(wp, s.k, tiles, out);
            return launched();
        });
    };
    const int64_t persistent = std::min<int64_t>(tiles, int64_t{sms} * 3);
    SE_ASSIGN_OR_RETURN(const double gemv, time(tile_read<Pattern::kGemv, 4, 3, false>, tiles));
    row("gemv", gemv);
    SE_ASSIGN_OR_RETURN(const double four, time(tile_read<Pattern::kGemv, 4, 4, false>, tiles));
    row("gemv, 4 CTAs", four);
    SE_ASSIGN_OR_RETURN(const double eight, time(tile_read<Pattern::kGemv, 8, 3, false>, tiles));
    row("gemv, 8 quads", eight);
    SE_ASSIGN_OR_RETURN(const double walk, time(tile_read<Pattern::kGemv, 4, 3, true>, persistent));
    row("gemv, persistent", walk);
    SE_ASSIGN_OR_RETURN(const double span2, time(tile_read<Pattern::kSpan2, 4, 3, false>, tiles));
    row("span 2 (4 rows x 128 B)", span2);
    SE_ASSIGN_OR_RETURN(const double span4, time(tile_read<Pattern::kSpan4, 4, 3, false>, tiles));
    row("span 4 (2 rows x 256 B)", span4);
    SE_ASSIGN_OR_RETURN(const double rows, time(tile_read<Pattern::kRows, 4, 3, false>, tiles));
    row("rows", rows);
    SE_ASSIGN_OR_RETURN(const double rows_walk,
                        time(tile_read<Pattern::kRows, 4, 3, true>, persistent));
    row("rows, persistent", rows_walk);
    // The weight as two halves (n is a multiple of 16 rows, so each half is whole chunks).
    const auto half = static_cast<int64_t>(bytes / 32);
    SE_ASSIGN_OR_RETURN(const double flat, mean_launch_ms(5, 20, [&](cudaStream_t stream) {
                            read_bench::flat_read<<<sms * 4, 256, 0, stream>>>(
                                w.as<uint4>(), w.as<uint4>() + half, half, out);
                            return launched();
                        }));
    row("flat", flat);
    return Status();
}

Expected<std::vector<Shape>> parse_shapes(const std::string& list) {
    // Whole tiles and whole rounds of the widest variant (8 warps x 8 quads of 32).
    return read_bench::parse_pairs<Shape>(
        list,
        [](int64_t n, int64_t k) {
            return n % kTileRows == 0 && k % (kWarps * 8 * 32) == 0 && n * k <= (int64_t{1} << 31);
        },
        "NxK (n a multiple of 16, k of 2048, n * k at most 2^31)");
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    using se::cuda::Shape;
    return se::cuda::read_bench::shape_main(
        argc, argv, "4096x4096,28672x4096,128256x4096",
        "| weight n x k | pattern | us | TB/s |\n| --- | --- | ---: | ---: |\n",
        se::cuda::parse_shapes, se::cuda::run,
        [](const Shape& s) { return std::to_string(s.n) + "x" + std::to_string(s.k); });
}
