// Warp-level tensor core primitives as inline PTX (sm_80 and later; sm_90 runs them too): the
// bf16 m16n8k16 MMA with f32 accumulators, ldmatrix from shared memory, and cp.async copies from
// global to shared memory.
//
// Fragment layouts of mma.m16n8k16 (lane = 4 * g + t, g in [0, 8), t in [0, 4)); each 32-bit
// register holds two bf16, the lower column (or k) in the low half:
//   A 16x16 (row major): a0 = (row g, k 2t..2t+1)   a1 = (row g+8, k 2t..2t+1)
//                        a2 = (row g, k 2t+8..+9)   a3 = (row g+8, k 2t+8..+9)
//   B 16x8  (k x n):     b0 = (k 2t..2t+1, col g)   b1 = (k 2t+8..+9, col g)
//   C 16x8  (f32):       c0, c1 = (row g, cols 2t, 2t+1)   c2, c3 = (row g+8, cols 2t, 2t+1)
// ldmatrix.x4 reads four 8x8 bf16 matrices, lanes 8i..8i+7 giving the row addresses of matrix i;
// register i of a lane is matrix i's (row g, cols 2t..2t+1), or with .trans its (rows 2t..2t+1,
// col g): the B fragment of a matrix stored k-major (V's [key][dim]).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace se::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// d (16x8 f32) += a (16x16 bf16) * b (16x8 bf16).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// 16 bytes global -> shared, bypassing L1; with valid false nothing is read and the 16 bytes are
// zeroed (src must still be a mapped address).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until this thread's copies of every committed group have landed (other threads' copies
// need a __syncthreads() after this).
__device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

}  // namespace se::cuda
