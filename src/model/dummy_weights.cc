#include "model/dummy_weights.h"

#include <fmt/core.h>

#include <string_view>
#include <vector>

#include "model/required_weights.h"
#include "model/weight_convert.h"

namespace se {
namespace {

constexpr float kWeightRange = 0.02f;
constexpr float kBiasRange = 0.01f;

// SplitMix64 step: a full-period generator whose outputs pass BigCrush; ample for dummy weights.
uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// FNV-1a, so that each tensor's stream depends on its name, not on generation order.
uint64_t name_hash(std::string_view name) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char ch : name) {
        h ^= static_cast<uint8_t>(ch);
        h *= 0x100000001b3ull;
    }
    return h;
}

void fill_random(const WeightSpec& spec, uint64_t seed, float range, DType dtype, uint8_t* out) {
    const uint64_t tensor_seed = seed ^ name_hash(spec.name);
    const int64_t row_bytes = dtype_row_bytes(dtype, spec.cols);
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(spec.cols));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < spec.rows; ++r) {
            uint64_t state = tensor_seed + static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ull;
            for (float& v : row) {
                const float unit = static_cast<float>(splitmix64(state) >> 40) * 0x1p-24f;
                v = (2.0f * unit - 1.0f) * range;
            }
            convert_floats(DType::kF32, row.data(), dtype, out + r * row_bytes, spec.cols);
        }
    }
}

Status add_tensor(const WeightSpec& spec, const DummyWeightOptions& options, WeightStore& store) {
    const bool vector_role = spec.role == WeightRole::kNorm || spec.role == WeightRole::kBias;
    const DType dtype = vector_role ? DType::kF32 : options.dtype;
    const auto bytes = static_cast<size_t>(spec.rows * dtype_row_bytes(dtype, spec.cols));
    SE_ASSIGN_OR_RETURN(HostBuffer buffer, HostBuffer::allocate(bytes));
    switch (spec.role) {
        case WeightRole::kNorm:
            for (float& v : buffer.span<float>()) v = 1.0f;
            break;
        case WeightRole::kBias:
            fill_random(spec, options.seed, kBiasRange, dtype, buffer.data());
            break;
        case WeightRole::kEmbedding:
        case WeightRole::kLinear:
            fill_random(spec, options.seed, kWeightRange, dtype, buffer.data());
            break;
    }
    const HostBuffer& kept = store.keep(std::move(buffer));
    return store.add(spec.name, ConstTensorView(dtype, kept.data(), spec.rows, spec.cols));
}

}  // namespace

Expected<WeightStore> make_dummy_weights(const ModelConfig& config,
                                         const DummyWeightOptions& options) {
    if (!dtype_is_float(options.dtype)) {
        return invalid_argument(fmt::format("dummy weights must be F32, F16 or BF16, not {}",
                                            dtype_name(options.dtype)));
    }
    SE_RETURN_IF_ERROR(config.validate());
    const std::vector<WeightSpec> specs = required_weights(config);
    WeightStore store;
    for (size_t i = 0; i < specs.size(); ++i) {
        SE_RETURN_IF_ERROR(add_tensor(specs[i], options, store));
        if (options.on_progress)
            options.on_progress(static_cast<float>(i + 1) / static_cast<float>(specs.size()));
    }
    return store;
}

}  // namespace se
