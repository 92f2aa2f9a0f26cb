#!/usr/bin/python3
"""`tinylm run`, `tinylm receipt show` and `tinylm chat` end to end, on the
tiny golden artifact tests/golden/slm/tiny-f32.slm (the 346-token fixture
tokenizer, the real Qwen3 chat template, EOS 322 = <|im_end|>):

  * run --json with fixed seed and sampling flags is reproducible (ids,
    text, receipt_id); another seed gives another receipt id;
  * --receipt writes a file `receipt show --json` verifies, whose root is
    the run's receipt_id; a byte flipped inside a node's metadata is a
    hash_mismatch; the generation node holds the run's ids, the prompt
    node the ids of `tinylm encode` (--prompt) or `tinylm render`
    (--messages);
  * --stop cuts at a string of an unconstrained run's output; --logprobs;
    -n; --preflight; --mem-budget; --ctx; sampling values out of range;
  * chat through a pseudo-terminal: /save, replies equal to `run
    --messages` on the same conversation prefix (greedy, where the turn
    index of the draws does not matter), sampled sessions reproducible,
    /think on, /reset (and prefix reuse after it), Ctrl-C during a long
    reply (a larger synthetic model, so the reply lasts) leaves the
    session usable and drops the turn, context overflow keeps the
    conversation; a model file truncated or rewritten in place under a
    running chat (fast, scalar, --mmap) never kills it with SIGBUS nor is
    read as a model: the same replies or `error: io: FILE changed while in
    use`.

    run_test.py TINYLM WORKDIR
"""

import errno
import hashlib
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

import cbor2

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402
MODEL = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
TINY_TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")

def tinylm(*args, stdin=None):
    return subprocess.run([TINYLM, *args], capture_output=True, input=stdin,
                          timeout=300)


def run_json(*args):
    """`tinylm run MODEL ... --json`: (exit status, parsed stdout or None).
    Without --seed in args, --seed 0: runs compared by receipt id need one
    seed (run draws a fresh one without it; test_run_fresh_seed)."""
    if "--seed" not in args:
        args = (*args, "--seed", "0")
    p = tinylm("run", MODEL, *args, "--json")
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p.returncode, doc, p


def error_of(p):
    try:
        return json.loads(p.stdout).get("error")
    except (ValueError, AttributeError):
        return None


def write_conv(path, messages, think=False):
    with open(path, "w") as f:
        json.dump({"messages": messages, "add_generation_prompt": True,
                   "enable_thinking": think}, f)
    return path


SAMPLING = ["--temperature", "0.9", "--top-k", "40", "--top-p", "0.95",
            "--min-p", "0.01", "--repeat-penalty", "1.1",
            "--repeat-window", "16"]
PROMPT = "Hello world, tell me a story"


def test_run_determinism():
    rc1, a, _ = run_json("--raw", "--prompt", PROMPT, "-n", "16", "--seed", "42", *SAMPLING)
    rc2, b, _ = run_json("--raw", "--prompt", PROMPT, "-n", "16", "--seed", "42", *SAMPLING)
    if not check("run --json succeeds", rc1 == 0 and rc2 == 0 and a and b):
        return None
    check("same seed: same ids", a["ids"] == b["ids"], f"{a['ids']} vs {b['ids']}")
    check("same seed: same text", a["text"] == b["text"])
    check("same seed: same receipt_id", a["receipt_id"] == b["receipt_id"])
    check("run ids non-empty, at most -n", 0 < len(a["ids"]) <= 16)
    rc3, c, _ = run_json("--raw", "--prompt", PROMPT, "-n", "16", "--seed", "43", *SAMPLING)
    check("another seed: another receipt id",
          rc3 == 0 and c["receipt_id"] != a["receipt_id"])
    check("another seed: other ids (sampled, 16 tokens)", rc3 == 0 and c["ids"] != a["ids"])
    return a


def test_run_fresh_seed():
    """No --seed: a fresh one each run (docs/generation.md, Seeds), in the
    JSON and in the summary line on stderr; --seed S reproduces that run."""
    def seedless():
        p = tinylm("run", MODEL, "--raw", "--prompt", PROMPT, "-n", "16", *SAMPLING, "--json")
        return p.returncode, json.loads(p.stdout) if p.returncode == 0 else None, p
    rc1, a, _ = seedless()
    rc2, b, _ = seedless()
    if not check("run --json without --seed succeeds and names its seed",
                 rc1 == 0 and rc2 == 0 and a and b and isinstance(a.get("seed"), int)
                 and isinstance(b.get("seed"), int) and 0 <= a["seed"] < 2 ** 53):
        return
    check("two runs without --seed draw different seeds and replies",
          a["seed"] != b["seed"] and a["ids"] != b["ids"], f"{a['seed']} {b['seed']}")
    rc, again, _ = run_json("--raw", "--prompt", PROMPT, "-n", "16", "--seed", str(a["seed"]),
                            *SAMPLING)
    check("--seed with the drawn seed reproduces the run (ids, receipt id)",
          rc == 0 and again and again["ids"] == a["ids"]
          and again["receipt_id"] == a["receipt_id"] and again["seed"] == a["seed"])
    p = tinylm("run", MODEL, "--raw", "--prompt", PROMPT, "-n", "4", *SAMPLING)
    drawn = re.findall(rb"; seed ([0-9]+); ", p.stderr)
    check("plain run without --seed names the drawn seed in its summary line",
          p.returncode == 0 and len(drawn) == 1, p.stderr)
    p = tinylm("run", MODEL, "--raw", "--prompt", PROMPT, "-n", "4", "--seed", "3", *SAMPLING)
    check("plain run with --seed names none",
          p.returncode == 0 and b"; seed " not in p.stderr, p.stderr)


def receipt_show(path):
    p = tinylm("receipt", "show", path, "--json")
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p.returncode, doc, p


def nodes_by_type(doc):
    return {n["type"]: n for n in doc["nodes"]}


