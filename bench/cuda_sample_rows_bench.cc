// Sampling on the GPU (backend/cuda/sample_rows.h) against what it replaces: copying the logits
// to pinned host memory for the CPU sampler. Rows of vocab 128256 (Llama 3) in two shapes of
// distribution: "peaked" (logits ~ N(0, 2.5) with five tokens at 15-20, as a model's usually are:
// top-p keeps a handful) and "flat" (uniform in [-10, 10]: top-p and the draw reach deep into the
// row, the costly case). Prints one JSON line per shape with the mean microseconds per launch
// (CUDA events), the prediction of sample_rows.h, and the copy's time for the same logits.
//
// Usage: se_cuda_sample_rows_bench [--iters N]
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/sample_rows.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int32_t kVocab = 128256;
constexpr int kWarmup = 5;

struct Config {
    const char* name;
    RowSampling sampling;
    double predicted_us_peaked;  // sample_rows.h, at 1 row
    double predicted_us_flat;
};

// Rows are drawn from one host row per distribution, each row shifted by a different rotation so
// that rows differ.
std::vector<float> make_logits(int32_t rows, bool peaked) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 2.5f);
    std::uniform_real_distribution<float> uniform(-10.0f, 10.0f);
    std::vector<float> base(kVocab);
    for (float& x : base) x = peaked ? normal(rng) : uniform(rng);
    if (peaked) {
        const float peaks[] = {20.0f, 18.0f, 17.5f, 16.0f, 15.0f};
        for (int i = 0; i < 5; ++i) base[(i * 7919 + 11) % kVocab] = peaks[i];
    }
    std::vector<float> logits(static_cast<size_t>(rows) * kVocab);
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t i = 0; i < kVocab; ++i)
            logits[size_t(r) * kVocab + i] = base[(i + r * 4099) % kVocab];
    }
    return logits;
}

Status run(int32_t rows, bool peaked, const std::vector<Config>& configs, int iters) {
    const std::vector<float> host = make_logits(rows, peaked);
    const size_t bytes = host.size() * sizeof(float);
    SE_ASSIGN_OR_RETURN(DeviceBuffer logits, DeviceBuffer::allocate(bytes));
    SE_CUDA_RETURN_IF_ERROR(cudaMemcpy(logits.data(), host.data(), bytes, cudaMemcpyHostToDevice));
    SE_ASSIGN_OR_RETURN(DeviceBuffer params, DeviceBuffer::allocate(rows * sizeof(RowSampling)));
    SE_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::allocate(rows * sizeof(int32_t)));
    SE_ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::allocate(bytes));
    SE_ASSIGN_OR_RETURN(const double copy_ms,
                        mean_launch_ms(kWarmup, iters, [&](cudaStream_t stream) {
                            return cuda_status(cudaMemcpyAsync(pinned.data(), logits.data(), bytes,
                                                               cudaMemcpyDeviceToHost, stream),
                                               "logits to host");
                        }));
    for (const Config& c : configs) {
        std::vector<RowSampling> per_row(rows, c.sampling);
        for (int32_t r = 0; r < rows; ++r) per_row[r].u = (r + 0.5) / rows;
        SE_CUDA_RETURN_IF_ERROR(cudaMemcpy(params.data(), per_row.data(),
                                           rows * sizeof(RowSampling), cudaMemcpyHostToDevice));
        const SampleRowsParams p{.logits = logits.as<float>(),
                                 .rows = params.as<RowSampling>(),
                                 .out = out.as<int32_t>(),
                                 .row_stride = kVocab,
                                 .num_rows = rows,
                                 .vocab = kVocab};
        // sample_rows.h: 16 clusters (rows) run at once, one CTA per SM; more rows run in waves.
        const double waves = (rows + 15) / 16;
        SE_ASSIGN_OR_RETURN(const double ms,
                            mean_launch_ms(kWarmup, iters, [&](cudaStream_t stream) {
                                return sample_rows(p, stream);
                            }));
        fmt::print(
            "{{\"rows\": {}, \"vocab\": {}, \"logits\": \"{}\", \"sampling\": \"{}\", "
            "\"us\": {:.1f}, \"predicted_us\": {:.0f}, \"copy_to_host_us\": {:.1f}}}\n",
            rows, kVocab, peaked ? "peaked" : "flat", c.name, ms * 1e3,
            waves * (peaked ? c.predicted_us_peaked : c.predicted_us_flat), copy_ms * 1e3);
    }
    return Status();
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    int iters = 50;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
    }
    using se::RowSampling;
    // Predictions at 1 row (sample_rows.h): the row read once by a cluster of 8 CTAs, then
    // ~3 us per descent level over the shared-memory copy; greedy, then 1 or 2 descents.
    // Measured before the cluster version (one CTA per row, every level re-reading the row from
    // L2 with scalar loads and 64-bit CAS-loop atomics): 56, 386/651, 140/174, 394/1077 us.
    const std::vector<se::cuda::Config> configs = {
        {"greedy", RowSampling{.temperature = 0.0f}, 5, 5},
        {"temperature", RowSampling{.temperature = 1.0f}, 10, 15},
        {"top_k=50", RowSampling{.temperature = 1.0f, .top_k = 50}, 15, 18},
        {"top_p=0.9", RowSampling{.temperature = 1.0f, .top_p = 0.9f}, 15, 22},
        {"top_p=0.9,min_p=0.05", RowSampling{.temperature = 1.0f, .top_p = 0.9f, .min_p = 0.05f},
         16, 24},
    };
    for (const int32_t rows : {1, 16, 64}) {
        for (const bool peaked : {true, false}) {
            const se::Status status = se::cuda::run(rows, peaked, configs, iters);
            if (!status.ok()) {
                fmt::print(stderr, "error: rows {}: {}\n", rows, status.to_string());
                return 1;
            }
        }
    }
    return 0;
}
