// Test-only: a tensor-parallel group on the CPU, one thread per rank, as the engine runs its
// ranks: every rank executes the same steps in the same order, concurrently.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_communicator.h"

namespace se::testing {

// Runs body(rank, comm) on one thread per rank of `comms` and waits for all.
inline void run_on_ranks(const std::vector<std::unique_ptr<Communicator>>& comms,
                         const std::function<void(int32_t, Communicator&)>& body) {
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms.size(); ++r) {
        threads.emplace_back([&, r] { body(static_cast<int32_t>(r), *comms[r]); });
    }
    for (std::thread& t : threads) t.join();
}

// The same over a new group of `size` ranks.
inline void run_ranks(int32_t size, const std::function<void(int32_t, Communicator&)>& body) {
    run_on_ranks(create_cpu_communicators(size), body);
}

// The first of `count` items (heads) rank `rank` of `size` holds: rank r holds
// [r * count / size, (r + 1) * count / size); count is a multiple of size.
inline int32_t shard_begin(int32_t count, int32_t rank, int32_t size) {
    return count / size * rank;
}

// The bit patterns of x, for bitwise comparisons (-0.0 is not 0.0).
inline std::vector<uint32_t> float_bits(std::span<const float> x) {
    std::vector<uint32_t> bits;
    for (float v : x) bits.push_back(std::bit_cast<uint32_t>(v));
    return bits;
}

}  // namespace se::testing
