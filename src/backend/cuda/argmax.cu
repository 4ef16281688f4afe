#include <cstdint>

#include "backend/cuda/argmax.h"
#include "backend/cuda/cuda_status.h"

namespace se::cuda {
namespace {

// A whole CTA per row: a decode step's few rows of 150k logits each are the entire launch, so
// each row gets as many loads in flight as one SM holds.
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

struct Candidate {
    float value;
    int32_t index;
};

// Whether a beats b: the larger number, NaN below every number, the lower index on a tie (and
// between two NaNs). A total order, so the reduction's result does not depend on its shape.
__device__ __forceinline__ bool beats(Candidate a, Candidate b) {
    const bool a_nan = isnan(a.value);
    const bool b_nan = isnan(b.value);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.value != b.value) return a.value > b.value;
    return a.index < b.index;
}

__device__ __forceinline__ Candidate warp_best(Candidate c) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        const Candidate other{__shfl_xor_sync(0xffffffffu, c.value, off),
                              __shfl_xor_sync(0xffffffffu, c.index, off)};
        if (beats(other, c)) c = other;
    }
    return c;
}

__global__ void __launch_bounds__(kThreads) argmax_kernel(ArgmaxParams p) {
    __shared__ Candidate warp_bests[kWarps];
    const float* row = p.logits + int64_t{blockIdx.x} * p.row_stride;
    // Loses to every element, NaN elements included (their index is lower), so a thread that
    // sees no element (vocab < kThreads) never wins.
    Candidate best{NAN, INT32_MAX};
    for (int32_t i = threadIdx.x; i < p.vocab; i += kThreads) {
        const Candidate c{row[i], i};
        if (beats(c, best)) best = c;
    }
    best = warp_best(best);
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) warp_bests[warp] = best;
    __syncthreads();
    if (warp != 0) return;
    best = warp_best(threadIdx.x < kWarps ? warp_bests[threadIdx.x] : Candidate{NAN, INT32_MAX});
    if (threadIdx.x == 0) p.out[blockIdx.x] = best.index;
}

}  // namespace

Status argmax(const ArgmaxParams& p, cudaStream_t stream) {
    if (p.vocab <= 0) return invalid_argument("argmax: vocab must be positive");
    if (p.row_stride < p.vocab) return invalid_argument("argmax: row_stride < vocab");
    if (p.num_rows <= 0) return Status::ok_status();
    argmax_kernel<<<p.num_rows, kThreads, 0, stream>>>(p);
    return launch_status("argmax");
}

}  // namespace se::cuda
