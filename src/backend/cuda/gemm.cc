#include "backend/cuda/gemm.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cuda/cublas_status.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/event.h"
#include "backend/cuda/launch_checks.h"
#include "core/half.h"

namespace se::cuda {
namespace {

constexpr std::string_view kName = "gemm";
// Room for split-K partial sums of the largest shapes the heuristic picks split-K for.
constexpr uint64_t kWorkspaceBytes = 32ull << 20;
constexpr int64_t kMaxBucketM = 8192;
// tune() times the heuristic's first kTuneCandidates algorithms, kTuneRuns launches each, for the
// buckets of decode batches too large for the GEMV (beyond, GEMMs are compute-bound and the
// heuristic's first choice is the one to keep), among those that give the first choice's bits.
constexpr int64_t kMinTunedM = 17;
constexpr int64_t kMaxTunedM = 256;
constexpr int kTuneCandidates = 8;
constexpr int kTuneRuns = 5;

Status shape_error(const std::string& what) {
    return invalid_argument(std::string(kName) + ": " + what);
}

Status check_shape(const GemmShape& s) {
    if (s.n <= 0 || s.k <= 0) {
        return shape_error("n and k must be positive, are " + std::to_string(s.n) + " and " +
                           std::to_string(s.k));
    }
    if (s.d_dtype != DType::kBF16 && s.d_dtype != DType::kF32) {
        return shape_error("d_dtype is " + std::string(dtype_name(s.d_dtype)) +
                           ", not bf16 or f32");
    }
    // 16-byte rows keep every row of W, A and D on the 16-byte alignment the cached algorithms
    // were chosen for (make_lt_preference).
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "k (the row of W)", s.k));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "lda", s.lda));
    if (s.lda < s.k) {
        return shape_error("lda " + std::to_string(s.lda) + " < k " + std::to_string(s.k));
    }
    if (s.ldd < s.n) {
        return shape_error("ldd " + std::to_string(s.ldd) + " < n " + std::to_string(s.n));
    }
    const int64_t ldd_bytes = s.ldd * (s.d_dtype == DType::kF32 ? 4 : 2);
    if (ldd_bytes % 16 != 0) {
        return shape_error("ldd " + std::to_string(s.ldd) + " is " + std::to_string(ldd_bytes) +
                           " bytes, not a multiple of 16");
    }
    return Status::ok_status();
}

Status check_operand(std::string_view what, const void* ptr) {
    if (ptr == nullptr) return shape_error(std::string(what) + " is null");
    return check_aligned(kName, what, ptr);
}

// The three layouts of one problem (see the diagram in gemm.h).
struct Layouts {
    LtLayout w;
    LtLayout a;
    LtLayout d;
};

Expected<Layouts> make_layouts(int64_t m, const GemmShape& s) {
    const cudaDataType_t d_type = s.d_dtype == DType::kF32 ? CUDA_R_32F : CUDA_R_16BF;
    SE_ASSIGN_OR_RETURN(LtLayout w, make_lt_layout(CUDA_R_16BF, s.k, s.n, s.k));
    SE_ASSIGN_OR_RETURN(LtLayout a, make_lt_layout(CUDA_R_16BF, s.k, m, s.lda));
    SE_ASSIGN_OR_RETURN(LtLayout d, make_lt_layout(d_type, s.n, m, s.ldd));
    return Layouts{std::move(w), std::move(a), std::move(d)};
}

// Random bf16 activations in [-1, 1) from a fixed seed: outputs that tell two summation orders
// apart (constant activations leave many of them equal).
Expected<DeviceBuffer> random_activations(size_t count, cudaStream_t stream) {
    std::vector<uint16_t> host(count);
    uint32_t state = 0x9e3779b9u;
    for (uint16_t& value : host) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        value = f32_to_bf16(static_cast<float>(state) / 2147483648.0f - 1.0f);
    }
    SE_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::allocate(count * 2));
    SE_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(a.data(), host.data(), count * 2, cudaMemcpyHostToDevice, stream));
    SE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // `host` goes on return
    return a;
}

