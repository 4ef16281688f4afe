#include "backend/cuda/cuda_status.h"
#include "backend/cuda/kv_store.h"
#include "backend/cuda/launch_checks.h"
#include "backend/cuda/pdl.cuh"

namespace se::cuda {
namespace {

constexpr int kThreads = 128;

// One block per token: K and V rows copied 16 bytes at a time.
__global__ void __launch_bounds__(kThreads) store_kv_kernel(KvStoreParams p) {
    pdl_enter();  // every input is an earlier kernel's output (pdl.cuh)
    const int64_t token = blockIdx.x;
    const int64_t slot = p.slots[token];
    if (slot < 0 || slot >= p.num_slots) return;
    const auto* k = reinterpret_cast<const uint4*>(p.k + token * p.row_stride);
    const auto* v = reinterpret_cast<const uint4*>(p.v + token * p.row_stride);
    auto* k_dst = reinterpret_cast<uint4*>(p.k_blocks + slot * p.entry_elems);
    auto* v_dst = reinterpret_cast<uint4*>(p.v_blocks + slot * p.entry_elems);
    for (int32_t i = threadIdx.x; i < p.entry_elems / 8; i += kThreads) {
        k_dst[i] = k[i];
        v_dst[i] = v[i];
    }
}

}  // namespace

Status store_kv(const KvStoreParams& p, cudaStream_t stream) {
    constexpr std::string_view kName = "store_kv";
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "entry_elems", p.entry_elems));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "row_stride", p.row_stride));
    for (const void* ptr :
         {static_cast<const void*>(p.k), static_cast<const void*>(p.v),
          static_cast<const void*>(p.k_blocks), static_cast<const void*>(p.v_blocks)}) {
        SE_RETURN_IF_ERROR(check_aligned(kName, "an operand", ptr));
    }
    if (p.row_stride < p.entry_elems) return invalid_argument("store_kv: row_stride < entry_elems");
    if (p.num_tokens == 0) return Status::ok_status();
    return cuda_status(
        launch_pdl(store_kv_kernel, dim3(p.num_tokens), dim3(kThreads), 0, stream, p), kName);
}

}  // namespace se::cuda
