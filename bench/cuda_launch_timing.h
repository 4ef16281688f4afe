// Kernel timing shared by the GPU kernel benchmarks (BENCHMARKS.md's kernel protocol): warm-up
// launches, then timed launches between two CUDA events on one stream; the mean per launch.
#pragma once

#include "backend/cuda/cuda_graph.h"
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

// The mean milliseconds of one of `iters` launches captured in one CUDA graph, timed over one run
// of the graph after an untimed one: the kernels without the host's cost per launch, which a
// short kernel on a plain stream can wait for (decode steps replay graphs).
template <typename Launch>
Expected<double> mean_graph_launch_ms(int iters, Launch launch) {
    SE_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    SE_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(EventKind::kTiming));
    SE_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(EventKind::kTiming));
    SE_RETURN_IF_ERROR(CudaGraphExec::begin_capture(stream.get()));
    // The capture must end whatever a launch returned; its status after that.
    const Status captured = [&]() -> Status {
        for (int i = 0; i < iters; ++i) SE_RETURN_IF_ERROR(launch(stream.get()));
        return Status();
    }();
    SE_ASSIGN_OR_RETURN(const CudaGraphExec graph, CudaGraphExec::end_capture(stream.get()));
    SE_RETURN_IF_ERROR(captured);
    SE_RETURN_IF_ERROR(graph.launch(stream.get()));
    SE_RETURN_IF_ERROR(start.record(stream.get()));
    SE_RETURN_IF_ERROR(graph.launch(stream.get()));
    SE_RETURN_IF_ERROR(end.record(stream.get()));
    SE_RETURN_IF_ERROR(end.synchronize());
    SE_ASSIGN_OR_RETURN(const float total_ms, CudaEvent::elapsed_ms(start, end));
    return total_ms / iters;
}

}  // namespace se::cuda
