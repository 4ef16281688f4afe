// The decode GEMV (backend/cuda/gemv.h) against cuBLASLt (backend/cuda/gemm.h, one GEMM per
// segment as the engine runs them today) at Llama-3.1-8B's projection shapes, m = 1..16 rows, with
// a 2 GB device-to-device copy as the bandwidth reference measured in the same run. Prints one line
// per (shape, m): mean microseconds per launch (CUDA events), the effective bandwidth (weight bytes
// + x + y over the time), the ratio of our bandwidth to cuBLASLt's and to the copy's. --json prints
// JSON lines instead.
//
// Weights that fit in the 50 MB L2 would measure the cache when one buffer is launched over and
// over, so every shape rotates among enough copies of its weights to pass 256 MB.
//
// Prediction (bytes / bandwidth; H200: 4.8 TB/s peak, a D2D copy typically ~4.0-4.3 TB/s counting
// read + write): the weight stream is all that matters and m <= 8 costs the same (the MMA computes
// 8 columns either way; 9..16 run a second MMA on the same weight fragments, ~the same again), so
// at every m:
//   gate|up 235 MB, down 117 MB, LM head 1.05 GB: >= 85% of peak, ~4.1 TB/s
//                                                 (~57 us, ~29 us, ~255 us);
//   q|k|v 50 MB, o 34 MB: ~2-3 us of launch, ramp and tail on 10-12 us, ~3.4-3.6 TB/s
//                         (~14 us, ~10 us).
// cuBLASLt reaches ~2.7 TB/s at these shapes, so ours/cuBLASLt should read ~1.3-1.5.
// Measured (H200, 2026-11-30, m = 1..8): q|k|v 3.3 TB/s (3.1x cuBLASLt, which runs k and v as
// GEMMs too small to fill the GPU), o 2.9 TB/s, gate|up 4.0, down 3.8, LM head 4.2 (= cuBLASLt).
// Measured (H200, 2026-12-01, commit 8497bbc, launches as programmatic dependent launches, so that
// back-to-back launches overlap, m = 1): q|k|v 3.5 TB/s, o 2.5, gate|up with silu_mul 4.2, down
// 3.0 (its single wave is placed unevenly when the next launch starts early: 3.7 launched
// plainly), LM head 4.25. gate_silu is the engine's gated-MLP launch (GemvEpilogue::kSiluMul).
// Measured (H200, 2026-12-01, commit db5e482, launches of at most two waves spaced to
// ceil(tiles / SMs) CTAs per SM at m <= 8, gemv_occupancy.h): m = 1: down 3.8 TB/s (31.0 us),
// o 3.0 (11.1 us); the rest as before.
//
// --only NAME,... times the shapes named (qkv, o, gate_up, gate_silu, down, lm_head) and --m
// M,... those row counts (1..16), so that a profiler can take one launch; an unknown name or a
// row count out of range is an error that names it.
//
// Usage: se_cuda_gemv_bench [--iters N] [--json] [--only NAME,...] [--m M,...]
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/gemv.h"
#include "comma_list.h"
#include "core/half.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int kWarmup = 5;
constexpr int64_t kRotateBytes = int64_t{256} << 20;  // > 5x the H200's L2
constexpr int64_t kPatternElems = int64_t{16} << 20;  // bf16: 32 MB of random values
constexpr int64_t kMaxM = 16;

struct Shape {
    const char* name;
    int64_t k;
    std::vector<int64_t> n;  // one per segment
    DType y_dtype;
    GemvEpilogue epilogue = GemvEpilogue::kStore;
};

struct Options {
    int iters = 100;
    bool json = false;
    std::vector<std::string> only;            // shape names; empty: every shape
    std::vector<int32_t> ms{1, 2, 4, 8, 16};  // rows of x
};

// Random bf16 values on the device, the source every buffer is filled from (never zeros: they
// can time faster than real data).
Expected<DeviceBuffer> make_pattern() {
    std::vector<uint16_t> host(static_cast<size_t>(kPatternElems));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    for (uint16_t& v : host) v = f32_to_bf16(dist(rng));
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(host.size() * 2));
    SE_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(buf.data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice));
    return buf;
}

Expected<DeviceBuffer> filled_bf16(const DeviceBuffer& pattern, int64_t elems) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(static_cast<size_t>(elems) * 2));
    for (int64_t at = 0; at < elems; at += kPatternElems) {
        const int64_t count = std::min(kPatternElems, elems - at);
        SE_CUDA_RETURN_IF_ERROR(cudaMemcpy(buf.as<uint16_t>() + at, pattern.data(),
                                           static_cast<size_t>(count) * 2,
                                           cudaMemcpyDeviceToDevice));
    }
    return buf;
}

