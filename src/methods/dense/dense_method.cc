// The vanilla method through the same contract as every sparse one: full KV, full reads.
#include <fmt/core.h>

#include "methods/dense/dense_cache_manager.h"
#include "sparse/method_registry.h"

namespace se {
namespace {

class DenseRuntime final : public MethodRuntime {
  public:
    Selection select_prefill(int32_t, const ConstTensorView&) override { return Selection::full(); }
    Selection select_decode(int32_t, const ConstTensorView&) override { return Selection::full(); }
};

Expected<Method> create_dense(const MethodContext& context) {
    SE_RETURN_IF_ERROR(check_known_knobs("dense", context.knobs, {}));
    const int64_t bytes_per_block =
        int64_t{context.model.num_layers} * 2 *
        dtype_row_bytes(context.kv_layout.dtype, context.kv_layout.block_elems());
    const int64_t num_blocks = context.kv_cache_bytes / bytes_per_block;
    if (num_blocks < 1) {
        return invalid_argument(fmt::format(
            "KV cache memory of {} bytes holds no block; one block of {} tokens takes {} bytes",
            context.kv_cache_bytes, context.kv_layout.block_size, bytes_per_block));
    }
    SE_ASSIGN_OR_RETURN(PagedKvStore store,
                        PagedKvStore::create({.num_layers = context.model.num_layers,
                                              .layout = context.kv_layout,
                                              .num_blocks = num_blocks}));
    return Method{.runtime = std::make_unique<DenseRuntime>(),
                  .cache = std::make_unique<DenseCacheManager>(context.ops, std::move(store),
                                                               context.enable_prefix_caching)};
}

const MethodRegistration kRegistration{"dense", &create_dense};

}  // namespace
}  // namespace se
