// ChatTemplate rendering: whitespace control, control flow, values, filters, tests, macros.
// Expected strings are what jinja2 renders in transformers' environment.
#include "tokenizer/chat_template/chat_template.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "test_util.h"

namespace se {
namespace {

using nlohmann::ordered_json;
using testing::render;

TEST(ChatTemplateTest, PlainTextAndPrint) {
    EXPECT_EQ(render("hello"), "hello");
    EXPECT_EQ(render("{{ greeting }}, {{ name }}!", {{"greeting", "Hi"}, {"name", "Ann"}}),
              "Hi, Ann!");
    EXPECT_EQ(render(""), "");
}

TEST(ChatTemplateTest, WhitespaceControlStripsAllWhitespace) {
    EXPECT_EQ(render("x {#- drop -#} y"), "xy");
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
    EXPECT_EQ(render("a\n  {{- 'x' -}}\n  b"), "axb");
    EXPECT_EQ(render("{%- for m in ms %}\n  <{{ m }}>\n{%- endfor %}", {{"ms", {"a", "b"}}}),
              "  <a>  <b>");
}

TEST(ChatTemplateTest, TrimBlocksAndLstripBlocks) {
    // The newline after a block tag goes (trim_blocks), so do the spaces before it on its own
    // line (lstrip_blocks); print tags keep both.
    EXPECT_EQ(render("{% for m in ms %}\n  <{{ m }}>\n{% endfor %}", {{"ms", {"a", "b"}}}),
              "  <a>\n  <b>\n");
    EXPECT_EQ(render("  {% if true %}\nline\n  {% endif %}\n"), "line\n");
    EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");
    EXPECT_EQ(render("<{% if true %}  yes  {% endif %}>"), "<  yes  >");
    EXPECT_EQ(render("{%+ if true %}\n  keep{% endif +%}\nline"), "  keep\nline");
}

TEST(ChatTemplateTest, RawBlocksAreNotInterpreted) {
    EXPECT_EQ(render("{% raw %}{{ x }} {% if %}{% endraw %}"), "{{ x }} {% if %}");
}

TEST(ChatTemplateTest, IfElifElse) {
    const char* source = "{% if n > 1 %}many{% elif n == 1 %}one{% else %}none{% endif %}";
    EXPECT_EQ(render(source, {{"n", 3}}), "many");
    EXPECT_EQ(render(source, {{"n", 1}}), "one");
    EXPECT_EQ(render(source, {{"n", 0}}), "none");
}

TEST(ChatTemplateTest, ForLoopVariables) {
    EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                     "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};"
                     "{% endfor %}",
                     {{"xs", {"a", "b"}}}),
              "1021TrueFalse2;2110FalseTrue2;");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}|"
                     "{{ loop.cycle('o', 'e') }}]{% endfor %}"),
              "[|2|o][1|3|e][2||o]");
}

TEST(ChatTemplateTest, ForLoopFilterElseUnpackingAndControl) {
    EXPECT_EQ(render("{% for i in range(5) if i is even %}{{ i }}/{{ loop.length }} {% endfor %}"),
              "0/3 2/3 4/3 ");
    EXPECT_EQ(render("{% for x in [] %}x{% else %}none{% endfor %}"), "none");
    EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                     {{"d", {{"b", 1}, {"a", 2}}}}),
              "b=1;a=2;");
    EXPECT_EQ(render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}"
                     "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "13");
}