// Read + write bandwidth of a 2 GB device-to-device copy, bytes per second.
Expected<double> copy_bytes_per_s(const Options& o) {
    constexpr size_t kBytes = size_t{2} << 30;
    SE_ASSIGN_OR_RETURN(DeviceBuffer src, DeviceBuffer::allocate(kBytes));
    SE_ASSIGN_OR_RETURN(DeviceBuffer dst, DeviceBuffer::allocate(kBytes));
    SE_CUDA_RETURN_IF_ERROR(cudaMemset(src.data(), 0x3c, kBytes));
    SE_ASSIGN_OR_RETURN(const double ms, mean_launch_ms(2, 10, [&](cudaStream_t stream) {
                            return cuda_status(cudaMemcpyAsync(dst.data(), src.data(), kBytes,
                                                               cudaMemcpyDeviceToDevice, stream),
                                               "cudaMemcpyAsync");
                        }));
    const double bytes_per_s = 2.0 * kBytes / (ms * 1e-3);
    if (o.json) {
        fmt::print(
            "{{\"op\": \"d2d_copy\", \"bytes\": {}, \"us\": {:.2f}, \"gb_per_s\": {:.1f}}}\n",
            kBytes, ms * 1e3, bytes_per_s / 1e9);
    } else {
        fmt::print("d2d copy of 2 GB: {:.1f} us, {:.1f} GB/s (read + write)\n", ms * 1e3,
                   bytes_per_s / 1e9);
    }
    return bytes_per_s;
}

// A shape's buffers: `num_sets` copies of its weights, one x and one y per segment.
struct Buffers {
    std::vector<std::vector<DeviceBuffer>> w;  // [set][segment]: bf16 [n, k]
    DeviceBuffer x;                            // bf16 [kMaxM, k]
    std::vector<DeviceBuffer> y;               // [segment]: y_dtype [kMaxM, n]
};

int64_t weight_bytes(const Shape& s) {
    int64_t bytes = 0;
    for (const int64_t n : s.n) bytes += n * s.k * 2;
    return bytes;
}

int64_t y_elem_bytes(const Shape& s) {
    return s.y_dtype == DType::kF32 ? 4 : 2;
}

Expected<Buffers> make_buffers(const Shape& s, const DeviceBuffer& pattern) {
    Buffers b;
    const int64_t num_sets =
        std::max<int64_t>(1, (kRotateBytes + weight_bytes(s) - 1) / weight_bytes(s));
    for (int64_t set = 0; set < num_sets; ++set) {
        b.w.emplace_back();
        for (const int64_t n : s.n) {
            SE_ASSIGN_OR_RETURN(DeviceBuffer w, filled_bf16(pattern, n * s.k));
            b.w.back().push_back(std::move(w));
        }
    }
    SE_ASSIGN_OR_RETURN(b.x, filled_bf16(pattern, kMaxM * s.k));
    for (const int64_t n : s.n) {
        SE_ASSIGN_OR_RETURN(DeviceBuffer y, DeviceBuffer::allocate(
                                                static_cast<size_t>(kMaxM * n * y_elem_bytes(s))));
        b.y.push_back(std::move(y));
    }
    return b;
}

// Launched as CudaOps launches them: spaced where they have few tiles (gemv_occupancy.h).
Expected<double> time_gemv(const Shape& s, const Buffers& b, int32_t m, const GemvDevice& device,
                           const Options& o) {
    std::vector<GemvParams> params;
    for (const auto& weights : b.w) {
        GemvParams p{.x = b.x.as<bf16>(),
                     .ldx = s.k,
                     .m = m,
                     .k = s.k,
                     .segments = {},
                     .num_segments = static_cast<int32_t>(s.n.size()),
                     .epilogue = s.epilogue,
                     .device = &device};
        for (size_t i = 0; i < s.n.size(); ++i) {
            p.segments[i] = {.w = weights[i].as<bf16>(),
                             .y = b.y[i].data(),
                             .n = s.n[i],
                             .ldy = s.n[i],
                             .y_dtype = s.y_dtype};
        }
        params.push_back(p);
    }
    size_t set = 0;
    return mean_launch_ms(kWarmup, o.iters, [&](cudaStream_t stream) {
        const GemvParams& p = params[set];
        set = (set + 1) % params.size();
        return gemv(p, stream);
    });
}

Expected<double> time_cublaslt(const Shape& s, const Buffers& b, int32_t m, Gemm& gemm,
                               const Options& o) {
    auto shape_of = [&](int64_t n) {
        return GemmShape{.n = n, .k = s.k, .lda = s.k, .ldd = n, .d_dtype = s.y_dtype};
    };
    for (const int64_t n : s.n) SE_RETURN_IF_ERROR(gemm.prepare(shape_of(n), kMaxM));
    size_t set = 0;
    return mean_launch_ms(kWarmup, o.iters, [&](cudaStream_t stream) {
        const std::vector<DeviceBuffer>& weights = b.w[set];
        set = (set + 1) % b.w.size();
        for (size_t i = 0; i < s.n.size(); ++i) {
            SE_RETURN_IF_ERROR(gemm.run({.a = b.x.as<bf16>(),
                                         .w = weights[i].as<bf16>(),
                                         .d = b.y[i].data(),
                                         .m = m,
                                         .shape = shape_of(s.n[i])},
                                        stream));
        }
        return Status::ok_status();
    });
}

