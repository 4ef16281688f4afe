// Host-side reductions of a method's scores over the ranks of a tensor-parallel group, for the
// decisions every rank must take alike (a token-shared kept set, a page choice, a budget split
// across heads). Each rank scores only its own heads; these combine the ranks' scores so that
// every rank holds the same bits (Communicator reduces in rank order). Without a group (comm
// null) they leave the values as they are, so single-rank code stays bitwise unchanged.
//
//   max_over_ranks     x := max_r x_r          exact: a max over heads split by rank is the
//                                              single-rank max
//   sum_over_ranks     x := sum_r x_r          the single-rank sum up to summation order
//   gather_over_ranks  [x_0 | x_1 | ... ]      each rank's x, equal lengths, in rank order; exact
#pragma once

#include <span>
#include <vector>

#include "backend/communicator.h"

namespace se {

void max_over_ranks(Communicator* comm, std::span<float> values);

void sum_over_ranks(Communicator* comm, std::span<float> values);

// f32 [size * local.size()]; rank r's local at r * local.size(). Every rank passes as many values.
std::vector<float> gather_over_ranks(Communicator* comm, std::span<const float> local);

}  // namespace se