def test_receipts():
    rpath = os.path.join(WORK, "run.receipt.cbor")
    rc, out, _ = run_json("--raw", "--prompt", PROMPT, "-n", "12", "--seed", "9", *SAMPLING,
                          "--receipt", rpath)
    if not check("run --receipt succeeds", rc == 0 and out and os.path.exists(rpath)):
        return
    rc, doc, p = receipt_show(rpath)
    if not check("receipt show --json verifies", rc == 0 and doc and doc.get("verified") is True,
                 p.stderr.decode(errors="replace")):
        return
    check("receipt root == receipt_id", doc["root"] == out["receipt_id"],
          f"{doc['root']} vs {out['receipt_id']}")
    nodes = nodes_by_type(doc)
    gen = nodes["generation"]["metadata"]
    check("receipt generation ids == run ids", gen["ids"] == out["ids"])
    check("receipt generation raw == run raw_hex", gen["raw"] == out["raw_hex"])
    check("receipt generation stop == run stop", gen["stop"] == out["stop"])
    enc = json.loads(tinylm("encode", MODEL, "--text", PROMPT, "--json").stdout)
    prompt = nodes["prompt"]["metadata"]
    check("receipt prompt ids == tinylm encode (--prompt)", prompt["ids"] == enc["ids"],
          f"{prompt['ids']} vs {enc['ids']}")
    check("receipt prompt mode text, position 0, bytes sha256",
          prompt["mode"] == "text" and prompt["position"] == 0 and
          prompt["bytes_sha256"] == hashlib.sha256(PROMPT.encode()).hexdigest())
    sampler = nodes["sampler"]["metadata"]
    check("receipt sampler seed 9, turn 0", sampler["seed"] == 9 and sampler["turn"] == 0)
    with open(MODEL, "rb") as f:
        artifact_id = hashlib.sha256(f.read()).hexdigest()
    check("receipt artifact id == SHA-256 of the artifact",
          nodes["artifact"]["metadata"]["artifact_id"] == artifact_id)
    # The file as CBOR: the same root.
    with open(rpath, "rb") as f:
        raw = f.read()
    check("receipt file is CBOR with format and root",
          cbor2.loads(raw)["format"] == "tinylm.receipt/1" and
          cbor2.loads(raw)["root"].hex() == out["receipt_id"])
    # Flip a byte inside node metadata (byte strings, so the CBOR stays
    # well-formed): the artifact id, and the generation's raw bytes.
    for what, needle in [("artifact_id", bytes.fromhex(artifact_id)),
                         ("generation raw", bytes.fromhex(out["raw_hex"]))]:
        if not needle:
            continue
        at = raw.find(needle)
        if not check(f"tamper: {what} found once in the file",
                     at >= 0 and raw.find(needle, at + 1) < 0):
            continue
        bad = bytearray(raw)
        bad[at + len(needle) // 2] ^= 0x01
        tpath = os.path.join(WORK, "tampered.cbor")
        with open(tpath, "wb") as f:
            f.write(bad)
        p = tinylm("receipt", "show", tpath, "--json")
        check(f"tamper: a flipped byte in {what} is hash_mismatch",
              p.returncode == 1 and error_of(p) == "hash_mismatch",
              p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))
    # --messages: the prompt node's ids are the rendered conversation's.
    conv = write_conv(os.path.join(WORK, "conv1.json"),
                      [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": "What is a cat?"}])
    mpath = os.path.join(WORK, "messages.receipt.cbor")
    rc, out, _ = run_json("--messages", conv, "-n", "8", "--seed", "3", *SAMPLING,
                          "--receipt", mpath)
    if not check("run --messages --receipt succeeds", rc == 0 and out):
        return
    rendered = json.loads(tinylm("render", MODEL, "--messages", conv, "--json").stdout)
    rc, doc, _ = receipt_show(mpath)
    if not check("messages receipt verifies", rc == 0 and doc):
        return
    nodes = nodes_by_type(doc)
    check("receipt prompt ids == tinylm render ids (--messages)",
          nodes["prompt"]["metadata"]["ids"] == rendered["ids"])
    check("receipt prompt mode messages, bytes = rendered text",
          nodes["prompt"]["metadata"]["mode"] == "messages" and
          nodes["prompt"]["metadata"]["bytes_sha256"] ==
          hashlib.sha256(rendered["text"].encode()).hexdigest())
    check("messages run: prompt_tokens == rendered ids",
          out["prompt_tokens"] == len(rendered["ids"]))
    check("messages receipt generation ids == run ids",
          nodes["generation"]["metadata"]["ids"] == out["ids"])
    check("messages receipt root == receipt_id", doc["root"] == out["receipt_id"])


def test_stop_string():
    rc, full, _ = run_json("--raw", "--prompt", PROMPT, "-n", "48", "--seed", "11", *SAMPLING)
    if not check("unconstrained run for --stop", rc == 0 and full):
        return
    raw = bytes.fromhex(full["raw_hex"])
    text = full["text"]
    # A two-character ASCII string from the middle of the output, preceded
    # by an ASCII byte (so the lossy text before it is exact).
    stop = None
    for i in range(2, len(raw) - 1):
        s = raw[i:i + 2]
        if (all(0x21 <= c < 0x7f for c in s) and 0x20 <= raw[i - 1] < 0x7f and
                raw.find(s) == i and text.find(s.decode()) >= 0):
            stop = s.decode()
            break
    if not check("an ASCII stop candidate in the output", stop is not None, text):
        return
    rc, cut, _ = run_json("--raw", "--prompt", PROMPT, "-n", "48", "--seed", "11", *SAMPLING,
                          "--stop", stop)
    if not check("run --stop succeeds", rc == 0 and cut):
        return
    check("--stop: stop == stop_string", cut["stop"] == "stop_string", cut["stop"])
    check("--stop: ids a prefix of the unconstrained run",
          cut["ids"] == full["ids"][:len(cut["ids"])])
    cut_raw = bytes.fromhex(cut["raw_hex"])
    check("--stop: raw keeps the match (ends in the last token)",
          stop.encode() in cut_raw and raw.startswith(cut_raw))
    check("--stop: text ends right before the match",
          cut["text"] == text[:text.find(stop)],
          f"{cut['text']!r} vs {text[:text.find(stop)]!r}")
    check("--stop: the text holds no stop string", stop not in cut["text"])


def test_logprobs_and_limits():
    rc, out, _ = run_json("--raw", "--prompt", PROMPT, "-n", "10", "--seed", "5", *SAMPLING,
                          "--logprobs", "3")
    if check("run --logprobs 3", rc == 0 and out and "logprobs" in out):
        lp = out["logprobs"]
        check("logprobs: one entry per generated id",
              len(lp) == len(out["ids"]) and [e["id"] for e in lp] == out["ids"])
        check("logprobs: 3 alternatives each", all(len(e["top"]) == 3 for e in lp))
        check("logprobs: alternatives by logprob descending",
              all(e["top"][i]["logprob"] >= e["top"][i + 1]["logprob"]
                  for e in lp for i in range(2)))
        check("logprobs: distinct alternative ids",
              all(len({a["id"] for a in e["top"]}) == 3 for e in lp))
        check("logprobs: chosen <= top alternative, all <= 0",
              all(e["logprob"] <= e["top"][0]["logprob"] <= 0 for e in lp))
        check("logprobs: chosen in the top 3 has the same logprob",
              all(a["logprob"] == e["logprob"] for e in lp for a in e["top"]
                  if a["id"] == e["id"]))
    rc, out, _ = run_json("--raw", "--prompt", PROMPT, "-n", "4", "--seed", "5", *SAMPLING)
    check("-n 4: at most 4 ids", rc == 0 and out and len(out["ids"]) <= 4)
    p = tinylm("run", MODEL, "--raw", "--prompt", PROMPT, "-n", "4", "--preflight",
               "--receipt", os.path.join(WORK, "preflight.cbor"))
    outs = p.stdout.decode(errors="replace")
    check("--preflight prints a memory plan and exits 0",
          p.returncode == 0 and "memory plan" in outs and "KV cache" in outs, outs)
    check("--preflight does not generate (no receipt written)",
          not os.path.exists(os.path.join(WORK, "preflight.cbor")) and "receipt" not in
          p.stderr.decode(errors="replace"))
    rc, _, p = run_json("--raw", "--prompt", PROMPT, "--mem-budget", "1")
    check("--mem-budget 1: out_of_memory", rc == 1 and error_of(p) == "out_of_memory",
          p.stdout.decode(errors="replace"))
    n_prompt = len(json.loads(tinylm("encode", MODEL, "--text", PROMPT, "--json").stdout)["ids"])
    rc, _, p = run_json("--raw", "--prompt", PROMPT, "-n", "8", "--ctx", str(n_prompt + 7))
    check("--ctx < prompt + n: context_exceeded",
          rc == 1 and error_of(p) == "context_exceeded", p.stdout.decode(errors="replace"))
    rc, out, _ = run_json("--raw", "--prompt", PROMPT, "-n", "8", "--ctx", str(n_prompt + 8))
    check("--ctx == prompt + n: runs", rc == 0 and out and len(out["ids"]) <= 8)
    for flag, value in [("--top-p", "2"), ("--temperature", "-1"), ("--min-p", "1.5"),
                        ("--repeat-penalty", "0"), ("--top-p", "nan"), ("-n", "0")]:
        p = tinylm("run", MODEL, "--json", "--raw", "--prompt", PROMPT, flag, value)
        check(f"{flag} {value}: usage or invalid_argument",
              (p.returncode, error_of(p)) in ((2, "usage"), (1, "invalid_argument")),
              p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))


def test_run_prompt_defaults():
    """What `run --prompt` does by default (issue 28 items 1-3): on a model
    with a chat template (every model artifact has one, docs/slm.md
    SLM-4a) the text is one user message through it, exactly as --messages
    with that message gives; --raw is plain completion; thinking is the
    template's own default (Qwen3's: on) unless --think/--no-think, which
    set enable_thinking as a conversation file would (a file's own switch
    must agree); without -n a run ends at EOS or the context."""
    text = "Hello there"
    user = [{"role": "user", "content": text}]

    def conv(name, **extra):  # render's default is transformers' (no generation prompt)
        path = os.path.join(WORK, name)
        with open(path, "w") as f:
            json.dump({"messages": user, "add_generation_prompt": True, **extra}, f)
        return path

    def rendered(path):
        return json.loads(tinylm("render", MODEL, "--messages", path, "--json").stdout)

    plain, off, on = conv("pd-plain.json"), conv("pd-off.json", enable_thinking=False), \
        conv("pd-on.json", enable_thinking=True)
    r1 = os.path.join(WORK, "pd-prompt.cbor")
    rc1, a, _ = run_json("--prompt", text, "-n", "8", "--receipt", r1)
    rc2, m, _ = run_json("--messages", plain, "-n", "8")
    if not check("run --prompt and run --messages succeed", rc1 == 0 and rc2 == 0 and a and m):
        return
    want = rendered(plain)
    check("run --prompt == --messages with one user message (ids, receipt id)",
          (a["ids"], a["receipt_id"]) == (m["ids"], m["receipt_id"]),
          f"{a['receipt_id']} vs {m['receipt_id']}")
    check("run --prompt: prompt_tokens == tinylm render's ids",
          a["prompt_tokens"] == len(want["ids"]), f"{a['prompt_tokens']} vs {len(want['ids'])}")
    rc, doc, p = receipt_show(r1)
    prompt = nodes_by_type(doc)["prompt"]["metadata"] if rc == 0 and doc else {}
    check("run --prompt: the receipt verifies; its prompt node is the rendering (mode "
          "messages, the generation prompt, render's ids and bytes)",
          doc is not None and doc.get("verified") is True and prompt.get("mode") == "messages"
          and prompt.get("add_generation_prompt") is True and prompt.get("ids") == want["ids"]
          and prompt.get("bytes_sha256") == hashlib.sha256(want["text"].encode()).hexdigest(),
          p.stderr.decode(errors="replace") + repr(prompt))
    rc, raw, _ = run_json("--raw", "--prompt", text, "-n", "8")
    enc = json.loads(tinylm("encode", MODEL, "--text", text, "--json").stdout)
    check("run --raw --prompt: plain completion, the text's own ids",
          rc == 0 and raw and raw["prompt_tokens"] == len(enc["ids"]) and
          raw["receipt_id"] != a["receipt_id"])

    # Thinking: the flags render as the template's enable_thinking does.
    for flag, path in (("--think", on), ("--no-think", off)):
        rc, out, _ = run_json("--prompt", text, flag, "-n", "8")
        rc2, ref, _ = run_json("--messages", path, "-n", "8")
        check(f"run --prompt {flag} == --messages with enable_thinking "
              f"{flag == '--think'} (ids, receipt id, prompt tokens = render's)",
              rc == 0 and rc2 == 0 and out and ref and
              (out["ids"], out["receipt_id"]) == (ref["ids"], ref["receipt_id"]) and
              out["prompt_tokens"] == len(rendered(path)["ids"]))
        rc3, viaflag, _ = run_json("--messages", plain, flag, "-n", "8")
        check(f"run --messages (no enable_thinking) {flag} == the file with it",
              rc3 == 0 and viaflag and ref and viaflag["receipt_id"] == ref["receipt_id"])
        rc4, agree, _ = run_json("--messages", path, flag, "-n", "8")
        check(f"run --messages {flag} on a file that agrees runs as the file",
              rc4 == 0 and agree and ref and agree["receipt_id"] == ref["receipt_id"])
        other = off if path == on else on
        rc5, _, p5 = run_json("--messages", other, flag, "-n", "8")
        check(f"run --messages {flag} on a file that says otherwise: usage error naming "
              "enable_thinking", rc5 == 2 and error_of(p5) == "usage" and
              "enable_thinking" in p5.stderr.decode(errors="replace"),
              p5.stderr.decode(errors="replace"))
    check("thinking is on by default: --prompt renders as enable_thinking true",
          rendered(plain)["text"] == rendered(on)["text"] != rendered(off)["text"])

    # Bytes that are not UTF-8 are named by offset, through the template or not.
    bad = os.path.join(WORK, "pd-bad.txt")
    with open(bad, "wb") as f:
        f.write(b"ab\xffc")
    for flags in ([], ["--raw"]):
        p = tinylm("run", MODEL, "--prompt-file", bad, *flags)
        check(f"run --prompt-file {' '.join(flags)}: invalid UTF-8 named by its offset",
              p.returncode == 1 and b"error: invalid_utf8: the prompt is not valid UTF-8 at "
              b"byte 2" in p.stderr, p.stderr.decode(errors="replace"))

    # Without -n: until EOS (the raw prompt "Hi" ends after 82 tokens, past
    # the old default of 64) or the context.
    rc, out, _ = run_json("--raw", "--prompt", "Hi")
    check("run without -n runs until EOS, past 64 tokens",
          rc == 0 and out and out["stop"] == "eos" and len(out["ids"]) > 64,
          out and f"{out['stop']} after {len(out['ids'])}")
    rc, out, _ = run_json("--raw", "--prompt", PROMPT, "--ctx", "40")
    check("run without -n runs until the context is full",
          rc == 0 and out and out["stop"] == "context_full" and
          out["prompt_tokens"] + len(out["ids"]) == 41,
          out and f"{out['stop']} after {len(out['ids'])}")


# --- chat through a pseudo-terminal -----------------------------------------

class Chat:
    def __init__(self, model, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # never return into the test from the child
            try:
                attrs = termios.tcgetattr(0)
                attrs[3] &= ~termios.ECHO  # keep ISIG: ^C is SIGINT
                termios.tcsetattr(0, termios.TCSANOW, attrs)
                os.execv(TINYLM, [TINYLM, "chat", model, *args])
            except BaseException as e:
                os.write(2, f"exec {TINYLM}: {e!r}\n".encode())
            os._exit(127)
        self.buf = ""
        self.pos = 0
        self.status = None

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            data = b""
        if not data:
            raise EOFError
        self.buf += data.decode("utf-8", errors="replace").replace("\r\n", "\n")
        return True

    def expect(self, pattern, timeout=60):
        """The first match of pattern after the last one; None on timeout
        or when the process ended."""
        rx = re.compile(pattern)
        end = time.time() + timeout
        while True:
            m = rx.search(self.buf, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = end - time.time()
            if left <= 0:
                return None
            try:
                self._read(left)
            except EOFError:
                m = rx.search(self.buf, self.pos)
                if m:
                    self.pos = m.end()
                return m

    def send(self, line):
        os.write(self.fd, line.encode() + b"\n")

    def turn(self, line, timeout=120):
        """Sends a user line; returns (prompt tokens, reused, stop) or None."""
        self.send(line)
        m = self.expect(r"\[(\d+) prompt tokens, (\d+) reused from the cache\]", timeout)
        if m is None:
            return None
        s = self.expect(r"\[(eos|stop_string|max_tokens|context_full|cancelled) after "
                        r"(\d+) tokens", timeout)
        if s is None:
            return None
        return int(m.group(1)), int(m.group(2)), s.group(1)

    def command(self, line, ack, timeout=30):
        self.send(line)
        return self.expect(ack, timeout)

    def save(self, path):
        if os.path.exists(path):
            os.unlink(path)
        if self.command(f"/save {path}", r"\[saved (\d+) messages") is None:
            return None
        with open(path) as f:
            return json.load(f)

    def quit(self, timeout=30):
        try:
            self.send("/quit")
        except OSError:
            pass
        end = time.time() + timeout
        while time.time() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                break
            try:
                self._read(0.1)
            except (EOFError, OSError):
                pass
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -1
        try:
            while self._read(0.05):
                pass
        except (EOFError, OSError):
            pass
        os.close(self.fd)
        return os.WIFEXITED(self.status) and os.WEXITSTATUS(self.status) == 0


def roles(conv):
    return [m["role"] for m in conv["messages"]]


def test_chat_greedy():
    """Greedy (the default): the replies equal `run --messages` on the same
    conversation prefix, whatever the turn index of the draws."""
    chat = Chat(MODEL, "-n", "6", "--seed", "1", "--no-think")
    t1 = chat.turn("Hello there")
    t2 = chat.turn("And then?")
    conv = chat.save(os.path.join(WORK, "greedy.json"))
    # /think on changes the rendered prompt (Qwen3's template adds an empty
    # think block to the generation prompt when thinking is off).
    chat.command("/think on", r"\[enable_thinking on\]")
    conv_think = chat.save(os.path.join(WORK, "greedy-think.json"))
    chat.command("/reset", r"\[conversation cleared\]")
    conv_reset = chat.save(os.path.join(WORK, "greedy-reset.json"))
    chat.command("/think off", r"\[enable_thinking off\]")
    t3 = chat.turn("Hello there")
    conv3 = chat.save(os.path.join(WORK, "greedy-after-reset.json"))
    ok = chat.quit()
    check("chat: two greedy turns complete", t1 is not None and t2 is not None,
          chat.buf[-2000:])
    check("chat: /quit exits 0", ok)
    if not check("chat: /save has user, assistant, user, assistant",
                 conv is not None and roles(conv) == ["user", "assistant", "user", "assistant"],
                 str(conv)):
        return
    check("chat: first turn reuses nothing, second reuses a prefix",
          t1[1] == 0 and 0 < t2[1] < t2[0], f"{t1} {t2}")
    msgs = conv["messages"]
    for i, prefix in [(1, msgs[:1]), (3, msgs[:3])]:
        path = write_conv(os.path.join(WORK, f"greedy-prefix-{i}.json"), prefix)
        rc, out, _ = run_json("--messages", path, "-n", "6", "--seed", "1")
        check(f"chat: assistant {i // 2 + 1} == run --messages (greedy)",
              rc == 0 and out and out["text"] == msgs[i]["content"],
              f"{out and out['text']!r} vs {msgs[i]['content']!r}")
        rendered = json.loads(tinylm("render", MODEL, "--messages", path, "--json").stdout)
        tn = (t1, t2)[i // 2]
        check(f"chat: turn {i // 2 + 1} prompt tokens == render ids",
              tn[0] == len(rendered["ids"]), f"{tn[0]} vs {len(rendered['ids'])}")
    check("chat: /think on is saved",
          conv_think is not None and conv_think["enable_thinking"] is True and
          conv["enable_thinking"] is False)
    if conv_think is not None:
        off = json.loads(tinylm("render", MODEL, "--messages",
                                write_conv(os.path.join(WORK, "t-off.json"), msgs[:1]),
                                "--json").stdout)
        on = json.loads(tinylm("render", MODEL, "--messages",
                               write_conv(os.path.join(WORK, "t-on.json"), msgs[:1], True),
                               "--json").stdout)
        check("chat: /think on changes the rendered prompt", on["text"] != off["text"])
    check("chat: /reset clears the conversation",
          conv_reset is not None and conv_reset["messages"] == [])
    # (Not all of it: the cache holds the first reply as generated after an
    # empty think block; the second turn's rendering drops that block.)
    check("chat: after /reset the same first turn, a prefix reused from the cache",
          t3 is not None and t3[0] == t1[0] and 0 < t3[1] < t3[0], f"{t3} {t1}")
    check("chat: after /reset the same first reply",
          conv3 is not None and roles(conv3) == ["user", "assistant"] and
          conv3["messages"][1]["content"] == msgs[1]["content"])


def test_chat_think_prompt():
    chat = Chat(MODEL, "-n", "4", "--no-think")
    off = chat.turn("Hi")
    chat.command("/reset", r"\[conversation cleared\]")
    chat.command("/think on", r"\[enable_thinking on\]")
    on = chat.turn("Hi")
    quit_ok = chat.quit()
    path = write_conv(os.path.join(WORK, "think-on.json"), [{"role": "user", "content": "Hi"}], True)
    rendered = json.loads(tinylm("render", MODEL, "--messages", path, "--json").stdout)
    check("chat: /think on changes the prompt tokens",
          quit_ok and off is not None and on is not None and off[0] != on[0] and
          on[0] == len(rendered["ids"]), f"{off} {on} {len(rendered['ids'])}")


def test_chat_sampled_reproducible():
    args = ["-n", "6", "--seed", "17", "--temperature", "0.9", "--top-k", "50"]
    convs, quits = [], []
    for k in range(2):
        chat = Chat(MODEL, *args, "--no-think")
        chat.turn("Hello there")
        chat.turn("And then?")
        convs.append(chat.save(os.path.join(WORK, f"sampled-{k}.json")))
        quits.append(chat.quit())
    check("chat: sampled sessions reproducible", all(quits) and
          convs[0] is not None and convs[0] == convs[1] and len(convs[0]["messages"]) == 4)
    if convs[0] is not None:
        # Turn 0 draws at turn index 0, as run does.
        path = write_conv(os.path.join(WORK, "sampled-prefix.json"), convs[0]["messages"][:1])
        rc, out, _ = run_json("--messages", path, *args)
        check("chat: sampled turn 0 == run --messages (turn index 0 both)",
              rc == 0 and out and out["text"] == convs[0]["messages"][1]["content"])


def make_slow_model():
    """A larger synthetic model (fixture tokenizer): a reply of 200 tokens
    takes seconds, so Ctrl-C lands in the middle of it."""
    hf = os.path.join(WORK, "slow-hf")
    out = os.path.join(WORK, "slow.slm")
    shutil.rmtree(hf, ignore_errors=True)
    cfg = os.path.join(WORK, "slow.json")
    with open(cfg, "w") as f:
        json.dump({"vocab_size": 346, "hidden_size": 256, "intermediate_size": 768,
                   "num_hidden_layers": 4, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 64,
                   "max_position_embeddings": 2048}, f)
    p = tinylm("synth", "--config", cfg, "--seed", "5", "--dtype", "bf16",
               "--tokenizer-dir", TINY_TOKENIZER, "-o", hf)
    if p.returncode != 0:
        return None
    gc = os.path.join(hf, "generation_config.json")
    if os.path.exists(gc):
        os.unlink(gc)  # see tests/golden/slm/README.md
    p = tinylm("convert", hf, "-o", out, "--quant", "q8", "--profile", "qwen3-0.6b-publisher",
               "--receipt", os.path.join(WORK, "slow.convert.cbor"))
    return out if p.returncode == 0 else None


def test_chat_ctrl_c():
    model = make_slow_model()
    if not check("slow model for Ctrl-C", model is not None):
        return
    chat = Chat(model, "-n", "200", "--ctx", "1024", "--no-think")
    stop_rx = r"\[(eos|stop_string|max_tokens|context_full|cancelled) after (\d+) tokens"
    # 1. During the reply: a short prompt (no prefill progress line), ^C
    #    once the reply streams (SIGINT outside a turn would end chat).
    chat.send("Tell me a long story please")
    started = chat.expect(r"\[(\d+) prompt tokens, (\d+) reused from the cache\]\n", 60)
    streaming = chat.expect(r"[^\r\n]", 60)
    os.write(chat.fd, b"\x03")
    stopped = chat.expect(stop_rx, 60)
    dropped = chat.expect(r"\[cancelled: the turn is dropped\]", 10)
    conv1 = chat.save(os.path.join(WORK, "ctrlc-1.json"))
    # 2. During a long prefill (each chunk of 64 tokens is a cancellation point).
    chat.send(" ".join(["word"] * 240))
    progress = chat.expect(r"\[prefill \d+/\d+ tokens", 60)
    os.write(chat.fd, b"\x03")
    stopped2 = chat.expect(stop_rx, 60)
    dropped2 = chat.expect(r"\[cancelled: the turn is dropped\]", 10)
    conv2 = chat.save(os.path.join(WORK, "ctrlc-2.json"))
    # 3. The next turn.
    nxt = chat.turn("Another one", timeout=180)
    conv3 = chat.save(os.path.join(WORK, "ctrlc-3.json"))
    ok = chat.quit()
    check("chat Ctrl-C: the reply stops as cancelled mid-way",
          started is not None and streaming is not None and stopped is not None and
          stopped.group(1) == "cancelled" and 1 <= int(stopped.group(2)) < 200,
          chat.buf[-1000:])
    check("chat Ctrl-C: the turn is dropped",
          dropped is not None and conv1 is not None and conv1["messages"] == [])
    check("chat Ctrl-C in prefill: cancelled after 0 tokens",
          progress is not None and stopped2 is not None and
          stopped2.group(1) == "cancelled" and stopped2.group(2) == "0", chat.buf[-1000:])
    check("chat Ctrl-C in prefill: the turn is dropped",
          dropped2 is not None and conv2 is not None and conv2["messages"] == [])
    check("chat Ctrl-C: the next turn completes", nxt is not None and nxt[2] != "cancelled"
          and conv3 is not None and roles(conv3) == ["user", "assistant"], chat.buf[-1000:])
    check("chat Ctrl-C: the next turn reuses the cache", nxt is not None and nxt[1] > 0)
    check("chat Ctrl-C: the session exits 0", ok)
    if conv3 is not None and len(conv3["messages"]) == 2:
        # The reply equals that of a session that never had the cancelled
        # turns (greedy; the conversation is the same).
        path = write_conv(os.path.join(WORK, "ctrlc-prefix.json"), conv3["messages"][:1])
        p = tinylm("run", model, "--messages", path, "-n", "200", "--json")
        out = json.loads(p.stdout) if p.returncode == 0 else None
        check("chat Ctrl-C: the next reply == run --messages without the cancelled turns",
              out is not None and out["text"] == conv3["messages"][1]["content"])


def test_chat_context_overflow():
    chat = Chat(MODEL, "-n", "6", "--ctx", "48", "--no-think")
    results = []
    overflow = None
    for k in range(6):
        chat.send(f"Message number {k} with some words")
        m = chat.expect(r"(error: context_exceeded[^\n]*)|\[(eos|stop_string|max_tokens|"
                        r"context_full|cancelled) after \d+ tokens", 60)
        if m is None:
            break
        if m.group(1):
            overflow = m.group(1)
            break
        results.append(m.group(2))
    conv = chat.save(os.path.join(WORK, "overflow.json"))
    # The session goes on after /reset.
    chat.command("/reset", r"\[conversation cleared\]")
    again = chat.turn("Hi")
    ok = chat.quit()
    check("chat --ctx 48: context_exceeded after some turns",
          overflow is not None and len(results) >= 1, chat.buf[-1500:])
    check("chat overflow: the conversation is kept",
          conv is not None and roles(conv) == ["user", "assistant"] * len(results),
          str(conv))
    check("chat overflow: the session goes on", again is not None and ok)


# --- conversations: validation, defaults, chat options (issues 11, 17) -------

STOP_RX = r"\[(eos|stop_string|max_tokens|context_full|cancelled) after (\d+) tokens"


def chat_pipe(lines, *args):
    """`tinylm chat MODEL ARGS` reading lines (bytes) from a pipe:
    (process, stderr text, number of replies generated). A session ends at
    the end of its input: any exit status but 0 is a failed check."""
    p = tinylm("chat", MODEL, *args, stdin=lines)
    err = p.stderr.decode("utf-8", errors="replace")
    check(f"chat {' '.join(args)} (from a pipe) exits 0 at the end of its input",
          p.returncode == 0, f"exit {p.returncode}: {err[-300:]}")
    return p, err, len(re.findall(STOP_RX, err))


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def test_chat_invalid_lines():
    """A line that is not UTF-8, or holds a NUL byte, is refused with the
    byte offset and changes nothing: no reply, no lost user turn."""
    save = os.path.join(WORK, "invalid-lines.json")
    p, err, replies = chat_pipe(b"Hello\n" + b"a\xffb\n" + b"x\x00y\n" +
                                b"/save " + save.encode() + b"\n", "-n", "3")
    conv = load_json(save)
    check("chat: an invalid UTF-8 line is refused with its byte offset",
          "error: invalid_utf8: the line is not valid UTF-8 at byte offset 1" in err, err[-600:])
    check("chat: a line with a NUL byte is refused with its offset",
          "error: invalid_argument: the line has a NUL byte at offset 1" in err, err[-600:])
    check("chat: refused lines get no reply and the history stays user, assistant",
          p.returncode == 0 and replies == 1 and conv is not None and
          roles(conv) == ["user", "assistant"] and conv["messages"][0]["content"] == "Hello",
          f"{replies} replies, {conv}")
    # As the very first message (it used to render an empty conversation).
    save = os.path.join(WORK, "invalid-first.json")
    p, err, replies = chat_pipe(b"\xc3\n/save " + save.encode() + b"\nHi\n/save " +
                                save.encode() + b".2\n", "-n", "2")
    first, after = load_json(save), load_json(save + ".2")
    check("chat: an invalid first line is refused, nothing rendered",
          "byte offset 0" in err and "attribute" not in err and replies == 1 and
          first is not None and first["messages"] == [], err[-600:])
    check("chat: the session goes on after a refused line",
          after is not None and roles(after) == ["user", "assistant"], str(after))


def test_chat_invalid_line_terminal():
    """The same refusal on a terminal, where libedit reads the line."""
    chat = Chat(MODEL, "-n", "2")
    chat.send("Hello")
    first = chat.expect(STOP_RX, 60)
    os.write(chat.fd, b"a\xffb\n")
    refused = chat.expect(r"error: invalid_utf8: [^\n]*nothing was sent", 30)
    conv = chat.save(os.path.join(WORK, "invalid-tty.json"))
    ok = chat.quit()
    check("chat (terminal): an invalid UTF-8 line is refused",
          first is not None and refused is not None, chat.buf[-800:])
    check("chat (terminal): the refused line changes nothing",
          conv is not None and roles(conv) == ["user", "assistant"] and ok, str(conv))


def test_chat_line_editing():
    """libedit on a terminal: the up arrow recalls the previous line; Ctrl-C
    while typing discards what was typed."""
    chat = Chat(MODEL, "-n", "2")
    t1 = chat.turn("Hello there")
    os.write(chat.fd, b"\x1b[A\n")  # up arrow, Enter
    recalled = chat.expect(STOP_RX, 60)
    os.write(chat.fd, b"half a line")
    time.sleep(0.3)
    os.write(chat.fd, b"\x03")
    time.sleep(0.3)
    t3 = chat.turn("fresh")
    conv = chat.save(os.path.join(WORK, "editing.json"))
    ok = chat.quit()
    users = [m["content"] for m in conv["messages"] if m["role"] == "user"] if conv else None
    check("chat (terminal): the up arrow recalls the last line",
          t1 is not None and recalled is not None and users is not None and
          users[:2] == ["Hello there", "Hello there"], f"{users}\n{chat.buf[-800:]}")
    check("chat (terminal): Ctrl-C discards the line being typed",
          t3 is not None and users is not None and users[2:] == ["fresh"] and ok, str(users))


def test_chat_stdout_redirected():
    """A terminal on stdin but stdout to a file: no line editor and no
    prompt drawn into the file, which gets the replies only."""
    master, slave = os.openpty()
    out_path = os.path.join(WORK, "redirected.out")
    with open(out_path, "wb") as out:
        p = subprocess.Popen([TINYLM, "chat", MODEL, "-n", "2"], stdin=slave, stdout=out,
                             stderr=subprocess.PIPE)
    os.close(slave)
    os.write(master, b"Hello there\n")
    time.sleep(1)
    os.write(master, b"/quit\n")
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    os.close(master)
    text = open(out_path, "rb").read()
    check("chat with stdout redirected: the file holds the reply, no prompt or echo",
          p.returncode == 0 and re.search(STOP_RX, err.decode(errors="replace")) and
          b"Hello there" not in text and not text.startswith(b">"), f"{text!r} {err[-300:]!r}")


def write_raw(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    return path


BAD_CONVERSATIONS = [
    # (file name, content, what the error says)
    ("syntax.json", '{"messages": [1, 2,]}', "syntax.json:1:20: "),
    ("no-messages.json", '{"messages": []}', "no messages"),
    ("no-content.json", '{"messages": [{"role": "user"}]}', "message 0 has no content"),
    ("wizard.json", '{"messages": [{"role": "user", "content": "a"}, '
     '{"role": "wizard", "content": "b"}]}', "message 1: unknown role 'wizard'"),
    ("not-object.json", '{"messages": [{"role": "user", "content": "a"}, 1]}',
     "message 1 is not an object"),
    ("system-number.json", '{"messages": [{"role": "system", "content": 5}, '
     '{"role": "user", "content": "a"}]}', "message 0: the content must be a string"),
    ("bad-call.json", '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", '
     '"content": "", "tool_calls": [{"function": {"name": "f"}}]}]}',
     "message 1: tool call 0 needs"),
]


def test_run_messages_errors():
    """run --messages names the problem in the user's terms, never with a
    template engine's message, and JSON syntax errors with line:column."""
    for name, text, says in BAD_CONVERSATIONS:
        path = write_raw(name, text)
        p = tinylm("run", MODEL, "--messages", path, "-n", "2")
        err = p.stderr.decode(errors="replace")
        check(f"run --messages {name}: refused saying {says!r}",
              p.returncode == 1 and f"error: invalid_argument: {path}" in err and says in err,
              err.strip())
        rc, doc, p = run_json("--messages", path, "-n", "2")
        check(f"run --messages {name} --json: a typed error",
              rc == 1 and error_of(p) == "invalid_argument", p.stdout[-300:])
    rc, doc, p = run_json("--messages", os.path.join(WORK, "syntax.json"))
    err = json.loads(p.stdout) if p.stdout.strip() else {}
    check("run --messages --json: line and column of a syntax error",
          rc == 1 and err.get("line") == 1 and err.get("column") == 20, f"exit {rc}: {err}")


def test_run_messages_generation_prompt():
    """run --messages adds the generation prompt unless the file says
    otherwise; render keeps transformers' default (false)."""
    msgs = [{"role": "user", "content": "Hi"}]
    absent = write_raw("gen-absent.json", json.dumps({"messages": msgs}))
    false = write_raw("gen-false.json", json.dumps({"messages": msgs,
                                                   "add_generation_prompt": False}))
    true = write_raw("gen-true.json", json.dumps({"messages": msgs,
                                                 "add_generation_prompt": True}))

    def prompt_ids(path):
        r = os.path.join(WORK, os.path.basename(path) + ".cbor")
        rc, _, _ = run_json("--messages", path, "-n", "1", "--receipt", r)
        rc2, doc, _ = receipt_show(r)
        if rc != 0 or rc2 != 0 or not doc:
            return None
        return nodes_by_type(doc)["prompt"]["metadata"]["ids"]

    def render_ids(path):
        p = tinylm("render", MODEL, "--messages", path, "--json")
        return json.loads(p.stdout)["ids"] if p.returncode == 0 else None

    run_absent, run_false = prompt_ids(absent), prompt_ids(false)
    r_absent, r_false, r_true = render_ids(absent), render_ids(false), render_ids(true)
    check("run --messages: the generation prompt by default",
          run_absent is not None and run_absent == r_true, f"{run_absent} vs {r_true}")
    check("run --messages: the file's add_generation_prompt false wins",
          run_false is not None and run_false == r_false, f"{run_false} vs {r_false}")
    check("render: add_generation_prompt defaults to false (transformers)",
          r_absent is not None and r_absent == r_false and r_absent != r_true)


def test_chat_load():
    """/load: refused with the reason (cannot open, a directory, line:column,
    the bad message) and the conversation unchanged; a good file loads
    whole (its system message, U+0000 in content, other members kept)."""
    before = os.path.join(WORK, "load-before.json")
    lines = [b"Hello", b"/save " + before.encode(),
             b"/load " + os.path.join(WORK, "no-such-file.json").encode(),
             b"/load " + WORK.encode()]
    for name, text, _ in BAD_CONVERSATIONS:
        lines.append(b"/load " + write_raw(name, text).encode())
    after = os.path.join(WORK, "load-after.json")
    lines += [b"/save " + after.encode(), b"And then?"]
    p, err, replies = chat_pipe(b"\n".join(lines) + b"\n", "-n", "2")
    check("chat /load: a missing file says cannot open",
          "no-such-file.json: cannot open" in err, err[-1500:])
    check("chat /load: a directory says so", f"{WORK}: is a directory" in err, err[-1500:])
    for name, _, says in BAD_CONVERSATIONS:
        check(f"chat /load {name}: refused saying {says!r}", says in err)
    a, b = load_json(before), load_json(after)
    check("chat /load: refused files leave the conversation as it was",
          a is not None and a == b, f"{a} vs {b}")
    check("chat /load: turns after refused loads still work", replies == 2, err[-800:])

    good = write_raw("load-good.json", json.dumps({
        "messages": [{"role": "system", "content": "be\u0000nice"},
                     {"role": "user", "content": "q"},
                     {"role": "assistant", "content": "a"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "enable_thinking": True}))
    saved = os.path.join(WORK, "load-good-saved.json")
    # started with --no-think: the file's own switch is what /load gives
    p, err, _ = chat_pipe(f"/load {good}\n/think\n/save {saved}\n".encode(), "--no-think")
    doc = load_json(saved)
    check("chat /load: the system message, U+0000 and tools survive /save",
          "[loaded 3 messages" in err and doc is not None and
          doc["messages"] == load_json(good)["messages"] and
          doc.get("tools") == load_json(good)["tools"], f"{err[-500:]}\n{doc}")
    check("chat /load: enable_thinking is taken from the file (over --no-think); /think shows it",
          "thinking off" in err and "[enable_thinking on]" in err and doc is not None and
          doc["enable_thinking"] is True,
          err[-500:])


def test_chat_options():
    """Replies run to EOS or the context unless -n caps them; --system;
    /think without an argument; --receipt-dir with a receipt per reply."""
    _, err, _ = chat_pipe(b"Hi\n", "--ctx", "40")
    m = re.search(STOP_RX, err)
    check("chat: without -n a reply runs until EOS or the context is full",
          m is not None and m.group(1) in ("eos", "context_full") and int(m.group(2)) > 0,
          err[-500:])
    _, err2, _ = chat_pipe(b"Hi\n", "--ctx", "40", "-n", "-1")
    m2 = re.search(STOP_RX, err2)
    check("chat: -n -1 is the same as no -n",
          m is not None and m2 is not None and m.groups() == m2.groups(), err2[-500:])
    _, err3, _ = chat_pipe(b"Hi\n", "--ctx", "40", "-n", "3")
    m3 = re.search(STOP_RX, err3)
    check("chat: -n caps a reply", m3 is not None and m3.groups() == ("max_tokens", "3"),
          err3[-500:])

    saved = os.path.join(WORK, "system-flag.json")
    p, err, replies = chat_pipe(f"Hi\n/think\n/think off\n/think\n/save {saved}\n".encode(),
                                "-n", "2", "--system", "You are terse.")
    doc = load_json(saved)
    check("chat --system: the conversation starts with it",
          p.returncode == 0 and doc is not None and
          doc["messages"][0] == {"role": "system", "content": "You are terse."} and
          roles(doc)[1:] == ["user", "assistant"], err[-500:])
    check("chat /think without an argument shows the setting (on by default, the template's)",
          re.search(r"\[enable_thinking on\]\n\[enable_thinking off\]\n\[enable_thinking off\]",
                    err) is not None and doc is not None and doc["enable_thinking"] is False,
          err[-500:])

    rdir = os.path.join(WORK, "turn-receipts")
    shutil.rmtree(rdir, ignore_errors=True)
    p, err, replies = chat_pipe(b"Hi\nAnd then?\n", "-n", "2", "--receipt-dir", rdir)
    files = sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []
    roots = []
    for f in files:
        rc, doc, _ = receipt_show(os.path.join(rdir, f))
        roots.append(doc["root"] if rc == 0 and doc and doc.get("verified") else None)
    check("chat --receipt-dir: one verified receipt per reply, turn-0001.cbor, ...",
          replies == 2 and files == ["turn-0001.cbor", "turn-0002.cbor"] and
          None not in roots and roots[0] != roots[1], f"{files} {roots} {err[-400:]}")
    for f in files:
        check(f"chat --receipt-dir: {f}'s id is the one chat printed",
              roots[files.index(f)] is not None and roots[files.index(f)] in err)
    before = open(os.path.join(rdir, "turn-0001.cbor"), "rb").read() if files else b""
    p, err, replies = chat_pipe(b"Other\n", "-n", "2", "--receipt-dir", rdir)
    # A reused directory continues the numbering (issue 23 item 13): the
    # reply is given, its receipt is turn-0003.cbor, nothing is replaced.
    check("chat --receipt-dir reused: numbering continues, nothing overwritten",
          replies == 1 and p.returncode == 0 and "turn-0003.cbor" in err and
          sorted(os.listdir(rdir)) == ["turn-0001.cbor", "turn-0002.cbor", "turn-0003.cbor"] and
          open(os.path.join(rdir, "turn-0001.cbor"), "rb").read() == before, err[-400:])
    p, err, replies = chat_pipe(b"Other\n", "-n", "2", "--receipt-dir", rdir, "--force")
    check("chat --receipt-dir --force: replaced",
          replies == 1 and open(os.path.join(rdir, "turn-0001.cbor"), "rb").read() != before,
          err[-400:])
    p = tinylm("run", MODEL, "--prompt", "x", "--system", "s")
    check("run refuses chat's --system", p.returncode == 2)

def chat_over_changing_file(model, change, *args):
    """`tinylm chat COPY ARGS` from a pipe on a copy of model: one turn,
    then change(COPY), then /reset, the same turn again and the end of
    input. Returns
    (exit status, stdout, stderr, the copy's path)."""
    copy = os.path.join(WORK, "changing.slm")
    shutil.copyfile(model, copy)
    p = subprocess.Popen([TINYLM, "chat", copy, "-n", "8", *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = b""
    p.stdin.write(b"Hello\n")
    p.stdin.flush()
    deadline = time.time() + 120
    while not re.search(STOP_RX, err.decode("utf-8", "replace")) and time.time() < deadline:
        ready, _, _ = select.select([p.stderr], [], [], 1)
        if ready:
            chunk = os.read(p.stderr.fileno(), 4096)
            if not chunk:
                break
            err += chunk
    change(copy)
    try:
        p.stdin.write(b"/reset\nHello\n")  # the same conversation again
        p.stdin.close()
    except BrokenPipeError:
        pass
    p.stdin = None
    out, rest = p.communicate(timeout=300)
    return p.returncode, out, (err + rest).decode("utf-8", "replace"), copy


def test_chat_model_file_changes():
    """A model file truncated or rewritten in place under a running chat
    (fast lane, scalar lane, --mmap): the process never dies of a signal
    (SIGBUS), and the second turn (after /reset, the same conversation)
    either answers as it does on an untouched file or the chat stops with
    `error: io: FILE changed while in use`. The bytes now in the file are
    never read as a model (no template or tokenizer error from them).
    The fast lane computes on the mapping of tiny-f32.slm (float weights)
    and of a q8 artifact in the packed layout (docs/slm.md SLM-11a)."""
    other = os.path.join(ROOT, "tests", "golden", "slm", "tiny-q8.slm")
    hf, packed = os.path.join(WORK, "hf-packed"), os.path.join(WORK, "packed-q8.slm")
    subprocess.run([TINYLM, "synth", "--config", os.path.join(ROOT, "tests", "golden", "slm", "tiny.json"),
                    "--seed", "7", "-o", hf, "--tokenizer-dir",
                    os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")], check=True,
                   stdout=subprocess.DEVNULL)
    os.remove(os.path.join(hf, "generation_config.json"))  # as tests/convert does
    subprocess.run([TINYLM, "convert", hf, "-o", packed, "--quant", "q8", "--layout", "packed"],
                   check=True, stdout=subprocess.DEVNULL)

    def truncate(path):
        os.truncate(path, os.path.getsize(path) // 2)

    def rewrite(path):
        truncate(path)
        with open(path, "r+b") as f:  # the same inode, other bytes
            f.truncate(0)
            f.write(open(other, "rb").read())

    for model, lane in [(MODEL, lane) for lane in (
            ["--lane", "fast"], ["--lane", "scalar"], ["--lane", "fast", "--mmap"],
            ["--lane", "scalar", "--mmap"])] + [(packed, ["--lane", "fast"]),
                                                (packed, ["--lane", "scalar"])]:
        rc0, want, err0, _ = chat_over_changing_file(model, lambda path: None, *lane)
        label = f"{' '.join(lane)}{' (q8, packed)' if model == packed else ''}"
        check(f"chat {label}: two turns on an untouched file", rc0 == 0, err0[-300:])
        for name, change in (("truncated", truncate), ("rewritten in place", rewrite)):
            rc, out, err, copy = chat_over_changing_file(model, change, *lane)
            what = f"chat {label}, model {name} after turn 1"
            check(f"{what}: no signal", rc >= 0, f"killed by signal {-rc}: {err[-300:]}")
            typed = f"error: io: {copy} changed while in use" in err
            check(f"{what}: the same replies, or a typed error naming the file and exit 1",
                  (rc == 0 and out == want) or (typed and rc == 1),
                  f"exit {rc}: {err[-400:]}")
            check(f"{what}: nothing read from the changed file",
                  "error:" not in err.replace(f"error: io: {copy} changed while in use", ""),
                  err[-300:])


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for test in [test_run_determinism, test_run_fresh_seed, test_receipts, test_stop_string,
                 test_logprobs_and_limits, test_run_prompt_defaults, test_chat_greedy, test_chat_think_prompt,
                 test_chat_sampled_reproducible, test_chat_ctrl_c,
                 test_chat_context_overflow, test_chat_invalid_lines,
                 test_chat_invalid_line_terminal, test_chat_line_editing,
                 test_chat_stdout_redirected,
                 test_run_messages_errors, test_run_messages_generation_prompt,
                 test_chat_load, test_chat_options, test_chat_model_file_changes]:
        try:
            test()
        except Exception as e:  # a crash in one test is one failure
            check(f"{test.__name__} raised", False, repr(e))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
