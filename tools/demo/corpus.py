#!/usr/bin/python3
"""Deterministic chat corpus for the tinylm demo model (issue 15).

    corpus.py --tinylm BIN --tokenizer-dir DIR --seed N --count N -o OUTDIR

Writes, into OUTDIR (created if missing):
  tok.slm      the tokenizer artifact (tinylm convert DIR --tokenizer-only)
  train.jsonl  one conversation a line: {"kind", "thinking", "prompt_ids",
               "target_ids"}; the prompt is the conversation up to the last
               reply rendered through the real Qwen3 chat template with
               add_generation_prompt (Jinja2 oracle, tools/oracle/tmpl_render.py)
               and encoded by `tinylm encode`; the target is the last reply
               (after "<think>\\n\\n</think>\\n\\n" when thinking is on, since
               the model writes that itself then), ending with <|im_end|>
  eval.json    the held-out questions: {"arith": [...], "capitals": [...]},
               each {"messages", "enable_thinking", "expected"}
  idmap.json   {"vocab_size": 151936, "ids": [sorted token ids the corpus
               and the evaluation use]}: the compact vocabulary
  corpus.json  {"seed", "count", "train_sha256", "kinds": {...}}

Arithmetic: a + b and a - b (a >= b, so answers are non-negative) with
operands of 1 to 3 digits. A pair is held out when the first byte of
SHA-256("a op b") is below HOLDOUT_BELOW (about 2% of pairs), independent of
the seed: training never sees a held-out pair, and the evaluation draws only
held-out pairs. Everything else is a function of --seed and --count.
Exit 0, or 1 with "error: <code>: <detail>" on stderr.
"""

import hashlib
import json
import os
import random
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))

import tmpl_render  # noqa: E402
from cli import Fail, parse_flags  # noqa: E402

VOCAB_SIZE = 151936  # Qwen3's embedding rows (config.json vocab_size)
HOLDOUT_BELOW = 5  # of 256: the held-out share of arithmetic pairs
IM_END = "<|im_end|>"
THINK_EMPTY = "<think>\n\n</think>\n\n"
IDENTITY = ("I am the tinylm demo model, a tiny model trained on a synthetic task: "
            "I add and subtract whole numbers up to 999 and name the capitals of 60 countries.")

CAPITALS = [
    ("Argentina", "Buenos Aires"), ("Australia", "Canberra"), ("Austria", "Vienna"),
    ("Belgium", "Brussels"), ("Brazil", "Brasilia"), ("Bulgaria", "Sofia"),
    ("Canada", "Ottawa"), ("Chile", "Santiago"), ("China", "Beijing"),
    ("Colombia", "Bogota"), ("Croatia", "Zagreb"), ("Cuba", "Havana"),
    ("Czechia", "Prague"), ("Denmark", "Copenhagen"), ("Egypt", "Cairo"),
    ("Estonia", "Tallinn"), ("Ethiopia", "Addis Ababa"), ("Finland", "Helsinki"),
    ("France", "Paris"), ("Germany", "Berlin"), ("Ghana", "Accra"),
    ("Greece", "Athens"), ("Hungary", "Budapest"), ("Iceland", "Reykjavik"),
    ("India", "New Delhi"), ("Indonesia", "Jakarta"), ("Iran", "Tehran"),
    ("Iraq", "Baghdad"), ("Ireland", "Dublin"), ("Israel", "Jerusalem"),
    ("Italy", "Rome"), ("Japan", "Tokyo"), ("Kenya", "Nairobi"),
    ("Latvia", "Riga"), ("Lithuania", "Vilnius"), ("Mexico", "Mexico City"),
    ("Morocco", "Rabat"), ("Nepal", "Kathmandu"), ("Netherlands", "Amsterdam"),
    ("New Zealand", "Wellington"), ("Nigeria", "Abuja"), ("Norway", "Oslo"),
    ("Pakistan", "Islamabad"), ("Peru", "Lima"), ("Philippines", "Manila"),
    ("Poland", "Warsaw"), ("Portugal", "Lisbon"), ("Romania", "Bucharest"),
    ("Russia", "Moscow"), ("Saudi Arabia", "Riyadh"), ("Senegal", "Dakar"),
    ("South Korea", "Seoul"), ("Spain", "Madrid"), ("Sweden", "Stockholm"),
    ("Switzerland", "Bern"), ("Thailand", "Bangkok"), ("Turkey", "Ankara"),
    ("Ukraine", "Kyiv"), ("United Kingdom", "London"), ("Vietnam", "Hanoi"),
]

ARITH_QUESTIONS = ["What is {a} {op} {b}?", "Compute {a} {op} {b}.", "{a} {op} {b} = ?",
                   "How much is {a} {op} {b}?"]
