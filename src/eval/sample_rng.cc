#include "eval/sample_rng.h"

#include "core/check.h"

namespace se::eval {
namespace {

// FNV-1a: a stable hash of the task name (std::hash may differ between libraries).
uint32_t fnv1a(std::string_view text) {
    uint32_t h = 2166136261u;
    for (char c : text) {
        h ^= static_cast<uint8_t>(c);
        h *= 16777619u;
    }
    return h;
}

}  // namespace

SampleRng::SampleRng(uint64_t seed, std::string_view task, int32_t index) {
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), fnv1a(task),
                      static_cast<uint32_t>(index)};
    engine_.seed(seq);
}

int64_t SampleRng::uniform_int(int64_t lo, int64_t hi) {
    SE_CHECK(lo <= hi && hi - lo < INT64_MAX);
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    // Rejection sampling keeps the draw unbiased for every span.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return lo + static_cast<int64_t>(x % span);
}

double SampleRng::uniform_unit() {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;  // 53 random mantissa bits
}

}  // namespace se::eval
