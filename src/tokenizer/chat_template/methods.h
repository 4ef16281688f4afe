// Methods of built-in values that templates call, e.g. `content.split('</think>')`,
// `message.get('role')`, `tools.index(t)`. Mutating methods (list.append, dict.update) are
// absent on purpose: transformers' sandbox rejects them too.
#pragma once

#include <optional>
#include <string_view>

#include "tokenizer/chat_template/value.h"

namespace se::jinja {

// The method `name` bound to `object`, or nullopt when `object` has no such method.
std::optional<Value> find_method(const Value& object, std::string_view name);

}  // namespace se::jinja