CAPITAL_QUESTIONS = ["What is the capital of {c}?", "Which city is the capital of {c}?",
                     "Capital of {c}?", "Tell me the capital of {c}."]
GREETINGS = [("Hello!", "Hello! " + IDENTITY), ("Hi", "Hello! " + IDENTITY),
             ("Who are you?", IDENTITY), ("What are you?", IDENTITY),
             ("What can you do?", IDENTITY), ("Introduce yourself.", IDENTITY),
             ("Thanks!", "You are welcome."), ("Thank you.", "You are welcome.")]
OFF_TASK = ["What is the weather today?", "Write a poem.", "Who won the match?",
            "Translate this to French.", "What is love?", "Tell me a joke.",
            "What is 12 * 4?", "How old are you?", "What is the capital of Mars?"]
OFF_TASK_REPLY = "I can only add and subtract numbers up to 999 and name the capitals of 60 countries."
# Training mixture: (kind, weight).
KINDS = [("arith", 62), ("capital", 14), ("greeting", 5), ("off_task", 4),
         ("followup_arith", 10), ("followup_capital", 5)]


def held_out(a, op, b):
    return hashlib.sha256(("%d %s %d" % (a, op, b)).encode()).digest()[0] < HOLDOUT_BELOW


def operand(rng):
    digits = rng.randint(1, 3)
    return rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10 ** digits - 1)


def arith_pair(rng, want_held_out):
    """(a, op, b) with a >= b for subtraction, held out or not as asked."""
    while True:
        a, b, op = operand(rng), operand(rng), rng.choice("+-")
        if op == "-" and a < b:
            a, b = b, a
        if held_out(a, op, b) == want_held_out:
            return a, op, b


def arith_answer(a, op, b):
    return "%d %s %d = %d." % (a, op, b, a + b if op == "+" else a - b)


def conversation(rng, kind):
    """(messages without the last reply, the last reply)."""
    if kind == "arith":
        a, op, b = arith_pair(rng, False)
        q = rng.choice(ARITH_QUESTIONS).format(a=a, op=op, b=b)
        return [{"role": "user", "content": q}], arith_answer(a, op, b)
    if kind == "capital":
        c, cap = rng.choice(CAPITALS)
        return ([{"role": "user", "content": rng.choice(CAPITAL_QUESTIONS).format(c=c)}],
                "The capital of %s is %s." % (c, cap))
    if kind == "greeting":
        q, r = rng.choice(GREETINGS)
        return [{"role": "user", "content": q}], r
    if kind == "off_task":
        return [{"role": "user", "content": rng.choice(OFF_TASK)}], OFF_TASK_REPLY
    if kind == "followup_arith":
        # The second question refers to the first answer ("that").
        a, op, b = arith_pair(rng, False)
        r = a + b if op == "+" else a - b
        n = rng.randint(1, 99)
        op2 = "-" if r >= n and rng.random() < 0.5 else "+"
        q2 = ("Add %d to that." if op2 == "+" else "Subtract %d from that.") % n
        first = [{"role": "user", "content": "What is %d %s %d?" % (a, op, b)},
                 {"role": "assistant", "content": arith_answer(a, op, b)},
                 {"role": "user", "content": q2}]
        return first, arith_answer(r, op2, n)
    if kind == "followup_capital":
        c, cap = rng.choice(CAPITALS)
        first = [{"role": "user", "content": "What is the capital of %s?" % c},
                 {"role": "assistant", "content": "The capital of %s is %s." % (c, cap)},
                 {"role": "user", "content": rng.choice(["Which country was that?",
                                                          "Which country did I ask about?"])}]
        return first, "You asked about %s, whose capital is %s." % (c, cap)
    raise ValueError(kind)


def train_conversations(seed, count):
    rng = random.Random(seed)
    names = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    out = []
    for _ in range(count):
        kind = rng.choices(names, weights)[0]
        msgs, reply = conversation(rng, kind)
        out.append({"kind": kind, "thinking": rng.random() < 0.4, "messages": msgs, "reply": reply})
    return out


def eval_set(n_arith=200):
    """Fixed held-out questions (seed-independent): arithmetic alternating
    thinking off/on, and every capital once."""
    rng = random.Random("tinylm demo held-out v1")
    seen, arith = set(), []
    while len(arith) < n_arith:
        a, op, b = arith_pair(rng, True)
        if (a, op, b) in seen:
            continue
        seen.add((a, op, b))
        arith.append({"messages": [{"role": "user", "content": "What is %d %s %d?" % (a, op, b)}],
                      "enable_thinking": len(arith) % 2 == 1, "expected": arith_answer(a, op, b)})
    capitals = [{"messages": [{"role": "user", "content": "What is the capital of %s?" % c}],
                 "enable_thinking": i % 2 == 1, "expected": "The capital of %s is %s." % (c, cap)}
                for i, (c, cap) in enumerate(CAPITALS)]
    return {"arith": arith, "capitals": capitals}


