// Collectives between the ranks of a tensor-parallel group: one rank per device (or, on the CPU,
// per thread), each running the same model shard by shard. Every rank calls every collective, in
// the same order, with the same shapes; a rank that skips one blocks the others (a bug, not an
// error to recover from).
//
// Results are bitwise identical on every rank (ranks reduce in rank order), so decisions made
// from them (greedy tokens, a method's kept set) agree everywhere. Code that may run without a
// group takes a nullable Communicator* (null: one rank, nothing to exchange).
#pragma once

#include <cstdint>
#include <span>

#include "core/expected.h"
#include "core/tensor_view.h"

namespace se {

enum class ReduceOp : uint8_t { kSum, kMax };

class Communicator {
  public:
    virtual ~Communicator() = default;

    virtual int32_t rank() const = 0;
    virtual int32_t size() const = 0;

    // Scratch for all_gather_cols of up to `rows` x `shard_cols` F32 per rank, allocated now
    // (start-up) so that no step allocates. Optional (the default needs none).
    virtual Status reserve_gather(int64_t rows, int64_t shard_cols) { return {}; }

    // x F32 or BF16 [rows, cols], contiguous, in this rank's backend memory: every rank's x
    // becomes the elementwise `op` over all ranks' x (a BF16 sum is taken in F32 and rounded
    // once). On a GPU it is queued on the rank's stream, like an op.
    virtual void all_reduce(TensorView x, ReduceOp op) = 0;

    // in F32 [rows, c] (backend memory) with c <= shard_cols; out F32 [rows, cols] (backend
    // memory): columns [r * shard_cols, r * shard_cols + c_r) of every rank's out get rank r's
    // in, where c_r is that rank's c (the last shard of an uneven split is narrower).
    virtual void all_gather_cols(const ConstTensorView& in, int64_t shard_cols, TensorView out) = 0;

    // values (host memory): every rank's values become the elementwise `op` over all ranks';
    // synchronous. For host-side scores (a method's ranking) that every rank must agree on.
    virtual void all_reduce_host(std::span<float> values, ReduceOp op) = 0;

    // Synchronous: whether every rank passed the same value (a digest of a plan, say).
    virtual bool all_equal(uint64_t value) = 0;
};

}  // namespace se
