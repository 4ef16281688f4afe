// The plain reference of every CPU op: the most obvious loops, double accumulation, a full
// softmax over all visible keys. Slow; the differential tests compare CpuOps (and later the
// CUDA backend) against it.
#pragma once

#include "backend/ops.h"

namespace se {

class ReferenceOps final : public Ops {
  public:
    std::string_view name() const override { return "reference"; }

    void embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                   TensorView y) override;
    void embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                         int32_t first_id, TensorView y) override;
    void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) override;
    void add_bias(TensorView y, const ConstTensorView& bias) override;
    void add(TensorView y, const ConstTensorView& x) override;
    void rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                  TensorView y) override;
    void head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                       float eps) override;
    void rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) override;
    void silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) override;
    void store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                  const PagedKvCache& cache) override;
    void attention(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                   TensorView out) override;
    void attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                          const AttentionArgs& args, TensorView out) override;
    void move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                 std::span<const int64_t> to) override;
};

}  // namespace se
