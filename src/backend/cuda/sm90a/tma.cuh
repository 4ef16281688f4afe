// The bulk tensor copy engine (TMA, PTX "cp.async.bulk.tensor") as inline PTX, for the TMA
// producer of the wgmma prefill kernel (prefill_producer.cuh): 2-D tile loads into shared memory
// that complete on an mbarrier by transaction bytes, the arrival that announces those bytes, and
// the tensor-map prefetch.
//
// A load's bytes count down the tx-count of the barrier's current phase (complete_tx); the phase
// completes when its arrivals and its tx-count are both done. mbarrier_arrive_expect_tx() raises
// the tx-count by the bytes to come and arrives, so the thread that issues the loads calls it
// before any of them. Data that TMA writes is in the async proxy, where wgmma reads: a consumer
// that waited for the phase reads it without a proxy fence (unlike cp.async data).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: the kernel library never calls the driver API)

#include <cstdint>

namespace se::cuda::sm90a {

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}

// The box of `map` at coordinates (c0 innermost, c1) into shared memory at `dst`, completing on
// the barrier at `bar`. `map` is the address of a __grid_constant__ kernel parameter. A CTA
// launched without a cluster is a cluster of one: its shared::cta addresses are shared::cluster
// addresses of itself.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int32_t c0,
                                            int32_t c1, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

}  // namespace se::cuda::sm90a
