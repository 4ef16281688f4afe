// Filters over sequences and mappings: length, join, sort, select, map, items, default...
#include <algorithm>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/test_predicates.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

// The sort/unique/min/max key: optionally an attribute, lowercased unless case-sensitive.
Expected<Value> sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
    Value key = item;
    if (attribute.is_string()) {
        SE_ASSIGN_OR_RETURN(key, get_attribute_path(item, attribute.as_string()));
    } else if (attribute.is_int()) {
        SE_ASSIGN_OR_RETURN(key, get_item(item, attribute));
    }
    if (!case_sensitive && key.is_string()) return Value::string(lower_utf8(key.as_string()));
    return key;
}

Expected<Value> length(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'length'", args, {}));
    switch (value.kind()) {
        case Value::Kind::kUndefined:
            return Value::integer(0);
        case Value::Kind::kString:
            return Value::integer(static_cast<int64_t>(utf8_length(value.as_string())));
        case Value::Kind::kList:
            return Value::integer(static_cast<int64_t>(value.as_list().size()));
        case Value::Kind::kDict:
            return Value::integer(static_cast<int64_t>(value.as_dict().items.size()));
        case Value::Kind::kNone:
        case Value::Kind::kBool:
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            break;
    }
    return invalid_argument("object of type '" + std::string(value.type_name()) + "' has no len()");
}

Expected<Value> first(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'first'", args, {}));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Expected<Value> last(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'last'", args, {}));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Expected<Value> join(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'join'", args, {"d", "attribute"}));
    SE_ASSIGN_OR_RETURN(auto separator, bound.get_string(0));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        Value item = items[i];
        if (bound.has(1)) {
            SE_ASSIGN_OR_RETURN(item, sort_key(item, bound.get(1), true));
        }
        if (i > 0) out += separator.value_or("");
        out += to_str(item);
    }
    return Value::string(std::move(out));
}

Expected<Value> list(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'list'", args, {}));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    return Value::list(std::move(items));
}

Expected<Value> items(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'items'", args, {}));
    if (value.is_undefined()) return Value::list({});
    if (!value.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
    ValueList pairs;
    for (const auto& [k, v] : value.as_dict().items) pairs.push_back(Value::tuple({k, v}));
    return Value::list(std::move(pairs));
}

Expected<Value> reverse(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'reverse'", args, {}));
    if (value.is_string()) {
        std::u32string cps = utf8_decode(value.as_string());
        std::reverse(cps.begin(), cps.end());
        return Value::string(utf8_encode(cps));
    }
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

// Stable sort by key; keys that Python cannot order make it fail like Python's TypeError.
Status sort_by_keys(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
    Status status;
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        auto c = reverse ? compare_values(b.first, a.first) : compare_values(a.first, b.first);
        if (!c.ok() && status.ok()) status = c.status();
        return c.ok() && *c < 0;
    });
    return status;
}

Expected<Value> sort(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'sort'", args,
                                                    {"reverse", "case_sensitive", "attribute"}));
    SE_ASSIGN_OR_RETURN(bool reverse, bound.get_bool(0, false));
    SE_ASSIGN_OR_RETURN(bool case_sensitive, bound.get_bool(1, false));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) {
        SE_ASSIGN_OR_RETURN(Value key, sort_key(item, bound.get(2), case_sensitive));
        keyed.emplace_back(std::move(key), std::move(item));
    }
    SE_RETURN_IF_ERROR(sort_by_keys(keyed, reverse));
    ValueList sorted;
    for (auto& [key, item] : keyed) sorted.push_back(std::move(item));
    return Value::list(std::move(sorted));
}

