#include "backend/cuda/sm90a/kv_tensor_maps.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

namespace se::cuda::sm90a {
namespace {

// The driver's encoder, looked up per launch rather than kept in a global: the runtime answers
// from its own table (microseconds, beside a kernel of tens of microseconds or more), and the
// library stays free of libcuda at link time.
cudaError_t encoder(PFN_cuTensorMapEncodeTiled_v12000& fn) {
    void* symbol = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &symbol, 12000,
                                                           cudaEnableDefault, &found);
    if (e != cudaSuccess) return e;
    if (found != cudaDriverEntryPointSuccess || symbol == nullptr) return cudaErrorNotSupported;
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(symbol);
    return cudaSuccess;
}

cudaError_t encode(PFN_cuTensorMapEncodeTiled_v12000 fn, const PrefillAttentionParams& p,
                   const bf16* cache, CUtensorMap& map) {
    const uint64_t row_elems = uint64_t(p.num_kv_heads) * uint64_t(p.head_dim);
    const cuuint64_t dims[2] = {row_elems, uint64_t(p.num_blocks) * uint64_t(p.block_size)};
    const cuuint64_t strides[1] = {row_elems * 2};  // bytes from one slot to the next
    const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(tma_box_rows(p.block_size))};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult r =
        fn(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(cache), dims, strides, box,
           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace

cudaError_t encode_kv_tensor_maps(const PrefillAttentionParams& p, KvTensorMaps& maps) {
    PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    cudaError_t e = encoder(fn);
    if (e != cudaSuccess) return e;
    e = encode(fn, p, p.k_blocks, maps.k);
    if (e != cudaSuccess) return e;
    return encode(fn, p, p.v_blocks, maps.v);
}

}  // namespace se::cuda::sm90a
