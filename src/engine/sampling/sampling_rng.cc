#include "engine/sampling/sampling_rng.h"

#include <bit>

#include "core/check.h"

namespace se {

uint64_t splitmix64_next(uint64_t& state) {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

SamplingRng::SamplingRng(uint64_t seed) {
    for (uint64_t& word : state_) word = splitmix64_next(seed);
}

SamplingRng SamplingRng::from_state(const std::array<uint64_t, 4>& state) {
    SE_CHECK(state[0] | state[1] | state[2] | state[3], "xoshiro256** state must not be all zero");
    SamplingRng rng;
    rng.state_ = state;
    return rng;
}

uint64_t SamplingRng::next_u64() {
    const uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
}

double SamplingRng::next_double() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

}  // namespace se
