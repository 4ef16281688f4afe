#include "tokenizer/chat_template/call_args.h"

namespace se::jinja {

Expected<BoundArgs> BoundArgs::bind(std::string_view what, const CallArgs& args,
                                    std::initializer_list<std::string_view> params,
                                    size_t num_required) {
    BoundArgs bound;
    bound.what_ = std::string(what);
    bound.names_.assign(params.begin(), params.end());
    bound.values_.resize(params.size());
    if (args.positional.size() > params.size()) {
        return invalid_argument(bound.what_ + " takes at most " + std::to_string(params.size()) +
                                " argument(s), got " + std::to_string(args.positional.size()));
    }
    for (size_t i = 0; i < args.positional.size(); ++i) bound.values_[i] = args.positional[i];
    for (const auto& [name, value] : args.keyword) {
        size_t i = 0;
        while (i < bound.names_.size() && bound.names_[i] != name) ++i;
        if (i == bound.names_.size()) {
            return invalid_argument(bound.what_ + " got an unexpected keyword argument '" + name +
                                    "'");
        }
        if (bound.values_[i]) {
            return invalid_argument(bound.what_ + " got multiple values for argument '" + name +
                                    "'");
        }
        bound.values_[i] = value;
    }
    for (size_t i = 0; i < num_required; ++i) {
        if (!bound.values_[i]) {
            return invalid_argument(bound.what_ + " is missing required argument '" +
                                    std::string(bound.names_[i]) + "'");
        }
    }
    return bound;
}

const Value& BoundArgs::get(size_t i) const {
    return values_[i] ? *values_[i] : missing_;
}

Expected<int64_t> BoundArgs::get_int(size_t i, int64_t fallback) const {
    if (!has(i) || values_[i]->is_none()) return fallback;
    if (values_[i]->is_bool() || values_[i]->is_int()) return values_[i]->as_int();
    return invalid_argument(what_ + ": argument '" + std::string(names_[i]) +
                            "' must be an integer, got " + std::string(values_[i]->type_name()));
}

Expected<bool> BoundArgs::get_bool(size_t i, bool fallback) const {
    if (!has(i)) return fallback;
    return values_[i]->truthy();
}

Expected<std::optional<std::string>> BoundArgs::get_string(size_t i) const {
    if (!has(i) || values_[i]->is_none()) return std::optional<std::string>();
    if (values_[i]->is_string()) return std::optional<std::string>(values_[i]->as_string());
    return invalid_argument(what_ + ": argument '" + std::string(names_[i]) +
                            "' must be a string, got " + std::string(values_[i]->type_name()));
}

}  // namespace se::jinja
