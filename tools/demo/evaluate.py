#!/usr/bin/python3
"""Evaluates the demo model through tinylm: greedy replies to the held-out questions.

    evaluate.py --tinylm BIN --model MODEL.slm --eval eval.json
                [--limit N] [-n MAX_TOKENS] [--torch WEIGHTS IDMAP] [--json OUT]

eval.json is tools/demo/corpus.py's (held-out arithmetic pairs that training
never saw, and every capital). Each question runs as
`tinylm run MODEL --messages CONV --temperature 0 -n MAX_TOKENS --json`; a
reply is correct when its text is exactly the expected reply (after the
empty think block when thinking is on), and it ended at EOS when tinylm's
stop reason is "eos". --limit N takes the first N arithmetic questions.
With --torch, the trainer's own module (tools/demo/model.py, the committed
BF16 weights) decodes the same prompts greedily, and the token ids are
compared with tinylm's (needs torch). Prints a summary; --json also writes
every reply. Exit 0 when it ran (whatever the accuracy), 1 on an error.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

THINK_EMPTY = "<think>\n\n</think>\n\n"


def run_one(tinylm, model, q, n, tmp):
    conv = os.path.join(tmp, "conv.json")
    with open(conv, "w") as f:
        json.dump({"messages": q["messages"], "add_generation_prompt": True,
                   "enable_thinking": q["enable_thinking"]}, f)
    p = subprocess.run([tinylm, "run", model, "--messages", conv, "--temperature", "0", "-n", str(n),
                        "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("tinylm run: " + p.stderr.decode(errors="replace").strip())
    r = json.loads(p.stdout)
    want = (THINK_EMPTY if q["enable_thinking"] else "") + q["expected"]
    return {"question": q["messages"][-1]["content"], "thinking": q["enable_thinking"],
            "expected": q["expected"], "text": r["text"], "ids": r["ids"], "stop": r["stop"],
            "prompt_tokens": r["prompt_tokens"], "correct": r["text"] == want and r["stop"] == "eos",
            "timings": r["timings"]}


def torch_greedy(weights, idmap_path, tinylm, tok_model, replies, n):
    """The trainer's module on the same prompts (encoded by tinylm): greedy ids over the full vocabulary."""
    import torch
    import model as demo_model
    with open(idmap_path) as f:
        idmap = json.load(f)
    ids = idmap["ids"]
    index = {t: i for i, t in enumerate(ids)}
    tensors, meta = demo_model.read_safetensors(weights)
    net = demo_model.torch_model()(demo_model.config_of(meta), len(ids))
    net.load_hf_state({k: demo_model.from_raw(*v) for k, v in tensors.items()})
    outside = next(t for t in range(idmap["vocab_size"]) if t not in index)  # lowest zero row
    out = []
    for r in replies:
        p = subprocess.run([tinylm, "render", tok_model, "--messages", r["conv"]], stdout=subprocess.PIPE,
                           check=True)
        e = subprocess.run([tinylm, "encode", tok_model, "--file", "/dev/stdin", "--json"], input=p.stdout,
                           stdout=subprocess.PIPE, check=True)
        seq = [index[t] for t in json.loads(e.stdout)["ids"]]
        got = []
        with torch.no_grad():
            for _ in range(n):
                lg = net(torch.tensor([seq]))[0, -1]
                m = int(lg.argmax())
                tok = ids[m] if lg[m] > 0 else outside  # zero rows win ties below 0
                got.append(tok)
                if tok == 151645 or tok not in index:
                    break
                seq.append(index[tok])
        out.append(got)
    return out


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tinylm", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--limit", type=int)
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("--torch", nargs=2, metavar=("WEIGHTS", "IDMAP"))
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    try:
        with open(a.eval) as f:
            ev = json.load(f)
        arith = ev["arith"][:a.limit] if a.limit else ev["arith"]
        res = {}
        with tempfile.TemporaryDirectory() as tmp:
            for kind, qs in (("arith", arith), ("capitals", ev["capitals"])):
                res[kind] = [run_one(a.tinylm, a.model, q, a.n, tmp) for q in qs]
            if a.torch:
                rs = res["arith"] + res["capitals"]
                qs = arith + ev["capitals"]
                for i, (q, r) in enumerate(zip(qs, rs)):
                    r["conv"] = os.path.join(tmp, "c%d.json" % i)
                    with open(r["conv"], "w") as f:
                        json.dump({"messages": q["messages"], "add_generation_prompt": True,
                                   "enable_thinking": q["enable_thinking"]}, f)
                t_ids = torch_greedy(a.torch[0], a.torch[1], a.tinylm, a.model, rs, a.n)
                for r, t in zip(rs, t_ids):
                    r["torch_ids"] = t
                    r["torch_agrees"] = t == r["ids"]  # tinylm's ids include the EOS
                    del r["conv"]
    except (OSError, ValueError, KeyError, RuntimeError, subprocess.CalledProcessError) as e:
        print("error: eval: %s" % e, file=sys.stderr)
        return 1
    every = res["arith"] + res["capitals"]
    summary = {}
    for kind in ("arith", "capitals"):
        rs = res[kind]
        summary[kind] = {"questions": len(rs), "correct": sum(r["correct"] for r in rs)}
    summary["eos"] = {"replies": len(every), "ended_at_eos": sum(r["stop"] == "eos" for r in every)}
    summary["tokens_per_s"] = {
        k: round(sum(r["timings"][k + "_tokens_per_s"] for r in every) / len(every), 1)
        for k in ("prefill", "decode")}
    if a.torch:
        summary["torch_agrees"] = sum(r["torch_agrees"] for r in every)
    a_ = summary["arith"]
    c_ = summary["capitals"]
    e_ = summary["eos"]
    print("held-out arithmetic: %d/%d correct (%.1f%%)" % (a_["correct"], a_["questions"],
                                                          100.0 * a_["correct"] / a_["questions"]))
    print("capitals:            %d/%d correct" % (c_["correct"], c_["questions"]))
    print("ended at EOS:        %d/%d replies (limit %d tokens)" % (e_["ended_at_eos"], e_["replies"], a.n))
    print("mean tokens/s:       prefill %.1f, decode %.1f" % (summary["tokens_per_s"]["prefill"],
                                                              summary["tokens_per_s"]["decode"]))
    if a.torch:
        print("torch module agrees: %d/%d replies, token for token" % (summary["torch_agrees"], len(every)))
    wrong = [r for r in every if not r["correct"]][:5]
    for r in wrong:
        print("  wrong: %r -> %r (%s)" % (r["question"], r["text"], r["stop"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "replies": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
