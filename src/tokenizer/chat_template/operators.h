// Python semantics of the template operators: arithmetic, comparison, membership, attribute
// and item access, slicing and iteration, including jinja2's rule that a missing key or index
// yields an undefined value instead of an error.
#pragma once

#include <optional>
#include <string_view>

#include "core/expected.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

// Every arithmetic operator and `~`; `and`/`or` short-circuit in the interpreter instead.
Expected<Value> binary_op(BinaryOp op, const Value& lhs, const Value& rhs);
Expected<Value> unary_op(UnaryOp op, const Value& operand);
Expected<bool> compare_op(CompareOp op, const Value& lhs, const Value& rhs);
// Python `item in container`.
Expected<bool> contains(const Value& container, const Value& item);

// jinja2's getattr: methods of str/dict/list, then dict keys and namespace attributes.
Expected<Value> get_attr(const Value& object, std::string_view name);
// jinja2's getitem: keys and indices first, then attributes.
Expected<Value> get_item(const Value& object, const Value& key);
// object[start:stop:step] on strings (by code point), lists and tuples.
Expected<Value> get_slice(const Value& object, const Value& start, const Value& stop,
                          const Value& step);

// jinja2's attribute paths (map/sort/selectattr `attribute=`): "a.b.0" reads item a, then b,
// then index 0.
Expected<Value> get_attribute_path(const Value& item, std::string_view path);

// The items a for loop or a filter walks: list items, dict keys, string characters; an
// undefined value is empty.
Expected<ValueList> iterate(const Value& value);

// Python's TypeError for a list or dict (or a tuple holding one) used as a dict key.
Status check_hashable(const Value& key);

// The error for using an undefined value where a real one is needed.
Status undefined_error(const Value& value);

}  // namespace se::jinja
