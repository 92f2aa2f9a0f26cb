#!/usr/bin/python3
"""Trains the tinylm demo model (issue 15) on the CPU with Debian's torch 1.13.

    train.py --corpus DIR --steps N [--seed S] [--batch B] [--lr LR]
             [--warmup N] [--shape JSON] [--init WEIGHTS] -o OUTDIR

DIR is tools/demo/corpus.py's output (train.jsonl, idmap.json, corpus.json).
The model is tools/demo/model.py's Qwen3 module over the compact vocabulary;
the loss is the exact full-vocabulary cross-entropy of each reply token
(prompt tokens are not scored): -logit + full_log_z, the compact partition
function plus one e^0 for each of the vocab_size - V rows that stay zero.
AdamW, linear warm-up then cosine decay to 10%, gradient clipping at 1.
--init continues from a previous run's weights (fresh optimizer state; its
train.json is kept as "parent"). Seeded and deterministic
(torch.use_deterministic_algorithms, one thread).

Writes OUTDIR/demo.safetensors (compact weights, BF16, HF tensor names, the
id map in the metadata) and OUTDIR/train.json (config, seed, steps, batch,
learning rate, loss curve, corpus SHA-256, seconds), every --save-every steps
and at the end.
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# One thread, and OpenBLAS told so before torch loads it: on this shared
# 2-core machine two threads (torch's pool plus OpenBLAS's own) measured
# 4.2 s per step against 0.87 s for one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import model as demo_model  # noqa: E402


def load_corpus(d):
    with open(os.path.join(d, "idmap.json")) as f:
        idmap = json.load(f)
    with open(os.path.join(d, "corpus.json")) as f:
        meta = json.load(f)
    index = {t: i for i, t in enumerate(idmap["ids"])}
    rows = []
    with open(os.path.join(d, "train.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            rows.append(([index[t] for t in r["prompt_ids"]], [index[t] for t in r["target_ids"]]))
    return idmap, meta, rows


def batch_tensors(torch, rows):
    """inputs [B, T], labels [B, T] (-1 where not scored)."""
    seqs = [p + t for p, t in rows]
    t_max = max(len(s) for s in seqs) - 1
    inp = torch.zeros((len(rows), t_max), dtype=torch.long)
    lab = torch.full((len(rows), t_max), -1, dtype=torch.long)
    for b, ((p, t), s) in enumerate(zip(rows, seqs)):
        inp[b, :len(s) - 1] = torch.tensor(s[:-1])
        lab[b, len(p) - 1:len(s) - 1] = torch.tensor(t)
    return inp, lab


def save(torch, net, idmap, cfg, record, out):
    tensors = {n: ("BF16", list(t.shape), demo_model.to_bf16_bytes(t)) for n, t in net.hf_state().items()}
    tmp = os.path.join(out, "demo.safetensors.tmp")
    demo_model.write_safetensors(tmp, tensors, {"tinylm_demo_idmap": json.dumps(idmap["ids"]),
                                                "tinylm_demo_vocab_size": str(idmap["vocab_size"]),
                                                "tinylm_demo_config": json.dumps(cfg)})
    os.replace(tmp, os.path.join(out, "demo.safetensors"))
    with open(os.path.join(out, "train.json.tmp"), "w") as f:
        json.dump(record, f, indent=1)
    os.replace(os.path.join(out, "train.json.tmp"), os.path.join(out, "train.json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--shape", default="{}", help="JSON object overriding model.CONFIG's fields")
    ap.add_argument("--init", help="start from these compact weights (a previous run's, same id map; "
                    "its train.json beside it is recorded as the parent)")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("error: missing: torch is not installed (make demo-train installs python3-torch)", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True)
    os.makedirs(a.o, exist_ok=True)
    idmap, meta, rows = load_corpus(a.corpus)
    v, n_full = len(idmap["ids"]), idmap["vocab_size"]
    cfg = dict(demo_model.CONFIG, **json.loads(a.shape))
    net = demo_model.torch_model()(cfg, v)
    with torch.no_grad():
        for name, t in net.hf_state().items():
            if t.dim() == 2:
                t.normal_(0.0, 0.02)
    parent = None
    if a.init:
        tensors, wmeta = demo_model.read_safetensors(a.init)
        if json.loads(wmeta["tinylm_demo_idmap"]) != idmap["ids"] or demo_model.config_of(wmeta) != cfg:
            print("error: init: %s has another id map or shape" % a.init, file=sys.stderr)
            return 1
        net.load_hf_state({k: demo_model.from_raw(*v) for k, v in tensors.items()})
        with open(os.path.join(os.path.dirname(a.init), "train.json")) as f:
            parent = json.load(f)
        with open(a.init, "rb") as f:
            parent["weights_sha256"] = hashlib.sha256(f.read()).hexdigest()
    opt = torch.optim.AdamW(net.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.01)
    rng = random.Random(a.seed)
    order = []
    record = {"config": dict(cfg, vocab_compact=v, vocab_size=n_full), "seed": a.seed,
              "steps": a.steps, "batch": a.batch, "lr": a.lr, "warmup": a.warmup,
              "corpus_sha256": meta["train_sha256"], "corpus_seed": meta["seed"],
              "corpus_count": meta["count"], "torch": torch.__version__, "parent": parent,
              "loss_curve": []}
    t0 = time.time()
    acc = []
    for step in range(1, a.steps + 1):
        if len(order) < a.batch:
            perm = list(range(len(rows)))
            rng.shuffle(perm)
            order += perm
        pick, order = order[:a.batch], order[a.batch:]
        inp, lab = batch_tensors(torch, [rows[i] for i in pick])
        if step <= a.warmup:
            lr = a.lr * step / a.warmup
        else:
            frac = (step - a.warmup) / max(1, a.steps - a.warmup)
            lr = a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        logits = net(inp)
        sel = lab >= 0
        lg = logits[sel]
        loss = (demo_model.full_log_z(lg, n_full) - lg.gather(1, lab[sel][:, None])[:, 0]).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        acc.append(loss.item())
        if step % 10 == 0 or step == a.steps:
            mean = sum(acc) / len(acc)
            acc = []
            record["loss_curve"].append([step, round(mean, 5)])
            print("step %d loss %.4f lr %.2e %.0fs" % (step, mean, lr, time.time() - t0), flush=True)
        if step % a.save_every == 0 or step == a.steps:
            record["steps_done"] = step
            record["seconds"] = round(time.time() - t0, 1)
            save(torch, net, idmap, cfg, record, a.o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
