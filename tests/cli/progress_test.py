#!/usr/bin/python3
"""What chat, run and convert say on a terminal before their first output
(issue 28 item 5), and that they say nothing more when stderr is not one:

  * run and chat, stderr a terminal (a pty): "[MODEL: verifying the
    digests (N MB) …]" while the model opens, then "[MODEL: verified N MB
    in S s, X MB/s]"; "[fast lane: loading the weights (W MB) …]" while
    the session is made, then "[fast lane: loaded the weights, W MB in S
    s, X MB/s]" (N the file's size, W the weights' bytes of run
    --preflight --json, both in MB); chat's banner after them;
  * convert, stderr a terminal: the steps before the first tensor is
    written as they start (the tokenizer, the SHA-256 of the safetensors,
    every source tensor checked as MB of the total, then converting and
    writing), then the tensors written, and the artifact is the one
    converted with stderr a pipe, byte for byte;
  * stderr a pipe: none of those lines; run's stderr is its summary line
    alone, chat's the banner, convert's nothing (--progress: the steps
    one line each).

    progress_test.py TINYLM WORKDIR
"""

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

MODEL_SRC = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")


def run_tty(args, stdin=b""):
    """args with stderr a pty (stdin and stdout pipes): (rc, stdout, stderr
    as the terminal got it)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    p.stdin.write(stdin)
    p.stdin.close()
    err = b""
    while True:
        r, _, _ = select.select([master], [], [], 120)
        if not r:
            break
        try:
            d = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not d:
            break
        err += d
    out = p.stdout.read()
    rc = p.wait(timeout=120)
    os.close(master)
    return rc, out, err.decode("utf-8", "replace")


def run_pipe(args, stdin=b""):
    p = subprocess.run(args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def lines(tty_text):
    """What a terminal shows, as lines: a carriage return and erase-line
    start the line again."""
    shown = []
    for raw in tty_text.replace("\r\n", "\n").split("\n"):
        shown.append(raw.split("\r")[-1].replace("\x1b[K", ""))
    return shown


def main():
    if len(sys.argv) != 3:
        print("usage: progress_test.py TINYLM WORKDIR")
        return 2
    tinylm, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(work, "tiny.slm")
    shutil.copy(MODEL_SRC, model)
    mb = f"{os.path.getsize(model) / 1e6:.0f}"
    plan = json.loads(subprocess.run([tinylm, "run", model, "--prompt", "hi", "--preflight", "--json"],
                                     capture_output=True, check=True).stdout)
    wmb = f"{plan['plan_bytes']['weights'] / 1e6:.0f}"
    verifying = f"[{model}: verifying the digests ({mb} MB) …]"
    verified = re.compile(re.escape(f"[{model}: verified {mb} MB in ") + r"[0-9.]+ s(, [0-9]+ MB/s)?\]$")
    loading = f"[fast lane: loading the weights ({wmb} MB) …]"
    loaded = re.compile(re.escape(f"[fast lane: loaded the weights, {wmb} MB in ") + r"[0-9.]+ s(, [0-9]+ MB/s)?\]$")
    steps = ("verifying the digests", "verified", "loading the weights", "loaded the weights")

    # run: the steps on a terminal, in order, the line rewritten in place.
    cmd = [tinylm, "run", model, "--prompt", "hi", "-n", "2", "--lane", "fast"]
    rc, out_tty, err = run_tty(cmd)
    shown = [x for x in lines(err) if x]
    check("run, stderr a terminal: the model's digests are said while they are verified",
          rc == 0 and verifying in err, repr(err))
    check("run, stderr a terminal: then verified, MB and MB/s, and loading then loaded the weights, in that order",
          len(shown) >= 3 and verified.match(shown[0]) is not None and loaded.match(shown[1]) is not None
          and loading in err and err.index(verifying) < err.index(loading), repr(shown))
    check("run, stderr a terminal: the summary line follows", shown[-1].startswith("[max_tokens after 2 tokens"), repr(shown))
    rc, out_pipe, err = run_pipe(cmd)
    check("run, stderr a pipe: no step lines, the summary line alone",
          rc == 0 and not any(s in err for s in steps) and len(err.splitlines()) == 1
          and err.startswith("[max_tokens after 2 tokens"), repr(err))
    check("run: the reply is the same either way", out_tty == out_pipe and out_pipe != b"", repr((out_tty, out_pipe)))

    # chat: the steps, then the banner.
    cmd = [tinylm, "chat", model, "--lane", "fast"]
    rc, _, err = run_tty(cmd, b"/quit\n")
    shown = [x for x in lines(err) if x]
    check("chat, stderr a terminal: verified and loaded lines before the banner",
          rc == 0 and verifying in err and loading in err and len(shown) >= 3 and verified.match(shown[0]) is not None
          and loaded.match(shown[1]) is not None and shown[2].startswith(f"tinylm chat: {model}"), repr(err))
    rc, _, err = run_pipe(cmd, b"/quit\n")
    check("chat, stderr a pipe: no step lines, the banner first",
          rc == 0 and not any(s in err for s in steps) and err.startswith(f"tinylm chat: {model}"), repr(err))

    # convert: a synthetic checkpoint, stderr a terminal and a pipe.
    ck = os.path.join(work, "ck")
    subprocess.run([tinylm, "synth", "--config", "tiny", "--seed", "3", "-o", ck], capture_output=True, check=True)
    a, b, c = (os.path.join(work, f"{n}.slm") for n in ("tty", "pipe", "forced"))
    rc, _, err = run_tty([tinylm, "convert", ck, "-o", a, "--quant", "q8"])
    shown = lines(err)
    src = 0  # the source tensors' bytes, from the safetensors headers
    for f in os.listdir(ck):
        if f.endswith(".safetensors"):
            with open(os.path.join(ck, f), "rb") as fh:
                header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
            src += sum(t["data_offsets"][1] - t["data_offsets"][0] for k, t in header.items() if k != "__metadata__")
    order = ["[convert: reading the tokenizer and chat template …]", "[convert: hashing the safetensors (SHA-256) …]",
             "[convert: checking the weights (BLAKE3, finite) ", "[convert: converting and writing the tensors …]",
             "[convert "]
    at = [err.find(s) for s in order]
    check("convert, stderr a terminal: tokenizer, hashing, checking, writing, then the tensors written, in order",
          rc == 0 and all(i >= 0 for i in at) and at == sorted(at), repr(err))
    checked = re.findall(r"checking the weights \(BLAKE3, finite\) ([0-9]+)/([0-9]+) MB", err)
    check("convert, stderr a terminal: the check counts whole MB of the source tensors' bytes, up to all of them",
          len(checked) >= 2 and checked[0][0] == "0" and checked[-1][0] == checked[-1][1]
          and int(checked[-1][1]) == -(-src // 1000000), repr((checked, src)))
    check("convert, stderr a terminal: the terminal ends with the line erased", shown[-1] == "", repr(shown[-3:]))
    rc2, _, err2 = run_pipe([tinylm, "convert", ck, "-o", b, "--quant", "q8"])
    check("convert, stderr a pipe: nothing on stderr", rc2 == 0 and err2 == "", repr(err2))
    check("convert: the artifact is the same bytes either way",
          rc == 0 and rc2 == 0 and open(a, "rb").read() == open(b, "rb").read())
    rc, _, err = run_pipe([tinylm, "convert", ck, "-o", c, "--quant", "q8", "--progress"])
    got = err.splitlines()
    check("convert --progress, stderr a pipe: each step on a line of its own, then the tensors",
          rc == 0 and got[:2] == order[:2] and got[2].startswith(order[2]) and order[3] in got
          and got[-1].startswith("[convert ") and "tensors" in got[-1], repr(got))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
