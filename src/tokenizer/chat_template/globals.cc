#include "tokenizer/chat_template/globals.h"

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

// jinja2's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

Expected<Value> range(const CallArgs& args) {
    if (!args.keyword.empty()) return invalid_argument("range() takes no keyword arguments");
    const ValueList& p = args.positional;
    if (p.empty() || p.size() > 3) return invalid_argument("range expected 1 to 3 arguments");
    for (const Value& v : p) {
        if (!v.is_int() && !v.is_bool()) {
            return invalid_argument("range() arguments must be integers, got " +
                                    std::string(v.type_name()));
        }
    }
    int64_t start = p.size() == 1 ? 0 : p[0].as_int();
    int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
    int64_t step = p.size() == 3 ? p[2].as_int() : 1;
    if (step == 0) return invalid_argument("range() arg 3 must not be zero");
    ValueList items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(items.size()) >= kMaxRange) {
            return invalid_argument("range too big (more than 100000 items)");
        }
        items.push_back(Value::integer(i));
    }
    return Value::list(std::move(items));
}

// dict(mapping or pairs, **kwargs) and namespace(...) share the same argument rules.
Expected<DictData> collect_attrs(std::string_view what, const CallArgs& args) {
    if (args.positional.size() > 1) {
        return invalid_argument(std::string(what) + "() takes at most one positional argument");
    }
    DictData dict;
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict()) {
            dict = source.as_dict();
        } else {
            SE_ASSIGN_OR_RETURN(ValueList pairs, iterate(source));
            for (const Value& pair : pairs) {
                if (!pair.is_list() || pair.as_list().size() != 2) {
                    return invalid_argument(std::string(what) +
                                            "(): sequence elements must be pairs");
                }
                dict.set(pair.as_list()[0], pair.as_list()[1]);
            }
        }
    }
    for (const auto& [name, value] : args.keyword) dict.set(Value::string(name), value);
    return dict;
}

Expected<Value> make_dict(const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(DictData dict, collect_attrs("dict", args));
    return Value::dict(std::move(dict));
}

Expected<Value> make_namespace(const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(DictData attrs, collect_attrs("namespace", args));
    for (const auto& [key, value] : attrs.items) {
        if (key.is_string() && key.as_string().starts_with("_")) {
            return invalid_argument("namespace attributes cannot start with '_': " +
                                    key.as_string());
        }
    }
    return Value::make_namespace(std::move(attrs));
}

Expected<Value> raise_exception(const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("raise_exception", args, {"message"}, 1));
    return invalid_argument(std::string(kRaisedPrefix) + to_str(bound.get(0)));
}

Expected<Value> strftime_now(const Clock& clock, const CallArgs& args) {
    SE_ASSIGN_OR_RETURN(auto bound, BoundArgs::bind("strftime_now", args, {"format"}, 1));
    SE_ASSIGN_OR_RETURN(auto format, bound.get_string(0));
    std::tm now = clock();
    std::string buffer(64 + 4 * format->size(), '\0');
    size_t written = std::strftime(buffer.data(), buffer.size(), format->c_str(), &now);
    if (written == 0 && !format->empty()) {
        return invalid_argument("strftime_now: cannot format '" + *format + "'");
    }
    buffer.resize(written);
    return Value::string(std::move(buffer));
}

std::tm system_local_time() {
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    return local;
}

}  // namespace

std::vector<std::pair<std::string, Value>> make_globals(Clock clock) {
    if (!clock) clock = system_local_time;
    return {
        {"range", Value::callable("range", range)},
        {"dict", Value::callable("dict", make_dict)},
        {"namespace", Value::callable("namespace", make_namespace)},
        {"raise_exception", Value::callable("raise_exception", raise_exception)},
        {"strftime_now",
         Value::callable("strftime_now",
                         [clock](const CallArgs& args) { return strftime_now(clock, args); })},
    };
}

}  // namespace se::jinja
