#include "tokenizer/chat_template/methods.h"

#include <algorithm>
#include <charconv>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

using Method = Expected<Value> (*)(const Value& self, const CallArgs& args);

struct MethodEntry {
    std::string_view name;
    Method fn;
};

Value string_list(std::vector<std::string> parts) {
    ValueList items;
    for (auto& part : parts) items.push_back(Value::string(std::move(part)));
    return Value::list(std::move(items));
}

Status check_no_args(std::string_view name, const CallArgs& args) {
    if (!args.positional.empty() || !args.keyword.empty()) {
        return invalid_argument(std::string(name) + "() takes no arguments");
    }
    return {};
}

Expected<std::string> string_arg(std::string_view what, const CallArgs& args,
                                 std::initializer_list<std::string_view> params, size_t index) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind(what, args, params, index + 1));
    if (!bound.get(index).is_string()) {
        return invalid_argument(std::string(what) + "() argument must be str, not " +
                                std::string(bound.get(index).type_name()));
    }
    return bound.get(index).as_string();
}

template <bool kPrefix>
Expected<Value> affix_test(const Value& self, const CallArgs& args) {
    std::string_view what = kPrefix ? "str.startswith" : "str.endswith";
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind(what, args, {"affix", "start", "end"}, 1));
    std::u32string text = utf8_decode(self.as_string());
    int64_t length = static_cast<int64_t>(text.size());
    SE_ASSIGN_OR_RETURN(int64_t start, bound.get_int(1, 0));
    SE_ASSIGN_OR_RETURN(int64_t end, bound.get_int(2, length));
    if (start < 0) start = std::max<int64_t>(0, start + length);
    if (end < 0) end = std::max<int64_t>(0, end + length);
    end = std::min(end, length);
    if (start > end) return Value::boolean(false);
    std::string window = utf8_encode(std::u32string_view(text).substr(start, end - start));
    const Value& affix = bound.get(0);
    ValueList candidates = affix.is_tuple() ? affix.as_list() : ValueList{affix};
    for (const Value& candidate : candidates) {
        if (!candidate.is_string()) {
            return invalid_argument(std::string(what) +
                                    " first arg must be str or a tuple of str, not " +
                                    std::string(candidate.type_name()));
        }
        const std::string& c = candidate.as_string();
        if (kPrefix ? window.starts_with(c) : window.ends_with(c)) return Value::boolean(true);
    }
    return Value::boolean(false);
}

template <StripSide kSide>
Expected<Value> str_strip(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("str.strip", args, {"chars"}));
    SE_ASSIGN_OR_RETURN(auto chars, bound.get_string(0));
    return self.with_text(py_strip(self.as_string(), chars, kSide));
}

template <Direction kDirection>
Expected<Value> str_split(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("str.split", args, {"sep", "maxsplit"}));
    SE_ASSIGN_OR_RETURN(auto sep, bound.get_string(0));
    SE_ASSIGN_OR_RETURN(int64_t maxsplit, bound.get_int(1, -1));
    SE_ASSIGN_OR_RETURN(auto parts, py_split(self.as_string(), sep, maxsplit, kDirection));
    return string_list(std::move(parts));
}

Expected<Value> str_splitlines(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("str.splitlines", args, {"keepends"}));
    SE_ASSIGN_OR_RETURN(bool keepends, bound.get_bool(0, false));
    return string_list(
        py_splitlines(self.as_string(), keepends ? LineEnds::kKeep : LineEnds::kDrop));
}

template <std::string (*kTransform)(std::string_view)>
Expected<Value> str_transform(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args("str method", args));
    return self.with_text(kTransform(self.as_string()));
}

Expected<Value> str_replace(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("str.replace", args, {"old", "new", "count"}, 2));
    if (!bound.get(0).is_string() || !bound.get(1).is_string()) {
        return invalid_argument("str.replace() arguments must be str");
    }
    SE_ASSIGN_OR_RETURN(int64_t count, bound.get_int(2, -1));
    return self.with_text(
        py_replace(self.as_string(), bound.get(0).as_string(), bound.get(1).as_string(), count));
}

template <Direction kDirection, bool kRaise>
Expected<Value> str_find(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(std::string sub, string_arg("str.find", args, {"sub"}, 0));
    int64_t index = py_find(self.as_string(), sub, kDirection);
    if (kRaise && index < 0) return invalid_argument("substring not found");
    return Value::integer(index);
}

