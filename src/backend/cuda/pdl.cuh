// Programmatic dependent launch (sm_90): a kernel launched with launch_pdl may start while the
// kernel before it on the stream is still running, so its launch latency, its CTAs' start-up and
// any prologue that reads no earlier kernel's output (a GEMV's weights) overlap the previous
// kernel's last wave and the small kernels between the big ones. A decode step at batch 1 is ~350
// kernels, most of them a few microseconds long, so the gaps between them are a large share of it.
//
//   kernel A  [=========== last wave ===]
//   kernel B            [start | prologue | pdl_wait ...... | body ]     (launch_pdl)
//                                          A complete, its writes visible ^
//
// The rules, for every kernel launched with launch_pdl:
//   * call pdl_wait() before reading anything an earlier kernel of the stream wrote, and before
//     writing anything an earlier kernel may still read; only reads of data no kernel of the
//     stream writes (weights, tables uploaded at start-up) may come before it;
//   * read an earlier kernel's output with ordinary loads, never through the read-only path
//     (ld.global.nc, __ldg): that path assumes nothing writes the data while the kernel runs, and
//     the kernel runs before pdl_wait() while the previous one still writes, so nothing keeps such
//     a load after the wait (a GEMV that did this failed the PDL chain test, gemv.cu);
//   * call pdl_launch_dependents() (any time; once is enough) to let the next kernel start. A
//     kernel that never calls it lets the next one start when it exits, as a plain launch does.
// pdl_wait() waits for the whole previous grid, which itself waited for its own predecessor, so
// every earlier kernel of the stream is complete and visible after it. Without the launch
// attribute (a plain <<<>>> launch, or a kernel test) both calls do nothing. CUDA graphs keep the
// attribute as a programmatic edge.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace se::cuda {

// Blocks until every earlier kernel of the stream has finished and its writes are visible.
__device__ __forceinline__ void pdl_wait() {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// pdl_wait() behind the loads written before it. ptxas schedules griddepcontrol.wait as early as
// its basic block allows, above loads whose results are needed only after it: a GEMV's first
// round of weights, written before the wait to stream while the previous kernel ends, issued
// after it in every m <= 8 GEMV of the CUDA 13 build, so that its latency came after the previous
// kernel instead of under its tail. A loop ends the block (ptxas neither drops nor predicates it),
// and the loads stay in front. `never` must be 0 or less at run time and unknown to the compiler
// (the GEMV passes m - kGemvMaxRows): the loop never runs. tests/backend_cuda/sass_order_test.py
// checks the order in the built GEMV.
__device__ __forceinline__ void pdl_wait_behind_loads(int never) {
    for (int i = 0; i < never; ++i) asm volatile("nanosleep.u32 0;\n" ::: "memory");
    pdl_wait();
}

// Lets the stream's next kernel launch once every CTA of this grid has called this or exited.
__device__ __forceinline__ void pdl_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// The prologue of a kernel every input of which is an earlier kernel's output: the next kernel
// may launch now, and nothing is read before the previous one is complete.
__device__ __forceinline__ void pdl_enter() {
    pdl_launch_dependents();
    pdl_wait();
}

// kernel<<<grid, block, smem_bytes, stream>>>(args...) with programmatic stream serialization:
// the kernel may begin before the previous one ends, and must follow the rules above.
template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                       cudaStream_t stream, Args&&... args) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// launch_pdl in thread-block clusters of `cluster` blocks (sm_90; grid divisible by it).
template <typename... Params, typename... Args>
cudaError_t launch_pdl_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block,
                                size_t smem_bytes, cudaStream_t stream, Args&&... args) {
    cudaLaunchAttribute attributes[2] = {};
    attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[0].val.programmaticStreamSerializationAllowed = 1;
    attributes[1].id = cudaLaunchAttributeClusterDimension;
    attributes[1].val.clusterDim.x = cluster.x;
    attributes[1].val.clusterDim.y = cluster.y;
    attributes[1].val.clusterDim.z = cluster.z;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = 2;
    return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace se::cuda
