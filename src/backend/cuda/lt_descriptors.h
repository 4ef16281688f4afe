// Owned cuBLASLt objects: the handle and the descriptors a matmul is described with, each
// destroyed by its destructor on every path (std::unique_ptr with the matching cublasLt*Destroy).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/expected.h"

namespace se::cuda {

// A destroy call fails only for a null or already-destroyed object, which unique_ptr rules out;
// a destructor has no one to report to anyway.
struct LtHandleDeleter {
    void operator()(cublasLtHandle_t h) const { static_cast<void>(cublasLtDestroy(h)); }
};
struct LtMatmulDescDeleter {
    void operator()(cublasLtMatmulDesc_t d) const {
        static_cast<void>(cublasLtMatmulDescDestroy(d));
    }
};
struct LtLayoutDeleter {
    void operator()(cublasLtMatrixLayout_t l) const {
        static_cast<void>(cublasLtMatrixLayoutDestroy(l));
    }
};
struct LtPreferenceDeleter {
    void operator()(cublasLtMatmulPreference_t p) const {
        static_cast<void>(cublasLtMatmulPreferenceDestroy(p));
    }
};

using LtHandle = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, LtHandleDeleter>;
using LtMatmulDesc =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, LtMatmulDescDeleter>;
using LtLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LtLayoutDeleter>;
using LtPreference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, LtPreferenceDeleter>;

Expected<LtHandle> make_lt_handle();

// A matmul with f32 accumulation and f32 alpha/beta on the host, op(A) = A^T, op(B) = B.
Expected<LtMatmulDesc> make_lt_matmul_desc_tn();

// A column-major rows x cols matrix of `type` whose columns are `ld` elements apart.
Expected<LtLayout> make_lt_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld);

// Heuristic preferences: at most `max_workspace_bytes` of workspace, operands only 16-byte
// aligned, and split-K partial sums kept in f32 (see make_lt_preference in the .cc for why).
Expected<LtPreference> make_lt_preference(uint64_t max_workspace_bytes);

}  // namespace se::cuda
