#include "backend/cuda/cuda_status.h"
#include "backend/cuda/kv_move.h"
#include "backend/cuda/launch_checks.h"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;

// One block for all moves: the whole block copies move i, 16 bytes per thread, and the barrier
// after it makes its writes visible to every thread before move i + 1 reads. Moves are few (a
// compaction of one sequence's evicted entries) and each is a few KiB, so the serial order costs
// little; blocks working on different moves could not see each other's writes without a
// grid-wide barrier.
__global__ void __launch_bounds__(kThreads) move_kv_kernel(KvMoveParams p) {
    const int32_t vecs = p.entry_elems / 8;
    for (int32_t m = 0; m < p.num_moves; ++m) {
        const int64_t from = p.from[m];
        const int64_t to = p.to[m];
        if (from >= 0 && from < p.num_slots && to >= 0 && to < p.num_slots) {
            const auto* k_src = reinterpret_cast<const uint4*>(p.k_blocks + from * p.entry_elems);
            const auto* v_src = reinterpret_cast<const uint4*>(p.v_blocks + from * p.entry_elems);
            auto* k_dst = reinterpret_cast<uint4*>(p.k_blocks + to * p.entry_elems);
            auto* v_dst = reinterpret_cast<uint4*>(p.v_blocks + to * p.entry_elems);
            for (int32_t i = threadIdx.x; i < vecs; i += kThreads) {
                k_dst[i] = k_src[i];
                v_dst[i] = v_src[i];
            }
        }
        __syncthreads();
    }
}

}  // namespace

Status move_kv(const KvMoveParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "move_kv";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "entry_elems", p.entry_elems));
    SE_RETURN_IF_ERROR(check_aligned(kName, "k_blocks", p.k_blocks));
    SE_RETURN_IF_ERROR(check_aligned(kName, "v_blocks", p.v_blocks));
    if (p.num_moves <= 0) return Status::ok_status();
    move_kv_kernel<<<1, kThreads, 0, stream>>>(p);
    return launch_status(kName);
}

}  // namespace se::cuda
