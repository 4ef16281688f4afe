// Copies a model's weights into a backend's memory once, at start-up: matrices (the embedding and
// every projection, quantized or float) become `matrix_dtype` (BF16 for the GPU's GEMMs); norm
// weights and biases ([1, n] F32 rows) stay F32. The host copy can be dropped afterwards.
#pragma once

#include <functional>

#include "backend/backend_memory.h"
#include "core/expected.h"
#include "model/weight_store.h"

namespace se {

// A store of the same names whose views point into `memory`; resource_exhausted naming the
// tensor when the memory runs out. `on_progress` gets the fraction of bytes done.
Expected<WeightStore> upload_weights(const WeightStore& host, BackendMemory& memory,
                                     DType matrix_dtype,
                                     const std::function<void(float)>& on_progress = nullptr);

}  // namespace se
