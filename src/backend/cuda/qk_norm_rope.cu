#include <string>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/qk_norm_rope.h"
#include "backend/cuda/rope_pair.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;

// kLanes lanes per (token, head), each holding one 16-byte slice of the head (head_dim <= 8 *
// kLanes): a head is read once and written once. The head passes through shared memory between
// the norm and the rotation because a neox pair (f, f + rotary_dim / 2) spans lanes.
//
// The sum of squares matches head_rms_norm's bit for bit: there a lane sums its 8 values in
// order and a 32-lane butterfly adds the lanes; lanes past the head hold +0, so the butterfly's
// first steps (offsets >= kLanes) add +0 and change nothing, and the remaining steps are this
// kernel's. The butterfly leaves the same sum in every lane (f32 addition commutes).
//
// With a store, each token has num_kv_heads more heads, its v heads: they pass through unnormed
// and unrotated, straight to the cache, while the k heads go to the cache after the rotation.
template <int kLanes>
__global__ void __launch_bounds__(kThreads) qk_norm_rope_kernel(QkNormRopeParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    constexpr int kHeadsPerBlock = kThreads / kLanes;
    __shared__ __align__(16) bf16 heads[kHeadsPerBlock][kLanes * kVecElems];
    const int slot = threadIdx.x / kLanes;
    const int lane = threadIdx.x % kLanes;
    bf16* smem = heads[slot];

    // No early return: every lane of the warp takes part in the shuffles and __syncwarp.
    const bool stores = p.store.k_blocks != nullptr;
    const int32_t heads_per_token = p.num_q_heads + p.num_kv_heads * (stores ? 2 : 1);
    const int64_t head_index = int64_t{blockIdx.x} * kHeadsPerBlock + slot;
    const bool valid = head_index < int64_t{p.num_tokens} * heads_per_token;
    const int64_t token = valid ? head_index / heads_per_token : 0;
    const auto head = valid ? static_cast<int32_t>(head_index - token * heads_per_token) : 0;
    const bool is_q = head < p.num_q_heads;
    const bool is_v = head >= p.num_q_heads + p.num_kv_heads;
    const int32_t kv_head = head - p.num_q_heads - (is_v ? p.num_kv_heads : 0);
    const int64_t kv_at = int64_t{kv_head} * p.head_dim;
    // x: the q or k head, rewritten in place; a v head is only read.
    bf16* x = is_q ? p.q + token * p.q_row_stride + int64_t{head} * p.head_dim
                   : p.k + token * p.k_row_stride + kv_at;
    const bf16* in = is_v ? p.store.v + token * p.store.v_row_stride + kv_at : x;
    const float* weight = is_q ? p.q_norm_weight : is_v ? nullptr : p.k_norm_weight;
    const int32_t c = lane * kVecElems;
    const bool holds = valid && c < p.head_dim;

    uint4 raw = make_uint4(0, 0, 0, 0);  // +0 past the head
    if (holds) raw = *reinterpret_cast<const uint4*>(in + c);
    float v[kVecElems];
    bf16x8_to_float(raw, v);
    float sum_sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) sum_sq += v[i] * v[i];
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2)
        sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, off);
    if (holds && weight != nullptr) {
        const float inv_rms = rsqrtf(sum_sq / static_cast<float>(p.head_dim) + p.eps);
        float w[kVecElems];
        load_f32x8(weight + c, w);
#pragma unroll
        for (int i = 0; i < kVecElems; ++i) v[i] = w[i] * (v[i] * inv_rms);
        store_bf16x8(smem + c, v);
    } else if (holds) {
        *reinterpret_cast<uint4*>(smem + c) = raw;  // unnormed: the bits as they came
    }
    __syncwarp();

    if (valid && !is_v) {
        const int32_t half = p.rotary_dim / 2;
        const int32_t position = p.positions[token];
        for (int32_t f = lane; f < half; f += kLanes)
            rope_rotate_pair(smem, p.style, f, half, position, p.inv_freq[f]);
    }
    __syncwarp();
    if (!holds) return;
    const uint4 out = *reinterpret_cast<const uint4*>(smem + c);
    if (!is_v) *reinterpret_cast<uint4*>(x + c) = out;
    if (!stores || is_q) return;
    const int64_t cache_slot = p.store.slots[token];
    if (cache_slot < 0 || cache_slot >= p.store.num_slots) return;
    bf16* blocks = is_v ? p.store.v_blocks : p.store.k_blocks;
    const int64_t entry_elems = int64_t{p.num_kv_heads} * p.head_dim;
    *reinterpret_cast<uint4*>(blocks + cache_slot * entry_elems + kv_at + c) = out;
}

