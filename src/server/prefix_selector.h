// Which cached history a prefix-cache operation is about: exactly one of `token_ids`, `text`
// (tokenized as a completions prompt) or `messages` (rendered as a chat prompt, with
// `add_generation_prompt`, default true), plus the `cache_salt` its requests used.
#pragma once

#include <string>
#include <vector>

#include "core/expected.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/json_body.h"

namespace se::server {

struct PrefixSelector {
    std::vector<int32_t> tokens;
    std::string cache_salt;
};

// Reads the selector's fields from `reader` (naming them known); the error names the field.
std::optional<ApiError> read_prefix_selector(FieldReader& reader, const Engine& engine,
                                             PrefixSelector& out);

}  // namespace se::server
