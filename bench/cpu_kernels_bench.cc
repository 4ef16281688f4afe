// CPU kernel benchmarks on SmolLM2-135M shapes, with the machine's limits measured in the same
// run: a streaming-read bandwidth probe and a register-only FMA peak. The last lines printed
// are a table of each kernel's rate and its ratio to the relevant limit.
//
//   se_cpu_kernels_bench [--se_threads=N] [--se_cpu_time] [--se_huge_pages]
//                        [--se_append=docs/benchmarks.md] [benchmark flags]
//
// Decode GEMVs rotate over enough copies of the weights to overflow L3 (the decode working set
// of the model is ~100 MB), so they measure DRAM streaming, not cache hits.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/matmul.h"
#include "core/half.h"
#include "core/quant_blocks.h"

namespace se {
namespace {

constexpr int64_t kStreamBytes = int64_t{512} << 20;
constexpr int64_t kColdBytes = int64_t{256} << 20;  // rotation set of the decode benchmarks

struct BenchConfig {
    int32_t threads = 0;
    // Rates from the calling thread's CPU time instead of wall time: with 1 thread on a loaded
    // machine this measures the kernel, not the scheduler.
    bool cpu_time = false;
    // Back the big buffers with transparent huge pages (fewer TLB misses, and the hardware
    // prefetchers stop at 4 KiB page boundaries).
    bool huge_pages = false;
};

// Benchmark memory: 2 MiB aligned, optionally on huge pages, filled before first use.
class BenchBuffer {
  public:
    BenchBuffer(size_t bytes, bool huge_pages) : size_(bytes) {
        constexpr size_t kAlign = size_t{2} << 20;
        const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
        data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded)));
        if (data_ == nullptr) {
            std::fprintf(stderr, "cannot allocate %zu bytes\n", bytes);
            std::abort();
        }
        if (huge_pages) madvise(data_.get(), rounded, MADV_HUGEPAGE);
    }
    uint8_t* data() { return data_.get(); }
    size_t size() const { return size_; }
    template <typename T>
    T* as() {
        return reinterpret_cast<T*>(data_.get());
    }

  private:
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data_;
    size_t size_ = 0;
};

// Random values of any weight dtype: random sign and mantissa bits with the exponent of 0.5,
// so |x| in [0.5, 1) (no subnormals, which would measure the FPU's slow path), and block
// scales of about 2^-8. Fast enough for 256 MB.
BenchBuffer random_weights(const BenchConfig& cfg, DType dtype, int64_t rows, int64_t cols,
                           uint64_t seed) {
    BenchBuffer buf(static_cast<size_t>(dtype_row_bytes(dtype, cols) * rows), cfg.huge_pages);
    uint64_t keep = ~uint64_t{0};  // random bits kept
    uint64_t set = 0;              // exponent bits set
    if (dtype == DType::kF32) {
        keep = 0x807fffff807fffffull;
        set = 0x3f0000003f000000ull;
    } else if (dtype == DType::kF16) {
        keep = 0x83ff83ff83ff83ffull;
        set = 0x3800380038003800ull;
    } else if (dtype == DType::kBF16) {
        keep = 0x807f807f807f807full;
        set = 0x3f003f003f003f00ull;
    }
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
        state ^= state << 13;  // xorshift64
        state ^= state >> 7;
        state ^= state << 17;
        const uint64_t word = (state & keep) | set;
        std::memcpy(buf.data() + i, &word, sizeof(word));
    }
    if (!dtype_is_quantized(dtype)) return buf;
    const int64_t num_blocks = rows * cols / kQuantBlockElems;
    for (int64_t b = 0; b < num_blocks; ++b) {
        uint8_t* p = buf.data() + b * dtype_block_bytes(dtype);
        const auto d = static_cast<uint16_t>(0x1c00 | (b * 37 & 0x3ff));  // 2^-8 .. 2^-7
        std::memcpy(p, &d, sizeof(d));
        if (dtype == DType::kQ4_1) {
            const auto m = static_cast<uint16_t>(0x8000 | d);  // a negative minimum
            std::memcpy(p + sizeof(d), &m, sizeof(m));
        }
    }
    return buf;
}

