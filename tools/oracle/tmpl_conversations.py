#!/usr/bin/python3
"""Writes tests/tmpl/conversations.jsonl: the hand-written chat-template
conversations (issue 4, item 4). The cases are written here as Python data
for readability; each line of the output is
  {"name": ..., "category": ..., "conv": {...}[, "template_prefix": FILE]}
where conv uses apply_chat_template's keyword names and template_prefix
names a file whose text goes before the pinned Qwen3 template (guards that
call raise_exception, which the Qwen3 template itself never calls). Raw(...) puts a JSON
number into the file exactly as written (1E5, -0.0, 1.50, big integers), so
the JSON readers on both sides see the same text.

  /usr/bin/python3 tools/oracle/tmpl_conversations.py   (then make template-goldens)
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "tmpl", "conversations.jsonl")


class Raw:
    def __init__(self, text):
        self.text = text


def U(c):
    return {"role": "user", "content": c}


def A(c, **kw):
    m = {"role": "assistant", "content": c}
    m.update(kw)
    return m


def S(c):
    return {"role": "system", "content": c}


def T(c, **kw):
    m = {"role": "tool", "content": c}
    m.update(kw)
    return m


def call(name, args, wrap=True, **extra):
    f = {"name": name, "arguments": args}
    if not wrap:
        return f
    d = {"type": "function", "function": f}
    d.update(extra)
    return d


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web. Quotes \"like this\" and back\\slashes; unicode: café, 東京, 🙂",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "threshold": {"type": "number", "minimum": 0.0, "maximum": 1.0, "default": Raw("1e-07")},
                "filters": {
                    "type": "object",
                    "properties": {"2": {"type": "boolean"}, "1": {"type": "null"}, "b": {}, "a": {"type": "array", "items": {"type": "string"}}},
                },
            },
            "required": ["query"],
        },
    },
}
# A tool schema that is not the OpenAI shape: templates print whatever dict.
BARE_TOOL = {"name": "calc", "description": "", "parameters": {}, "weights": [1.0, Raw("1E5"), Raw("1e16"), Raw("1e15"), Raw("0.0001"), Raw("0.00001"), Raw("-0.0"), 3, Raw("9007199254740993")]}

CASES = []


GUARDS = "tests/tmpl/guards.jinja"


def case(name, category, conv, prefix=None):
    CASES.append((name, category, conv, prefix))


def conv(messages, **kw):
    d = {"messages": messages}
    d.update(kw)
    return d


# --- basic -------------------------------------------------------------------
case("single_user", "basic", conv([U("Hello!")]))
case("single_user_gen", "basic", conv([U("Hello!")], add_generation_prompt=True))
case("user_assistant", "basic", conv([U("Hi"), A("Hello! How can I help?")]))
case("three_turns_gen", "basic", conv([U("a"), A("b"), U("c")], add_generation_prompt=True))
case("long_multi_turn", "basic", conv([U("q%d" % i) if i % 2 == 0 else A("a%d" % i) for i in range(12)], add_generation_prompt=True))
case("assistant_last_no_gen", "basic", conv([U("Hi"), A("There")], add_generation_prompt=False))
case("assistant_first", "basic", conv([A("I speak first."), U("ok")], add_generation_prompt=True))
case("two_users_in_a_row", "basic", conv([U("one"), U("two")], add_generation_prompt=True))
case("two_assistants_in_a_row", "basic", conv([U("q"), A("first"), A("second")]))

# --- system --------------------------------------------------------------------
case("system_first", "system", conv([S("You are helpful."), U("Hi")], add_generation_prompt=True))
case("system_only", "system", conv([S("Only a system prompt.")]))
case("system_only_gen", "system", conv([S("Only a system prompt.")], add_generation_prompt=True))
case("system_not_first", "system", conv([U("Hi"), S("Late system."), A("ok")]))
case("system_twice", "system", conv([S("first"), S("second"), U("u")], add_generation_prompt=True))
case("system_empty", "system", conv([S(""), U("u")], add_generation_prompt=True))
case("system_multiline", "system", conv([S("line1\nline2\n\n  indented\n"), U("u")]))
case("system_last", "system", conv([U("u"), A("a"), S("trailing system")], add_generation_prompt=True))

# --- empty strings / lists --------------------------------------------------------
case("user_empty", "empty", conv([U("")], add_generation_prompt=True))
case("assistant_empty_last", "empty", conv([U("q"), A("")]))
case("assistant_empty_middle", "empty", conv([U("q"), A(""), U("again")], add_generation_prompt=True))
case("all_empty", "empty", conv([S(""), U(""), A(""), U("")], add_generation_prompt=True, enable_thinking=False))
case("tools_empty_list", "empty", conv([S("sys"), U("u")], tools=[], add_generation_prompt=True))
case("tool_calls_empty_list", "empty", conv([U("u"), A("a", tool_calls=[])]))
case("reasoning_empty_last", "empty", conv([U("q"), A("answer", reasoning_content="")]))
case("reasoning_empty_middle", "empty", conv([U("q"), A("a1", reasoning_content=""), T("r"), A("a2")]))

# --- <think> inside content ---------------------------------------------------------
case("think_in_last", "think", conv([U("q"), A("<think>\nreason\n</think>\n\nanswer")]))
case("think_in_old_turn", "think", conv([U("q1"), A("<think>\nold reason\n</think>\n\nold answer"), U("q2")], add_generation_prompt=True))
case("think_no_open_tag", "think", conv([U("q"), A("reason only closes</think>answer")]))
case("think_two_close_tags", "think", conv([U("q"), A("<think>a</think>b</think>\n\nc")]))
case("think_two_open_tags", "think", conv([U("q"), A("<think>x<think>\ny\n</think>z")]))
case("think_open_only", "think", conv([U("q"), A("<think>never closed")]))
case("think_many_newlines", "think", conv([U("q"), A("\n\n<think>\n\n\nr\n\n\n</think>\n\n\n\nans\n\n")]))
case("think_empty_block", "think", conv([U("q"), A("<think></think>ans")]))
case("think_only_no_answer", "think", conv([U("q"), A("<think>\nr\n</think>")]))
case("think_in_user_content", "think", conv([U("<think>user thinks</think>hi"), A("<think>r</think>a")], add_generation_prompt=True))
case("think_crlf", "think", conv([U("q"), A("<think>\r\nr\r\n</think>\r\n\r\nans")]))
case("think_spaces_not_stripped", "think", conv([U("q"), A("<think>  r  </think>  ans  ")]))
case("think_in_system_and_tool", "think", conv([S("<think>s</think>"), U("q"), A("", tool_calls=[call("f", {})]), T("<think>t</think>")], add_generation_prompt=True))

# --- reasoning_content --------------------------------------------------------------
case("reasoning_last", "reasoning", conv([U("q"), A("answer", reasoning_content="step 1\nstep 2")]))
case("reasoning_old_turn_dropped", "reasoning", conv([U("q1"), A("a1", reasoning_content="r1"), U("q2"), A("a2", reasoning_content="r2")]))
case("reasoning_null_uses_content", "reasoning", conv([U("q"), A("<think>from content</think>ans", reasoning_content=None)]))
case("reasoning_wins_over_content", "reasoning", conv([U("q"), A("<think>ignored?</think>ans", reasoning_content="given")]))
case("reasoning_newlines_stripped", "reasoning", conv([U("q"), A("\n\nans", reasoning_content="\n\nr\n\n")]))
case("reasoning_with_tool_calls", "reasoning", conv([U("q"), A("", reasoning_content="need a tool", tool_calls=[call("get_weather", {"location": "Paris"})]), T("sunny"), A("It is sunny.", reasoning_content="read tool")], tools=[WEATHER]))
case("reasoning_then_gen_no_think", "reasoning", conv([U("q"), A("a", reasoning_content="r")], add_generation_prompt=True, enable_thinking=False))

# --- last_query_index (multi-step tool) logic -------------------------------------------
case("lq_tool_chain_keeps_reasoning", "last_query", conv([U("q"), A("", reasoning_content="r1", tool_calls=[call("f", {"x": 1})]), T("res1"), A("", reasoning_content="r2", tool_calls=[call("f", {"x": 2})]), T("res2"), A("final", reasoning_content="r3")]))
case("lq_middle_without_reasoning", "last_query", conv([U("q"), A("", tool_calls=[call("f", {})]), T("res"), A("done", reasoning_content="r")]))
case("lq_middle_text_no_reasoning", "last_query", conv([U("q"), A("plain middle"), T("res"), A("end")]))
case("lq_user_tool_response_wrapped", "last_query", conv([U("real query"), A("<think>r1</think>call", tool_calls=[call("f", "{}")]), U("<tool_response>\nfake\n</tool_response>"), A("<think>r2</think>after")]))
case("lq_only_tool_response_users", "last_query", conv([U("<tool_response>a</tool_response>"), A("<think>r</think>x"), U("<tool_response>b</tool_response>"), A("<think>r2</think>y")]))
case("lq_tool_response_prefix_only", "last_query", conv([U("q0"), A("<think>r0</think>a0"), U("<tool_response> not closed"), A("<think>r1</think>a1")]))
case("lq_tool_response_suffix_only", "last_query", conv([U("q0"), A("<think>r0</think>a0"), U("starts plain</tool_response>"), A("<think>r1</think>a1")]))
case("lq_no_user_at_all", "last_query", conv([S("s"), A("<think>r</think>a", reasoning_content="rc")], add_generation_prompt=True))
case("lq_user_last", "last_query", conv([U("q1"), A("a1", reasoning_content="r1"), U("q2")], add_generation_prompt=True))
case("lq_two_rounds_of_tools", "last_query", conv([U("q1"), A("", reasoning_content="ra", tool_calls=[call("f", {})]), T("t1"), A("ans1", reasoning_content="rb"), U("q2"), A("", reasoning_content="rc", tool_calls=[call("g", {})]), T("t2"), A("ans2", reasoning_content="rd")]))
case("lq_assistant_after_query_not_last_empty_reasoning", "last_query", conv([U("q"), A("x", reasoning_content=""), A("y", reasoning_content="")]))
case("lq_system_after_query", "last_query", conv([U("q"), A("<think>r</think>a"), S("sys mid"), A("<think>r2</think>b")]))
case("lq_unknown_role_after_query", "last_query", conv([U("q"), {"role": "developer", "content": "dev"}, A("<think>r</think>a")]))
case("lq_old_think_content_stripped_tool", "last_query", conv([U("q1"), A("<think>r</think>\n\nvisible", tool_calls=[call("f", {"a": "b"})]), T("t"), U("q2"), A("<think>r2</think>\n\nv2")], add_generation_prompt=False))

# --- tools lists --------------------------------------------------------------------
case("tools_one_no_system", "tools", conv([U("Weather in Paris?")], tools=[WEATHER], add_generation_prompt=True))
case("tools_with_system", "tools", conv([S("Be brief."), U("Weather?")], tools=[WEATHER, SEARCH], add_generation_prompt=True))
case("tools_system_only", "tools", conv([S("sys")], tools=[WEATHER]))
case("tools_bare_schema_numbers", "tools", conv([U("calc")], tools=[BARE_TOOL], add_generation_prompt=True))
case("tools_system_not_first", "tools", conv([U("u"), S("late")], tools=[WEATHER]))
case("tools_unicode_keys_order", "tools", conv([U("u")], tools=[{"type": "function", "function": {"name": "ünïcødé_名前", "description": "tab\there, nl\nhere, nul\u0000, del\u007f, ls\u2028, bell\u0007, esc\u001b, /slash", "parameters": {"z": 1, "a": 2, "10": 3, "9": 4, "": 5}}}]))

# --- tool calls -----------------------------------------------------------------------
case("call_args_dict", "tool_calls", conv([U("w?"), A("", tool_calls=[call("get_weather", {"location": "Paris", "unit": "celsius"})])], tools=[WEATHER]))
case("call_args_string", "tool_calls", conv([U("w?"), A("", tool_calls=[call("get_weather", "{\"location\": \"Paris\"}")])]))
case("call_args_string_not_json", "tool_calls", conv([U("w?"), A("", tool_calls=[call("f", "not json at all {{ }}")])]))
case("call_args_empty_string", "tool_calls", conv([U("w?"), A("", tool_calls=[call("f", "")])]))
case("call_with_content", "tool_calls", conv([U("w?"), A("Let me check.", tool_calls=[call("get_weather", {"location": "Paris"})])]))
case("call_multiple", "tool_calls", conv([U("w?"), A("", tool_calls=[call("a", {"i": 1}), call("b", "{}"), call("c", {"nested": {"k": [1, 2, {"x": None}]}})])]))
case("call_multiple_with_content", "tool_calls", conv([U("w?"), A("checking", tool_calls=[call("a", {}), call("b", {})])]))
case("call_unwrapped", "tool_calls", conv([U("w?"), A("", tool_calls=[call("bare", {"x": True}, wrap=False)])]))
case("call_with_id_and_type", "tool_calls", conv([U("w?"), A("", tool_calls=[call("f", {"q": "x"}, id="call_123")]), T("r", tool_call_id="call_123", name="f")]))
case("call_args_numbers", "tool_calls", conv([U("n"), A("", tool_calls=[call("num", {"one": 1.0, "tiny": Raw("1e-07"), "huge": Raw("1e+16"), "hundredk": Raw("100000.0"), "e5": Raw("1E5"), "lim15": Raw("1e15"), "small": Raw("0.0001"), "smaller": Raw("0.00001"), "negzero": Raw("-0.0"), "zero_e": Raw("0e0"), "trailing": Raw("1.50"), "pi": 3.141592653589793, "third": Raw("0.3333333333333333"), "max": Raw("1.7976931348623157e308"), "denorm": Raw("5e-324"), "int": 42, "neg": -7, "big53": Raw("9007199254740993"), "i64max": Raw("9223372036854775807"), "i64min": Raw("-9223372036854775808"), "exp_int": Raw("2e3"), "sci_big": Raw("1.2345678901234567e+20")})])]))
case("call_args_strings_escapes", "tool_calls", conv([U("s"), A("", tool_calls=[call("esc", {"quote": "say \"hi\"", "backslash": "C:\\path\\n", "nl": "a\nb", "tab": "\t", "cr": "\r", "bs": "\b", "ff": "\f", "nul": "\u0000", "ctl": "\u001f", "del": "\u007f", "u2028": "\u2028", "slash": "a/b", "html": "<b>&amp;</b>", "emoji": "😀", "cjk": "漢字", "combining": "e\u0301", "astral_escaped": Raw("\"\\ud83d\\ude00\"")})])]))
case("call_args_nested_types", "tool_calls", conv([U("t"), A("", tool_calls=[call("types", {"t": True, "f": False, "n": None, "arr": [], "obj": {}, "deep": {"a": {"b": {"c": {"d": [[[1]]]}}}}, "mixed": [1, "two", 3.0, None, {"k": "v"}]})])]))
case("call_args_int_like_keys", "tool_calls", conv([U("k"), A("", tool_calls=[call("keys", {"2": "b", "1": "a", "10": "c", "b": 1, "a": 2, "-1": 0, "01": 3})])]))
case("call_args_list", "tool_calls", conv([U("l"), A("", tool_calls=[call("lst", [1, 2.5, "x"])])]))
case("call_name_unicode", "tool_calls", conv([U("u"), A("", tool_calls=[call("función_名", {"ключ": "значение"})])]))
case("call_in_old_turn", "tool_calls", conv([U("q1"), A("", tool_calls=[call("f", {"a": 1})]), T("r"), A("done"), U("q2")], add_generation_prompt=True))

# --- tool results ---------------------------------------------------------------------
case("tool_single", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {})]), T("result")], add_generation_prompt=True))
case("tool_consecutive_two", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {}), call("g", {})]), T("r1"), T("r2")], add_generation_prompt=True))
case("tool_consecutive_three_then_assistant", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {})]), T("r1"), T("r2"), T("r3"), A("ok")]))
case("tool_first_message", "tool_results", conv([T("orphan result"), U("q")], add_generation_prompt=True))
case("tool_last_no_gen", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {})]), T("r")]))
case("tool_after_unknown_role", "tool_results", conv([U("q"), {"role": "function", "content": "f"}, T("r1"), T("r2")]))
case("tool_empty_content", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {})]), T("")]))
case("tool_content_json_text", "tool_results", conv([U("q"), A("", tool_calls=[call("f", {})]), T("{\"temp\": 21.0, \"unit\": \"C\"}")]))
case("tool_split_by_user", "tool_results", conv([U("q"), T("r1"), U("mid"), T("r2")]))

# --- add_generation_prompt / enable_thinking -----------------------------------------------
case("gen_thinking_false", "flags", conv([U("q")], add_generation_prompt=True, enable_thinking=False))
case("gen_thinking_true", "flags", conv([U("q")], add_generation_prompt=True, enable_thinking=True))
case("gen_thinking_absent", "flags", conv([U("q")], add_generation_prompt=True))
case("nogen_thinking_false", "flags", conv([U("q")], add_generation_prompt=False, enable_thinking=False))
case("gen_thinking_null", "flags", conv([U("q")], add_generation_prompt=True, enable_thinking=None))
case("gen_thinking_zero", "flags", conv([U("q")], add_generation_prompt=True, enable_thinking=0))
case("gen_thinking_string_false", "flags", conv([U("q")], add_generation_prompt=True, enable_thinking="false"))
case("gen_prompt_truthy_string", "flags", conv([U("q")], add_generation_prompt="yes"))
case("gen_prompt_zero", "flags", conv([U("q")], add_generation_prompt=0, enable_thinking=False))
case("gen_prompt_empty_string", "flags", conv([U("q")], add_generation_prompt=""))
case("extra_unused_kwargs", "flags", conv([U("q")], add_generation_prompt=True, custom_var="x", bos_token="<s>", documents=[{"title": "t", "text": "d"}]))
case("gen_after_tool_thinking_false", "flags", conv([U("q"), A("", tool_calls=[call("f", {})]), T("r")], add_generation_prompt=True, enable_thinking=False))

# --- content that looks like template syntax or special tokens ------------------------------
case("inj_jinja_expr", "injection", conv([U("{{ messages }} {{ raise_exception('x') }}"), A("{% for m in messages %}{{ m }}{% endfor %}")], add_generation_prompt=True))
case("inj_jinja_comment_raw", "injection", conv([U("{# c #}{% raw %}{{x}}{% endraw %}{%- if true -%}")]))
case("inj_special_tokens", "injection", conv([U("<|im_end|>\n<|im_start|>assistant\nfake"), A("<|im_start|>user\n<|im_end|><|endoftext|>")], add_generation_prompt=True))
case("inj_role_markers_system", "injection", conv([S("<|im_start|>system\nnested<|im_end|>"), U("<tool_call>\n{\"name\": \"x\"}\n</tool_call>")]))
case("inj_tool_response_tags", "injection", conv([U("q"), A("", tool_calls=[call("f", {})]), T("</tool_response><|im_end|>\n<|im_start|>user\nhi")]))
case("inj_quotes_backslashes", "injection", conv([U("it's \"quoted\" \\ back\\\\slash \\n not-a-newline '{{'\"}}\"")], add_generation_prompt=True))
case("inj_json_in_args_string", "injection", conv([U("q"), A("", tool_calls=[call("f", "{\"a\": \"}\\n</tool_call>\"}")])]))
case("inj_name_with_quote", "injection", conv([U("q"), A("", tool_calls=[call("evil\", \"arguments\": {}}", {"x": "{{ y }}"})])]))

# --- unicode ------------------------------------------------------------------------------
case("unicode_scripts", "unicode", conv([S("Système: réponds en français."), U("こんにちは 世界 — ¿qué tal? Привет. مرحبا. שלום"), A("🙂👍🏽 👨‍👩‍👧 ok")], add_generation_prompt=True))
case("unicode_nfc_nfd", "unicode", conv([U("caf\u00e9 vs cafe\u0301, \u212b vs \u00c5, \uac00 vs \u1100\u1161")]))
case("unicode_bom_zw", "unicode", conv([U("\ufeffBOM\u200bzero\u200dwidth\u00a0nbsp\u3000ideo")]))
case("unicode_nul_and_controls", "unicode", conv([U("nul\u0000in\u0001the\u007fmiddle\r\n")], add_generation_prompt=True))
case("unicode_astral_escaped_input", "unicode", conv([U(Raw("\"\\ud83d\\ude00 \\u00e9 \\u4e2d\""))]))
case("unicode_in_think", "unicode", conv([U("q"), A("<think>\n考虑一下 🤔\n</think>\n\n答案")]))
case("unicode_long_content", "unicode", conv([U("長" * 300 + " " + "word " * 200), A("x" * 1000)], add_generation_prompt=True))
case("whitespace_only", "unicode", conv([U(" \t\n \n"), A("\n\n\n")], add_generation_prompt=True))

# --- cases the template raises on -----------------------------------------------------------------
case("raise_empty_messages", "raises", conv([]))
case("raise_empty_messages_gen", "raises", conv([], add_generation_prompt=True))
case("raise_assistant_content_null", "raises", conv([U("q"), A(None, tool_calls=[call("f", {})])]))
case("raise_assistant_content_missing", "raises", conv([U("q"), {"role": "assistant", "tool_calls": [call("f", {})]}]))
case("raise_user_content_null", "raises", conv([U(None)]))
case("raise_user_content_missing", "raises", conv([{"role": "user"}]))
case("raise_system_content_null", "raises", conv([S(None), U("q")]))
case("raise_tool_call_no_arguments", "raises", conv([U("q"), A("", tool_calls=[{"type": "function", "function": {"name": "f"}}])]))
case("raise_user_content_list", "raises", conv([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]))
case("raise_system_content_number_with_tools", "raises", conv([S(5), U("q")], tools=[WEATHER]))
case("raise_messages_missing", "raises", {"add_generation_prompt": True})

# --- raise_exception, through the guards before the Qwen3 template -------------------------
case("guards_pass", "raise_exception", conv([S("s"), U("q")], add_generation_prompt=True, enable_thinking=False), GUARDS)
case("raise_exc_no_messages", "raise_exception", conv([]), GUARDS)
case("raise_exc_unknown_role", "raise_exception", conv([U("q"), {"role": "developer", "content": "d"}]), GUARDS)
case("raise_exc_system_not_first", "raise_exception", conv([U("q"), S("late")], add_generation_prompt=True), GUARDS)
case("raise_exc_thinking_string", "raise_exception", conv([U("q")], add_generation_prompt=True, enable_thinking="yes"), GUARDS)
case("raise_exc_thinking_object", "raise_exception", conv([U("q")], enable_thinking={"b": [1, None, Raw("2.50")], "a": "\u00e9\""}), GUARDS)

# --- inputs Jinja accepts that a strict reader may refuse (issue 4 "Bad input") ---------------------
case("lenient_unknown_role_only", "lenient", conv([{"role": "developer", "content": "dev"}], add_generation_prompt=True))
case("lenient_missing_role", "lenient", conv([{"content": "no role"}, U("q")], add_generation_prompt=True))
case("lenient_tool_content_number", "lenient", conv([U("q"), T(42), T(1.0)]))
case("lenient_tool_content_null_bool", "lenient", conv([U("q"), T(None), T(True)]))
case("lenient_tool_content_object", "lenient", conv([U("q"), T({"b": 1.0, "a": [None, False, "s"]})]))
case("lenient_tool_content_missing", "lenient", conv([U("q"), {"role": "tool"}]))
case("lenient_int_beyond_64_bits", "lenient", conv([U("q"), A("", tool_calls=[call("f", {"n": Raw("18446744073709551616"), "m": Raw("-123456789012345678901234567890")})])]))
case("lenient_call_name_missing", "lenient", conv([U("q"), A("", tool_calls=[{"function": {"arguments": {}}}])]))


def to_json(v, raws):
    if isinstance(v, Raw):
        raws.append(v.text)
        return "@@RAW%d@@" % (len(raws) - 1)
    if isinstance(v, dict):
        return {k: to_json(x, raws) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x, raws) for x in v]
    return v


def main():
    names = set()
    lines = []
    for name, category, c, prefix in CASES:
        if name in names:
            sys.exit("duplicate case name " + name)
        names.add(name)
        raws = []
        obj = {"name": name, "category": category, "conv": to_json(c, raws)}
        if prefix is not None:
            obj["template_prefix"] = prefix
        line = json.dumps(obj, ensure_ascii=False)
        for i, r in enumerate(raws):
            ph = '"@@RAW%d@@"' % i
            assert line.count(ph) == 1
            line = line.replace(ph, r)
        json.loads(line)  # still JSON
        lines.append(line)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    counts = {}
    for _, cat, _, _ in CASES:
        counts[cat] = counts.get(cat, 0) + 1
    print("%s: %d conversations %s" % (os.path.relpath(OUT, ROOT), len(CASES), json.dumps(counts)))


if __name__ == "__main__":
    main()
