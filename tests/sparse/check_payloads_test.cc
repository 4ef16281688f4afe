// A method whose views a backend cannot read is refused when it is created, with the payload
// named, never in the middle of a step.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_ops.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"

namespace se::testing {
namespace {

// A backend whose kernels read whole paged tables only. Nothing runs on it: it answers reads().
class PagedOnlyOps final : public Ops {
  public:
    std::string_view name() const override { return "paged-only"; }
    bool reads(KvReadKind kind) const override { return kind == KvReadKind::kPaged; }
    void embedding(std::span<const int32_t>, const ConstTensorView&, TensorView) override {}
    void embedding_shard(std::span<const int32_t>, const ConstTensorView&, int32_t,
                         TensorView) override {}
    void matmul(const ConstTensorView&, const ConstTensorView&, TensorView) override {}
    void add_bias(TensorView, const ConstTensorView&) override {}
    void add(TensorView, const ConstTensorView&) override {}
    void rms_norm(const ConstTensorView&, const ConstTensorView&, float, TensorView) override {}
    void head_rms_norm(TensorView, int32_t, const ConstTensorView&, float) override {}
    void rope(TensorView, std::span<const int32_t>, const RopeArgs&) override {}
    void silu_mul(const ConstTensorView&, const ConstTensorView&, TensorView) override {}
    void store_kv(const ConstTensorView&, const ConstTensorView&, const KvWrite&,
                  const PagedKvCache&) override {}
    void attention(const ConstTensorView&, const PagedKvRead&, const AttentionArgs&,
                   TensorView) override {}
    void attention_gather(const ConstTensorView&, const PagedKvGather&, const AttentionArgs&,
                          TensorView) override {}
    void move_kv(const PagedKvCache&, std::span<const int64_t>, std::span<const int64_t>) override {
    }
};

Method create(const std::string& id, Ops& ops, const ModelConfig& config) {
    const nlohmann::json knobs = nlohmann::json::object();
    auto method = builtin_methods().create(id, {.model = config,
                                                .ops = ops,
                                                .kv_layout = {.dtype = DType::kF32,
                                                              .block_size = 16,
                                                              .num_kv_heads = config.num_kv_heads,
                                                              .head_dim = config.head_dim},
                                                .kv_cache_bytes = int64_t{8} << 20,
                                                .knobs = knobs,
                                                .max_step_tokens = 64});
    SE_CHECK(method.ok(), "%s", method.status().to_string().c_str());
    return std::move(method).value();
}

ModelConfig small_config() {
    ModelConfig config;
    config.num_layers = 4;
    config.num_heads = 8;
    config.num_kv_heads = 2;
    config.head_dim = 16;
    return config;
}

TEST(CheckPayloadsTest, EveryMethodRunsOnTheCpuBackend) {
    const ModelConfig config = small_config();
    CpuOps cpu;
    for (const std::string& id : builtin_methods().ids()) {
        const Method method = create(id, cpu, config);
        EXPECT_TRUE(check_payloads(cpu, *method.cache).ok()) << id;
    }
}

TEST(CheckPayloadsTest, AViewTheBackendCannotReadIsRefusedByName) {
    const ModelConfig config = small_config();
    CpuOps cpu;
    PagedOnlyOps paged_only;
    int refused = 0;
    for (const std::string& id : builtin_methods().ids()) {
        const Method method = create(id, cpu, config);
        const auto kinds = method.cache->payload_kinds();
        const bool gathers =
            std::find(kinds.begin(), kinds.end(), PayloadKind::kPagedGather) != kinds.end();
        const Status s = check_payloads(paged_only, *method.cache);
        EXPECT_EQ(s.ok(), !gathers) << id;
        if (!s.ok()) {
            ++refused;
            EXPECT_NE(s.message().find("paged gather"), std::string::npos) << s.to_string();
            EXPECT_NE(s.message().find("paged-only"), std::string::npos) << s.to_string();
        }
    }
    EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace se::testing
