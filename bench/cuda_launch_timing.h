// Kernel timing shared by the GPU kernel benchmarks (BENCHMARKS.md's kernel protocol): warm-up
// launches, then timed launches between two CUDA events on one stream; the mean per launch.
#pragma once

#include "backend/cuda/event.h"
#include "backend/cuda/stream.h"
#include "core/expected.h"

namespace se::cuda {

// `launch(stream)` returns the launch's Status; the mean milliseconds of one of `iters` launches
// after `warmup` untimed ones.
template <typename Launch>
Expected<double> mean_launch_ms(int warmup, int iters, Launch launch) {
    SE_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    SE_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(EventKind::kTiming));
    SE_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(EventKind::kTiming));
    for (int i = 0; i < warmup; ++i) SE_RETURN_IF_ERROR(launch(stream.get()));
    SE_RETURN_IF_ERROR(start.record(stream.get()));
    for (int i = 0; i < iters; ++i) SE_RETURN_IF_ERROR(launch(stream.get()));
    SE_RETURN_IF_ERROR(end.record(stream.get()));
    SE_RETURN_IF_ERROR(end.synchronize());
    SE_ASSIGN_OR_RETURN(const float total_ms, CudaEvent::elapsed_ms(start, end));
    return total_ms / iters;
}

}  // namespace se::cuda
