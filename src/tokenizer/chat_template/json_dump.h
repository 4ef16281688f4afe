// Python's json.dumps over template values: the `tojson` filter transformers installs calls
// json.dumps(x, ensure_ascii=False, indent=indent, separators=None, sort_keys=False).
#pragma once

#include <optional>
#include <string>

#include "core/expected.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

struct JsonDumpOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent =
        std::nullopt;  // Python's indent as a string; nullopt = one line
    std::optional<std::string> item_separator = std::nullopt;  // default ", " or "," when indented
    std::string key_separator = ": ";
    bool sort_keys = false;
};

// Fails like Python's TypeError for values JSON cannot hold (undefined, namespaces, callables).
Expected<std::string> json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace se::jinja