std::vector<float> random_floats(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

// ---- machine limits ------------------------------------------------------------------------

void bm_stream_read(benchmark::State& state, const BenchConfig& cfg) {
    BenchBuffer buf(kStreamBytes, cfg.huge_pages);
    const auto n = static_cast<int64_t>(kStreamBytes / sizeof(float));
    const float* data = buf.as<float>();
    std::fill(buf.as<float>(), buf.as<float>() + n, 1.0f);
    for (auto _ : state) {
        float total = 0.0f;
#pragma omp parallel for num_threads(cfg.threads) reduction(+ : total) schedule(static)
        for (int64_t chunk = 0; chunk < n / 4096; ++chunk) {
            __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                             _mm256_setzero_ps()};
            for (const float* p = data + chunk * 4096; p < data + (chunk + 1) * 4096; p += 32) {
                for (int u = 0; u < 4; ++u)
                    acc[u] = _mm256_add_ps(acc[u], _mm256_load_ps(p + 8 * u));
            }
            const __m256 s =
                _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
            alignas(32) float lanes[8];
            _mm256_store_ps(lanes, s);
            for (float lane : lanes) total += lane;
        }
        benchmark::DoNotOptimize(total);
    }
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kStreamBytes) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

float fma_chains(int64_t iters) {
    constexpr int kChains = 12;  // > FMA latency x FMA ports
    __m256 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
    const __m256 a = _mm256_set1_ps(0.999999f);
    const __m256 b = _mm256_set1_ps(1e-6f);
    for (int64_t i = 0; i < iters; ++i) {
        for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    __m256 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
    return _mm256_cvtss_f32(s);
}

void bm_fma_peak(benchmark::State& state, const BenchConfig& cfg) {
    constexpr int64_t kIters = 1 << 22;
    for (auto _ : state) {
        float total = 0.0f;
#pragma omp parallel num_threads(cfg.threads) reduction(+ : total)
        total += fma_chains(kIters);
        benchmark::DoNotOptimize(total);
    }
    const double flops = double{kIters} * 12 * 16 * cfg.threads;
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- matmul --------------------------------------------------------------------------------

struct MatmulShape {
    DType dtype;
    int64_t in;
    int64_t out;
};

// cold: rotate over copies of the weights that overflow L3; else the same (cached) copy.
void bm_gemv(benchmark::State& state, const BenchConfig& cfg, MatmulShape s, int64_t n, bool cold) {
    const int64_t bytes = dtype_row_bytes(s.dtype, s.in) * s.out;
    const int64_t copies = cold ? std::max<int64_t>(1, kColdBytes / bytes) : 1;
    BenchBuffer w = random_weights(cfg, s.dtype, s.out * copies, s.in, 1);
    const std::vector<float> x = random_floats(n * s.in, 2);
    std::vector<float> y(n * s.out);
    CpuOps ops({.num_threads = cfg.threads});
    int64_t copy = 0;
    for (auto _ : state) {
        const ConstTensorView wv{s.dtype, w.data() + copy * bytes, s.out, s.in};
        ops.matmul({DType::kF32, const_cast<float*>(x.data()), n, s.in}, wv,
                   {DType::kF32, y.data(), n, s.out});
        copy = (copy + 1) % copies;
    }
    benchmark::DoNotOptimize(y.data());
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// use_gemv: -1 = whatever matmul picks, 0 = force GEMM, 1 = force GEMV.
void bm_gemm(benchmark::State& state, const BenchConfig& cfg, MatmulShape s, int64_t n,
             int use_gemv) {
    BenchBuffer w = random_weights(cfg, s.dtype, s.out, s.in, 3);
    const std::vector<float> x = random_floats(n * s.in, 4);
    std::vector<float> y(n * s.out);
    CpuOps ops({.num_threads = cfg.threads});
    cpu::Scratch scratch(cfg.threads);
    const ConstTensorView xv{DType::kF32, x.data(), n, s.in};
    const ConstTensorView wv{s.dtype, w.data(), s.out, s.in};
    const TensorView yv{DType::kF32, y.data(), n, s.out};
    for (auto _ : state) {
        if (use_gemv < 0) {
            ops.matmul(xv, wv, yv);
        } else if (use_gemv == 1) {
            cpu::matmul_gemv(xv, wv, yv, scratch);
        } else {
            cpu::matmul_gemm(xv, wv, yv, scratch);
        }
    }
    benchmark::DoNotOptimize(y.data());
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(n * s.in * s.out) * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
}

// ---- attention -----------------------------------------------------------------------------

// SmolLM2-135M attention: 9 query heads, 3 KV heads, head_dim 64, 16-entry blocks.
constexpr int32_t kHeads = 9;
constexpr int32_t kKvHeads = 3;
constexpr int32_t kHeadDim = 64;
constexpr int32_t kBlock = 16;

// One sequence of q_len new rows at the end of kv_len entries. Decode (cold) rotates over as
// many layers' caches as fill kColdBytes, like a real decode step reading every layer.
void bm_attention(benchmark::State& state, const BenchConfig& cfg, int32_t q_len, int32_t kv_len,
                  DType dtype, bool cold) {
    const PagedKvLayout layout{dtype, kBlock, kKvHeads, kHeadDim};
    const int64_t num_blocks = (kv_len + kBlock - 1) / kBlock;
    const int64_t layer_bytes = num_blocks * layout.block_elems() * dtype_block_bytes(dtype);
    const int64_t layers = cold ? std::max<int64_t>(1, kColdBytes / layer_bytes) : 1;
    BenchBuffer k =
        random_weights(cfg, dtype, layers * num_blocks * kBlock, layout.entry_elems(), 5);
    BenchBuffer v =
        random_weights(cfg, dtype, layers * num_blocks * kBlock, layout.entry_elems(), 6);
    std::vector<int32_t> table(num_blocks);
    for (int64_t b = 0; b < num_blocks; ++b) table[b] = static_cast<int32_t>(b);
    const std::vector<PagedSeq> seqs = {{0, q_len, kv_len, table}};
    const int64_t width = int64_t{kHeads} * kHeadDim;
    const std::vector<float> q = random_floats(q_len * width, 7);
    std::vector<float> out(q_len * width);
    const AttentionArgs args{kHeads, kKvHeads, kHeadDim, 0.125f};
    CpuOps ops({.num_threads = cfg.threads});
    int64_t layer = 0;
    for (auto _ : state) {
        const PagedKvCache cache{layout, k.data() + layer * layer_bytes,
                                 v.data() + layer * layer_bytes, num_blocks};
        ops.attention({DType::kF32, const_cast<float*>(q.data()), q_len, width}, {&cache, seqs},
                      args, {DType::kF32, out.data(), q_len, width});
        layer = (layer + 1) % layers;
    }
    benchmark::DoNotOptimize(out.data());
    double visible = 0;  // sum over rows of the entries each row sees
    for (int32_t i = 0; i < q_len; ++i) visible += kv_len - q_len + i + 1;
    const double flops = 4.0 * kHeadDim * kHeads * visible;
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    if (q_len == 1) {
        const double kv_bytes = 2.0 * kv_len * layout.entry_elems() * dtype_block_bytes(dtype);
        state.counters["GB/s"] =
            benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    }
}

// ---- registration and the summary table ------------------------------------------------------

void register_benchmarks(const BenchConfig& cfg) {
    auto add = [&cfg](const std::string& name, auto fn) {
        auto* b = benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMicrosecond);
        if (!cfg.cpu_time) b->UseRealTime();
    };
    add("limits/stream_read", [cfg](benchmark::State& s) { bm_stream_read(s, cfg); });
    add("limits/fma_peak", [cfg](benchmark::State& s) { bm_fma_peak(s, cfg); });
    const std::vector<MatmulShape> shapes = {{DType::kQ4_1, 576, 576},
                                             {DType::kQ4_1, 576, 192},
                                             {DType::kQ4_1, 576, 1536},
                                             {DType::kQ4_1, 1536, 576},
                                             {DType::kQ8_0, 576, 49152}};
    for (const MatmulShape& sh : shapes) {
        const std::string shape = std::string(dtype_name(sh.dtype)) + "/" + std::to_string(sh.in) +
                                  "x" + std::to_string(sh.out);
        add("gemv_n1/" + shape, [cfg, sh](benchmark::State& s) { bm_gemv(s, cfg, sh, 1, true); });
        add("gemm_n512/" + shape, [cfg, sh](benchmark::State& s) { bm_gemm(s, cfg, sh, 512, -1); });
    }
    // The GEMV's compute ceiling: weights that stay in L2/L3.
    for (const MatmulShape& sh :
         {MatmulShape{DType::kQ4_1, 576, 576}, MatmulShape{DType::kQ8_0, 576, 576}}) {
        add("gemv_n1_cached/" + std::string(dtype_name(sh.dtype)) + "/576x576",
            [cfg, sh](benchmark::State& s) { bm_gemv(s, cfg, sh, 1, false); });
    }
    // Decode batches: where streaming stops paying off against the panel GEMM.
    const MatmulShape mlp{DType::kQ4_1, 576, 1536};
    for (int64_t n : {2, 3, 4, 8, 16, 32}) {
        for (int use_gemv : {1, 0}) {
            add(std::string(use_gemv ? "crossover_gemv" : "crossover_gemm") + "/Q4_1/576x1536/n" +
                    std::to_string(n),
                [cfg, mlp, n, use_gemv](benchmark::State& s) {
                    bm_gemm(s, cfg, mlp, n, use_gemv);
                });
        }
    }
    for (DType dtype : {DType::kF16, DType::kF32}) {
        const std::string dt(dtype_name(dtype));
        add("attn_prefill512/" + dt,
            [cfg, dtype](benchmark::State& s) { bm_attention(s, cfg, 512, 512, dtype, false); });
        for (int32_t ctx : {512, 4096}) {
            add("attn_decode_ctx" + std::to_string(ctx) + "/" + dt,
                [cfg, dtype, ctx](benchmark::State& s) {
                    bm_attention(s, cfg, 1, ctx, dtype, true);
                });
        }
        // The decode kernel's compute ceiling: one layer's cache, which stays in L2/L3.
        add("attn_decode_ctx4096_cached/" + dt,
            [cfg, dtype](benchmark::State& s) { bm_attention(s, cfg, 1, 4096, dtype, false); });
    }
}

// Keeps each benchmark's counters (the median when repeated) for the final table.
class TableReporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            if (run.error_occurred) continue;
            if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
            std::string name = run.run_name.str();
            const std::string suffix = "/real_time";
            if (name.ends_with(suffix)) name.resize(name.size() - suffix.size());
            if (results_.find(name) == results_.end()) order_.push_back(name);
            for (const auto& [key, counter] : run.counters) results_[name][key] = counter.value;
        }
    }

    // The table: each rate and its ratio to the stream bandwidth or the FMA peak.
    std::string table() const {
        const double stream = value("limits/stream_read", "GB/s");
        const double peak = value("limits/fma_peak", "GFLOP/s");
        std::string out = "\n| benchmark | rate | ratio to limit |\n|---|---|---|\n";
        char line[256];
        for (const std::string& name : order_) {
            const auto& c = results_.at(name);
            const bool bytes = c.count("GB/s") != 0;
            const double rate = bytes ? c.at("GB/s") : c.at("GFLOP/s");
            const double limit = bytes ? stream : peak;
            std::snprintf(line, sizeof(line), "| %s | %.2f %s | %.3f of %s |\n", name.c_str(), rate,
                          bytes ? "GB/s" : "GFLOP/s", limit > 0 ? rate / limit : 0.0,
                          bytes ? "stream read" : "FMA peak");
            out += line;
        }
        return out;
    }

  private:
    double value(const std::string& name, const std::string& key) const {
        const auto it = results_.find(name);
        return it == results_.end() || it->second.count(key) == 0 ? 0.0 : it->second.at(key);
    }

    std::vector<std::string> order_;
    std::map<std::string, std::map<std::string, double>> results_;
};