TEST(ChatTemplateTest, LoopBodyScopeDoesNotLeak) {
    EXPECT_EQ(render("{% set x = 5 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}"
                     "|{{ x }}"),
              "5152|5");
    EXPECT_EQ(render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");
}

TEST(ChatTemplateTest, NamespaceCarriesStateOutOfLoops) {
    EXPECT_EQ(render("{% set ns = namespace(count=0, seen=[]) %}{% for m in ms %}"
                     "{% set ns.count = ns.count + 1 %}{% set ns.seen = ns.seen + [m] %}"
                     "{% endfor %}{{ ns.count }} {{ ns.seen }} {{ ns }}",
                     {{"ms", {"a", "b"}}}),
              "2 ['a', 'b'] <Namespace {'count': 2, 'seen': ['a', 'b']}>");
}

TEST(ChatTemplateTest, SetForms) {
    EXPECT_EQ(render("{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"),
              "1two(1, 2)");
    EXPECT_EQ(render("{% set block %} hi {{ 1 + 1 }} {% endset %}[{{ block }}]"), "[ hi 2 ]");
    EXPECT_EQ(render("{% set up | upper | trim %} x y {% endset %}[{{ up }}]"), "[X Y]");
}

TEST(ChatTemplateTest, MacrosAndCallBlocks) {
    EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a + b }}{% endmacro %}{{ m(1) }} {{ m(1, b=10) }}"),
              "3 11");
    EXPECT_EQ(render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}"
                     "{% endif %}{% endmacro %}{{ fact(5) }}"),
              "120");
    EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                     "{% call wrap('b') %}bold{% endcall %}"),
              "<b>bold</b>");
    EXPECT_EQ(render("{% macro m() %}{{ later }}{% endmacro %}{% set later = 'seen' %}{{ m() }}"),
              "seen");
}

TEST(ChatTemplateTest, PrintsPythonValues) {
    EXPECT_EQ(render("{{ true }} {{ none }} {{ 1.5 }} {{ 2.0 }} {{ 1e21 }} {{ 1 / 4 }} {{ -0.0 }}"),
              "True None 1.5 2.0 1e+21 0.25 -0.0");
    EXPECT_EQ(render("{{ [1.0, 'x', none, false] }} {{ {'k': (1, 2)} }} {{ (1,) }}"),
              "[1.0, 'x', None, False] {'k': (1, 2)} (1,)");
    EXPECT_EQ(render("{{ d }}", {{"d", {{"z", 1}, {"a", {true, nullptr, 0.1}}}}}),
              "{'z': 1, 'a': [True, None, 0.1]}");
    EXPECT_EQ(render("{{ [\"it's\", 'q\"', '\\n'] }}"), "[\"it's\", 'q\"', '\\n']");
}

TEST(ChatTemplateTest, PythonTruthiness) {
    EXPECT_EQ(render("{{ [] or 'e' }} {{ {} or 'e' }} {{ 0.0 or 'z' }} {{ ' ' or 's' }}|"
                     "{{ 'x' and 'y' }} {{ none or 0 }}"),
              "e e z  |y 0");
    EXPECT_EQ(
        render("{% if missing %}t{% else %}f{% endif %}{% if ms %}t{% endif %}", {{"ms", {1}}}),
        "ft");
}

TEST(ChatTemplateTest, UndefinedValuesRenderEmptyAndAreFalsy) {
    EXPECT_EQ(render("[{{ missing }}][{{ d.missing }}][{{ l[5] }}] {{ missing is defined }} "
                     "{{ missing|default('dflt') }} {{ missing|length }}",
                     {{"d", ordered_json::object()}, {"l", ordered_json::array()}}),
              "[][][] False dflt 0");
}

TEST(ChatTemplateTest, AttributeItemAndSliceAccess) {
    ordered_json context = {{"m", {{"role", "user"}, {"content", "h\u00e9llo"}}},
                            {"l", {0, 1, 2, 3, 4}}};
    EXPECT_EQ(render("{{ m.role }} {{ m['content'] }} {{ m.content[1] }} {{ m.content[::-1] }} "
                     "{{ l[-1] }} {{ l[1:3] }} {{ l[::2] }} {{ l.0 }}",
                     context),
              "user h\u00e9llo \u00e9 oll\u00e9h 4 [1, 2] [0, 2, 4] 0");
}

TEST(ChatTemplateTest, StringMethods) {
    EXPECT_EQ(render("{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ s.startswith('<think>') }}|"
                     "{{ s.strip().upper() }}|{{ 'a,b'.split(',') }}",
                     {{"s", "<think>\nx\n</think>\n\nanswer"}}),
              "answer|True|<THINK>\nX\n</THINK>\n\nANSWER|['a', 'b']");
}