// Rows 0 and m - 1 of D (d_dtype [m, ldd], n used) as bytes, once the stream's work is done. Each
// element sums k products in its algorithm's order, and the two rows cross every column tile and
// the first and last row tiles, so algorithms that sum in different orders differ here.
Expected<std::vector<uint8_t>> edge_rows(const void* d, int64_t m, const GemmShape& s,
                                         cudaStream_t stream) {
    const size_t elem = s.d_dtype == DType::kF32 ? 4 : 2;
    const size_t row = static_cast<size_t>(s.n) * elem;
    const auto* last = static_cast<const uint8_t*>(d) + static_cast<size_t>((m - 1) * s.ldd) * elem;
    std::vector<uint8_t> host(2 * row);
    SE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), d, row, cudaMemcpyDeviceToHost, stream));
    SE_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host.data() + row, last, row, cudaMemcpyDeviceToHost, stream));
    SE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    return host;
}

}  // namespace

int64_t gemm_m_bucket(int64_t m) {
    if (m > kMaxBucketM) return m;
    int64_t bucket = 1;
    while (bucket < m) bucket *= 2;
    return bucket;
}

Gemm::Gemm(LtHandle handle, DeviceBuffer workspace, LtMatmulDesc desc, LtPreference preference)
    : handle_(std::move(handle)),
      workspace_(std::move(workspace)),
      desc_(std::move(desc)),
      preference_(std::move(preference)) {}

Expected<Gemm> Gemm::create() {
    SE_ASSIGN_OR_RETURN(LtHandle handle, make_lt_handle());
    SE_ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(kWorkspaceBytes));
    SE_ASSIGN_OR_RETURN(LtMatmulDesc desc, make_lt_matmul_desc_tn());
    SE_ASSIGN_OR_RETURN(LtPreference preference, make_lt_preference(kWorkspaceBytes));
    return Gemm(std::move(handle), std::move(workspace), std::move(desc), std::move(preference));
}

Status Gemm::prepare(const GemmShape& shape, int64_t max_m) {
    SE_RETURN_IF_ERROR(check_shape(shape));
    if (max_m < 1) return shape_error("prepare: max_m " + std::to_string(max_m) + " < 1");
    AlgoKey key = key_of(1, shape);
    const int64_t last = gemm_m_bucket(std::min(max_m, kMaxBucketM));
    for (key.m_bucket = 1; key.m_bucket <= last; key.m_bucket *= 2) {
        const Expected<const cublasLtMatmulAlgo_t*> algo = algo_for(key);
        if (!algo.ok()) return algo.status();
    }
    return Status::ok_status();
}

// tune()'s buffers: random activations and an output of its largest bucket, and the timing events.
struct Gemm::TuneScratch {
    DeviceBuffer a;  // bf16 [last, lda]
    DeviceBuffer d;  // d_dtype [last, ldd]
    CudaEvent start;
    CudaEvent stop;
};

Status Gemm::tune(const GemmShape& shape, const bf16* w, int64_t max_m, cudaStream_t stream) {
    SE_RETURN_IF_ERROR(check_shape(shape));
    SE_RETURN_IF_ERROR(check_operand("w", w));
    const int64_t first = gemm_m_bucket(kMinTunedM);
    const int64_t last = gemm_m_bucket(std::min(max_m, kMaxTunedM));
    if (last < first) return Status::ok_status();
    const size_t d_size = shape.d_dtype == DType::kF32 ? 4 : 2;
    SE_ASSIGN_OR_RETURN(DeviceBuffer a,
                        random_activations(static_cast<size_t>(last * shape.lda), stream));
    SE_ASSIGN_OR_RETURN(DeviceBuffer d,
                        DeviceBuffer::allocate(static_cast<size_t>(last * shape.ldd) * d_size));
    SE_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create(EventKind::kTiming));
    SE_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create(EventKind::kTiming));
    TuneScratch scratch{std::move(a), std::move(d), std::move(start), std::move(stop)};
    for (int64_t m = first; m <= last; m *= 2) {
        SE_RETURN_IF_ERROR(tune_bucket(m, shape, w, scratch, stream));
    }
    return Status::ok_status();
}

