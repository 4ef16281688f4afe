// Gemm: the linear layers' matmul on cuBLASLt, D = A · W^T (+ beta * D), bf16 in, f32 accumulate.
//
// Row-major in cuBLASLt's column-major world: a row-major [r, c] matrix with row stride ld is a
// column-major [c, r] one with the same ld, so cuBLASLt is asked for D^T = W · A^T:
//   cuBLASLt A := W, row-major [n, k]   = column-major [k, n], ld k,   transposed (TRANSA = T)
//   cuBLASLt B := A, row-major [m, lda] = column-major [k, m], ld lda  (TRANSB = N)
//   cuBLASLt D := D, row-major [m, ldd] = column-major [n, m], ld ldd  (C is D itself)
//
// Algorithms come from cuBLASLt's heuristic, cached per (m bucket, GemmShape): m is rounded up to
// a power of two (1, 2, 4, ..., 8192; exact beyond), so a decode step's m hits the entries
// prepare() filled at start-up and no heuristic query runs inside a step.
#pragma once

#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>

#include "backend/cuda/activations.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/lt_descriptors.h"
#include "core/dtype.h"
#include "core/expected.h"

namespace se::cuda {

// Everything about a GEMM that picks its algorithm, apart from m.
struct GemmShape {
    int64_t n = 0;                 // output features (rows of W)
    int64_t k = 0;                 // input features, a multiple of 8
    int64_t lda = 0;               // elements between rows of A: >= k, a multiple of 8
    int64_t ldd = 0;               // elements between rows of D: >= n, a multiple of 16 bytes
    DType d_dtype = DType::kBF16;  // kBF16 or kF32
    float beta = 0.0f;             // D = A · W^T + beta * D; nonzero reads D first

    auto operator<=>(const GemmShape&) const = default;
};

struct GemmArgs {
    const bf16* a = nullptr;  // bf16 [m, lda], k used: activations, maybe a column slice
    const bf16* w = nullptr;  // bf16 [n, k]: a linear layer's [out, in] weight
    void* d = nullptr;        // d_dtype [m, ldd], n used
    int64_t m = 0;            // rows of A and D (tokens); 0 does nothing
    GemmShape shape;
};

// Belongs to the device current at create(). One workspace serves every GEMM it enqueues, so GEMMs
// on concurrent streams need a Gemm each; not thread-safe (run() may fill the cache).
class Gemm {
  public:
    Gemm(Gemm&&) noexcept = default;
    Gemm& operator=(Gemm&&) noexcept = default;
    Gemm(const Gemm&) = delete;
    Gemm& operator=(const Gemm&) = delete;

    // A cuBLASLt handle and its workspace on the current device.
    static Expected<Gemm> create();

    // Caches the algorithm of every m bucket up to max_m (up to 8192; m beyond that is a prefill,
    // where one heuristic query is small next to the GEMM itself).
    Status prepare(const GemmShape& shape, int64_t max_m);

    // Replaces the cached algorithms of the buckets of mid-sized decode batches (17..256 rows,
    // up to max_m) with the fastest of the heuristic's candidates, timed on `stream` with the
    // real weight `w` (bf16 [n, k]) and random activations; waits for the stream. The heuristic's
    // first choice is often a tile shape that leaves most SMs idle at n = 1024 (a GQA k or v).
    // Only candidates that give the first choice's bits are timed: timings differ from run to run
    // and would pick different algorithms, and an algorithm that sums in another order (split-K)
    // changes the outputs (greedy tokens of one prompt differed between starts of the engine).
    // So the outputs are those of the untuned cache whatever the timings.
    Status tune(const GemmShape& shape, const bf16* w, int64_t max_m, cudaStream_t stream);

    // Enqueues D = A · W^T (+ beta * D) on `stream`. Bad shapes, strides or alignments are
    // kInvalidArgument naming the field; a cache miss queries the heuristic (as prepare would).
    Status run(const GemmArgs& args, cudaStream_t stream);

  private:
    struct AlgoKey {
        int64_t m_bucket = 0;
        GemmShape shape;  // beta reduced to 0 or 1: only whether D is read matters

        auto operator<=>(const AlgoKey&) const = default;
    };

    Gemm(LtHandle handle, DeviceBuffer workspace, LtMatmulDesc desc, LtPreference preference);

    struct TuneScratch;

    static AlgoKey key_of(int64_t m_bucket, const GemmShape& shape);

    // tune() of one bucket.
    Status tune_bucket(int64_t m, const GemmShape& shape, const bf16* w, TuneScratch& scratch,
                       cudaStream_t stream);

    // The cached algorithm for `key`, found with the heuristic on a miss.
    Expected<const cublasLtMatmulAlgo_t*> algo_for(const AlgoKey& key);

    LtHandle handle_;
    DeviceBuffer workspace_;  // bytes [kWorkspaceBytes]: split-K partial sums and the like
    LtMatmulDesc desc_;       // shared by every shape: f32 compute, W transposed
    LtPreference preference_;
    std::map<AlgoKey, cublasLtMatmulAlgo_t> algos_;
};

// The m an algorithm is cached under: the next power of two >= m up to 8192, m itself beyond.
int64_t gemm_m_bucket(int64_t m);

}  // namespace se::cuda
