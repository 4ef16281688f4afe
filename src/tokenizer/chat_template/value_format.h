// Python's str() and repr() of template values: templates print dicts, lists, booleans and
// floats, and the output must match what jinja2 produces byte for byte.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/chat_template/value.h"

namespace se::jinja {

// str(value); undefined prints as the empty string.
std::string to_str(const Value& value);
// repr(value)
std::string to_repr(const Value& value);
// repr(float): shortest round-trip digits, e.g. "1.0", "1e-05", "1e+16", "inf", "nan".
std::string float_repr(double value);
// repr(str) with Python's choice of quotes and escapes.
std::string string_repr(std::string_view text);

}  // namespace se::jinja
