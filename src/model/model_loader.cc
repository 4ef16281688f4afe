#include "model/model_loader.h"

#include <fmt/core.h>

#include <filesystem>

#include "model/dummy_weights.h"
#include "model/gguf_model.h"
#include "model/hf_checkpoint.h"
#include "model/required_weights.h"
#include "model/weight_convert.h"

namespace se {
namespace {

namespace fs = std::filesystem;

enum class LoadFormat : uint8_t { kGguf, kSafetensors, kDummy };

// nullopt for "auto".
Expected<std::optional<DType>> parse_load_dtype(const std::string& name) {
    if (name == "auto") return std::optional<DType>();
    const std::optional<DType> dtype = parse_dtype(name);
    if (!dtype) {
        return invalid_argument(
            fmt::format("dtype '{}' is not one of auto, float32, bfloat16, "
                        "float16",
                        name));
    }
    return dtype;
}

bool is_gguf_path(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec) && path.extension() == ".gguf";
}

Expected<LoadFormat> pick_format(const LoadOptions& options) {
    const fs::path path(options.model);
    std::error_code ec;
    if (!fs::exists(path, ec))
        return not_found(fmt::format("model '{}' does not exist", options.model));
    const std::string& f = options.load_format;
    if (f == "gguf") return LoadFormat::kGguf;
    if (f == "safetensors") return LoadFormat::kSafetensors;
    if (f == "dummy") return LoadFormat::kDummy;
    if (f != "auto") {
        return invalid_argument(
            fmt::format("load_format '{}' is not one of auto, gguf, "
                        "safetensors, dummy",
                        f));
    }
    if (is_gguf_path(path)) return LoadFormat::kGguf;
    if (fs::is_directory(path, ec)) {
        if (fs::exists(path / "config.json", ec)) return LoadFormat::kSafetensors;
        return not_found(fmt::format("{}: model directory has no config.json", options.model));
    }
    return invalid_argument(
        fmt::format("{}: cannot tell the model format: expected a .gguf file "
                    "or a directory with config.json",
                    options.model));
}

void take_gguf(GgufModel&& gguf, LoadedModel& model) {
    model.config = std::move(gguf.config);
    model.weights = std::move(gguf.weights);
    model.gguf_vocab = std::move(gguf.vocab);
    model.chat_template = std::move(gguf.chat_template);
}

void take_hf(HfCheckpoint&& hf, LoadedModel& model) {
    model.config = std::move(hf.config);
    model.tokenizer_json = std::move(hf.tokenizer_json);
    model.tokenizer_config = std::move(hf.tokenizer_config.json);
    model.bos_token = std::move(hf.tokenizer_config.bos_token);
    model.eos_token = std::move(hf.tokenizer_config.eos_token);
    model.add_bos_token = hf.tokenizer_config.add_bos_token;
    model.chat_template = std::move(hf.chat_template);
    model.generation = std::move(hf.generation);
}

Status load_dummy(const LoadOptions& options, std::optional<DType> dtype, LoadedModel& model) {
    if (is_gguf_path(options.model)) {
        SE_ASSIGN_OR_RETURN(GgufModel gguf, load_gguf_metadata(options.model));
        take_gguf(std::move(gguf), model);
    } else {
        SE_ASSIGN_OR_RETURN(HfCheckpoint hf, read_hf_checkpoint(options.model));
        take_hf(std::move(hf), model);
    }
    SE_RETURN_IF_ERROR(model.config.validate().with_context(options.model));
    const DummyWeightOptions dummy{.dtype = dtype.value_or(DType::kBF16),
                                   .seed = options.seed,
                                   .on_progress = options.on_progress};
    SE_ASSIGN_OR_RETURN(model.weights, make_dummy_weights(model.config, dummy));
    return {};
}

Status load_source(const LoadOptions& options, LoadFormat format, std::optional<DType> dtype,
                   LoadedModel& model) {
    switch (format) {
        case LoadFormat::kGguf: {
            SE_ASSIGN_OR_RETURN(GgufModel gguf, load_gguf_model(options.model));
            take_gguf(std::move(gguf), model);
            model.load_format = "gguf";
            return {};
        }
        case LoadFormat::kSafetensors: {
            SE_ASSIGN_OR_RETURN(HfCheckpoint hf, read_hf_checkpoint(options.model));
            take_hf(std::move(hf), model);
            SE_ASSIGN_OR_RETURN(model.weights, load_hf_weights(options.model));
            model.load_format = "safetensors";
            return {};
        }
        case LoadFormat::kDummy:
            model.load_format = "dummy";
            return load_dummy(options, dtype, model);
    }
    return internal_error("unknown load format");
}

// Norms and biases become F32 (what the ops read); with a dtype requested, float embeddings and
// projections become that dtype. Progress counts bytes of required tensors.
Status convert_weights(const ModelConfig& config, std::optional<DType> dtype,
                       const std::function<void(float)>& on_progress, WeightStore& weights) {
    const std::vector<WeightSpec> specs = required_weights(config);
    int64_t total = 0;
    for (const WeightSpec& spec : specs) {
        const ConstTensorView view = *weights.get(spec.name);  // present: check_weights ran
        total += view.rows * view.row_bytes();
    }
    int64_t done = 0;
    for (const WeightSpec& spec : specs) {
        const ConstTensorView view = *weights.get(spec.name);
        const bool vector_role = spec.role == WeightRole::kNorm || spec.role == WeightRole::kBias;
        const std::optional<DType> target = vector_role ? DType::kF32 : dtype;
        if (target && dtype_is_float(view.dtype) && view.dtype != *target) {
            SE_ASSIGN_OR_RETURN(HostBuffer buffer, convert_tensor(view, *target));
            const HostBuffer& kept = weights.keep(std::move(buffer));
            weights.replace(spec.name, ConstTensorView(*target, kept.data(), view.rows, view.cols));
        }
        done += view.rows * view.row_bytes();
        if (on_progress && total > 0)
            on_progress(static_cast<float>(done) / static_cast<float>(total));
    }
    return {};
}

}  // namespace

Expected<LoadedModel> load_model(const LoadOptions& options) {
    SE_ASSIGN_OR_RETURN(const std::optional<DType> dtype, parse_load_dtype(options.dtype));
    SE_ASSIGN_OR_RETURN(const LoadFormat format, pick_format(options));
    if (options.on_progress) options.on_progress(0.0f);
    LoadedModel model;
    model.source_path = options.model;
    SE_RETURN_IF_ERROR(load_source(options, format, dtype, model));
    SE_RETURN_IF_ERROR(model.config.validate().with_context(options.model));
    SE_RETURN_IF_ERROR(check_weights(model.config, model.weights).with_context(options.model));
    // Dummy weights report progress while they are generated and need no conversion.
    const std::function<void(float)> no_progress;
    SE_RETURN_IF_ERROR(convert_weights(
        model.config, dtype, format == LoadFormat::kDummy ? no_progress : options.on_progress,
        model.weights));
    if (options.on_progress) options.on_progress(1.0f);
    return model;
}

}  // namespace se