def target_text(reply, thinking):
    return (THINK_EMPTY if thinking else "") + reply + IM_END


def render_prompts(tokenizer_dir, convs):
    """Each conversation up to its last reply, through the real template, with
    the generation prompt. Checks that the rendering of the whole
    conversation is the prompt followed by the target (and a newline), so the
    training sequence is exactly what tinylm will see and should write."""
    compiled, special, _ = tmpl_render.load(os.path.join(tokenizer_dir, "tokenizer_config.json"))
    prompts = []
    for c in convs:
        p = tmpl_render.render(compiled, special, {"messages": c["messages"], "add_generation_prompt": True,
                                                   "enable_thinking": c["thinking"]})
        if "reply" in c:
            whole = tmpl_render.render(compiled, special, {
                "messages": c["messages"] + [{"role": "assistant", "content": c["reply"]}],
                "add_generation_prompt": False, "enable_thinking": c["thinking"]})
            if whole != p + target_text(c["reply"], c["thinking"]) + "\n":
                raise Fail("internal", "template rendering of a whole conversation is not prompt + reply")
        prompts.append(p)
    return prompts


def encode_all(tinylm, tok_slm, texts):
    lines = "".join(json.dumps({"hex": t.encode("utf-8").hex()}) + "\n" for t in texts)
    p = subprocess.run([tinylm, "encode", tok_slm, "--jsonl"], input=lines.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise Fail("encode", p.stderr.decode(errors="replace").strip())
    out = [json.loads(x) for x in p.stdout.decode().splitlines()]
    if len(out) != len(texts) or any("ids" not in o for o in out):
        raise Fail("encode", "tinylm encode --jsonl gave %d results for %d texts" % (len(out), len(texts)))
    return [o["ids"] for o in out]


def build(tinylm, tokenizer_dir, seed, count, outdir):
    os.makedirs(outdir, exist_ok=True)
    tok_slm = os.path.join(outdir, "tok.slm")
    p = subprocess.run([tinylm, "convert", tokenizer_dir, "-o", tok_slm, "--tokenizer-only"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise Fail("convert", p.stderr.decode(errors="replace").strip())
    train = train_conversations(seed, count)
    ev = eval_set()
    ev_items = ev["arith"] + ev["capitals"]
    for e in ev_items:
        e["thinking"] = e["enable_thinking"]
    prompts = render_prompts(tokenizer_dir, train + ev_items)
    targets = [target_text(c["reply"], c["thinking"]) for c in train]
    targets += [target_text(e["expected"], e["thinking"]) for e in ev_items]
    ids = encode_all(tinylm, tok_slm, prompts + targets)
    n = len(prompts)
    prompt_ids, target_ids = ids[:n], ids[n:]
    used = set()
    for x in ids:
        used.update(x)
    lines = []
    for c, pi, ti in zip(train, prompt_ids, target_ids):
        lines.append(json.dumps({"kind": c["kind"], "thinking": c["thinking"],
                                 "prompt_ids": pi, "target_ids": ti}, separators=(",", ":")) + "\n")
    data = "".join(lines).encode()
    with open(os.path.join(outdir, "train.jsonl"), "wb") as f:
        f.write(data)
    for e in ev_items:
        del e["thinking"]
    with open(os.path.join(outdir, "eval.json"), "w") as f:
        json.dump(ev, f, indent=1)
    with open(os.path.join(outdir, "idmap.json"), "w") as f:
        json.dump({"vocab_size": VOCAB_SIZE, "ids": sorted(used)}, f)
    kinds = {}
    for c in train:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    meta = {"seed": seed, "count": count, "train_sha256": hashlib.sha256(data).hexdigest(),
            "compact_vocab": len(used), "kinds": kinds}
    with open(os.path.join(outdir, "corpus.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def main(argv):
    opts = parse_flags(argv, ("--tinylm", "--tokenizer-dir", "--seed", "--count", "-o"), __doc__)
    if opts is None:
        return 2
    try:
        seed, count = int(opts["--seed"]), int(opts["--count"])
        if count < 1:
            raise ValueError
    except ValueError:
        print("error: usage: --seed and --count take integers (count >= 1)", file=sys.stderr)
        return 2
    try:
        meta = build(opts["--tinylm"], opts["--tokenizer-dir"], seed, count, opts["-o"])
    except Fail as e:
        print("error: %s: %s" % (e.code, e), file=sys.stderr)
        return 1
    except OSError as e:
        print("error: io: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
