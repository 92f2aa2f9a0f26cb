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
    conversation.

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
MODEL = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
TINY_TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))
    return ok


def tinylm(*args, stdin=None):
    return subprocess.run([TINYLM, *args], capture_output=True, input=stdin,
                          timeout=300)


def run_json(*args):
    """`tinylm run MODEL ... --json`: (exit status, parsed stdout or None)."""
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
    rc1, a, _ = run_json("--prompt", PROMPT, "-n", "16", "--seed", "42", *SAMPLING)
    rc2, b, _ = run_json("--prompt", PROMPT, "-n", "16", "--seed", "42", *SAMPLING)
    if not check("run --json succeeds", rc1 == 0 and rc2 == 0 and a and b):
        return None
    check("same seed: same ids", a["ids"] == b["ids"], f"{a['ids']} vs {b['ids']}")
    check("same seed: same text", a["text"] == b["text"])
    check("same seed: same receipt_id", a["receipt_id"] == b["receipt_id"])
    check("run ids non-empty, at most -n", 0 < len(a["ids"]) <= 16)
    rc3, c, _ = run_json("--prompt", PROMPT, "-n", "16", "--seed", "43", *SAMPLING)
    check("another seed: another receipt id",
          rc3 == 0 and c["receipt_id"] != a["receipt_id"])
    check("another seed: other ids (sampled, 16 tokens)", rc3 == 0 and c["ids"] != a["ids"])
    return a


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
    rc, out, _ = run_json("--prompt", PROMPT, "-n", "12", "--seed", "9", *SAMPLING,
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
              p.returncode != 0 and error_of(p) == "hash_mismatch",
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
    rc, full, _ = run_json("--prompt", PROMPT, "-n", "48", "--seed", "11", *SAMPLING)
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
    rc, cut, _ = run_json("--prompt", PROMPT, "-n", "48", "--seed", "11", *SAMPLING,
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
    rc, out, _ = run_json("--prompt", PROMPT, "-n", "10", "--seed", "5", *SAMPLING,
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
    rc, out, _ = run_json("--prompt", PROMPT, "-n", "4", "--seed", "5", *SAMPLING)
    check("-n 4: at most 4 ids", rc == 0 and out and len(out["ids"]) <= 4)
    p = tinylm("run", MODEL, "--prompt", PROMPT, "-n", "4", "--preflight",
               "--receipt", os.path.join(WORK, "preflight.cbor"))
    outs = p.stdout.decode(errors="replace")
    check("--preflight prints a memory plan and exits 0",
          p.returncode == 0 and "memory plan" in outs and "KV cache" in outs, outs)
    check("--preflight does not generate (no receipt written)",
          not os.path.exists(os.path.join(WORK, "preflight.cbor")) and "receipt" not in
          p.stderr.decode(errors="replace"))
    rc, _, p = run_json("--prompt", PROMPT, "--mem-budget", "1")
    check("--mem-budget 1: out_of_memory", rc != 0 and error_of(p) == "out_of_memory",
          p.stdout.decode(errors="replace"))
    n_prompt = len(json.loads(tinylm("encode", MODEL, "--text", PROMPT, "--json").stdout)["ids"])
    rc, _, p = run_json("--prompt", PROMPT, "-n", "8", "--ctx", str(n_prompt + 7))
    check("--ctx < prompt + n: context_exceeded",
          rc != 0 and error_of(p) == "context_exceeded", p.stdout.decode(errors="replace"))
    rc, out, _ = run_json("--prompt", PROMPT, "-n", "8", "--ctx", str(n_prompt + 8))
    check("--ctx == prompt + n: runs", rc == 0 and out and len(out["ids"]) <= 8)
    for flag, value in [("--top-p", "2"), ("--temperature", "-1"), ("--min-p", "1.5"),
                        ("--repeat-penalty", "0"), ("--top-p", "nan"), ("-n", "0")]:
        p = tinylm("run", MODEL, "--json", "--prompt", PROMPT, flag, value)
        check(f"{flag} {value}: usage or invalid_argument",
              p.returncode != 0 and error_of(p) in ("usage", "invalid_argument"),
              p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))


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
    chat = Chat(MODEL, "-n", "6", "--seed", "1")
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
    chat = Chat(MODEL, "-n", "4")
    off = chat.turn("Hi")
    chat.command("/reset", r"\[conversation cleared\]")
    chat.command("/think on", r"\[enable_thinking on\]")
    on = chat.turn("Hi")
    chat.quit()
    path = write_conv(os.path.join(WORK, "think-on.json"), [{"role": "user", "content": "Hi"}], True)
    rendered = json.loads(tinylm("render", MODEL, "--messages", path, "--json").stdout)
    check("chat: /think on changes the prompt tokens",
          off is not None and on is not None and off[0] != on[0] and
          on[0] == len(rendered["ids"]), f"{off} {on} {len(rendered['ids'])}")


def test_chat_sampled_reproducible():
    args = ["-n", "6", "--seed", "17", "--temperature", "0.9", "--top-k", "50"]
    convs = []
    for k in range(2):
        chat = Chat(MODEL, *args)
        chat.turn("Hello there")
        chat.turn("And then?")
        convs.append(chat.save(os.path.join(WORK, f"sampled-{k}.json")))
        chat.quit()
    check("chat: sampled sessions reproducible",
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
    chat = Chat(model, "-n", "200", "--ctx", "1024")
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
    # 2. During a long prefill (chunks of 32 are cancellation points).
    chat.send(" ".join(["word"] * 60))
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
    chat = Chat(MODEL, "-n", "6", "--ctx", "48")
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


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for test in [test_run_determinism, test_receipts, test_stop_string,
                 test_logprobs_and_limits, test_chat_greedy, test_chat_think_prompt,
                 test_chat_sampled_reproducible, test_chat_ctrl_c,
                 test_chat_context_overflow]:
        try:
            test()
        except Exception as e:  # a crash in one test is one failure
            check(f"{test.__name__} raised", False, repr(e))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
