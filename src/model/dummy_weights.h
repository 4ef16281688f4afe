// --load-format dummy: every tensor an architecture needs, filled with seeded pseudo-random
// values, for benchmarks and tests without a checkpoint.
#pragma once

#include <cstdint>
#include <functional>

#include "core/expected.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace se {

struct DummyWeightOptions {
    DType dtype = DType::kBF16;  // of the embedding and projections: F32, F16 or BF16
    uint64_t seed = 0;
    std::function<void(float fraction)> on_progress = nullptr;  // called after each tensor
};

// Embedding and projections uniform in [-0.02, 0.02), biases in [-0.01, 0.01), norm weights
// 1.0 (norms and biases in F32, as the ops read them). Each row is generated from (seed, tensor
// name, row) alone, so the same config and options give the same bytes whatever the thread
// count. resource_exhausted when the memory is not there.
Expected<WeightStore> make_dummy_weights(const ModelConfig& config,
                                         const DummyWeightOptions& options);

}  // namespace se
