// Filters that apply a test or another filter per item (select, reject, map) and that cut
// sequences into groups (batch, slice).
#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/test_predicates.h"

namespace se::jinja {
namespace {

// How select, reject, selectattr and rejectattr differ.
struct SelectMode {
    std::string_view what;  // for errors, e.g. "filter 'select'"
    bool keep_passing;      // select keeps the items that pass, reject those that fail
    bool by_attribute;      // test item.attribute instead of the item
};

Expected<Value> select_impl(const Value& value, const CallArgs& args, const SelectMode& mode) {
    const bool by_attribute = mode.by_attribute;
    const std::string_view what = mode.what;
    size_t next = 0;
    std::string attribute;
    if (by_attribute) {
        if (args.positional.empty() || !args.positional[0].is_string()) {
            return invalid_argument(std::string(what) + " needs an attribute name");
        }
        attribute = args.positional[next++].as_string();
    }
    TestFn test = nullptr;
    CallArgs test_args;
    if (next < args.positional.size()) {
        const Value& name = args.positional[next++];
        if (!name.is_string())
            return invalid_argument(std::string(what) + ": test name must be a string");
        test = find_test(name.as_string());
        if (test == nullptr) return invalid_argument("no test named '" + name.as_string() + "'");
        test_args.positional.assign(args.positional.begin() + next, args.positional.end());
        test_args.keyword = args.keyword;
    } else if (!args.keyword.empty()) {
        return invalid_argument(std::string(what) + " got keyword arguments without a test");
    }
    // jinja2 yields nothing for a falsy input (None included) instead of failing to iterate.
    if (!value.truthy()) return Value::list({});
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    ValueList out;
    for (const Value& item : items) {
        Value subject = item;
        if (by_attribute) {
            SE_ASSIGN_OR_RETURN(subject, get_attribute_path(item, attribute));
        }
        bool passed = subject.truthy();
        if (test != nullptr) {
            SE_ASSIGN_OR_RETURN(passed, test(subject, test_args));
        }
        if (passed == mode.keep_passing) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Expected<Value> select(const Value& value, const CallArgs& args) {
    return select_impl(value, args, {"filter 'select'", true, false});
}
Expected<Value> reject(const Value& value, const CallArgs& args) {
    return select_impl(value, args, {"filter 'reject'", false, false});
}
Expected<Value> selectattr(const Value& value, const CallArgs& args) {
    return select_impl(value, args, {"filter 'selectattr'", true, true});
}
Expected<Value> rejectattr(const Value& value, const CallArgs& args) {
    return select_impl(value, args, {"filter 'rejectattr'", false, true});
}

Expected<Value> map_attribute(const ValueList& items, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'map'", args, {"attribute", "default"}, 1));
    SE_ASSIGN_OR_RETURN(auto attribute, bound.get_string(0));
    ValueList out;
    for (const Value& item : items) {
        SE_ASSIGN_OR_RETURN(Value mapped, get_attribute_path(item, attribute.value_or("")));
        if (mapped.is_undefined() && bound.has(1)) mapped = bound.get(1);
        out.push_back(std::move(mapped));
    }
    return Value::list(std::move(out));
}

Expected<Value> map(const Value& value, const CallArgs& args) {
    if (!value.truthy()) return Value::list({});
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    if (args.positional.empty()) return map_attribute(items, args);
    const Value& name = args.positional[0];
    if (!name.is_string()) return invalid_argument("filter 'map': filter name must be a string");
    FilterFn filter = find_filter(name.as_string());
    if (filter == nullptr) return invalid_argument("no filter named '" + name.as_string() + "'");
    CallArgs filter_args{ValueList(args.positional.begin() + 1, args.positional.end()),
                         args.keyword};
    ValueList out;
    for (const Value& item : items) {
        SE_ASSIGN_OR_RETURN(Value mapped, filter(item, filter_args));
        out.push_back(std::move(mapped));
    }
    return Value::list(std::move(out));
}

Expected<Value> batch(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'batch'", args, {"linecount", "fill_with"}, 1));
    SE_ASSIGN_OR_RETURN(int64_t linecount, bound.get_int(0, 1));
    if (linecount <= 0) return invalid_argument("filter 'batch': linecount must be positive");
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    ValueList batches, current;
    for (const Value& item : items) {
        if (static_cast<int64_t>(current.size()) == linecount) {
            batches.push_back(Value::list(std::move(current)));
            current.clear();
        }
        current.push_back(item);
    }
    if (!current.empty()) {
        bool fill = bound.has(1) && !bound.get(1).is_none();
        while (fill && static_cast<int64_t>(current.size()) < linecount)
            current.push_back(bound.get(1));
        batches.push_back(Value::list(std::move(current)));
    }
    return Value::list(std::move(batches));
}

Expected<Value> slice(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'slice'", args, {"slices", "fill_with"}, 1));
    SE_ASSIGN_OR_RETURN(int64_t slices, bound.get_int(0, 1));
    if (slices <= 0) return invalid_argument("filter 'slice': slices must be positive");
    SE_RETURN_IF_ERROR(check_built_size(slices));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    int64_t length = static_cast<int64_t>(items.size());
    int64_t per_slice = length / slices, with_extra = length % slices, offset = 0;
    bool fill = bound.has(1) && !bound.get(1).is_none();
    ValueList out;
    for (int64_t n = 0; n < slices; ++n) {
        int64_t start = offset + n * per_slice;
        if (n < with_extra) ++offset;
        int64_t end = offset + (n + 1) * per_slice;
        ValueList part(items.begin() + start, items.begin() + end);
        if (fill && n >= with_extra) part.push_back(bound.get(1));
        out.push_back(Value::list(std::move(part)));
    }
    return Value::list(std::move(out));
}

constexpr FilterEntry kSelectFilters[] = {
    {"select", select}, {"reject", reject}, {"selectattr", selectattr}, {"rejectattr", rejectattr},
    {"map", map},       {"batch", batch},   {"slice", slice},
};

}  // namespace

std::span<const FilterEntry> select_filters() {
    return kSelectFilters;
}

}  // namespace se::jinja
