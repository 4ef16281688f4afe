#include "model/hf_checkpoint.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "model/hf_config.h"
#include "model/json_fields.h"
#include "model/safetensors_file.h"
#include "model/text_file.h"

namespace se {
namespace {

namespace fs = std::filesystem;

// nullopt when the file does not exist; any other failure is an error.
Expected<std::optional<std::string>> read_optional(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::optional<std::string>();
    SE_ASSIGN_OR_RETURN(std::string text, read_text_file(path.string()));
    return std::optional<std::string>(std::move(text));
}

void add_stop_ids(std::vector<int32_t>& ids, const std::vector<int32_t>& more) {
    for (const int32_t id : more) {
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
}

Status read_tokenizer_files(const fs::path& dir, HfCheckpoint& ckpt) {
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> tokenizer,
                        read_optional(dir / "tokenizer.json"));
    ckpt.tokenizer_json = tokenizer.value_or("");
    const fs::path config_path = dir / "tokenizer_config.json";
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> config, read_optional(config_path));
    if (config) {
        SE_ASSIGN_OR_RETURN(ckpt.tokenizer_config,
                            parse_tokenizer_config(*config, config_path.string()));
    }
    // Newer transformers save the template on its own; it then wins over tokenizer_config's.
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> jinja,
                        read_optional(dir / "chat_template.jinja"));
    ckpt.chat_template = jinja.value_or(ckpt.tokenizer_config.chat_template);
    return {};
}

// weight_map of an index file, grouped by shard: shard file name -> tensor names.
Expected<std::map<std::string, std::set<std::string>>> read_index(const fs::path& index_path) {
    const std::string source = index_path.string();
    SE_ASSIGN_OR_RETURN(const std::string text, read_text_file(source));
    SE_ASSIGN_OR_RETURN(const nlohmann::json index, parse_json(text, source));
    const JsonFields fields(index, source);
    SE_ASSIGN_OR_RETURN(const nlohmann::json* weight_map, fields.find_object("weight_map"));
    if (weight_map == nullptr)
        return data_loss(fmt::format("{}: field 'weight_map' is missing", source));
    std::map<std::string, std::set<std::string>> shards;
    for (const auto& [name, shard] : weight_map->items()) {
        if (!shard.is_string()) {
            return data_loss(
                fmt::format("{}: weight_map entry '{}' must be a file name", source, name));
        }
        const std::string file = shard.get<std::string>();
        // Shards live next to the index; a path could point anywhere on the machine.
        if (file.empty() || file.find('/') != std::string::npos || file == "..") {
            return data_loss(
                fmt::format("{}: weight_map entry '{}' names '{}', not a file in "
                            "the model directory",
                            source, name, file));
        }
        shards[file].insert(name);
    }
    return shards;
}

Expected<WeightStore> load_shards(const fs::path& dir, const fs::path& index_path) {
    SE_ASSIGN_OR_RETURN(const auto shards, read_index(index_path));
    for (const auto& [file, names] : shards) {
        std::error_code ec;
        if (!fs::exists(dir / file, ec)) {
            return not_found(fmt::format("{}: shard '{}' is missing", index_path.string(),
                                         (dir / file).string()));
        }
    }
    WeightStore store;
    std::map<std::string, std::string> shard_of;  // tensor name -> shard holding it
    for (const auto& [file, names] : shards) {
        SE_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::open((dir / file).string()));
        for (const SafetensorsTensor& t : shard.tensors()) {
            auto [it, inserted] = shard_of.emplace(t.name, file);
            if (!inserted) {
                return data_loss(fmt::format("{}: tensor '{}' is in two shards, {} and {}",
                                             dir.string(), t.name, it->second, file));
            }
        }
        for (const std::string& name : names) {
            if (shard_of.count(name) == 0 || shard_of[name] != file) {
                return data_loss(
                    fmt::format("{}: the index puts tensor '{}' in shard {}, which "
                                "does not hold it",
                                index_path.string(), name, file));
            }
        }
        SE_RETURN_IF_ERROR(std::move(shard).move_into(store));
    }
    return store;
}

}  // namespace

Expected<HfCheckpoint> read_hf_checkpoint(const std::string& dir) {
    const fs::path root(dir);
    const fs::path config_path = root / "config.json";
    SE_ASSIGN_OR_RETURN(const std::string config_text, read_text_file(config_path.string()));
    HfCheckpoint ckpt;
    SE_ASSIGN_OR_RETURN(ckpt.config, parse_hf_config(config_text, config_path.string()));
    SE_RETURN_IF_ERROR(read_tokenizer_files(root, ckpt));
    const fs::path gen_path = root / "generation_config.json";
    SE_ASSIGN_OR_RETURN(const std::optional<std::string> gen_text, read_optional(gen_path));
    if (gen_text) {
        SE_ASSIGN_OR_RETURN(ckpt.generation, parse_generation_config(*gen_text, gen_path.string()));
        add_stop_ids(ckpt.config.eos_token_ids, ckpt.generation.eos_token_ids);
    }
    return ckpt;
}

Expected<WeightStore> load_hf_weights(const std::string& dir) {
    const fs::path root(dir);
    std::error_code ec;
    if (fs::exists(root / "model.safetensors", ec)) {
        SE_ASSIGN_OR_RETURN(SafetensorsFile file,
                            SafetensorsFile::open((root / "model.safetensors").string()));
        WeightStore store;
        SE_RETURN_IF_ERROR(std::move(file).move_into(store));
        return store;
    }
    const fs::path index_path = root / "model.safetensors.index.json";
    if (fs::exists(index_path, ec)) return load_shards(root, index_path);
    if (fs::exists(root / "pytorch_model.bin", ec)) {
        return unsupported(
            fmt::format("{}: has only pytorch_model.bin; convert it to safetensors "
                        "(only safetensors weights are read)",
                        dir));
    }
    return not_found(fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir));
}

}  // namespace se