TEST(ChatTemplateTest, Filters) {
    EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'a b'|replace(' ', '_') }}|{{ [3, 1, 2]|sort }}|"
                     "{{ ['a', 'b']|join(', ') }}|{{ 'ab'|length }}|{{ [1, 2]|last }}|"
                     "{{ 'x'|upper }}|{{ '7'|int + 1 }}|{{ 2.5|round }}"),
              "x|a_b|[1, 2, 3]|a, b|2|2|X|8|2.0");
    ordered_json msgs = {{{"role", "system"}, {"content", "s"}},
                         {{"role", "user"}, {"content", "u"}}};
    EXPECT_EQ(render("{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}"
                     " {{ ms|rejectattr('role', 'eq', 'user')|list|length }}",
                     {{"ms", msgs}}),
              "['u'] 1");
}

TEST(ChatTemplateTest, TojsonMatchesTransformers) {
    ordered_json tool = {{"name", "f"},
                         {"args", {{"z", 1.5}, {"a", {true, nullptr}}}},
                         {"text", "caf\u00e9 \"q\"\n"}};
    EXPECT_EQ(render("{{ t|tojson }}", {{"t", tool}}),
              "{\"name\": \"f\", \"args\": {\"z\": 1.5, \"a\": [true, null]}, "
              "\"text\": \"caf\u00e9 \\\"q\\\"\\n\"}");
    EXPECT_EQ(render("{{ {'a': [1]}|tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(ChatTemplateTest, Tests) {
    EXPECT_EQ(
        render("{{ x is string }} {{ x is mapping }} {{ d is mapping }} {{ n is number }} "
               "{{ n is integer }} {{ none is none }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} "
               "{{ 'a' is in 'cat' }} {{ x is not defined }} {{ l is iterable }}",
               {{"x", "s"}, {"d", ordered_json::object()}, {"n", 2}, {"l", {1}}}),
        "True False True True True True True True True False True");
}

TEST(ChatTemplateTest, StrftimeNowUsesTheConfiguredClock) {
    auto tmpl = ChatTemplate::parse("{{ strftime_now('%d %b %Y') }}",
                                    testing::pinned_clock("2024-07-26T10:00:00"));
    ASSERT_TRUE(tmpl.ok());
    auto out = tmpl->render(ordered_json::object());
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out, "26 Jul 2024");
}

TEST(ChatTemplateTest, StrftimeNowDefaultsToTheSystemClock) {
    auto tmpl = ChatTemplate::parse("{{ strftime_now('%Y') }}");
    ASSERT_TRUE(tmpl.ok());
    auto out = tmpl->render(ordered_json::object());
    ASSERT_TRUE(out.ok());
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    EXPECT_EQ(*out, std::to_string(local.tm_year + 1900));
}

TEST(ChatTemplateTest, TemplatesAreReusableAndCopyable) {
    auto tmpl = ChatTemplate::parse("{% set n = n + 1 %}{{ n }}");
    ASSERT_TRUE(tmpl.ok());
    ChatTemplate copy = *tmpl;
    EXPECT_EQ(*tmpl->render({{"n", 1}}), "2");
    EXPECT_EQ(*copy.render({{"n", 5}}), "6");
    EXPECT_EQ(*tmpl->render({{"n", 1}}), "2");
    EXPECT_EQ(copy.source(), "{% set n = n + 1 %}{{ n }}");
}

TEST(ChatTemplateTest, RendersConcurrently) {
    ordered_json fixture = testing::read_ordered_json(testing::chat_fixture_path("qwen3.json"));
    auto tmpl = ChatTemplate::parse(testing::read_text(testing::chat_fixture_path("qwen3.jinja")));
    ASSERT_TRUE(tmpl.ok());
    const ordered_json& c = fixture["cases"][0];
    const std::string expected = c["expected"].get<std::string>();
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 50; ++i) {
                auto out = tmpl->render(c["context"]);
                if (!out.ok() || *out != expected) ++mismatches;
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(mismatches.load(), 0);
}

TEST(ChatTemplateTest, RendersTheSmolLM2ChatFormat) {
    std::string source = testing::read_text(testing::chat_fixture_path("smollm2.jinja"));
    ordered_json context = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                            {"add_generation_prompt", true},
                            {"bos_token", "<|im_start|>"},
                            {"eos_token", "<|im_end|>"}};
    EXPECT_EQ(render(source, context),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
              "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace se
