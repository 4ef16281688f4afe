// The host-side inputs of one forward pass (token ids, positions, KV slots, attention metadata)
// on their way to the device. The Ops interface hands kernels host spans; the first call that
// needs one copies it through pinned memory into a device arena, and later calls of the same
// step (every layer reads the same positions, slots and block tables) reuse the device copy.
//
//   pinned host  [ ids | positions | slots | metadata | ...free ]   bump-allocated per step
//   device       [ ids | positions | slots | metadata | ...free ]   same offsets
//
// There are two such pairs of arenas, and steps take turns: begin_step() hands the next step the
// pair the step before last used, once that step's queued work (its copies, its kernels, the
// sampling after it) has finished, which an event recorded at the following begin_step marks. So
// the host may fill step N + 1's inputs while step N still runs (overlapped decode steps,
// engine.h), and a step that samples nothing (a prefill chunk) ends without any wait.
//
// A step captured or replayed as a CUDA graph (decode_graphs.h) fills the pinned arena only
// (StagingSend::kHostOnly), and flush() sends all of it in one copy before the graph's launch:
// the graph holds kernels only, no copy node breaks its chain of programmatic dependent launches,
// and the copy goes on a stream of its own, so it runs while the step before still computes (the
// other pair's step: nothing on the device reads this pair any more). The graph's kernels read the
// device arena at the offsets its capture used, which trace() lets the caller check.
//
// host_copy() stages bytes that one kernel reads straight from the pinned arena over the bus
// (a decode step's sampling parameters): no copy at all.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/event.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/staging_trace.h"
#include "backend/cuda/stream.h"
#include "core/expected.h"

namespace se::cuda {

enum class StagingSend : uint8_t {
    kQueue,     // send() and upload() queue the host-to-device copies
    kHostOnly,  // they fill the pinned arena only; flush() sends it (a graph step)
};

class StepStaging {
  public:
    static Expected<StepStaging> create(size_t capacity_bytes);

    // Starts a step on the other pair of arenas, after waiting for the step that last used them;
    // `stream` is the one every copy and kernel of a step goes to.
    Status begin_step(StagingSend send, cudaStream_t stream);
    // Changes how the rest of the step sends (kQueue after a graph's part of the step).
    void set_send(StagingSend send) { send_ = send; }

    // A device copy of `bytes` host bytes at `src`, queued on `stream`; the same (src, bytes)
    // within a step returns the first copy. Grows (after waiting for the stream) when the arena
    // is full.
    Expected<const void*> upload(const void* src, size_t bytes, cudaStream_t stream);

    template <typename T>
    Expected<const T*> upload(std::span<const T> values, cudaStream_t stream) {
        SE_ASSIGN_OR_RETURN(const void* p, upload(values.data(), values.size_bytes(), stream));
        return static_cast<const T*>(p);
    }

    // A pinned host copy of `bytes` at `src`, which kernels may read in place (unified
    // addressing): for inputs a single kernel reads once, where a copy would cost more than the
    // read. Valid while the step's queued work runs, like the device copies.
    Expected<const void*> host_copy(const void* src, size_t bytes, cudaStream_t stream);

    template <typename T>
    Expected<const T*> host_copy(std::span<const T> values, cudaStream_t stream) {
        SE_ASSIGN_OR_RETURN(const void* p, host_copy(values.data(), values.size_bytes(), stream));
        return static_cast<const T*>(p);
    }

    // Sends what this step has staged so far, in one copy on the staging's own stream, and makes
    // `stream` wait for it: for a step that has staged host-only since begin_step (a graph's).
    Status flush(cudaStream_t stream);

    // Room for `bytes` in both arenas that the caller fills on the host and then sends with
    // send(); for metadata built per call (block tables padded to one stride).
    struct Slot {
        void* host = nullptr;
        void* device = nullptr;
        size_t bytes = 0;
    };
    Expected<Slot> reserve(size_t bytes, cudaStream_t stream);
    Status send(const Slot& slot, cudaStream_t stream) const;

    // Changes whenever earlier device copies stop being valid (a new step, or growth): callers
    // that remember a device pointer keep it only while this stays the same.
    uint64_t generation() const { return generation_; }

    // Changes whenever the arenas move (growth): device copies recorded in a graph stay valid
    // only while this stays the same.
    uint64_t arena_version() const { return arena_version_; }

    // What this step has claimed so far, in order.
    const StagingTrace& trace() const { return trace_; }

    // Which pair of arenas the current step fills (0 or 1): a graph's copies hold one pair's
    // addresses.
    int32_t arena() const { return current_; }

  private:
    struct Arenas {
        PinnedBuffer host;
        DeviceBuffer device;
        CudaEvent done;  // recorded after the last step that used them
    };
    static Expected<Arenas> allocate(size_t bytes);
    StepStaging(Arenas first, Arenas second, CudaStream copy_stream, CudaEvent copied)
        : arenas_{std::move(first), std::move(second)},
          copy_stream_(std::move(copy_stream)),
          copied_(std::move(copied)) {}
    Status grow(size_t at_least, cudaStream_t stream);
    Arenas& current() { return arenas_[current_]; }

    Arenas arenas_[2];
    CudaStream copy_stream_;  // flush()'s copies
    CudaEvent copied_;        // recorded after the last of them
    int32_t current_ = 0;
    size_t used_ = 0;
    uint64_t generation_ = 0;
    uint64_t arena_version_ = 0;
    StagingSend send_ = StagingSend::kQueue;
    StagingTrace trace_;
    std::map<std::pair<const void*, size_t>, const void*> copies_;
};

}  // namespace se::cuda
