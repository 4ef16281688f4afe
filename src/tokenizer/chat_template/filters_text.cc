// Filters that produce or reshape text and numbers: trim, upper, replace, indent, tojson, int...
#include <algorithm>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/json_dump.h"
#include "tokenizer/chat_template/percent_format.h"
#include "tokenizer/chat_template/py_string.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

Expected<Value> trim(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'trim'", args, {"chars"}));
    SE_ASSIGN_OR_RETURN(auto chars, bound.get_string(0));
    std::string text = py_strip(to_str(value), chars, StripSide::kBoth);
    return value.is_markup() ? Value::markup(std::move(text)) : Value::string(std::move(text));
}

// Filters jinja2 implements with str methods, which keep a Markup a Markup.
template <std::string (*kTransform)(std::string_view)>
Expected<Value> transform(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter", args, {}));
    std::string text = kTransform(to_str(value));
    return value.is_markup() ? Value::markup(std::move(text)) : Value::string(std::move(text));
}

std::string identity(std::string_view text) {
    return std::string(text);
}

Expected<Value> safe(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'safe'", args, {}));
    return Value::markup(to_str(value));
}

template <bool kForce>
Expected<Value> escape(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'escape'", args, {}));
    if (!kForce && value.is_markup()) return value;
    return Value::markup(html_escape(to_str(value)));
}

// jinja2 joins the title-cased words into a plain str.
Expected<Value> title(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound, BoundArgs::bind("filter 'title'", args, {}));
    return Value::string(jinja_title(to_str(value)));
}

Expected<Value> replace(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'replace'", args, {"old", "new", "count"}, 2));
    SE_ASSIGN_OR_RETURN(int64_t count, bound.get_int(2, -1));
    return Value::string(
        py_replace(to_str(value), to_str(bound.get(0)), to_str(bound.get(1)), count));
}

Expected<Value> indent(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'indent'", args, {"width", "first", "blank"}));
    std::string indention(4, ' ');
    if (bound.has(0)) {
        const Value& width = bound.get(0);
        if (width.is_string()) {
            indention = width.as_string();
        } else {
            SE_ASSIGN_OR_RETURN(int64_t n, bound.get_int(0, 4));
            SE_RETURN_IF_ERROR(check_built_size(n));
            indention = std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
        }
    }
    SE_ASSIGN_OR_RETURN(bool first, bound.get_bool(1, false));
    SE_ASSIGN_OR_RETURN(bool blank, bound.get_bool(2, false));
    if (!value.is_string()) {
        return invalid_argument("needs a string, got " + std::string(value.type_name()));
    }
    // jinja2 appends a newline before splitting, so a trailing newline survives.
    std::vector<std::string> lines = py_splitlines(to_str(value) + "\n", LineEnds::kDrop);
    std::string out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
        out += "\n";
        if (blank || !lines[i].empty()) out += indention;
        out += lines[i];
    }
    if (first) out = indention + out;
    return Value::string(std::move(out));
}

Expected<Value> center(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'center'", args, {"width"}));
    SE_ASSIGN_OR_RETURN(int64_t width, bound.get_int(0, 80));
    std::string text = to_str(value);
    int64_t margin = width - static_cast<int64_t>(utf8_length(text));
    if (margin <= 0) return Value::string(std::move(text));
    SE_RETURN_IF_ERROR(check_built_size(width));
    int64_t left = margin / 2 + (margin & width & 1);  // CPython's str.center split
    return Value::string(std::string(left, ' ') + text + std::string(margin - left, ' '));
}

Expected<Value> wordcount(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN([[maybe_unused]] auto bound,
                        BoundArgs::bind("filter 'wordcount'", args, {}));
    int64_t count = 0;
    bool in_word = false;
    for (char32_t cp : utf8_decode(to_str(value))) {
        bool word_char = is_alpha(cp) || is_digit(cp) || cp == '_';
        if (word_char && !in_word) ++count;
        in_word = word_char;
    }
    return Value::integer(count);
}

