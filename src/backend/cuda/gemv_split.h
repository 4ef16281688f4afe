// The split schedule of the decode GEMV (gemv_split.cu), for gemv.cu's dispatcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_tile.cuh"
#include "core/status.h"

namespace se::cuda::gemv_detail {

// Whether a kStore launch of num_tiles 16-row tiles runs split: when the tiles would fill fewer
// than kSplitBelowWaves waves of the tile kernel, whose last wave leaves SMs idle.
bool use_split(const GemvParams& p, int64_t num_tiles);

// y_s = x · w_s^T over num_tiles tiles (tiles.begin as gemv.cu builds it), one CTA per SM.
Status launch_split(const GemvParams& p, const SegmentTiles& tiles, int32_t num_tiles,
                    cudaStream_t stream);

}  // namespace se::cuda::gemv_detail
