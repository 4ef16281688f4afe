// Sampling on the device, one launch for a decode step's rows: only the token ids travel back to
// the host, instead of rows x vocab f32 logits. Reproduces the CPU sampler's rule
// (engine/sampling/sampler.h, candidate_set.h) over a canonical order of the tokens:
//
//   temperature < 1e-5 (SamplingParams::is_greedy)  -> argmax, ties to the lowest id, NaN never
//                                                      wins (argmax_order.cuh)
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
    const RowSampling* rows = nullptr;  // [num_rows], device or pinned host (read once a CTA)
    int32_t* out = nullptr;             // i32 [num_rows], device: the sampled token ids
    int32_t* host_out = nullptr;        // i32 [num_rows], pinned host, or null: the same ids, so
                                        // that no copy needs to bring them back
    int64_t row_stride = 0;             // elements between rows, >= vocab
    int32_t num_rows = 0;               // >= 0; 0 launches nothing
    int32_t vocab = 0;                  // > 0
};

// A cluster of 8 CTAs (1024 threads each, sm_90 distributed shared memory) per row; no full
// sort. CTA r copies tokens [r * chunk, (r + 1) * chunk), chunk = ceil(vocab / 8), into its shared
// memory with 16-byte loads (vocab up to 8 * 40960 = 327680; larger is an invalid argument), and
// every later pass reads that copy: the row crosses device memory once. Each threshold (the top-k
// boundary, the top-p cut, the picked token) is found by a radix descent over the 64-bit canonical
// key (monotone key of the f32 logit, then the complemented id), 11 bits per level: each CTA
// histograms its chunk (counts and fixed-point masses, warp-aggregated 32-bit shared atomics),
// the cluster sums the histograms through distributed shared memory, and every CTA scans the same
// sums. A descent stops as soon as its bin holds one token (after 2 or 3 of the 5 levels unless
// logits tie).
// Needs no workspace.
//
// Predicted cost at vocab 128256 on the H200 (bench/cuda_sample_rows_bench.cc measures it; the
// times include the ~2-3 us from launch to start that the events see):
//   load: 64 KB per SM, 4 x 16-byte loads in flight per thread, ~1-2 us from L2 or HBM;
//   row stats: one pass over the shared copy + one cluster barrier, ~1 us;
//   each descent level: a pass over the copy (16 tokens a thread, an expf each for masses), two
//   cluster barriers, 24 KB of distributed shared memory read per CTA, a 256-bin scan, ~3 us;
//   ending a descent early: a pass + one barrier, ~1 us.
//   1 row:  greedy ~5 us; temperature ~10 us peaked, ~15 us flat (1 descent of 2-3 levels);
//           top_k=50 ~15 / 18 us (2 descents); top_p=0.9 (+ min_p) ~15 / 22 us (2 descents).
//   64 rows: 512 CTAs of one SM each (1024 threads x 64 registers fill its register file), 16
//           clusters a wave: 4 waves, ~4x one row (greedy ~20 us, the others ~40-90 us).
Status sample_rows(const SampleRowsParams& p, cudaStream_t stream);

}  // namespace se::cuda