void print_row(const Shape& s, int32_t m, double ours_ms, double lt_ms, double copy_bytes_per_s,
               const Options& o) {
    int64_t bytes = weight_bytes(s) + int64_t{m} * s.k * 2;
    for (const int64_t n : s.n) bytes += int64_t{m} * n * y_elem_bytes(s);
    const double lt_gbps = bytes / (lt_ms * 1e-3) / 1e9;
    const bool has_ours = ours_ms > 0.0;
    const double ours_gbps = has_ours ? bytes / (ours_ms * 1e-3) / 1e9 : 0.0;
    const double copy_gbps = copy_bytes_per_s / 1e9;
    if (o.json) {
        const std::string ours =
            has_ours ? fmt::format(
                           "{:.2f}, \"ours_gb_per_s\": {:.1f}, \"ours_over_cublaslt\": "
                           "{:.3f}, \"ours_over_copy\": {:.3f}",
                           ours_ms * 1e3, ours_gbps, ours_gbps / lt_gbps, ours_gbps / copy_gbps)
                     : "null";
        fmt::print(
            "{{\"shape\": \"{}\", \"m\": {}, \"bytes\": {}, \"cublaslt_us\": {:.2f}, "
            "\"cublaslt_gb_per_s\": {:.1f}, \"ours_us\": {}}}\n",
            s.name, m, bytes, lt_ms * 1e3, lt_gbps, ours);
        return;
    }
    const std::string ours =
        has_ours ? fmt::format("{:9.2f} us {:7.1f} GB/s  ours/cuBLASLt {:5.2f}  ours/copy {:5.2f}",
                               ours_ms * 1e3, ours_gbps, ours_gbps / lt_gbps, ours_gbps / copy_gbps)
                 : std::string("        (cuBLASLt only)");
    fmt::print("{:<8} m={:<2} {:8.1f} MB | cuBLASLt {:9.2f} us {:7.1f} GB/s | ours {}\n", s.name, m,
               bytes / 1e6, lt_ms * 1e3, lt_gbps, ours);
}

// "1,16": the row counts listed, or an error naming the first that is not in [1, kMaxM].
Expected<std::vector<int32_t>> parse_rows(const std::string& list) {
    std::vector<int32_t> ms;
    for (const std::string& item : bench::comma_list(list)) {
        char* end = nullptr;
        const long m = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || m < 1 || m > kMaxM) {
            return invalid_argument("--m: '" + item + "' is not a row count in [1, 16]");
        }
        ms.push_back(static_cast<int32_t>(m));
    }
    return ms;
}

Status run(const Options& o) {
    const std::vector<Shape> shapes = {
        {"qkv", 4096, {4096, 1024, 1024}, DType::kBF16},
        {"o", 4096, {4096}, DType::kBF16},
        {"gate_up", 4096, {14336, 14336}, DType::kBF16},
        {"gate_silu", 4096, {14336, 14336}, DType::kBF16, GemvEpilogue::kSiluMul},
        {"down", 14336, {4096}, DType::kBF16},
        {"lm_head", 4096, {128256}, DType::kF32},
    };
    for (const std::string& name : o.only) {
        const bool known = std::any_of(shapes.begin(), shapes.end(),
                                       [&](const Shape& s) { return name == s.name; });
        if (!known) return invalid_argument("--only: no shape '" + name + "'");
    }
    SE_ASSIGN_OR_RETURN(const double copy_rate, copy_bytes_per_s(o));
    SE_ASSIGN_OR_RETURN(DeviceBuffer pattern, make_pattern());
    SE_ASSIGN_OR_RETURN(Gemm gemm, Gemm::create());
    SE_ASSIGN_OR_RETURN(const GemvDevice device, gemv_device());
    for (const Shape& s : shapes) {
        if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), s.name) == o.only.end()) {
            continue;
        }
        SE_ASSIGN_OR_RETURN(const Buffers b, make_buffers(s, pattern));
        for (const int32_t m : o.ms) {
            double ours_ms = 0.0;
            if (m <= kGemvMaxRows) {
                SE_ASSIGN_OR_RETURN(ours_ms, time_gemv(s, b, m, device, o));
            }
            SE_ASSIGN_OR_RETURN(const double lt_ms, time_cublaslt(s, b, m, gemm, o));
            print_row(s, m, ours_ms, lt_ms, copy_rate, o);
        }
    }
    return Status::ok_status();
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    se::cuda::Options o;
    se::Status status = se::Status::ok_status();
    for (int i = 1; i < argc && status.ok(); ++i) {
        const std::string arg = argv[i];
        if (arg == "--json") o.json = true;
        if (arg == "--iters" && i + 1 < argc) o.iters = std::atoi(argv[++i]);
        if (arg == "--only" && i + 1 < argc) o.only = se::bench::comma_list(argv[++i]);
        if (arg == "--m" && i + 1 < argc) {
            se::Expected<std::vector<int32_t>> ms = se::cuda::parse_rows(argv[++i]);
            if (ms.ok()) {
                o.ms = std::move(*ms);
            } else {
                status = ms.status();
            }
        }
    }
    if (status.ok()) status = se::cuda::run(o);
    if (!status.ok()) {
        fmt::print(stderr, "error: {}\n", status.to_string());
        return 1;
    }
    return 0;
}