std::string first_line_of(const char* command) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command, "r"), pclose);
    char buf[256] = {};
    if (pipe == nullptr || std::fgets(buf, sizeof(buf), pipe.get()) == nullptr) return "?";
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

void append_results(const std::string& path, const std::string& command, int32_t threads,
                    const std::string& table) {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
    std::ofstream file(path, std::ios::app);
    file << "\n## se_cpu_kernels_bench, " << date << "\n\n"
         << "- hardware: "
         << first_line_of("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'")
         << ", " << threads << " threads\n"
         << "- commit: " << first_line_of("git -C " SE_SOURCE_DIR " describe --always --dirty")
         << "\n- command: `" << command << "`\n"
         << table;
}

}  // namespace
}  // namespace se

int main(int argc, char** argv) {
    se::BenchConfig cfg{.threads = omp_get_max_threads()};
    std::string append_path;
    std::string command = argv[0];
    std::vector<char*> rest = {argv[0]};
    for (int i = 1; i < argc; ++i) {
        command += std::string(" ") + argv[i];
        if (std::strncmp(argv[i], "--se_threads=", 13) == 0) {
            cfg.threads = std::atoi(argv[i] + 13);
        } else if (std::strcmp(argv[i], "--se_cpu_time") == 0) {
            cfg.cpu_time = true;
        } else if (std::strcmp(argv[i], "--se_huge_pages") == 0) {
            cfg.huge_pages = true;
        } else if (std::strncmp(argv[i], "--se_append=", 12) == 0) {
            append_path = argv[i] + 12;
        } else {
            rest.push_back(argv[i]);
        }
    }
    int rest_argc = static_cast<int>(rest.size());
    benchmark::Initialize(&rest_argc, rest.data());
    if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
    se::register_benchmarks(cfg);
    se::TableReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    const std::string table = reporter.table();
    std::printf("%s", table.c_str());
    if (!append_path.empty()) se::append_results(append_path, command, cfg.threads, table);
    benchmark::Shutdown();
    return 0;
}