Expected<Value> str_count(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(std::string sub, string_arg("str.count", args, {"sub"}, 0));
    return Value::integer(py_count(self.as_string(), sub));
}

Expected<Value> str_join(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("str.join", args, {"iterable"}, 1));
    const Value& iterable = bound.get(0);
    ValueList items;
    if (iterable.is_list()) {
        items = iterable.as_list();
    } else if (iterable.is_dict()) {
        for (const auto& item : iterable.as_dict().items) items.push_back(item.first);
    } else if (iterable.is_string()) {
        for (char32_t cp : utf8_decode(iterable.as_string())) {
            std::string piece;
            append_utf8(piece, cp);
            items.push_back(Value::string(std::move(piece)));
        }
    } else {
        return invalid_argument("can only join an iterable");
    }
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string()) {
            return invalid_argument("sequence item " + std::to_string(i) +
                                    ": expected str instance, " +
                                    std::string(items[i].type_name()) + " found");
        }
        if (i > 0) out += self.as_string();
        out += items[i].as_string();
    }
    return Value::string(std::move(out));
}

template <bool (*kPredicate)(char32_t)>
Expected<Value> str_is(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args("str.is*", args));
    std::u32string cps = utf8_decode(self.as_string());
    if (cps.empty()) return Value::boolean(false);
    return Value::boolean(std::all_of(cps.begin(), cps.end(), kPredicate));
}

bool is_alnum(char32_t cp) {
    return is_alpha(cp) || is_digit(cp);
}

Expected<Value> str_isupper_impl(const Value& self, bool upper) {
    bool cased = false;
    for (char32_t cp : utf8_decode(self.as_string())) {
        if (upper ? is_lower(cp) : is_upper(cp)) return Value::boolean(false);
        cased = cased || (upper ? is_upper(cp) : is_lower(cp));
    }
    return Value::boolean(cased);
}

Expected<Value> str_isupper(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args("str.isupper", args));
    return str_isupper_impl(self, true);
}

Expected<Value> str_islower(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args("str.islower", args));
    return str_isupper_impl(self, false);
}

template <bool kSuffix>
Expected<Value> str_remove_affix(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(std::string affix, string_arg("str.removeprefix", args, {"affix"}, 0));
    const std::string& s = self.as_string();
    if (kSuffix && s.ends_with(affix)) return Value::string(s.substr(0, s.size() - affix.size()));
    if (!kSuffix && s.starts_with(affix)) return Value::string(s.substr(affix.size()));
    return self;
}

template <bool kFromRight>
Expected<Value> str_partition(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(std::string sep, string_arg("str.partition", args, {"sep"}, 0));
    if (sep.empty()) return invalid_argument("empty separator");
    const std::string& s = self.as_string();
    size_t hit = kFromRight ? s.rfind(sep) : s.find(sep);
    if (hit == std::string::npos) {
        return kFromRight ? Value::tuple({Value::string(""), Value::string(""), self})
                          : Value::tuple({self, Value::string(""), Value::string("")});
    }
    return Value::tuple({Value::string(s.substr(0, hit)), Value::string(sep),
                         Value::string(s.substr(hit + sep.size()))});
}

// str.format with automatic ({}) and explicit ({0}, {name}) fields; no format specs.
Expected<Value> str_format(const Value& self, const CallArgs& args) {
    const std::string& fmt = self.as_string();
    std::string out;
    size_t next_auto = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
            out += c;
            ++i;
            continue;
        }
        if (c == '}') return invalid_argument("single '}' encountered in format string");
        if (c != '{') {
            out += c;
            continue;
        }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) return invalid_argument("unmatched '{' in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close;
        if (field.find_first_of(":!.[") != std::string::npos) {
            return unsupported("str.format field '{" + field + "}' is not supported");
        }
        const Value* value = nullptr;
        if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
            size_t index = next_auto;
            if (field.empty()) {
                ++next_auto;
            } else if (std::from_chars(field.data(), field.data() + field.size(), index).ec !=
                       std::errc()) {
                return invalid_argument("str.format: bad field '{" + field + "}'");
            }
            if (index < args.positional.size()) value = &args.positional[index];
        } else {
            for (const auto& [name, v] : args.keyword) {
                if (name == field) value = &v;
            }
        }
        if (value == nullptr)
            return invalid_argument("str.format: no argument for '{" + field + "}'");
        out += to_str(*value);
    }
    return Value::string(std::move(out));
}

