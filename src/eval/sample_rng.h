// The random source of one eval sample: derived from (seed, task, sample index) alone, so a sample
// is the same whatever other tasks or samples a run holds. std::seed_seq and std::mt19937_64 are
// specified bit for bit by the standard; the draws below avoid the library's distributions, which
// are not, so samples are identical across standard libraries.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

namespace se::eval {

class SampleRng {
  public:
    SampleRng(uint64_t seed, std::string_view task, int32_t index);

    // Uniform in [lo, hi] (inclusive); lo <= hi.
    int64_t uniform_int(int64_t lo, int64_t hi);
    // Uniform in [0, 1).
    double uniform_unit();

  private:
    std::mt19937_64 engine_;
};

}  // namespace se::eval
