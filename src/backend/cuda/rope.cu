#include <algorithm>
#include <string>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rope.h"
#include "backend/cuda/rope_pair.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per rotation pair of one head of one token: q heads first, then k heads. Pairs of
// neighbouring threads are neighbouring elements, so a warp's accesses stay within a head.
__global__ void __launch_bounds__(kThreads) rope_kernel(RopeParams p, int64_t num_pairs) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int32_t half = p.rotary_dim / 2;
    const int32_t heads = p.num_q_heads + p.num_kv_heads;
    for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < num_pairs;
         i += int64_t{gridDim.x} * kThreads) {
        const auto f = static_cast<int32_t>(i % half);
        const auto head = static_cast<int32_t>(i / half % heads);
        const int64_t token = i / half / heads;
        bf16* x = head < p.num_q_heads
                      ? p.q + token * p.q_row_stride + int64_t{head} * p.head_dim
                      : p.k + token * p.k_row_stride + int64_t{head - p.num_q_heads} * p.head_dim;
        rope_rotate_pair(x, p.style, f, half, p.positions[token], p.inv_freq[f]);
    }
}

}  // namespace

Status rope(const RopeParams& p, cudaStream_t stream) {
    if (p.rotary_dim <= 0 || p.rotary_dim % 2 != 0 || p.rotary_dim > p.head_dim) {
        return invalid_argument("rope: rotary_dim " + std::to_string(p.rotary_dim) +
                                " must be even and in (0, head_dim " + std::to_string(p.head_dim) +
                                "]");
    }
    if (p.q_row_stride < int64_t{p.num_q_heads} * p.head_dim ||
        p.k_row_stride < int64_t{p.num_kv_heads} * p.head_dim) {
        return invalid_argument("rope: a row stride is shorter than its heads");
    }
    if (p.style != RopeStyle::kNeox && p.style != RopeStyle::kInterleaved) {
        return invalid_argument("rope: unknown RopeStyle");
    }
    const int64_t num_pairs =
        int64_t{p.num_tokens} * (p.num_q_heads + p.num_kv_heads) * (p.rotary_dim / 2);
    if (num_pairs == 0) return Status::ok_status();
    // Enough blocks to fill an H200 several times over; the loop strides past that.
    const int64_t num_blocks = std::min<int64_t>((num_pairs + kThreads - 1) / kThreads, 132 * 16);
    return cuda_status(launch_pdl(rope_kernel, dim3(static_cast<unsigned>(num_blocks)),
                                  dim3(kThreads), 0, stream, p, num_pairs),
                       "rope");
}

}  // namespace se::cuda
