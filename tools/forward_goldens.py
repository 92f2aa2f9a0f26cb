#!/usr/bin/python3
"""Writes (or with --check, re-derives and compares) the forward-pass
golden vectors of tests/golden/forward/ with the NumPy oracle
(tools/oracle/qwen3_ref.py, float64) on the checkpoints of
tools/forward_specs.py. A text prompt's ids come from the tokenizer oracle
(HF tokenizers); TINYLM only writes the synthetic checkpoints
(`tinylm synth`, whose bytes the oracle reads) and converts them.

    forward_goldens.py [--check] [TINYLM]
"""

import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import forward_specs as fs  # noqa: E402


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    tinylm = args[0] if args else os.path.join(fs.ROOT, "build", "gcc", "tinylm")
    oracle = os.path.join(fs.ROOT, "tools", "oracle", "qwen3_ref.py")
    work = tempfile.mkdtemp(prefix="tl_fwd_")
    stale = []
    try:
        for name, (kind, prompt, positions, stages, steps) in sorted(fs.CASES.items()):
            hf = os.path.join(work, kind)
            if not os.path.isdir(hf):
                fs.checkpoint(tinylm, kind, hf)
                fs.run([tinylm, "convert", hf, "-o", hf + ".slm"])
            ids = fs.prompt_ids(prompt)
            out = os.path.join(work, name + ".cbor")
            fs.run(["/usr/bin/python3", oracle, hf, "--ids", " ".join(map(str, ids)),
                    "--precision", "f64", "--positions", positions, "--stages",
                    stages, "--weights", "synth tiny.json seed 7 " + kind,
                    "--greedy", str(steps), "-o", out])
            golden = os.path.join(fs.GOLDEN_DIR, name + ".cbor")
            if check:
                with open(out, "rb") as a, open(golden, "rb") as b:
                    if a.read() != b.read():
                        stale.append(name)
            else:
                shutil.copyfile(out, golden)
                print("wrote", os.path.relpath(golden, fs.ROOT),
                      os.path.getsize(golden), "bytes")
    finally:
        shutil.rmtree(work)
    if stale:
        print("stale forward goldens (regenerate with make forward-goldens "
              "after review): " + ", ".join(stale))
        return 1
    if check:
        print("forward goldens current:", ", ".join(sorted(fs.CASES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
