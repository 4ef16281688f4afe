// The CPU backend: AVX2/FMA kernels with f32 activations and f32 accumulation, threads through
// OpenMP (one parallel region per op at most; small ops run on the calling thread).
//
// Not thread-safe: an instance owns per-thread scratch buffers and a RoPE table that calls
// reuse. Use one instance per engine thread.
#pragma once

#include <cstdint>

#include "backend/cpu/attention.h"
#include "backend/cpu/dequant.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/scratch.h"
#include "backend/ops.h"

namespace se {

struct CpuOptions {
    int32_t num_threads = 0;  // 0 = all cores (omp_get_max_threads())
};

class CpuOps final : public Ops {
  public:
    explicit CpuOps(CpuOptions options = {});

    std::string_view name() const override { return "cpu"; }
    int32_t num_threads() const { return scratch_.num_threads(); }

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

  private:
    // Threads for an element-wise op over `elems` f32 values: 1 unless it is large.
    int32_t threads_for_elems(int64_t elems) const;

    cpu::Scratch scratch_;
    cpu::RopeTable rope_table_;
    cpu::PagedAttention attention_;
};

}  // namespace se