constexpr MethodEntry kStringMethods[] = {
    {"startswith", affix_test<true>},
    {"endswith", affix_test<false>},
    {"strip", str_strip<StripSide::kBoth>},
    {"lstrip", str_strip<StripSide::kLeft>},
    {"rstrip", str_strip<StripSide::kRight>},
    {"split", str_split<Direction::kFromLeft>},
    {"rsplit", str_split<Direction::kFromRight>},
    {"splitlines", str_splitlines},
    {"upper", str_transform<upper_utf8>},
    {"lower", str_transform<lower_utf8>},
    {"title", str_transform<py_title>},
    {"capitalize", str_transform<py_capitalize>},
    {"replace", str_replace},
    {"find", str_find<Direction::kFromLeft, false>},
    {"rfind", str_find<Direction::kFromRight, false>},
    {"index", str_find<Direction::kFromLeft, true>},
    {"rindex", str_find<Direction::kFromRight, true>},
    {"count", str_count},
    {"join", str_join},
    {"format", str_format},
    {"isdigit", str_is<is_digit>},
    {"isnumeric", str_is<is_digit>},
    {"isdecimal", str_is<is_digit>},
    {"isalpha", str_is<is_alpha>},
    {"isalnum", str_is<is_alnum>},
    {"isspace", str_is<is_python_space>},
    {"isupper", str_isupper},
    {"islower", str_islower},
    {"removeprefix", str_remove_affix<false>},
    {"removesuffix", str_remove_affix<true>},
    {"partition", str_partition<false>},
    {"rpartition", str_partition<true>},
};

Expected<Value> dict_items(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args("dict.items", args));
    ValueList items;
    for (const auto& [k, v] : self.as_dict().items) items.push_back(Value::tuple({k, v}));
    return Value::list(std::move(items));
}

template <bool kKeys>
Expected<Value> dict_keys_or_values(const Value& self, const CallArgs& args) {
    SE_RETURN_IF_ERROR(check_no_args(kKeys ? "dict.keys" : "dict.values", args));
    ValueList items;
    for (const auto& [k, v] : self.as_dict().items) items.push_back(kKeys ? k : v);
    return Value::list(std::move(items));
}

Expected<Value> dict_get(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("dict.get", args, {"key", "default"}, 1));
    SE_RETURN_IF_ERROR(check_hashable(bound.get(0)));
    if (const Value* v = self.as_dict().find(bound.get(0))) return *v;
    return bound.get_or(1, Value::none());
}

constexpr MethodEntry kDictMethods[] = {
    {"items", dict_items},
    {"keys", dict_keys_or_values<true>},
    {"values", dict_keys_or_values<false>},
    {"get", dict_get},
};

Expected<Value> list_index(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("list.index", args, {"value"}, 1));
    const ValueList& items = self.as_list();
    for (size_t i = 0; i < items.size(); ++i) {
        if (values_equal(items[i], bound.get(0))) return Value::integer(static_cast<int64_t>(i));
    }
    return invalid_argument(to_repr(bound.get(0)) + " is not in list");
}

Expected<Value> list_count(const Value& self, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("list.count", args, {"value"}, 1));
    int64_t count = 0;
    for (const Value& item : self.as_list()) count += values_equal(item, bound.get(0)) ? 1 : 0;
    return Value::integer(count);
}

constexpr MethodEntry kListMethods[] = {
    {"index", list_index},
    {"count", list_count},
};

template <size_t N>
std::optional<Value> bind_method(const MethodEntry (&table)[N], const Value& self,
                                 std::string_view name) {
    for (const MethodEntry& entry : table) {
        if (entry.name != name) continue;
        Method fn = entry.fn;
        return Value::callable(std::string(name),
                               [self, fn](const CallArgs& args) { return fn(self, args); });
    }
    return std::nullopt;
}

}  // namespace

std::optional<Value> find_method(const Value& object, std::string_view name) {
    if (object.is_string()) return bind_method(kStringMethods, object, name);
    if (object.is_dict()) return bind_method(kDictMethods, object, name);
    if (object.is_list()) return bind_method(kListMethods, object, name);
    return std::nullopt;
}

}  // namespace se::jinja
