#include "model/model_resolver.h"

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>

namespace se {
namespace {

namespace fs = std::filesystem;

// Like the shell's ${VAR:-...}: an empty value counts as unset.
const std::string* non_empty(const std::optional<std::string>& value) {
    return value && !value->empty() ? &*value : nullptr;
}

std::optional<std::string> read_env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

}  // namespace

ModelCacheEnv model_cache_env_from_process() {
    return {.se_model_cache = read_env("SE_MODEL_CACHE"),
            .xdg_cache_home = read_env("XDG_CACHE_HOME"),
            .home = read_env("HOME")};
}

Expected<std::string> model_cache_dir(const ModelCacheEnv& env) {
    if (const std::string* dir = non_empty(env.se_model_cache)) return *dir;
    fs::path cache;
    if (const std::string* xdg = non_empty(env.xdg_cache_home)) {
        cache = *xdg;
    } else if (const std::string* home = non_empty(env.home)) {
        cache = fs::path(*home) / ".cache";
    } else {
        return failed_precondition(
            "cannot locate the model cache: set SE_MODEL_CACHE, XDG_CACHE_HOME or HOME");
    }
    return (cache / "sparse-engine" / "models").string();
}

Expected<std::string> resolve_model_path(const std::string& model, const ModelCacheEnv& env) {
    std::error_code ec;
    if (fs::exists(model, ec)) return model;
    if (model != kDefaultModelAlias)
        return not_found(fmt::format("model '{}' does not exist", model));
    SE_ASSIGN_OR_RETURN(const std::string dir, model_cache_dir(env));
    const std::string path = (fs::path(dir) / kDefaultModelFile).string();
    if (!fs::exists(path, ec)) {
        return not_found(
            fmt::format("model '{}' is not downloaded: {} does not exist; run "
                        "scripts/fetch-model to fetch it",
                        model, path));
    }
    return path;
}

Expected<std::string> resolve_model_path(const std::string& model) {
    return resolve_model_path(model, model_cache_env_from_process());
}

}  // namespace se