Expected<Value> dictsort(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'dictsort'", args,
                                                    {"case_sensitive", "by", "reverse"}));
    SE_ASSIGN_OR_RETURN(bool case_sensitive, bound.get_bool(0, false));
    SE_ASSIGN_OR_RETURN(auto by, bound.get_string(1));
    SE_ASSIGN_OR_RETURN(bool reverse, bound.get_bool(2, false));
    if (!value.is_dict()) return invalid_argument("filter 'dictsort' needs a dict");
    int position = by.value_or("key") == "value" ? 1 : 0;
    if (by && *by != "key" && *by != "value") {
        return invalid_argument("filter 'dictsort': 'by' must be 'key' or 'value'");
    }
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& [k, v] : value.as_dict().items) {
        const Value& key = position == 0 ? k : v;
        Value sort_value =
            !case_sensitive && key.is_string() ? Value::string(lower_utf8(key.as_string())) : key;
        keyed.emplace_back(std::move(sort_value), Value::tuple({k, v}));
    }
    SE_RETURN_IF_ERROR(sort_by_keys(keyed, reverse));
    ValueList sorted;
    for (auto& [key, item] : keyed) sorted.push_back(std::move(item));
    return Value::list(std::move(sorted));
}

Expected<Value> unique(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'unique'", args, {"case_sensitive", "attribute"}));
    SE_ASSIGN_OR_RETURN(bool case_sensitive, bound.get_bool(0, false));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    ValueList seen, out;
    for (const Value& item : items) {
        SE_ASSIGN_OR_RETURN(Value key, sort_key(item, bound.get(1), case_sensitive));
        SE_RETURN_IF_ERROR(check_hashable(key));  // jinja2 keeps a set of seen keys
        bool duplicate = std::any_of(seen.begin(), seen.end(),
                                     [&](const Value& s) { return values_equal(s, key); });
        if (duplicate) continue;
        seen.push_back(std::move(key));
        out.push_back(item);
    }
    return Value::list(std::move(out));
}

template <bool kMax>
Expected<Value> min_max(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(
        auto bound, BoundArgs::bind("filter 'min'/'max'", args, {"case_sensitive", "attribute"}));
    SE_ASSIGN_OR_RETURN(bool case_sensitive, bound.get_bool(0, false));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    SE_ASSIGN_OR_RETURN(Value best_key, sort_key(items[0], bound.get(1), case_sensitive));
    for (size_t i = 1; i < items.size(); ++i) {
        SE_ASSIGN_OR_RETURN(Value key, sort_key(items[i], bound.get(1), case_sensitive));
        SE_ASSIGN_OR_RETURN(int c, compare_values(key, best_key));
        if (kMax ? c > 0 : c < 0) {
            best = i;
            best_key = std::move(key);
        }
    }
    return items[best];
}

Expected<Value> sum(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'sum'", args, {"attribute", "start"}));
    SE_ASSIGN_OR_RETURN(ValueList items, iterate(value));
    Value total = bound.get_or(1, Value::integer(0));
    for (const Value& item : items) {
        Value term = item;
        if (bound.has(0) && !bound.get(0).is_none()) {
            SE_ASSIGN_OR_RETURN(term, sort_key(item, bound.get(0), true));
        }
        SE_ASSIGN_OR_RETURN(total, binary_op(BinaryOp::kAdd, total, term));
    }
    return total;
}

Expected<Value> default_filter(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'default'", args, {"default_value", "boolean"}));
    SE_ASSIGN_OR_RETURN(bool boolean, bound.get_bool(1, false));
    if (value.is_undefined() || (boolean && !value.truthy())) {
        return bound.get_or(0, Value::string(""));
    }
    return value;
}

Expected<Value> attr(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'attr'", args, {"name"}, 1));
    SE_ASSIGN_OR_RETURN(auto name, bound.get_string(0));
    // Plain attributes only: a dict's keys are not attributes.
    if (value.is_dict() && value.as_dict().find(*name) != nullptr) {
        return Value::undefined("'dict object' has no attribute '" + *name + "'");
    }
    return get_attr(value, *name);
}

constexpr FilterEntry kSequenceFilters[] = {
    {"length", length},     {"count", length},    {"first", first},
    {"last", last},         {"join", join},       {"list", list},
    {"items", items},       {"reverse", reverse}, {"sort", sort},
    {"dictsort", dictsort}, {"unique", unique},   {"min", min_max<false>},
    {"max", min_max<true>}, {"sum", sum},         {"default", default_filter},
    {"d", default_filter},  {"attr", attr},
};

}  // namespace

std::span<const FilterEntry> sequence_filters() {
    return kSequenceFilters;
}

}  // namespace se::jinja
