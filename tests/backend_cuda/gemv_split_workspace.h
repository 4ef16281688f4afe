// A zeroed workspace for the GEMV's split schedule (gemv.h), as CudaOps allocates it, for tests
// that choose the SM count the schedule divides the work over.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cuda/gemv.h"
#include "cuda_test_util.h"

namespace se::cuda::testing {

// The split schedule's workspace (zeroed, as gemv.h asks), for a given SM count.
class SplitWorkspace {
  public:
    explicit SplitWorkspace(int32_t num_sms)
        : buffer_(upload(std::vector<uint8_t>(gemv_split_workspace_bytes(), 0))),
          num_sms_(num_sms) {}

    GemvSplitWorkspace get() const {
        if (num_sms_ == 0) return {};
        auto* base = buffer_.as<float>();
        return {.partials = base,
                .arrivals = reinterpret_cast<int32_t*>(base + int64_t{kGemvSplitMaxTiles} * 512),
                .num_sms = num_sms_};
    }

    // Every arrival counter is back at zero (the next launch, or a graph replay, needs them so).
    bool counters_are_zero() const {
        const size_t floats = size_t{kGemvSplitMaxTiles} * 512;
        const std::vector<int32_t> all = download<int32_t>(buffer_, floats + kGemvSplitMaxTiles);
        for (size_t i = floats; i < all.size(); ++i) {
            if (all[i] != 0) return false;
        }
        return true;
    }

  private:
    DeviceBuffer buffer_;
    int32_t num_sms_;
};

}  // namespace se::cuda::testing
