#include "sparse/rank_reduce.h"

#include <algorithm>

namespace se {

void max_over_ranks(Communicator* comm, std::span<float> values) {
    if (comm != nullptr && comm->size() > 1) comm->all_reduce_host(values, ReduceOp::kMax);
}

void sum_over_ranks(Communicator* comm, std::span<float> values) {
    if (comm != nullptr && comm->size() > 1) comm->all_reduce_host(values, ReduceOp::kSum);
}

std::vector<float> gather_over_ranks(Communicator* comm, std::span<const float> local) {
    if (comm == nullptr || comm->size() == 1) return {local.begin(), local.end()};
    // A sum over ranks where every other rank contributes -0.0: x + (-0.0) is x for every x,
    // signed zeros and infinities included, so the gather is exact in any summation order.
    std::vector<float> all(local.size() * static_cast<size_t>(comm->size()), -0.0f);
    std::copy(local.begin(), local.end(), all.begin() + local.size() * comm->rank());
    comm->all_reduce_host(all, ReduceOp::kSum);
    return all;
}

}  // namespace se
