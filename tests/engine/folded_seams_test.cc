// The model's folded seams (Ops::folds_residual_norm): where a backend folds the residual add
// into the row-parallel projection (matmul_add) and the next norm into the projections that read
// it (norm_project_*), the model calls those ops instead of matmul, add_rms_norm and the
// projections. Their defaults are the ops they replace, in the same order, so the CPU backend
// asked to fold (every step, prefill too) must give the logits of the CPU backend as it is, bit
// for bit, on every architecture's branch: Llama (q|k|v, RoPE and the store in one op), Qwen2
// (biases: its attention input normed apart) and Qwen3 (q/k norms).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "golden_fixture.h"
#include "model_harness.h"

namespace se::testing {
namespace {

// CpuOps that folds its seams, through Ops' defaults.
class FoldingCpuOps final : public Ops {
  public:
    std::string_view name() const override { return "cpu-folding"; }
    bool folds_residual_norm(int64_t rows) const override { return true; }

    // The folded ops, counted, so that the test knows the model called them.
    void matmul_add(const ConstTensorView& x, const ConstTensorView& w, TensorView residual,
                    TensorView scratch) override {
        ++matmul_adds;
        Ops::matmul_add(x, w, residual, scratch);
    }
    void norm_project_silu_mul(const InputNorm& in, std::span<const ConstTensorView> ws,
                               std::span<const TensorView> ys, TensorView y) override {
        ++normed_projections;
        Ops::norm_project_silu_mul(in, ws, ys, y);
    }
    void norm_project_rope_store(const InputNorm& in, std::span<const ConstTensorView> ws,
                                 std::span<const TensorView> ys, std::span<const int32_t> positions,
                                 const RopeArgs& args, const KvWrite& write,
                                 const PagedKvCache& cache) override {
        ++normed_projections;
        Ops::norm_project_rope_store(in, ws, ys, positions, args, write, cache);
    }
    int64_t matmul_adds = 0;
    int64_t normed_projections = 0;

    void embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                   TensorView y) override {
        cpu_.embedding(ids, table, y);
    }
    void embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                         int32_t first_id, TensorView y) override {
        cpu_.embedding_shard(ids, table, first_id, y);
    }
    void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) override {
        cpu_.matmul(x, w, y);
    }
    void add_bias(TensorView y, const ConstTensorView& bias) override { cpu_.add_bias(y, bias); }
    void add(TensorView y, const ConstTensorView& x) override { cpu_.add(y, x); }
    void rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                  TensorView y) override {
        cpu_.rms_norm(x, weight, eps, y);
    }
    void head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                       float eps) override {
        cpu_.head_rms_norm(x, head_dim, weight, eps);
    }
    void rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) override {
        cpu_.rope(x, positions, args);
    }
    void silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) override {
        cpu_.silu_mul(gate, up, y);
    }
    void store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                  const PagedKvCache& cache) override {
        cpu_.store_kv(k, v, write, cache);
    }
    void attention(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                   TensorView out) override {
        cpu_.attention(q, kv, args, out);
    }
    void attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                          const AttentionArgs& args, TensorView out) override {
        cpu_.attention_gather(q, kv, args, out);
    }
    void move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                 std::span<const int64_t> to) override {
        cpu_.move_kv(cache, from, to);
    }

  private:
    CpuOps cpu_{CpuOptions{.num_threads = 2}};
};

class FoldedSeamsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FoldedSeamsTest, SameLogitsAsTheUnfoldedModel) {
    const std::string dir = fixture_path("models/" + GetParam());
    GoldenFixture golden(dir + "/golden");
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int32_t> num_tokens;
    for (const GoldenPrompt& p : golden.prompts()) {
        prompts.push_back(p.ids);
        num_tokens.push_back(static_cast<int32_t>(3 + prompts.size()));  // batches shrink
    }
    ModelHarness plain(dir, 2);
    auto ops = std::make_unique<FoldingCpuOps>();
    const FoldingCpuOps& counts = *ops;
    ModelHarness folding(dir, std::move(ops));
    const auto want = plain.greedy_logits(prompts, num_tokens);
    const auto got = folding.greedy_logits(prompts, num_tokens);
    // Every layer's o and down (no o bias in these models) and its gate|up; the q|k|v op only
    // where nothing lies between the projections and RoPE.
    const int64_t layer_steps = int64_t{folding.config().num_layers} *
                                *std::max_element(num_tokens.begin(), num_tokens.end());
    EXPECT_GE(counts.matmul_adds, 2 * layer_steps);
    EXPECT_GE(counts.normed_projections, layer_steps);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].size(), want[i].size()) << "prompt " << i;
        ASSERT_FALSE(want[i].empty());
        EXPECT_EQ(max_abs_diff(got[i].data(), want[i].data(), want[i].size()), 0.0)
            << "prompt " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, FoldedSeamsTest,
                         ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3"));

}  // namespace
}  // namespace se::testing
