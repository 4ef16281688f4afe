// Errors a template or its context can cause: each is a Status naming the construct and where.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "tokenizer/chat_template/chat_template.h"

namespace se {
namespace {

using nlohmann::ordered_json;

Status parse_error(const std::string& source) {
    auto tmpl = ChatTemplate::parse(source);
    EXPECT_FALSE(tmpl.ok()) << "parsed: " << source;
    return tmpl.ok() ? Status() : tmpl.status();
}

Status render_error(const std::string& source,
                    const ordered_json& context = ordered_json::object()) {
    auto tmpl = ChatTemplate::parse(source);
    EXPECT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    if (!tmpl.ok()) return tmpl.status();
    auto out = tmpl->render(context);
    EXPECT_FALSE(out.ok()) << source << " rendered: " << *out;
    return out.ok() ? Status() : out.status();
}

// The message mentions every fragment.
void expect_mentions(const Status& status, std::initializer_list<std::string> fragments) {
    for (const std::string& fragment : fragments) {
        EXPECT_NE(status.message().find(fragment), std::string::npos)
            << "'" << fragment << "' missing from: " << status.to_string();
    }
}

TEST(ChatTemplateErrorsTest, UnclosedBlockNamesTheBlockAndWhereItOpened) {
    Status s = parse_error("line one\n{% if true %}\nnever closed");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    expect_mentions(s, {"'if'", "line 2:4", "never closed", "'endif'"});
    expect_mentions(parse_error("{% for x in y %}{% endif %}"),
                    {"'endif'", "line 1:20", "'for'", "'endfor'"});
}

TEST(ChatTemplateErrorsTest, UnclosedTagsAndComments) {
    expect_mentions(parse_error("ok\n  {{ x "), {"'{{'", "never closed", "line 2:3"});
    expect_mentions(parse_error("{% if x "), {"'{%'", "never closed", "line 1:1"});
    expect_mentions(parse_error("a {# open comment"), {"'#}'", "line 1:3"});
    expect_mentions(parse_error("{{ 'open string }}"), {"unterminated string", "line 1:4"});
    expect_mentions(parse_error("{{ [1, 2) }}"), {"unexpected ')'", "expected ']'"});
}

TEST(ChatTemplateErrorsTest, UnknownFilterAndTestFailAtParse) {
    Status filter = parse_error("{{ messages|nosuch }}");
    EXPECT_EQ(filter.code(), StatusCode::kUnsupported);
    expect_mentions(filter, {"unknown filter 'nosuch'", "line 1:13"});
    expect_mentions(parse_error("{{ x is nosuch }}"), {"unknown test 'nosuch'", "line 1:6"});
}

TEST(ChatTemplateErrorsTest, UnknownFilterInsideIfFailsOnlyWhenItRuns) {
    // jinja2 defers these so templates can guard optional filters.
    auto tmpl = ChatTemplate::parse("{% if use %}{{ x|nosuch }}{% endif %}done");
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    EXPECT_EQ(*tmpl->render({{"use", false}}), "done");
    auto out = tmpl->render({{"use", true}});
    ASSERT_FALSE(out.ok());
    expect_mentions(out.status(), {"no filter named 'nosuch'", "line 1:18"});
}

TEST(ChatTemplateErrorsTest, UnsupportedTagsAreNamed) {
    for (std::string tag : {"include", "extends", "import", "from", "block", "do"}) {
        Status s = parse_error("text\n{% " + tag + " 'x' %}");
        EXPECT_EQ(s.code(), StatusCode::kUnsupported) << tag;
        expect_mentions(s, {"'{% " + tag + " %}'", "not supported", "line 2:4"});
    }
    expect_mentions(parse_error("{% frobnicate %}"), {"unknown tag 'frobnicate'"});
    expect_mentions(parse_error("{% for x in y recursive %}{% endfor %}"), {"recursive"});
}

TEST(ChatTemplateErrorsTest, LoopControlsOutsideLoops) {
    expect_mentions(parse_error("{% break %}"), {"'{% break %}'", "outside a for loop"});
    expect_mentions(parse_error("{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}"
                                "{% endfor %}"),
                    {"'{% continue %}'"});
}

TEST(ChatTemplateErrorsTest, RaiseExceptionCarriesTheMessage) {
    Status s = render_error(
        "{% if messages|length > 1 %}\n"
        "  {{ raise_exception('Only one message, got ' ~ messages|length) }}\n"
        "{% endif %}",
        {{"messages", {1, 2}}});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    expect_mentions(s, {"Only one message, got 2", "raised", "line 2:"});
}

TEST(ChatTemplateErrorsTest, UsingUndefinedValuesFailsLikeJinja2) {
    expect_mentions(render_error("{{ missing.attr }}"), {"'missing' is undefined"});
    expect_mentions(render_error("{{ m.content.strip() }}", {{"m", ordered_json::object()}}),
                    {"'dict object' has no attribute 'content'"});
    expect_mentions(render_error("{{ m.content + 'x' }}", {{"m", ordered_json::object()}}),
                    {"has no attribute 'content'"});
    expect_mentions(render_error("{{ 'abc'.nope() }}"), {"'str object' has no attribute 'nope'"});
}

TEST(ChatTemplateErrorsTest, PythonTypeErrors) {
    expect_mentions(render_error("{{ 'a' + 1 }}"), {"can only concatenate str", "line 1:4"});
    expect_mentions(render_error("{{ 1 < 'a' }}"), {"'int' and 'str'"});
    expect_mentions(render_error("{{ 1 // 0 }}"), {"division or modulo by zero"});
    expect_mentions(render_error("{{ 5 in 'abc' }}"), {"requires string as left operand"});
    expect_mentions(render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
                    {"too many values to unpack"});
    expect_mentions(render_error("{{ none|join }}"), {"filter 'join'", "not iterable"});
    expect_mentions(render_error("{{ x|tojson }}"), {"filter 'tojson'", "not JSON serializable"});
    expect_mentions(render_error("{{ 'a'|trim(1) }}"), {"filter 'trim'", "must be a string"});
    expect_mentions(render_error("{{ 'a'|join(x=1) }}"), {"unexpected keyword argument 'x'"});
    expect_mentions(render_error("{{ 'x'() }}"), {"'str' object is not callable"});
}

TEST(ChatTemplateErrorsTest, RunawayRecursionAndNestingAreStopped) {
    expect_mentions(render_error("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}"),
                    {"maximum recursion depth", "macro 'r'"});
    std::string deep = "{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}";
    expect_mentions(parse_error(deep), {"nested too deeply"});
    std::string deep_ifs;
    for (int i = 0; i < 500; ++i) deep_ifs += "{% if true %}";
    expect_mentions(parse_error(deep_ifs), {"nested too deeply"});
}

TEST(ChatTemplateErrorsTest, HugeResultsFailInsteadOfExhaustingMemory) {
    Status s = render_error("{{ 'ab' * 1000000000 }}");
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    expect_mentions(s, {"larger than", "line 1:4"});
    expect_mentions(render_error("{{ 'x'|center(2000000000) }}"), {"filter 'center'", "larger"});
    expect_mentions(render_error("{{ '%2000000000d' % 1 }}"), {"larger than"});
    expect_mentions(render_error("{{ [1]|slice(2000000000) }}"), {"larger than"});
}

TEST(ChatTemplateErrorsTest, IntegersAre64Bit) {
    EXPECT_EQ(testing::render("{{ 2 ** 62 }} {{ 1 ** 1000000000000 }} {{ (-1) ** 1000000000001 }}"),
              "4611686018427387904 1 -1");
    expect_mentions(render_error("{{ 2 ** 64 }}"), {"does not fit in 64 bits"});
    expect_mentions(render_error("{{ 9223372036854775807 + 1 }}"), {"does not fit in 64 bits"});
    expect_mentions(parse_error("{{ 99999999999999999999 }}"), {"does not fit in 64 bits"});
}

TEST(ChatTemplateErrorsTest, ContextMustBeAnObject) {
    auto tmpl = ChatTemplate::parse("x");
    ASSERT_TRUE(tmpl.ok());
    auto out = tmpl->render(ordered_json::array());
    ASSERT_FALSE(out.ok());
    expect_mentions(out.status(), {"JSON object", "array"});
}

TEST(ChatTemplateErrorsTest, NamespaceAssignmentNeedsANamespace) {
    expect_mentions(render_error("{% set d = {} %}{% set d.x = 1 %}"),
                    {"cannot assign attribute 'x'", "'d'"});
}

}  // namespace
}  // namespace se
