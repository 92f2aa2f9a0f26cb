#!/usr/bin/python3
"""The layers include downward only (issue 28 item 10, docs/architecture.md
§2): core <- host <- lib and tools <- native. The Makefile compiles each
layer's sources with the include paths of the layers below it alone, so a
header of a layer above does not compile there. For one source of each
layer this takes the command make would run for it (`make -n -B`), puts a
probe file in the source's place, and checks that the probe including a
header of a layer above fails for want of it, while one including a header
of its own layer or below compiles (the same command works otherwise).

    layers_test.py WORKDIR
"""

import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

# (a source of the layer, headers it may include, headers of layers above)
LAYERS = [
    ("src/host/file.c", ["tinylm.h", "arena.h", "file.h"], ["lane.h", "convert.h", "cli.h"]),
    ("src/lib/turn.c", ["file.h", "model.h"], ["convert.h", "cli.h"]),
    ("src/tools/convert.c", ["file.h", "encoder.h", "slm_write.h"], ["model.h", "cli.h"]),
]


def command(src):
    """make's compile command for src's object in the gcc build."""
    obj = "build/gcc/obj/" + src[:-2] + ".o"
    p = subprocess.run(["make", "--no-print-directory", "-n", "-B", "CFG=gcc", obj],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    for line in p.stdout.splitlines():
        words = shlex.split(line)
        if src in words and "-c" in words:
            return words
    return None


def compile_probe(words, src, probe, header):
    with open(probe, "w") as f:
        f.write(f'#include "{header}"\nint tl_probe(void);\nint tl_probe(void) {{ return 0; }}\n')
    cmd = [probe if w == src else w for w in words]
    out = cmd.index("-o")
    cmd[out + 1] = probe[:-2] + ".o"
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    work = os.path.abspath(sys.argv[1])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for src, allowed, above in LAYERS:
        layer = os.path.dirname(src)
        words = command(src)
        if not check(f"{layer}: make has a compile command for {src}", words is not None):
            continue
        probe = os.path.join(work, os.path.basename(layer) + "_probe.c")
        for h in allowed:
            p = compile_probe(words, src, probe, h)
            check(f"{layer}: including {h} compiles", p.returncode == 0, p.stderr[-800:])
        for h in above:
            p = compile_probe(words, src, probe, h)
            check(f"{layer}: including {h} (a layer above) does not compile",
                  p.returncode != 0 and f"{h}: No such file" in p.stderr, p.stderr[-800:])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
