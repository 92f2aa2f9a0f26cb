#!/usr/bin/python3
"""Differential test of tinylm's chat-template renderer against the oracle
(tools/oracle/tmpl_render.py: Jinja2 as transformers configures it) on
random conversations (seeded, reproducible):

  /usr/bin/python3 tools/oracle/tmpl_random.py TINYLM MODEL.slm [--count N]
        [--seed S] [--show N] [--keep DIR]
  /usr/bin/python3 tools/oracle/tmpl_random.py --self-test [--count N]

Each conversation is written to a file and rendered with
`TINYLM render MODEL.slm --messages FILE --json`; it must exit 0 with the
oracle's text bytes and the ids the tokenizer oracle gives for them
(tools/oracle/tok_ids.mjs: HF tokenizers, add_special_tokens=False, as
apply_chat_template(tokenize=True)). Where the oracle raises, tinylm must
exit 1 with an error of the corresponding kind (tmpl_render.tinylm_kind;
with raise_exception the same message). Conversations tinylm refuses on
purpose (declared deviations, docs/template.md Input) must exit 1 with kind
input and are counted on their own. --self-test puts the oracle CLI
(tools/oracle/tmpl_oracle_cli.mjs) in tinylm's place. --keep DIR keeps the
failing conversations. Ends with `N passed, N failed, N declared
deviations`; exit status 1 on any failure.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import tmpl_render  # noqa: E402

FRAGMENTS = [
    "hello", "Hello, world!", "", " ", "\n", "\n\n", "\t", "  x  ", "\r\n",
    "<think>", "</think>", "<think>\n", "\n</think>\n\n", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<|im_start|>assistant\n", "{{ x }}", "{%- if true %}", "{% endfor %}", "{#", "#}",
    "\"", "'", "\\", "\\n", "{", "}", "[", "]", ":", ",", "café", "e\u0301", "東京", "🙂",
    "👨\u200d👩\u200d👧", "\u0000", "\u007f", "\u2028", "\ufeff", "Ω", "ß", "İ", "123", "3.14",
    "system", "user", "assistant", "tool", "None", "True", "null",
]
ROLES = ["user", "assistant", "system", "tool"]


def rand_text(r, maxn=6):
    return "".join(r.choice(FRAGMENTS) for _ in range(r.randint(0, maxn)))


def rand_number(r):
    k = r.randint(0, 9)
    if k == 0:
        return r.randint(-10, 10)
    if k == 1:
        return r.randint(-(2 ** 63), 2 ** 63 - 1)
    if k == 2:
        return float(r.randint(-10 ** 6, 10 ** 6))
    if k == 3:
        return r.choice([1.0, 1e-07, 1e16, 1e15, 100000.0, 0.0001, 1e-05, -0.0, 0.1, 5e-324,
                         1.7976931348623157e308, 2.5, 1e22, 1e21, 123456789.123])
    if k == 4:
        return 10.0 ** r.randint(-20, 20)
    if k == 5:
        return r.uniform(-1e6, 1e6)
    if k == 6:
        return r.random() * 10 ** r.randint(-30, 30)
    if k == 7:
        return r.randint(0, 2 ** 53 + 10)
    return round(r.uniform(-100, 100), r.randint(0, 6))


def rand_json(r, depth=0):
    k = r.randint(0, 7 if depth < 3 else 4)
    if k == 0:
        return rand_text(r, 3)
    if k == 1:
        return rand_number(r)
    if k == 2:
        return r.choice([True, False, None])
    if k in (3, 4):
        return rand_number(r) if k == 3 else rand_text(r, 2)
    if k in (5, 6):
        return {rand_key(r): rand_json(r, depth + 1) for _ in range(r.randint(0, 4))}
    return [rand_json(r, depth + 1) for _ in range(r.randint(0, 4))]


def rand_key(r):
    return r.choice(["a", "b", "z", "1", "2", "10", "", "key", "ключ", "名", "x y", "\"q\"", rand_text(r, 2)])


def rand_tool_call(r):
    args = rand_json(r) if r.random() < 0.3 else {rand_key(r): rand_json(r, 1) for _ in range(r.randint(0, 4))}
    if r.random() < 0.25:
        args = json.dumps(args, ensure_ascii=r.random() < 0.5)
    f = {"name": r.choice(["get_weather", "search", "f", "", "名前", rand_text(r, 2)]), "arguments": args}
    return {"type": "function", "function": f} if r.random() < 0.8 else f


def rand_message(r, error_rate):
    role = r.choice(ROLES + ["user", "assistant", "tool"])
    if r.random() < 0.03:
        role = r.choice(["developer", "function", ""])
    content = rand_text(r)
    if role == "user" and r.random() < 0.2:
        content = "<tool_response>" + rand_text(r, 3) + "</tool_response>"
    if role == "assistant" and r.random() < 0.5:
        content = (r.choice(["", "<think>", "\n<think>\n"]) + rand_text(r, 3) + r.choice(["</think>", "\n</think>\n\n"])
                   + rand_text(r, 3))
    m = {"role": role, "content": content}
    if role == "assistant":
        if r.random() < 0.3:
            m["reasoning_content"] = r.choice([None, "", rand_text(r, 4)])
        if r.random() < 0.35:
            m["tool_calls"] = [rand_tool_call(r) for _ in range(r.randint(0, 3))]
    if r.random() < error_rate:
        m["content"] = r.choice([None, 7, [{"type": "text", "text": "x"}]])
    return m


def rand_tool(r):
    props = {rand_key(r): {"type": r.choice(["string", "number", "integer", "boolean"]), "description": rand_text(r, 3)}
             for _ in range(r.randint(0, 3))}
    schema = {"type": "function", "function": {"name": r.choice(["get_weather", "search", "calc", rand_text(r, 2)]),
                                               "description": rand_text(r, 4),
                                               "parameters": {"type": "object", "properties": props}}}
    if r.random() < 0.3:
        schema["function"]["parameters"]["x-extra"] = rand_json(r)
    return schema


def rand_conv(r, error_rate=0.02):
    msgs = []
    if r.random() < 0.4:
        msgs.append({"role": "system", "content": rand_text(r)})
    for _ in range(r.randint(0 if r.random() < 0.02 else 1, 9)):
        msgs.append(rand_message(r, error_rate))
    conv = {"messages": msgs}
    if r.random() < 0.35:
        conv["tools"] = [rand_tool(r) for _ in range(r.randint(0, 3))]
    if r.random() < 0.8:
        conv["add_generation_prompt"] = r.random() < 0.6
    if r.random() < 0.7:
        conv["enable_thinking"] = r.random() < 0.5
    return conv


def find_error(stdout, stderr):
    for stream in (stdout, stderr):
        for line in reversed(stream.decode("utf-8", "replace").splitlines()):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict) and "error" in o:
                return o
    return None


def refused_input(conv_text):
    """Why tinylm's input check refuses this conversation, or None: each
    message needs a string role and a string-or-null content."""
    try:
        conv = json.loads(conv_text)
    except ValueError:
        return "invalid JSON"
    msgs = conv.get("messages") if isinstance(conv, dict) else None
    if not isinstance(msgs, list):
        return None  # left to the template (Jinja raises as well)
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            return "messages[%d] has no string role" % i
        if "content" in m and not (m["content"] is None or isinstance(m["content"], str)):
            return "messages[%d] content is neither a string nor null" % i
    return None


def main(argv):
    args = {"count": 1000, "seed": 1, "show": 10, "keep": None}
    pos = []
    self_test = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--self-test":
            self_test = True
        elif a in ("--count", "--seed", "--show"):
            args[a[2:]] = int(argv[i + 1])
            i += 1
        elif a == "--keep":
            args["keep"] = argv[i + 1]
            i += 1
        else:
            pos.append(a)
        i += 1
    if self_test:
        cmd = ["node", os.path.join(HERE, "tmpl_oracle_cli.mjs")]
        slm = "(oracle)"
        if "--count" not in argv:
            args["count"] = 20
    elif len(pos) == 2:
        cmd, slm = [pos[0]], pos[1]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    os.chdir(ROOT)
    compiled, special_map, _ = tmpl_render.load()
    r = random.Random(args["seed"])
    tmp = tempfile.mkdtemp(prefix="tinylm-tmpl-rand-")
    passed = failed = shown = deviations = 0
    raised = 0
    rendered = []  # (case, conversation, tinylm's ids, the text) for the ids check

    def fail(n, conv_text, problem):
        nonlocal failed, shown
        failed += 1
        if args["keep"]:
            os.makedirs(args["keep"], exist_ok=True)
            with open(os.path.join(args["keep"], "seed%d-case%d.json" % (args["seed"], n)), "w", encoding="utf-8") as f:
                f.write(conv_text)
        if shown < args["show"]:
            shown += 1
            print("  FAIL case %d (seed %d): %s\n    conv: %s" % (n, args["seed"], problem, conv_text[:400]))

    try:
        for n in range(args["count"]):
            conv_text = json.dumps(rand_conv(r), ensure_ascii=r.random() < 0.2)
            want = tmpl_render.render_result(compiled, special_map, conv_text)
            raised += "error" in want
            path = os.path.join(tmp, "conv.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(conv_text)
            p = subprocess.run(cmd + ["render", slm, "--messages", path, "--json"], capture_output=True, timeout=60)
            problem = None
            refused = refused_input(conv_text)
            e = find_error(p.stdout, p.stderr)
            got_err = "exit %d: %s" % (p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")[:300])
            if p.returncode < 0:
                problem = "killed by signal %d" % -p.returncode
            elif refused:
                # Declared deviation (docs/template.md, Input): tinylm
                # refuses these before rendering, whatever Jinja does.
                if p.returncode != 1 or not e or e.get("kind") != "input":
                    problem = "expected exit 1 and an input error (%s), got %s" % (refused, got_err)
                else:
                    deviations += 1
                    continue
            elif "error" in want:
                w = want["error"]
                if w["tinylm_kind"] is None:
                    problem = "oracle raised %s: %s; no tinylm error kind corresponds" % (w["type"], w["message"])
                elif p.returncode != 1 or not e or e.get("kind") != w["tinylm_kind"]:
                    problem = "oracle raised %s: %s; expected exit 1 and kind %s, got %s" % (
                        w["type"], w["message"], w["tinylm_kind"], got_err)
                elif w["kind"] == "raise_exception" and e.get("message") != w["message"]:
                    problem = "raise_exception message %r, got %r" % (w["message"], e.get("message"))
            elif p.returncode != 0:
                problem = got_err
            else:
                try:
                    o = json.loads(p.stdout)
                    got = o["text"].encode("utf-8")
                    ids = o["ids"]
                except (ValueError, KeyError, TypeError, UnicodeEncodeError) as ex:
                    got = ids = None
                    problem = "bad output (%s): %r" % (ex, p.stdout[:200])
                if problem is None:
                    exp = bytes.fromhex(want["text_hex"])
                    if got != exp:
                        d = next((k for k in range(min(len(got), len(exp))) if got[k] != exp[k]), min(len(got), len(exp)))
                        problem = "text differs at byte %d (expected %d bytes, got %d)\n      expected ...%r\n      got      ...%r" % (
                            d, len(exp), len(got), exp[max(0, d - 24):d + 40], got[max(0, d - 24):d + 40])
                    else:
                        rendered.append((n, conv_text, ids, exp.decode("utf-8")))
                        continue
            if problem is None:
                passed += 1
                continue
            fail(n, conv_text, problem)
        # The ids of every rendered text, from the tokenizer oracle in one run.
        if rendered:
            p = subprocess.run(["node", os.path.join(HERE, "tok_ids.mjs")], capture_output=True,
                               input="".join(json.dumps({"text": t}) + "\n" for _, _, _, t in rendered).encode("utf-8"))
            lines = p.stdout.decode("utf-8").splitlines()
            if p.returncode != 0 or len(lines) != len(rendered):
                print("FAIL tools/oracle/tok_ids.mjs exited %d with %d of %d answers: %s" % (
                    p.returncode, len(lines), len(rendered), p.stderr.decode("utf-8", "replace")[:300]))
                return 1
            for (n, conv_text, ids, _), line in zip(rendered, lines):
                want_ids = json.loads(line)["ids"]
                if ids == want_ids:
                    passed += 1
                    continue
                d = next((k for k in range(min(len(ids), len(want_ids))) if ids[k] != want_ids[k]),
                         min(len(ids), len(want_ids))) if isinstance(ids, list) else 0
                fail(n, conv_text, "ids differ from the tokenizer oracle's at index %d (expected %d, got %s): "
                     "expected %r, got %r" % (d, len(want_ids), len(ids) if isinstance(ids, list) else ids,
                                              want_ids[max(0, d - 2):d + 4],
                                              ids[max(0, d - 2):d + 4] if isinstance(ids, list) else ids))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("note: %d random conversations, seed %d, %d raise in the oracle" % (args["count"], args["seed"], raised))
    print("%d passed, %d failed, %d declared deviations" % (passed, failed, deviations))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
