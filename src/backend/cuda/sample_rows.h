// Sampling on the device, one launch for a decode step's rows: only the token ids travel back to
// the host, instead of rows x vocab f32 logits. Reproduces the CPU sampler's rule
// (engine/sampling/sampler.h, candidate_set.h) over a canonical order of the tokens:
//
//   temperature < 1e-5 (SamplingParams::is_greedy)  -> argmax, ties to the lowest id, NaN never
//                                                      wins (argmax.h's rule)
//   otherwise, over the finite logits in the order (logit desc, id asc):
//     top_k in [1, count): the first top_k
//     weight = exp((logit - max_logit) * (1 / temperature)), f32 as on the CPU
//     top_p < 1: the tokens whose preceding mass is < top_p * total (at least the first)
//     min_p > 0: the tokens whose weight is >= min_p * the largest weight (which is 1)
//     pick: the first token whose running weight sum exceeds u * (total kept weight)
//   no finite logit at all -> the argmax rule.
//
// The CPU's pick walks its entries in no particular order, so for one u the two may choose
// different tokens; both draw from the same distribution. Masses are sums of the weights
// rounded to fixed point (2^-frac_bits of the largest weight, frac_bits = 63 - bit_width(vocab),
// 45 at vocab 150k) in 64-bit integers: exact and independent of the reduction order; a weight
// moves by at most half that step, so a whole row's mass by at most vocab * 2^-(frac_bits+1),
// 2.2e-9 of the largest weight at vocab 150k (weights below half a step are never drawn). The
// weights themselves are expf's, within 2 ulp (the CPU's glibc expf: 1 ulp): a draw or a cut
// decided differently from the CPU's lies within ~4e-7 of the total of a boundary.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/sampling_rows.h"
#include "core/status.h"

namespace se::cuda {

struct SampleRowsParams {
    const float* logits = nullptr;      // f32 [num_rows, row_stride], vocab used; read only
    const RowSampling* rows = nullptr;  // [num_rows], device
    int32_t* out = nullptr;             // i32 [num_rows], device: the sampled token ids
    int64_t row_stride = 0;             // elements between rows, >= vocab
    int32_t num_rows = 0;               // >= 0; 0 launches nothing
    int32_t vocab = 0;                  // > 0
};

// One CTA of 1024 threads per row; no full sort. Each threshold (the top-k boundary, the top-p
// cut, the picked token) is found by a radix descent over the 64-bit canonical key (monotone key
// of the f32 logit, then the complemented id), 11 bits per level: each level is a shared-memory
// histogram of counts and fixed-point masses over the row, then a block scan. Once the tokens a
// descent still needs fit in 16384 entries, they are compacted into shared memory and the further
// levels (and the later steps, when the kept set fits) read them instead of the row.
//
// Predicted cost at vocab 128256 (H200, rows on separate SMs, so up to 132 rows cost as one):
// each pass over a row from L2 moves 512 KB into one SM, about 5 us at ~100 GB/s per SM, plus
// the shared-memory atomics of the histogram. Greedy: 1 pass, ~5 us. Temperature only: 3 passes
// (max, then 2 levels of the pick before the compaction), ~15-20 us. top_k=50: 3 passes, ~15 us.
// top_p=0.9 (+min_p): 3 to 5 passes, ~15-30 us. bench/cuda_sample_rows_bench.cc measures it.
Status sample_rows(const SampleRowsParams& p, cudaStream_t stream);

}  // namespace se::cuda
