// Decode attention's partitions merged inside a thread-block cluster (DecodeMerge::kCluster,
// decode_cluster.cu), for decode_attention() to dispatch to.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/decode_attention.h"

namespace se::cuda::decode {

// Enqueues the first pass in clusters of its num_parts (2 .. kDecodeMaxClusterParts) partitions,
// merged by each cluster's first block; p passed decode_attention's checks.
Status launch_cluster(const DecodeAttentionParams& p, int32_t num_parts, cudaStream_t stream);

}  // namespace se::cuda::decode
