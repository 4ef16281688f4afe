// The synchronisation the wgmma prefill kernel uses, as inline PTX: shared-memory barriers
// (mbarrier: phase waits, plain and cp.async-tracked arrivals, the init fence), named barriers
// between warpgroups, the proxy fence, and setmaxnreg (sm_90a) to move registers between
// warpgroups.
//
// An mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier") is
// 8 bytes of shared memory counting arrivals toward the current phase; when `count` arrivals
// (set at init) have come, the phase completes and the next begins. try_wait.parity(P) is true
// once the phase of parity P has completed, i.e. while the current phase's parity is not P. So a
// consumer waits for use u of a ring slot with parity u & 1, and a producer that waits for the
// slot to be free before use u waits with parity (u & 1) ^ 1: before any release, the barrier is
// in phase 0 and parity 1 reads as completed, so use 0 does not wait (CUTLASS's pipelines start
// their producer state at phase 1 for the same reason). A waiting thread sees every write its
// arrivers made before arriving (arrive has release, try_wait acquire semantics at CTA scope).
#pragma once

#include <cstdint>

namespace se::cuda::sm90a {

__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the other threads (and to the cp.async unit, which
// arrives on them) before a __syncthreads(); CUTLASS's fence_barrier_init.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
    asm volatile(
        "{\n"
        ".reg .b64 state;\n"
        "mbarrier.arrive.shared::cta.b64 state, [%0];\n"
        "}\n" ::"r"(bar)
        : "memory");
}

// An arrival made by the cp.async unit once every cp.async this thread issued before it has
// landed. .noinc: it counts as this thread's arrival (the barrier's count includes it), instead
// of adding a pending arrival that the thread would make as well.
__device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Blocks until the phase of parity `parity` has completed. The retry loop is inside the asm:
// a C++ loop around try_wait would be a branch the compiler cannot prove uniform across the
// warpgroup, and ptxas then serialises the wgmmas that follow (warning C7520). try_wait itself
// suspends the thread for a while before it fails, so the loop does not spin hot.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// Orders this thread's view of shared memory through ordinary (generic-proxy) accesses before
// its later async-proxy accesses: wgmma reads its shared operands through the async proxy,
// while cp.async and st.shared write through the generic one (PTX ISA "Proxies").
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Named barriers (bar.sync / bar.arrive, ids 1-15; 0 is __syncthreads): `count` threads in whole
// warps complete a phase, some of them only arriving, the others waiting. Whole warps execute
// these.
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void named_barrier_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Every thread of the warpgroup executes these, and only in a kernel with a register cap at
// entry (__launch_bounds__(threads, 1)); the counts are multiples of 8 in [24, 256].
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace se::cuda::sm90a
