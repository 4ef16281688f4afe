// jinja2's built-in filters (plus transformers' tojson), looked up by name at render time.
#pragma once

#include <span>
#include <string_view>

#include "core/expected.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

using FilterFn = Expected<Value> (*)(const Value& value, const CallArgs& args);

struct FilterEntry {
    std::string_view name;
    FilterFn fn;
};

// nullptr when there is no filter of that name.
FilterFn find_filter(std::string_view name);

// Parts of the table, each defined next to its implementations.
std::span<const FilterEntry> text_filters();
std::span<const FilterEntry> number_filters();
std::span<const FilterEntry> sequence_filters();
std::span<const FilterEntry> select_filters();

}  // namespace se::jinja
