#include "backend/cuda/cuda_status.h"
#include "backend/cuda/logit_edits.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 256;

// The __f*_rn intrinsics are never contracted into an FMA, so each step rounds once, as the
// CPU's separate float statements do.
__global__ void __launch_bounds__(kThreads) logit_edits_kernel(LogitEditsParams p) {
    const int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x;
    if (i >= p.num_edits) return;
    const LogitEdit e = p.edits[i];
    if (e.row < 0 || e.row >= p.num_rows || e.token < 0 || e.token >= p.vocab) return;
    float& logit = p.logits[int64_t{e.row} * p.row_stride + e.token];
    float x = __fadd_rn(logit, e.bias);
    if (e.mask) x = -INFINITY;
    if (e.repetition != 1.0f)
        x = x > 0.0f ? __fdiv_rn(x, e.repetition) : __fmul_rn(x, e.repetition);
    logit = __fsub_rn(x, e.subtract);
}

}  // namespace

Status apply_logit_edits(const LogitEditsParams& p, cudaStream_t stream) {
    if (p.vocab <= 0) return invalid_argument("apply_logit_edits: vocab must be positive");
    if (p.row_stride < p.vocab) return invalid_argument("apply_logit_edits: row_stride < vocab");
    if (p.num_rows < 0) return invalid_argument("apply_logit_edits: num_rows is negative");
    if (p.num_edits < 0) return invalid_argument("apply_logit_edits: num_edits is negative");
    if (p.num_edits == 0) return Status::ok_status();
    if (p.logits == nullptr) return invalid_argument("apply_logit_edits: logits is null");
    if (p.edits == nullptr) return invalid_argument("apply_logit_edits: edits is null");
    const int blocks = (p.num_edits + kThreads - 1) / kThreads;
    logit_edits_kernel<<<blocks, kThreads, 0, stream>>>(p);
    return launch_status("apply_logit_edits");
}

}  // namespace se::cuda
