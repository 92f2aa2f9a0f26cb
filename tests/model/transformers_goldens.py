#!/usr/bin/python3
"""The goldens of tests/golden/transformers/ (Hugging Face transformers'
own Qwen3ForCausalLM, float32; see the README there) on the strict and the
fast lane, through `tinylm verify`:

  * manifest.json is a tinylm.golden-set/1 whose every golden file has the
    SHA-256 it lists, and whose hashes and commands are the README's;
  * each checkpoint is rebuilt with the manifest's regenerate_checkpoint
    command and its model.safetensors must have the manifest's SHA-256 (the
    goldens say nothing about any other bytes);
  * it is converted as the README says, once, and `tinylm verify --lane
    scalar` and `--lane fast` of every golden of that checkpoint exit 0
    with 0 failing and 0 missing records, no logit row or greedy step with
    a different argmax, and the whole greedy continuation agreeing.

One line per check, the lane's worst NRMSE and logits max_abs on the
verify lines, "N passed, N failed" last. No torch: the goldens are data.

    transformers_goldens.py TINYLM WORKDIR
"""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

GOLDEN_DIR = os.path.join(ROOT, "tests", "golden", "transformers")
FORMAT = "tinylm.golden-set/1"
LANES = ("scalar", "fast")
# The README's `tinylm convert` flags for each golden's artifact (its
# "Verified against" lines): the tiny f32 checkpoint kept f32, the others
# at their source dtype (bf16).
CONVERT = {
    "tiny-seed1-f32-p16-greedy8.cbor": ["--quant", "f32", "--profile", "qwen3-0.6b-publisher"],
    "demo-sum-greedy14.cbor": [],
    "demo-capital-greedy8.cbor": [],
    "qwen3-0.6b-seed1-bf16-p8-greedy4.cbor": ["--profile", "qwen3-0.6b-publisher"],
}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def timed(what, argv):
    """Runs argv from the repository root; (exit status, output tail)."""
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    print("  %s: %.1f s" % (what, time.monotonic() - t0))
    return p.returncode, (p.stdout + p.stderr)[-600:]


def regenerate_argv(tinylm, command, out_dir):
    """The manifest's command as argv: its `tinylm` is the binary under
    test, DIR the output directory. Only tinylm and /usr/bin/python3
    commands are run (the manifest is data, not a script)."""
    argv = shlex.split(command)
    if not argv or argv[0] not in ("tinylm", "/usr/bin/python3") or argv.count("DIR") != 1:
        return None
    if argv[0] == "tinylm":
        argv[0] = tinylm
    return [out_dir if a == "DIR" else a for a in argv]


