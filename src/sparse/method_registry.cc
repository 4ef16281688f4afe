#include "sparse/method_registry.h"

#include <fmt/core.h>

#include <algorithm>

namespace se {

void MethodRegistry::add(std::string id, MethodFactory factory) {
    const bool inserted = factories_.emplace(std::move(id), factory).second;
    SE_CHECK(inserted, "method registered twice");
}

Expected<Method> MethodRegistry::create(std::string_view id, const MethodContext& context) const {
    auto it = factories_.find(id);
    if (it == factories_.end()) {
        std::string known;
        for (const auto& [name, factory] : factories_) known += (known.empty() ? "" : ", ") + name;
        return invalid_argument(
            fmt::format("--sparse-method: unknown method '{}' (known: {})", id, known));
    }
    if (!context.knobs.is_object()) {
        return invalid_argument("--sparse-config must be a JSON object");
    }
    return it->second(context);
}

std::vector<std::string> MethodRegistry::ids() const {
    std::vector<std::string> out;
    for (const auto& [name, factory] : factories_) out.push_back(name);
    return out;
}

MethodRegistry& builtin_methods() {
    static MethodRegistry registry;
    return registry;
}

MethodRegistration::MethodRegistration(const char* id, MethodFactory factory) {
    builtin_methods().add(id, factory);
}

Status check_known_knobs(std::string_view method, const nlohmann::json& knobs,
                         const std::vector<std::string>& known) {
    for (const auto& [key, value] : knobs.items()) {
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            std::string list;
            for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
            return invalid_argument(
                fmt::format("--sparse-config: method '{}' has no knob '{}'{}", method, key,
                            list.empty() ? " (it takes none)" : " (knobs: " + list + ")"));
        }
    }
    return {};
}

}  // namespace se
