// A CUDA injection library (the driver loads it when CUDA_INJECTION64_PATH names it) that records
// every kernel's start and end with CUPTI's concurrent-kernel activity, kernels replayed from CUDA
// graphs included, into the CSV file $SE_TIMELINE_OUT (default timeline.csv): start and end in ns,
// the grid, the graph id (0 outside graphs) and the mangled name. bench/kernel-timeline runs a
// command with it and says what each kernel adds to a decode step; ncu, which times every kernel
// alone, cannot show that. A profiling aid: the engine never loads it.
//
// CUPTI's buffer callbacks carry no user pointer, so the open file is the one piece of process
// state, reached through recorder().
#include <cupti.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t kBufferBytes = size_t{16} << 20;

struct Recorder {
    std::FILE* out = nullptr;
};

Recorder& recorder() {
    static Recorder r;
    return r;
}

void CUPTIAPI request_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
    *size = kBufferBytes;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *max_records = 0;  // as many as fit
}

void CUPTIAPI complete_buffer(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        std::fprintf(recorder().out, "%llu,%llu,%d,%d,%d,%u,%s\n",
                     static_cast<unsigned long long>(k->start),
                     static_cast<unsigned long long>(k->end), k->gridX, k->gridY, k->gridZ,
                     k->graphId, k->name);
    }
    std::free(buffer);
}

void flush_at_exit() {
    cuptiActivityFlushAll(1);
    std::fclose(recorder().out);
}

}  // namespace

// The driver's entry point; 1 on success.
extern "C" int InitializeInjection() {
    const char* path = std::getenv("SE_TIMELINE_OUT");
    Recorder& r = recorder();
    r.out = std::fopen(path != nullptr ? path : "timeline.csv", "w");
    if (r.out == nullptr) {
        std::fprintf(stderr, "kernel timeline: cannot write %s\n", path ? path : "timeline.csv");
        return 0;
    }
    std::fprintf(r.out, "start,end,gx,gy,gz,graph,name\n");
    if (cuptiActivityRegisterCallbacks(request_buffer, complete_buffer) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        std::fprintf(stderr, "kernel timeline: CUPTI refused the kernel activity\n");
        return 0;
    }
    std::atexit(flush_at_exit);
    return 1;
}
