#include "tokenizer/chat_template/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

class JsonWriter {
  public:
    explicit JsonWriter(const JsonDumpOptions& options) : options_(options) {
        item_separator_ = options.item_separator.value_or(options.indent ? "," : ", ");
    }

    Status write(const Value& value, int level);
    std::string take() { return std::move(out_); }

  private:
    void write_string(std::string_view text);
    void write_escape(char32_t cp);
    void newline(int level);
    Status write_list(const ValueList& items, int level);
    Status write_dict(const DictData& dict, int level);
    Expected<std::string> key_string(const Value& key);

    const JsonDumpOptions& options_;
    std::string item_separator_;
    std::string out_;
};

void JsonWriter::write_escape(char32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
    out_ += buf;
}

void JsonWriter::write_string(std::string_view text) {
    out_ += '"';
    for (char32_t cp : utf8_decode(text)) {
        switch (cp) {
            case '"':
                out_ += "\\\"";
                continue;
            case '\\':
                out_ += "\\\\";
                continue;
            case '\n':
                out_ += "\\n";
                continue;
            case '\r':
                out_ += "\\r";
                continue;
            case '\t':
                out_ += "\\t";
                continue;
            case '\b':
                out_ += "\\b";
                continue;
            case '\f':
                out_ += "\\f";
                continue;
            default:
                break;
        }
        bool escape = cp < 0x20 || (options_.ensure_ascii && cp > 0x7E);
        if (!escape) {
            append_utf8(out_, cp);
        } else if (cp >= 0x10000) {
            char32_t v = cp - 0x10000;
            write_escape(0xD800 + (v >> 10));
            write_escape(0xDC00 + (v & 0x3FF));
        } else {
            write_escape(cp);
        }
    }
    out_ += '"';
}

void JsonWriter::newline(int level) {
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *options_.indent;
}

Status JsonWriter::write_list(const ValueList& items, int level) {
    if (items.empty()) {
        out_ += "[]";
        return {};
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out_ += item_separator_;
        if (options_.indent) newline(level + 1);
        SE_RETURN_IF_ERROR(write(items[i], level + 1));
    }
    if (options_.indent) newline(level);
    out_ += ']';
    return {};
}

Expected<std::string> JsonWriter::key_string(const Value& key) {
    switch (key.kind()) {
        case Value::Kind::kString:
            return key.as_string();
        case Value::Kind::kNone:
            return std::string("null");
        case Value::Kind::kBool:
            return std::string(key.as_bool() ? "true" : "false");
        case Value::Kind::kInt:
        case Value::Kind::kFloat:
            return to_str(key);
        case Value::Kind::kUndefined:
        case Value::Kind::kList:
        case Value::Kind::kDict:
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            break;
    }
    return invalid_argument("keys must be str, int, float, bool or None, not " +
                            std::string(key.type_name()));
}

Status JsonWriter::write_dict(const DictData& dict, int level) {
    if (dict.items.empty()) {
        out_ += "{}";
        return {};
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& item : dict.items) items.push_back(&item);
    if (options_.sort_keys) {
        Status status;
        std::stable_sort(items.begin(), items.end(), [&](const auto* a, const auto* b) {
            auto c = compare_values(a->first, b->first);
            if (!c.ok() && status.ok()) status = c.status();
            return c.ok() && *c < 0;
        });
        SE_RETURN_IF_ERROR(status);
    }
    out_ += '{';
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out_ += item_separator_;
        if (options_.indent) newline(level + 1);
        SE_ASSIGN_OR_RETURN(std::string key, key_string(items[i]->first));
        write_string(key);
        out_ += options_.key_separator;
        SE_RETURN_IF_ERROR(write(items[i]->second, level + 1));
    }
    if (options_.indent) newline(level);
    out_ += '}';
    return {};
}

Status JsonWriter::write(const Value& value, int level) {
    switch (value.kind()) {
        case Value::Kind::kNone:
            out_ += "null";
            return {};
        case Value::Kind::kBool:
            out_ += value.as_bool() ? "true" : "false";
            return {};
        case Value::Kind::kInt:
            out_ += std::to_string(value.as_int());
            return {};
        case Value::Kind::kFloat: {
            double d = value.as_double();
            if (std::isnan(d)) {
                out_ += "NaN";
            } else if (std::isinf(d)) {
                out_ += d > 0 ? "Infinity" : "-Infinity";
            } else {
                out_ += float_repr(d);
            }
            return {};
        }
        case Value::Kind::kString:
            write_string(value.as_string());
            return {};
        case Value::Kind::kList:
            return write_list(value.as_list(), level);
        case Value::Kind::kDict:
            return write_dict(value.as_dict(), level);
        case Value::Kind::kUndefined:
        case Value::Kind::kNamespace:
        case Value::Kind::kCallable:
            break;
    }
    return invalid_argument("Object of type " + std::string(value.type_name()) +
                            " is not JSON serializable");
}

}  // namespace

Expected<std::string> json_dumps(const Value& value, const JsonDumpOptions& options) {
    JsonWriter writer(options);
    SE_RETURN_IF_ERROR(writer.write(value, 0));
    return writer.take();
}

}  // namespace se::jinja
