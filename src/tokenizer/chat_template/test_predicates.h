// jinja2's tests: the names after `is` (`x is defined`, `n is divisibleby 3`) and the tests
// select/reject/selectattr apply.
#pragma once

#include <string_view>

#include "core/expected.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

using TestFn = Expected<bool> (*)(const Value& value, const CallArgs& args);

// nullptr when there is no test of that name.
TestFn find_test(std::string_view name);

}  // namespace se::jinja
