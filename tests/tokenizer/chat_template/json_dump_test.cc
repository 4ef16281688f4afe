// json_dumps against Python's json.dumps with transformers' tojson defaults.
#include "tokenizer/chat_template/json_dump.h"

#include <gtest/gtest.h>

namespace se::jinja {
namespace {

Value sample() {
    auto json = nlohmann::ordered_json::parse(
        R"({"name": "f", "args": {"z": [1, 2.5, true, null], "a": {}, "e": []}, "s": "caf\u00e9"})");
    return Value::from_json(json);
}

std::string dumps(const Value& value, const JsonDumpOptions& options = {}) {
    auto out = json_dumps(value, options);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? *out : "";
}

TEST(JsonDumpTest, OneLineKeepsKeyOrderAndNonAscii) {
    EXPECT_EQ(dumps(sample()),
              "{\"name\": \"f\", \"args\": {\"z\": [1, 2.5, true, null], \"a\": {}, \"e\": []}, "
              "\"s\": \"caf\u00e9\"}");
}

TEST(JsonDumpTest, IndentUsesCommaNewlineSeparators) {
    EXPECT_EQ(dumps(sample(), {.indent = "  "}),
              "{\n  \"name\": \"f\",\n  \"args\": {\n    \"z\": [\n      1,\n      2.5,\n"
              "      true,\n      null\n    ],\n    \"a\": {},\n    \"e\": []\n  },\n"
              "  \"s\": \"caf\u00e9\"\n}");
}

TEST(JsonDumpTest, StringEscapes) {
    EXPECT_EQ(dumps(Value::string("q\" b\\ \n\r\t\b\f \x01 \x7f \u2028")),
              "\"q\\\" b\\\\ \\n\\r\\t\\b\\f \\u0001 \x7f \u2028\"");
    EXPECT_EQ(dumps(Value::string("\u00e9\U0001F600"), {.ensure_ascii = true}),
              "\"\\u00e9\\ud83d\\ude00\"");
}

TEST(JsonDumpTest, NumbersLikePython) {
    EXPECT_EQ(dumps(Value::real(1.0)), "1.0");
    EXPECT_EQ(dumps(Value::real(1e16)), "1e+16");
    EXPECT_EQ(dumps(Value::real(1.0 / 0.0)), "Infinity");
    EXPECT_EQ(dumps(Value::integer(-3)), "-3");
    EXPECT_EQ(dumps(Value::boolean(false)), "false");
}

TEST(JsonDumpTest, SortKeysAndSeparators) {
    DictData dict;
    dict.set(Value::string("b"), Value::integer(1));
    dict.set(Value::string("a"), Value::list({Value::integer(1), Value::integer(2)}));
    EXPECT_EQ(dumps(Value::dict(dict), {.sort_keys = true}), "{\"a\": [1, 2], \"b\": 1}");
    EXPECT_EQ(dumps(Value::dict(dict), {.item_separator = ",", .key_separator = ":"}),
              "{\"b\":1,\"a\":[1,2]}");
}

TEST(JsonDumpTest, NonStringKeysAreConverted) {
    DictData dict;
    dict.set(Value::integer(1), Value::none());
    dict.set(Value::boolean(true), Value::integer(2));  // True == 1: the same key, as in Python
    dict.set(Value::boolean(false), Value::none());
    dict.set(Value::none(), Value::none());
    dict.set(Value::real(2.5), Value::none());
    EXPECT_EQ(dumps(Value::dict(dict)),
              "{\"1\": 2, \"false\": null, \"null\": null, \"2.5\": null}");
}

TEST(JsonDumpTest, UnserializableValuesFail) {
    auto out = json_dumps(Value::undefined("x"), {});
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("Undefined is not JSON serializable"), std::string::npos);
    EXPECT_FALSE(json_dumps(Value::make_namespace({}), {}).ok());
}

}  // namespace
}  // namespace se::jinja