def check_manifest(manifest):
    goldens = manifest.get("goldens")
    ok = (manifest.get("format") == FORMAT and isinstance(goldens, list) and goldens and
          all(isinstance(g, dict) for g in goldens))
    check("manifest.json is a %s with goldens" % FORMAT, ok)
    if not ok:
        return []
    with open(os.path.join(GOLDEN_DIR, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    good = []
    for g in goldens:
        name = g.get("file")
        path = os.path.join(GOLDEN_DIR, name) if isinstance(name, str) else None
        got = sha256_file(path) if path and os.path.isfile(path) else None
        if not check("%s: SHA-256 as listed in the manifest" % name,
                     got is not None and got == g.get("sha256"),
                     "file %s, manifest %s" % (got, g.get("sha256"))):
            continue
        ck = (g.get("checkpoint") or {}).get("model.safetensors")
        cmd = g.get("regenerate_checkpoint")
        # The README is the record of the run; the manifest only restates it.
        stated = [v for v in (g["sha256"], ck, cmd) if isinstance(v, str) and v in readme]
        if not check("%s: file hash, checkpoint hash and command are the README's" % name,
                     len(stated) == 3 and name in CONVERT,
                     "%d of 3 found in README.md; convert flags known: %s"
                     % (len(stated), name in CONVERT)):
            continue
        good.append(g)
    return good


def verify_line(tinylm, model, golden, lane):
    """One verify run: (ok, detail, worst NRMSE, its record, logits max_abs)."""
    p = subprocess.run([tinylm, "verify", model, "--golden", golden, "--lane", lane, "--json"],
                       capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return False, "exit %d, no JSON: %s" % (p.returncode, p.stderr[-300:]), None
    counts, gr = doc.get("counts", {}), doc.get("greedy") or {}
    problems = []
    if p.returncode != 0:
        problems.append("exit %d" % p.returncode)
    for k in ("failing", "missing", "logits_different", "greedy_different"):
        if counts.get(k) != 0:
            problems.append("%s %s" % (k, counts.get(k)))
    if not (gr.get("steps", 0) > 0 and gr.get("agreed") == gr.get("steps") and
            gr.get("verdict") == "same"):
        problems.append("greedy %s of %s agree (%s)"
                        % (gr.get("agreed"), gr.get("steps"), gr.get("verdict")))
    if (doc.get("reference") or {}).get("producer") != "transformers":
        problems.append("reference %r" % doc.get("reference"))
    recs = doc.get("records") or []
    worst = max(recs, key=lambda r: r.get("nrmse", 0.0), default=None)
    logits = [r for r in recs if r.get("stage") == "logits"]
    fig = None
    if worst is not None:
        fig = "%s; %d records, worst NRMSE %.3g (%s/%s), logits max_abs %.3g, greedy %s of %s" % (
            doc.get("profile"), counts.get("records", 0), worst["nrmse"], worst["stage"],
            "-" if worst["layer"] is None else worst["layer"],
            logits[0]["max_abs"] if logits else float("nan"), gr.get("agreed"), gr.get("steps"))
    return not problems and worst is not None, "; ".join(problems), fig


def main(tinylm, work):
    tinylm = os.path.abspath(tinylm)
    work = os.path.abspath(work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(GOLDEN_DIR, "manifest.json"), encoding="utf-8") as f:
        goldens = check_manifest(json.load(f))

    # One checkpoint (and one artifact) per distinct regeneration: the two
    # demo goldens share theirs.
    groups = {}
    for g in goldens:
        groups.setdefault((g["regenerate_checkpoint"], g["checkpoint"]["model.safetensors"]),
                          []).append(g)
    for n, ((command, want), members) in enumerate(groups.items()):
        names = ", ".join(g["file"] for g in members)
        hf = os.path.join(work, "ckpt%d" % n)
        model = os.path.join(work, "ckpt%d.slm" % n)
        flags = {tuple(CONVERT[g["file"]]) for g in members}
        argv = regenerate_argv(tinylm, command, hf)
        if not check("regeneration command of %s runs tinylm or /usr/bin/python3 into DIR" % names,
                     argv is not None and len(flags) == 1, command):
            continue
        print("checkpoint: %s" % command)
        rc, tail = timed("regenerate", argv)
        st = os.path.join(hf, "model.safetensors")
        t0 = time.monotonic()
        got = sha256_file(st) if rc == 0 and os.path.isfile(st) else None
        print("  sha256: %.1f s" % (time.monotonic() - t0))
        if not check("checkpoint of %s: model.safetensors SHA-256 %s" % (names, want),
                     got == want,
                     ("the command failed (exit %d): %s" % (rc, tail)) if got is None else
                     "regenerated %s: the checkpoint's bytes changed, so these goldens no "
                     "longer describe it (see tests/golden/transformers/README.md)" % got):
            shutil.rmtree(hf, ignore_errors=True)
            continue
        rc, tail = timed("convert", [tinylm, "convert", hf, "-o", model, *flags.pop()])
        shutil.rmtree(hf, ignore_errors=True)
        if not check("convert for %s" % names, rc == 0, tail):
            continue
        for g in members:
            for lane in LANES:
                t0 = time.monotonic()
                ok, detail, fig = verify_line(tinylm, model, os.path.join(GOLDEN_DIR, g["file"]),
                                              lane)
                check("verify %s --lane %s (%.1f s): %s" % (g["file"], lane,
                                                           time.monotonic() - t0, fig or "no records"),
                      ok, detail)
        for f in (model, model + ".receipt.cbor"):
            if os.path.exists(f):
                os.remove(f)
    return summary()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
