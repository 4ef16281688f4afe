// Binds call arguments to a Python-style signature, so filters, tests and methods accept
// positional and keyword arguments the way their jinja2/Python counterparts do.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

class BoundArgs {
  public:
    // `what` names the callee in errors, e.g. "filter 'join'". The first `num_required`
    // parameters must be given.
    static Expected<BoundArgs> bind(std::string_view what, const CallArgs& args,
                                    std::initializer_list<std::string_view> params,
                                    size_t num_required = 0);

    bool has(size_t i) const { return values_[i].has_value(); }
    // The argument, or an undefined value when it was not given.
    const Value& get(size_t i) const;
    Value get_or(size_t i, Value fallback) const { return has(i) ? *values_[i] : fallback; }

    // Typed accessors; an argument of the wrong type is an error naming the parameter.
    Expected<int64_t> get_int(size_t i, int64_t fallback) const;
    Expected<bool> get_bool(size_t i, bool fallback) const;
    Expected<std::optional<std::string>> get_string(size_t i) const;

  private:
    std::string what_;
    std::vector<std::string_view> names_;
    std::vector<std::optional<Value>> values_;
    Value missing_;  // what get() returns for an absent argument
};

}  // namespace se::jinja
