// The functions every chat template can call: jinja2's range, namespace and dict, and the
// raise_exception and strftime_now that transformers adds.
#pragma once

#include <ctime>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace se::jinja {

// Broken-down local time, read each time a template calls strftime_now.
using Clock = std::function<std::tm()>;

// The message prefix of the error raise_exception(msg) produces.
inline constexpr std::string_view kRaisedPrefix = "template raised an exception: ";

std::vector<std::pair<std::string, Value>> make_globals(Clock clock);

}  // namespace se::jinja
