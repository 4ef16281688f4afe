// What the read-ceiling benchmarks (cuda_kv_read_bench.cu, cuda_gemv_read_bench.cu) share: the
// flat read they measure against, launch checks, and their command line (--shapes AxB,...).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comma_list.h"
#include "core/expected.h"
#include "cuda_device_sms.h"

namespace se::cuda::read_bench {

// Every chunk of a and b (n each) once: each round a thread reads kUnroll chunks, blockDim apart
// (coalesced), as 16-byte streaming loads; the read roofline of the device.
template <int kUnroll = 8>
__global__ void __launch_bounds__(256)
    flat_read(const uint4* a, const uint4* b, int64_t n, uint32_t* sink) {
    uint32_t acc = 0;
    const int64_t stride = int64_t{gridDim.x} * blockDim.x * kUnroll;
    for (int64_t base = int64_t{blockIdx.x} * blockDim.x * kUnroll + threadIdx.x; base < 2 * n;
         base += stride) {
        uint4 x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t i = base + int64_t{u} * blockDim.x;
            const uint4* src = i < n ? a + i : b + (i - n);
            x[u] = i < 2 * n ? __ldcs(src) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc ^= x[u].x ^ x[u].w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the reads; never true for the fills used
}

// The launch's error (e, or the last kernel launch's) as a Status.
inline Status launched(cudaError_t e = cudaSuccess) {
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) return internal_error(std::string("launch: ") + cudaGetErrorString(e));
    return Status();
}

// "AxB" -> {A, B}; {0, 0} where the item is not two numbers joined by 'x'.
struct XPair {
    int64_t first = 0;
    int64_t second = 0;
};

inline XPair x_pair(const std::string& item) {
    const size_t x = item.find('x');
    if (x == std::string::npos) return {};
    return {std::atoll(item.substr(0, x).c_str()), std::atoll(item.c_str() + x + 1)};
}

// --shapes "AxB,...": Shape{A, B} for each item, where valid(A, B); else kInvalidArgument naming
// the item and `expected` (what an item must be).
template <typename Shape, typename Valid>
Expected<std::vector<Shape>> parse_pairs(const std::string& list, Valid valid,
                                         const std::string& expected) {
    std::vector<Shape> shapes;
    for (const std::string& item : bench::comma_list(list)) {
        const auto [a, b] = x_pair(item);
        if (a <= 0 || b <= 0 || !valid(a, b)) {
            return invalid_argument("--shapes: '" + item + "' is not " + expected);
        }
        shapes.push_back({a, b});
    }
    return shapes;
}

// A read benchmark's main: the shapes of --shapes (else `fallback`) through `parse` (a comma list
// to Expected<std::vector<Shape>>), the table's header, then `run(shape, sms)` for each, a failure
// named by `name(shape)`. Exit status 2 for bad arguments or no device, 1 for a run that failed.
template <typename Parse, typename Run, typename Name>
int shape_main(int argc, char** argv, std::string fallback, const char* header, Parse parse,
               Run run, Name name) {
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--shapes" && i + 1 < argc) fallback = argv[++i];
    }
    auto shapes = parse(fallback);
    const Expected<int32_t> sms = device_sms();
    if (!shapes.ok() || !sms.ok()) {
        std::fprintf(stderr, "error: %s\n",
                     (!shapes.ok() ? shapes.status() : sms.status()).to_string().c_str());
        return 2;
    }
    std::printf("%s", header);
    for (const auto& shape : *shapes) {
        const Status status = run(shape, *sms);
        if (!status.ok()) {
            std::fprintf(stderr, "error: %s: %s\n", name(shape).c_str(),
                         status.to_string().c_str());
            return 1;
        }
    }
    return 0;
}

}  // namespace se::cuda::read_bench
