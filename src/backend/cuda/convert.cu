#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cuda/convert.h"
#include "backend/cuda/cuda_status.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 several times over; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = 4096;

// core/half.h's f32_to_bf16 on the device, so both sides agree on every bit (the intrinsic
// __float2bfloat16_rn rounds the same way but gives a canonical NaN).
__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f) {
    uint32_t bits = __float_as_uint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

// Scalar, coalesced accesses over the flattened [num_rows, cols]: rows of any width and any
// stride (a vocabulary of odd size, a column slice) take the same path.
__global__ void __launch_bounds__(kThreads) f32_to_bf16_kernel(ConvertF32ToBf16Params p) {
    const int64_t total = int64_t{p.num_rows} * p.cols;
    auto* out = reinterpret_cast<uint16_t*>(p.out);
    for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < total;
         i += int64_t{gridDim.x} * kThreads) {
        const int64_t row = i / p.cols;
        const int64_t col = i - row * p.cols;
        out[row * p.out_stride + col] = f32_to_bf16_bits(p.in[row * p.in_stride + col]);
    }
}

__global__ void __launch_bounds__(kThreads) bf16_to_f32_kernel(ConvertBf16ToF32Params p) {
    const int64_t total = int64_t{p.num_rows} * p.cols;
    const auto* in = reinterpret_cast<const uint16_t*>(p.in);
    for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < total;
         i += int64_t{gridDim.x} * kThreads) {
        const int64_t row = i / p.cols;
        const int64_t col = i - row * p.cols;
        p.out[row * p.out_stride + col] =
            __uint_as_float(uint32_t{in[row * p.in_stride + col]} << 16);
    }
}

Status check_strides(std::string_view kernel, int64_t cols, int64_t in_stride, int64_t out_stride) {
    if (cols < 0 || in_stride < cols || out_stride < cols) {
        return invalid_argument(std::string(kernel) + ": in_stride " + std::to_string(in_stride) +
                                " and out_stride " + std::to_string(out_stride) +
                                " must be >= cols " + std::to_string(cols) + " >= 0");
    }
    return Status::ok_status();
}

int num_blocks(int64_t total) {
    return static_cast<int>(std::min<int64_t>((total + kThreads - 1) / kThreads, kMaxBlocks));
}

}  // namespace

Status convert_f32_to_bf16(const ConvertF32ToBf16Params& p, cudaStream_t stream) {
    constexpr std::string_view kName = "convert_f32_to_bf16";
    SE_RETURN_IF_ERROR(check_strides(kName, p.cols, p.in_stride, p.out_stride));
    const int64_t total = int64_t{p.num_rows} * p.cols;
    if (total <= 0) return Status::ok_status();
    f32_to_bf16_kernel<<<num_blocks(total), kThreads, 0, stream>>>(p);
    return launch_status(kName);
}

Status convert_bf16_to_f32(const ConvertBf16ToF32Params& p, cudaStream_t stream) {
    constexpr std::string_view kName = "convert_bf16_to_f32";
    SE_RETURN_IF_ERROR(check_strides(kName, p.cols, p.in_stride, p.out_stride));
    const int64_t total = int64_t{p.num_rows} * p.cols;
    if (total <= 0) return Status::ok_status();
    bf16_to_f32_kernel<<<num_blocks(total), kThreads, 0, stream>>>(p);
    return launch_status(kName);
}

}  // namespace se::cuda