// The reference is the heuristic's first choice, which prepare() cached and which run() would
// use untuned. A candidate is timed only if it gives the reference's bits on the edge rows.
Status Gemm::tune_bucket(int64_t m, const GemmShape& shape, const bf16* w, TuneScratch& s,
                         cudaStream_t stream) {
    SE_ASSIGN_OR_RETURN(Layouts l, make_layouts(m, shape));
    const AlgoKey key = key_of(m, shape);
    SE_ASSIGN_OR_RETURN(const cublasLtMatmulAlgo_t* cached, algo_for(key));
    const cublasLtMatmulAlgo_t reference = *cached;
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
        return cublasLtMatmul(handle_.get(), desc_.get(), &alpha, w, l.w.get(), s.a.data(),
                              l.a.get(), &beta, s.d.data(), l.d.get(), s.d.data(), l.d.get(), &algo,
                              workspace_.data(), workspace_.size_bytes(), stream);
    };
    const auto time = [&](const cublasLtMatmulAlgo_t& algo) -> Expected<float> {
        SE_RETURN_IF_ERROR(s.start.record(stream));
        for (int r = 0; r < kTuneRuns; ++r) SE_CUBLAS_RETURN_IF_ERROR(launch(algo));
        SE_RETURN_IF_ERROR(s.stop.record(stream));
        SE_RETURN_IF_ERROR(s.stop.synchronize());
        return CudaEvent::elapsed_ms(s.start, s.stop);
    };
    SE_CUBLAS_RETURN_IF_ERROR(launch(reference));
    SE_ASSIGN_OR_RETURN(const std::vector<uint8_t> want, edge_rows(s.d.data(), m, shape, stream));
    SE_ASSIGN_OR_RETURN(float best_ms, time(reference));
    cublasLtMatmulAlgo_t best = reference;
    cublasLtMatmulHeuristicResult_t results[kTuneCandidates];
    int num_results = 0;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(
        handle_.get(), desc_.get(), l.w.get(), l.a.get(), l.d.get(), l.d.get(), preference_.get(),
        kTuneCandidates, results, &num_results));
    for (int i = 0; i < num_results; ++i) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
        if (launch(results[i].algo) != CUBLAS_STATUS_SUCCESS) continue;  // cannot run here
        SE_ASSIGN_OR_RETURN(const std::vector<uint8_t> got,
                            edge_rows(s.d.data(), m, shape, stream));
        if (got != want) continue;  // sums in another order (split-K, ...): other bits
        SE_ASSIGN_OR_RETURN(const float ms, time(results[i].algo));
        if (ms < best_ms) {
            best = results[i].algo;
            best_ms = ms;
        }
    }
    algos_.insert_or_assign(key, best);
    return Status::ok_status();
}

Gemm::AlgoKey Gemm::key_of(int64_t m_bucket, const GemmShape& shape) {
    AlgoKey key{.m_bucket = m_bucket, .shape = shape};
    key.shape.beta = shape.beta != 0.0f ? 1.0f : 0.0f;
    return key;
}

Expected<const cublasLtMatmulAlgo_t*> Gemm::algo_for(const AlgoKey& key) {
    if (const auto it = algos_.find(key); it != algos_.end()) return &it->second;
    // The query describes the bucket's m, not the caller's, so that run() after prepare() and
    // run() alone pick the same algorithm for the same bucket (and so give the same bits).
    SE_ASSIGN_OR_RETURN(Layouts l, make_layouts(key.m_bucket, key.shape));
    cublasLtMatmulHeuristicResult_t result{};
    int num_results = 0;
    SE_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulAlgoGetHeuristic(handle_.get(), desc_.get(), l.w.get(), l.a.get(), l.d.get(),
                                       l.d.get(), preference_.get(), 1, &result, &num_results));
    if (num_results == 0) {
        return unsupported(std::string(kName) + ": cuBLASLt has no algorithm for m " +
                           std::to_string(key.m_bucket) + ", n " + std::to_string(key.shape.n) +
                           ", k " + std::to_string(key.shape.k));
    }
    return &algos_.emplace(key, result.algo).first->second;
}

Status Gemm::run(const GemmArgs& args, cudaStream_t stream) {
    const GemmShape& s = args.shape;
    SE_RETURN_IF_ERROR(check_shape(s));
    if (args.m < 0) return shape_error("m is " + std::to_string(args.m));
    if (args.m == 0) return Status::ok_status();
    SE_RETURN_IF_ERROR(check_operand("a", args.a));
    SE_RETURN_IF_ERROR(check_operand("w", args.w));
    SE_RETURN_IF_ERROR(check_operand("d", args.d));

    SE_ASSIGN_OR_RETURN(const cublasLtMatmulAlgo_t* algo,
                        algo_for(key_of(gemm_m_bucket(args.m), s)));
    SE_ASSIGN_OR_RETURN(Layouts l, make_layouts(args.m, s));
    const float alpha = 1.0f;
    SE_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
        handle_.get(), desc_.get(), &alpha, args.w, l.w.get(), args.a, l.a.get(), &s.beta, args.d,
        l.d.get(), args.d, l.d.get(), algo, workspace_.data(), workspace_.size_bytes(), stream));
    return Status::ok_status();
}

}  // namespace se::cuda
