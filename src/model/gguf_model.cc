#include "model/gguf_model.h"

#include <fmt/core.h>

#include "model/gguf_config.h"
#include "model/gguf_file.h"
#include "model/gguf_tensor_names.h"
#include "model/weight_convert.h"

namespace se {
namespace {

constexpr std::string_view kRopeFreqs = "rope_freqs.weight";

Expected<GgufModel> read_metadata(const GgufFile& file) {
    GgufModel model;
    SE_ASSIGN_OR_RETURN(model.config, gguf_model_config(file));
    SE_ASSIGN_OR_RETURN(model.vocab, gguf_vocab(file));
    SE_ASSIGN_OR_RETURN(model.chat_template, file.get_string_or("tokenizer.chat_template", ""));
    return model;
}

Status add_tensors(const GgufFile& file, const ModelConfig& config, WeightStore& store) {
    for (const GgufTensorInfo& info : file.tensors()) {
        if (info.name == kRopeFreqs) continue;  // consumed by the config
        const std::optional<HfTensorName> hf = hf_tensor_name(info.name);
        if (!hf) {
            return unsupported(
                fmt::format("{}: tensor '{}' is not part of a {} model this engine "
                            "knows",
                            file.path(), info.name, config.architecture));
        }
        if (hf->layer && *hf->layer >= config.num_layers) {
            return data_loss(
                fmt::format("{}: tensor '{}' belongs to layer {}, but the model has "
                            "{} layers",
                            file.path(), info.name, *hf->layer, config.num_layers));
        }
        SE_ASSIGN_OR_RETURN(const ConstTensorView view, aligned_view(file.view(info), store));
        SE_RETURN_IF_ERROR(store.add(hf->name, view).with_context(file.path()));
    }
    return {};
}

}  // namespace

Expected<GgufModel> load_gguf_model(const std::string& path) {
    SE_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
    SE_ASSIGN_OR_RETURN(GgufModel model, read_metadata(file));
    SE_RETURN_IF_ERROR(add_tensors(file, model.config, model.weights));
    model.weights.keep(std::move(file).release_mapping());
    return model;
}

Expected<GgufModel> load_gguf_metadata(const std::string& path) {
    SE_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
    return read_metadata(file);
}

}  // namespace se