Status check_store(const QkNormRopeParams& p) {
    constexpr std::string_view kName = "qk_norm_rope";
    const QkNormRopeStore& s = p.store;
    if (s.k_blocks == nullptr) {
        if (s.v_blocks != nullptr) return invalid_argument("qk_norm_rope: store.k_blocks is null");
        return Status::ok_status();
    }
    if (s.v == nullptr) return invalid_argument("qk_norm_rope: store.v is null");
    if (s.v_blocks == nullptr) return invalid_argument("qk_norm_rope: store.v_blocks is null");
    if (s.slots == nullptr) return invalid_argument("qk_norm_rope: store.slots is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, "store.v", s.v));
    SE_RETURN_IF_ERROR(check_aligned(kName, "store.k_blocks", s.k_blocks));
    SE_RETURN_IF_ERROR(check_aligned(kName, "store.v_blocks", s.v_blocks));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "store.v_row_stride", s.v_row_stride));
    if (s.v_row_stride < int64_t{p.num_kv_heads} * p.head_dim) {
        return invalid_argument("qk_norm_rope: store.v_row_stride " +
                                std::to_string(s.v_row_stride) + " < num_kv_heads * head_dim");
    }
    if (s.num_slots < 0) {
        return invalid_argument("qk_norm_rope: store.num_slots " + std::to_string(s.num_slots) +
                                " < 0");
    }
    return Status::ok_status();
}

Status check_args(const QkNormRopeParams& p) {
    constexpr std::string_view kName = "qk_norm_rope";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "head_dim", p.head_dim));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "q_row_stride", p.q_row_stride));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "k_row_stride", p.k_row_stride));
    SE_RETURN_IF_ERROR(check_aligned(kName, "q", p.q));
    SE_RETURN_IF_ERROR(check_aligned(kName, "k", p.k));
    SE_RETURN_IF_ERROR(check_aligned(kName, "q_norm_weight", p.q_norm_weight));
    SE_RETURN_IF_ERROR(check_aligned(kName, "k_norm_weight", p.k_norm_weight));
    if (p.head_dim <= 0 || p.head_dim > kQkNormRopeMaxHeadDim) {
        return invalid_argument("qk_norm_rope: head_dim " + std::to_string(p.head_dim) +
                                " must be in (0, " + std::to_string(kQkNormRopeMaxHeadDim) + "]");
    }
    if (p.rotary_dim <= 0 || p.rotary_dim % 2 != 0 || p.rotary_dim > p.head_dim) {
        return invalid_argument("qk_norm_rope: rotary_dim " + std::to_string(p.rotary_dim) +
                                " must be even and in (0, head_dim " + std::to_string(p.head_dim) +
                                "]");
    }
    if (p.num_tokens < 0 || p.num_q_heads < 0 || p.num_kv_heads < 0) {
        return invalid_argument("qk_norm_rope: num_tokens, num_q_heads or num_kv_heads < 0");
    }
    if (p.q_row_stride < int64_t{p.num_q_heads} * p.head_dim) {
        return invalid_argument("qk_norm_rope: q_row_stride " + std::to_string(p.q_row_stride) +
                                " < num_q_heads * head_dim");
    }
    if (p.k_row_stride < int64_t{p.num_kv_heads} * p.head_dim) {
        return invalid_argument("qk_norm_rope: k_row_stride " + std::to_string(p.k_row_stride) +
                                " < num_kv_heads * head_dim");
    }
    if (p.style != RopeStyle::kNeox && p.style != RopeStyle::kInterleaved) {
        return invalid_argument("qk_norm_rope: unknown style");
    }
    return check_store(p);
}

template <int kLanes>
Status launch(const QkNormRopeParams& p, int64_t num_heads, cudaStream_t stream) {
    constexpr int kHeadsPerBlock = kThreads / kLanes;
    const auto num_blocks =
        static_cast<unsigned>((num_heads + kHeadsPerBlock - 1) / kHeadsPerBlock);
    return cuda_status(
        launch_pdl(qk_norm_rope_kernel<kLanes>, dim3(num_blocks), dim3(kThreads), 0, stream, p),
        "qk_norm_rope");
}

}  // namespace

Status qk_norm_rope(const QkNormRopeParams& p, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_args(p));
    const int32_t v_heads = p.store.k_blocks != nullptr ? p.num_kv_heads : 0;
    const int64_t num_heads = int64_t{p.num_tokens} * (p.num_q_heads + p.num_kv_heads + v_heads);
    if (num_heads == 0) return Status::ok_status();
    // The fewest lanes (at least 8, a quarter warp) whose 16-byte slices cover a head.
    const int32_t slices = p.head_dim / kVecElems;
    if (slices <= 8) return launch<8>(p, num_heads, stream);
    if (slices <= 16) return launch<16>(p, num_heads, stream);
    return launch<32>(p, num_heads, stream);
}

}  // namespace se::cuda
