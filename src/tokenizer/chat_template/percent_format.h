// Python's printf-style formatting (`"%s: %d" % (a, b)` and the `format` filter).
#pragma once

#include <string>
#include <string_view>

#include "core/expected.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

// `args` is the right operand of `%`: a tuple gives the arguments, anything else is one.
Expected<std::string> percent_format(std::string_view format, const Value& args);

}  // namespace se::jinja
