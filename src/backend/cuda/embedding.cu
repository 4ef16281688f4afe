#include <cmath>

#include "backend/cuda/bf16_vec.cuh"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/embedding.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"
#include "backend/sampling_rows.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int32_t kFedIdZero = fed_token_id(0);

// One block per token; each thread copies 8 elements at a time.
__global__ void __launch_bounds__(kThreads) embedding_kernel(EmbeddingParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int32_t token = blockIdx.x;
    int32_t id = p.ids[token];
    if (p.fed != nullptr && id <= kFedIdZero) id = p.fed[kFedIdZero - id];  // fed_token_row(id)
    const int64_t index = int64_t{id} - p.first_id;                         // the row in this table
    const bool valid = index >= 0 && index < p.vocab_size;
    const float fill = p.outside == EmbeddingOutside::kZero && id >= 0 ? 0.0f : NAN;
    float* out = p.out + int64_t{token} * p.hidden;
    const bf16* row = p.table + (valid ? index : 0) * p.hidden;
    for (int32_t c = threadIdx.x * kVecElems; c < p.hidden; c += kThreads * kVecElems) {
        float v[kVecElems];
        if (valid) {
            load_bf16x8(row + c, v);
        } else {
#pragma unroll
            for (float& x : v) x = fill;
        }
        store_f32x8(out + c, v);
    }
}

}  // namespace

Status embedding(const EmbeddingParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "embedding";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "hidden", p.hidden));
    SE_RETURN_IF_ERROR(check_aligned(kName, "table", p.table));
    SE_RETURN_IF_ERROR(check_aligned(kName, "out", p.out));
    if (p.num_tokens == 0) return Status::ok_status();
    return cuda_status(
        launch_pdl(embedding_kernel, dim3(p.num_tokens), dim3(kThreads), 0, stream, p), kName);
}

}  // namespace se::cuda
