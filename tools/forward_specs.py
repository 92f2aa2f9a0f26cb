"""The forward-pass golden cases (tests/golden/forward/): which synthetic
checkpoint, which prompt, which captures. Shared by tools/forward_goldens.py
(writes the goldens with the NumPy oracle) and tests/model/forward_test.py
(checks tinylm against them), so both build byte-identical checkpoints.

A checkpoint is `tinylm synth --config tests/golden/forward/tiny.json` with
the tiny tokenizer fixture, without generation_config.json (the fixture's
ids are not the publisher's, so the publisher profile does not apply), and
optionally with the q_norm/k_norm weights scaled (large attention scores).
"""

import json
import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden", "forward")
CONFIG = os.path.join(GOLDEN_DIR, "tiny.json")
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")


def long_ids(n, seed=12345, vocab=346):
    """n pseudo-random ids below vocab (a 32-bit LCG: no numpy needed)."""
    ids, x = [], seed
    for _ in range(n):
        x = (1103515245 * x + 12345) % 2**31
        ids.append(x % vocab)
    return ids


NO_ATTENTION_MAPS = ("embedding,attn_norm,q,k,v,q_norm,k_norm,q_rope,k_rope,"
                     "attn_out,o_proj,attn_residual,mlp_norm,gate,up,act,down,"
                     "layer_out,final_norm,logits")

# name -> (checkpoint, prompt, positions, stages, greedy continuation steps)
CASES = {
    "tiny-ids": ("bf16", {"ids": [3, 17, 200, 45, 9, 322, 100, 7]}, "all", "all",
                 32),
    "tiny-text": ("bf16", {"text": "Hello, the cat!"}, "all", "all", 32),
    "tiny-long": ("bf16", {"ids": long_ids(1100)}, "0,511,1023,1099",
                  NO_ATTENTION_MAPS, 0),
    "tiny-large-scores": ("f32-scaled-norms", {"ids": [5, 80, 300, 12, 7, 99]},
                          "all", "all", 0),
}

# The q_norm/k_norm scale of "f32-scaled-norms": scores reach ~100, where
# exp without the maximum subtracted overflows f32.
NORM_SCALE = 12.0


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _scale_norms(path):
    """Multiplies every q_norm/k_norm weight (F32) in place."""
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for name, t in header.items():
            if name == "__metadata__" or not name.endswith(("q_norm.weight", "k_norm.weight")):
                continue
            assert t["dtype"] == "F32"
            a, b = t["data_offsets"]
            f.seek(base + a)
            vals = struct.unpack("<%df" % ((b - a) // 4), f.read(b - a))
            f.seek(base + a)
            f.write(struct.pack("<%df" % len(vals), *[v * NORM_SCALE for v in vals]))


def checkpoint(tinylm, kind, out_dir):
    """Writes the checkpoint of that kind into out_dir (must not exist)."""
    dtype = "bf16" if kind == "bf16" else "f32"
    run([tinylm, "synth", "--config", CONFIG, "--seed", "7", "--dtype", dtype,
         "-o", out_dir, "--tokenizer-dir", TOKENIZER])
    os.remove(os.path.join(out_dir, "generation_config.json"))
    if kind == "f32-scaled-norms":
        _scale_norms(os.path.join(out_dir, "model.safetensors"))


def prompt_ids(prompt):
    """The prompt's ids: given, or the text through the tokenizer oracle (HF
    tokenizers on the fixture's tokenizer.json, tools/oracle/tok_ids.mjs),
    never through the tokenizer under test."""
    if "ids" in prompt:
        return prompt["ids"]
    out = run(["node", os.path.join(ROOT, "tools", "oracle", "tok_ids.mjs"),
               "--tokenizer", os.path.join(TOKENIZER, "tokenizer.json")],
              input=json.dumps({"text": prompt["text"]}) + "\n").stdout
    return json.loads(out)["ids"]
