// The random source of one request's sampler: xoshiro256** (Blackman & Vigna) seeded through
// splitmix64. Both are fixed integer recurrences, so a seeded request draws the same tokens on
// every platform and standard library (std:: distributions give no such promise).
#pragma once

#include <array>
#include <cstdint>

namespace se {

class SamplingRng {
  public:
    // Expands one 64-bit seed into the 256-bit state with splitmix64, so nearby seeds (a request
    // counter) still give unrelated streams.
    explicit SamplingRng(uint64_t seed);

    // Starts from an explicit state (not all zero); lets tests check the published sequence.
    static SamplingRng from_state(const std::array<uint64_t, 4>& state);

    uint64_t next_u64();
    // Uniform in [0, 1): the top 53 bits of next_u64() scaled by 2^-53, exact in a double.
    double next_double();

  private:
    SamplingRng() = default;

    std::array<uint64_t, 4> state_{};
};

// One step of splitmix64: advances `state` and returns the mixed output.
uint64_t splitmix64_next(uint64_t& state);

}  // namespace se