Expected<Value> format(const Value& value, const CallArgs& args) {
    if (!args.keyword.empty()) return unsupported("filter 'format' with keyword arguments");
    SE_ASSIGN_OR_RETURN(std::string text,
                        percent_format(to_str(value), Value::tuple(args.positional)));
    return Value::string(std::move(text));
}

Expected<Value> truncate(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("filter 'truncate'", args,
                                                    {"length", "killwords", "end", "leeway"}));
    SE_ASSIGN_OR_RETURN(int64_t length, bound.get_int(0, 255));
    SE_ASSIGN_OR_RETURN(bool killwords, bound.get_bool(1, false));
    SE_ASSIGN_OR_RETURN(auto end_arg, bound.get_string(2));
    SE_ASSIGN_OR_RETURN(int64_t leeway, bound.get_int(3, 5));
    std::string end = end_arg.value_or("...");
    // jinja2 returns anything short enough as is; only strings can be cut.
    if (value.is_undefined()) return value;
    if (value.is_list() || value.is_dict()) {
        size_t size = value.is_list() ? value.as_list().size() : value.as_dict().items.size();
        if (static_cast<int64_t>(size) <= length + leeway) return value;
    }
    if (!value.is_string()) {
        return invalid_argument("cannot truncate a " + std::string(value.type_name()));
    }
    std::u32string text = utf8_decode(value.as_string());
    int64_t end_length = static_cast<int64_t>(utf8_length(end));
    if (length < end_length || leeway < 0) {
        return invalid_argument("filter 'truncate': length must be at least the end marker's");
    }
    if (static_cast<int64_t>(text.size()) <= length + leeway)
        return Value::string(utf8_encode(text));
    std::string head = utf8_encode(text.substr(0, length - end_length));
    if (!killwords) {
        size_t space = head.rfind(' ');
        if (space != std::string::npos) head = head.substr(0, space);
    }
    return Value::string(head + end);
}

Expected<Value> tojson(const Value& value, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound,
                        BoundArgs::bind("filter 'tojson'", args,
                                        {"ensure_ascii", "indent", "separators", "sort_keys"}));
    JsonDumpOptions options;
    SE_ASSIGN_OR_RETURN(options.ensure_ascii, bound.get_bool(0, false));
    const Value& indent_arg = bound.get(1);
    if (indent_arg.is_string()) {
        options.indent = indent_arg.as_string();
    } else if (indent_arg.is_int() || indent_arg.is_bool()) {
        options.indent =
            std::string(static_cast<size_t>(std::max<int64_t>(indent_arg.as_int(), 0)), ' ');
    } else if (!indent_arg.is_undefined() && !indent_arg.is_none()) {
        return invalid_argument("filter 'tojson': indent must be an int or a string");
    }
    const Value& separators = bound.get(2);
    if (separators.is_list() && separators.as_list().size() == 2 &&
        separators.as_list()[0].is_string() && separators.as_list()[1].is_string()) {
        options.item_separator = separators.as_list()[0].as_string();
        options.key_separator = separators.as_list()[1].as_string();
    } else if (!separators.is_undefined() && !separators.is_none()) {
        return invalid_argument("filter 'tojson': separators must be a pair of strings");
    }
    SE_ASSIGN_OR_RETURN(options.sort_keys, bound.get_bool(3, false));
    SE_ASSIGN_OR_RETURN(std::string json, json_dumps(value, options));
    return Value::string(std::move(json));
}

constexpr FilterEntry kTextFilters[] = {
    {"trim", trim},
    {"upper", transform<upper_utf8>},
    {"lower", transform<lower_utf8>},
    {"title", title},
    {"capitalize", transform<py_capitalize>},
    {"string", transform<identity>},
    {"safe", safe},
    {"escape", escape<false>},
    {"e", escape<false>},
    {"forceescape", escape<true>},
    {"replace", replace},
    {"indent", indent},
    {"center", center},
    {"wordcount", wordcount},
    {"format", format},
    {"truncate", truncate},
    {"tojson", tojson},
};

}  // namespace

std::span<const FilterEntry> text_filters() {
    return kTextFilters;
}

}  // namespace se::jinja
