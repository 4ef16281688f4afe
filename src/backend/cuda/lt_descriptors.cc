#include "backend/cuda/lt_descriptors.h"

#include "backend/cuda/cublas_status.h"

namespace se::cuda {

Expected<LtHandle> make_lt_handle() {
    cublasLtHandle_t h = nullptr;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&h));
    return LtHandle(h);
}

Expected<LtMatmulDesc> make_lt_matmul_desc_tn() {
    cublasLtMatmulDesc_t raw = nullptr;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LtMatmulDesc desc(raw);
    const cublasOperation_t trans_a = CUBLAS_OP_T;
    const cublasOperation_t trans_b = CUBLAS_OP_N;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    return desc;
}

Expected<LtLayout> make_lt_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t raw = nullptr;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                                         static_cast<uint64_t>(cols), ld));
    return LtLayout(raw);
}

Expected<LtPreference> make_lt_preference(uint64_t max_workspace_bytes) {
    cublasLtMatmulPreference_t raw = nullptr;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&raw));
    LtPreference pref(raw);
    SE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_workspace_bytes, sizeof(max_workspace_bytes)));
    // The heuristic assumes 256-byte aligned operands unless told otherwise, and an algorithm
    // picked under that assumption may not run on a column slice of a wider row. Asking for
    // 16 bytes (what the caller checks) keeps every cached algorithm valid for any pointer.
    const uint32_t alignment = 16;
    for (const auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
        SE_CUBLAS_RETURN_IF_ERROR(
            cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, &alignment, sizeof(alignment)));
    }
    // Split-K may sum its partial products in place in D's type or in a bf16 workspace, which
    // would round a bf16 output once per split instead of once; only f32 partial sums (or no
    // split) keep the error bound of one f32 accumulation plus one final rounding.
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
        pref.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof(reduction)));
    return pref;
}

}  // namespace se::cuda
