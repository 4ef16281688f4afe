// Turns the --model argument into a path: an existing path as is, or a known alias (the default
// model) inside the model cache that scripts/fetch-model fills.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace se {

inline constexpr std::string_view kDefaultModelAlias = "smollm2-135m";
inline constexpr std::string_view kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// The environment variables the cache location depends on; unset and empty mean the same.
struct ModelCacheEnv {
    std::optional<std::string> se_model_cache = std::nullopt;  // SE_MODEL_CACHE
    std::optional<std::string> xdg_cache_home = std::nullopt;  // XDG_CACHE_HOME
    std::optional<std::string> home = std::nullopt;            // HOME
};

// The only function here that reads the process environment.
ModelCacheEnv model_cache_env_from_process();

// $SE_MODEL_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/sparse-engine/models;
// failed_precondition when none of the three is set.
Expected<std::string> model_cache_dir(const ModelCacheEnv& env);

// Pure but for file-existence checks. not_found naming the path when nothing matches; for a
// known alias whose file is missing, the message says to run scripts/fetch-model.
Expected<std::string> resolve_model_path(const std::string& model, const ModelCacheEnv& env);

// resolve_model_path with the process environment.
Expected<std::string> resolve_model_path(const std::string& model);

}  // namespace se
