// Test-only: drives one method through the contract with data the test chooses. The test plays
// the model: per step and layer it hands in q, k and v (random, say), the driver stores, selects,
// attends and evicts exactly as the engine would, and returns every layer's attention output.
// Tests then compare what the method kept and computed with naive rules of their own.
//
// Under tensor parallelism (DriverOptions::comm) a driver is one rank: its model's heads are the
// rank's shard and the test hands it the shard's columns (sharded_drivers.h runs whole groups).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backend/communicator.h"
#include "backend/cpu/cpu_ops.h"
#include "model/model_config.h"
#include "sparse/method_registry.h"
#include "sparse/sparse_controller.h"

namespace se::testing {

struct DriverOptions {
    int32_t num_layers = 4;
    int32_t num_heads = 8;
    int32_t num_kv_heads = 2;
    int32_t head_dim = 16;
    int32_t block_size = 16;
    int64_t kv_cache_bytes = int64_t{16} << 20;
    int32_t max_step_tokens = 64;
    // Off by default: tests that exercise the prefix cache reach it through method().cache.
    bool enable_prefix_caching = false;
    // The rank's tensor-parallel group (null: one rank); num_heads and num_kv_heads are then the
    // rank's shard of the model's heads.
    Communicator* comm = nullptr;
    // Keeps what the runtime decided in every step (decisions()).
    bool record_decisions = false;
    // As the model does: a layer whose method offers a plain store (LayerAttention::plain_store)
    // gets its keys and values written there by Ops::store_kv, and store is not called. False:
    // every layer's go through store.
    bool plain_stores = true;
};

// What a method's runtime decided in one step: each layer's selection, then the eviction plan.
struct StepDecisions {
    std::vector<Selection> selections;  // per layer, in layer order
    EvictionPlan eviction;
};

// One layer's inputs for one step: f32 [n, num_heads * head_dim] and [n, num_kv_heads * head_dim]
// twice, row i for the step's token i.
struct LayerInputs {
    std::vector<float> q;
    std::vector<float> k;
    std::vector<float> v;
};

class ContractDriver {
  public:
    static Expected<std::unique_ptr<ContractDriver>> create(const std::string& method,
                                                            const nlohmann::json& knobs,
                                                            DriverOptions options = {});

    const ModelConfig& config() const { return config_; }
    const AttentionArgs& args() const { return args_; }
    Method& method() { return method_; }

    // Runs one step; layers[l] are layer l's inputs. Returns per layer the attention output
    // f32 [n, num_heads * head_dim].
    std::vector<std::vector<float>> step(const StepPlan& plan,
                                         const std::vector<LayerInputs>& layers);

    // Every step's decisions so far (record_decisions only).
    const std::vector<StepDecisions>& decisions() const { return decisions_; }

    // Random inputs for every layer of a step of `num_tokens` tokens, N(0, 1) scaled by `scale`.
    std::vector<LayerInputs> random_inputs(int32_t num_tokens, uint64_t seed,
                                           float scale = 1.0f) const;

  private:
    ContractDriver() = default;

    DriverOptions options_;
    ModelConfig config_;
    AttentionArgs args_;
    nlohmann::json knobs_;
    std::unique_ptr<CpuOps> ops_;
    Method method_;
    std::unique_ptr<MethodRuntime> recorder_;  // wraps method_.runtime (record_decisions)
    std::unique_ptr<SparseController> controller_;
    std::vector<StepDecisions> decisions_;
};

// ContractDriver::create, aborting the test binary with the error when the method refuses.
std::unique_ptr<ContractDriver> make_driver(const std::string& method, const nlohmann::json& knobs,
                                            DriverOptions options = {});

}  // namespace se::testing
