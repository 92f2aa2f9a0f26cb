#!/usr/bin/python3
"""What the command line does with the user's files (issue 11 items 2-3,
issue 17 items 1, 4, 6), run against the ASan build:

  * an output that is the same file as an input (the path itself, a
    symlink to it, a hard link, a file of convert's HF_DIR) is refused,
    with or without --force, and the input is byte for byte unchanged:
    convert -o HF/model.safetensors, run --receipt MODEL, verify --dump
    GOLDEN, chat /save MODEL;
  * an existing output the command did not write is refused unless
    --force (chat: /save! FILE); a chat may replace what it saved itself;
  * SIGINT or SIGTERM during a conversion leaves no OUT.tmp.XXXXXX, the
    destination as it was, and an exit status that says "killed by that
    signal"; a write that fails half way leaves no temporary file either;
  * a replaced file keeps its permission bits, a new one gets 0666 less
    the umask;
  * a shard that is /dev/zero, a FIFO or a directory is refused at once
    (no hang, no unbounded read), and so is a FIFO index or
    generation_config.json; stdin keeps working, and a stream (stdin, a
    pipe, /dev/zero) stops at 1 GiB;
  * a golden record whose element count times its element size wraps
    ([2^30, 2^30, 2] f64 with no data) is refused, not a heap overflow;
  * writers racing to one new output without --force (convert -o, observe
    -o): exactly one succeeds, every other one fails with "exists", and
    the file is the winner's complete output (issue 23 item 12).

    safety_test.py TINYLM WORKDIR
"""

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import cbor2

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402
MODEL_SRC = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
TINY_TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")

def tinylm(*args, stdin=None, umask=None, timeout=120, fsize=None):
    def pre():
        if umask is not None:
            os.umask(umask)
        if fsize is not None:
            import resource
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.run([TINYLM, *args], input=stdin, capture_output=True,
                          timeout=timeout, preexec_fn=pre)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def temps(directory):
    return sorted(n for n in os.listdir(directory) if ".tmp." in n)


def refused(p, what):
    """Exit 1 with a typed invalid_argument error naming what."""
    err = p.stderr.decode(errors="replace")
    return p.returncode == 1 and err.startswith("error: invalid_argument: ") and what in err


def describe(p):
    return "exit %d, stderr %r" % (p.returncode, p.stderr.decode(errors="replace")[-400:])


def synth(name, config, *extra):
    """A small synthetic checkpoint on the fixture tokenizer, without
    generation_config.json (its fixture EOS list disagrees with config.json;
    tools/slm_goldens.sh explains)."""
    cfg = os.path.join(WORK, name + ".json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    out = os.path.join(WORK, name)
    p = tinylm("synth", "--config", cfg, "--seed", "1", "-o", out,
               "--tokenizer-dir", TINY_TOKENIZER, *extra)
    if p.returncode != 0:
        sys.exit("synth failed: " + describe(p))
    os.remove(os.path.join(out, "generation_config.json"))
    return out


def golden_doc(shape, dtype, data, ids=(1, 2, 3), positions=(2,)):
    rec = {"name": "logits", "layer": None, "shape": list(shape), "dtype": dtype,
           "data": data}
    return cbor2.dumps({"format": "tinylm.golden/1", "prompt": {"ids": list(ids)},
                        "positions": list(positions), "records": [rec]},
                       canonical=True)


# --- outputs that are inputs ---------------------------------------------

def overwrites():
    hf = synth("hf", {"vocab_size": 346})
    st_path = os.path.join(hf, "model.safetensors")
    before = {n: digest(os.path.join(hf, n)) for n in os.listdir(hf)}

    def hf_unchanged():
        return {n: digest(os.path.join(hf, n)) for n in os.listdir(hf)} == before

    for force in ([], ["--force"]):
        p = tinylm("convert", hf, "-o", st_path, *force)
        check("convert -o HF/model.safetensors %s is refused" % " ".join(force),
              refused(p, "model.safetensors") and hf_unchanged() and not temps(hf),
              describe(p))
    link = os.path.join(WORK, "link-to-config.slm")
    os.symlink(os.path.join(hf, "config.json"), link)
    p = tinylm("convert", hf, "-o", link, "--force")
    check("convert -o a symlink to HF/config.json --force is refused",
          refused(p, "config.json") and hf_unchanged() and os.path.islink(link),
          describe(p))
    hard = os.path.join(WORK, "hard-link.slm")
    os.link(st_path, hard)
    p = tinylm("convert", hf, "-o", hard, "--force")
    check("convert -o a hard link to HF/model.safetensors --force is refused",
          refused(p, "model.safetensors") and hf_unchanged(), describe(p))
    os.remove(hard)
    p = tinylm("convert", hf, "-o", os.path.join(hf, "x.slm"),
               "--receipt", os.path.join(hf, "tokenizer.json"), "--force")
    check("convert --receipt HF/tokenizer.json --force is refused",
          refused(p, "tokenizer.json") and hf_unchanged()
          and not os.path.exists(os.path.join(hf, "x.slm")), describe(p))
    same = os.path.join(WORK, "same.slm")
    p = tinylm("convert", hf, "-o", same, "--receipt",
               os.path.join(WORK, ".", "same.slm"))
    check("convert -o X --receipt X (two spellings) is refused",
          refused(p, "same.slm") and not os.path.exists(same), describe(p))

    # An existing output the command did not write: only with --force.
    out = os.path.join(WORK, "out.slm")
    with open(out, "wb") as f:
        f.write(b"the user's own file")
    p = tinylm("convert", hf, "-o", out)
    check("convert over an existing file without --force is refused",
          refused(p, "--force") and open(out, "rb").read() == b"the user's own file",
          describe(p))
    receipt = out + ".receipt.cbor"
    os.remove(out)
    with open(receipt, "wb") as f:
        f.write(b"an older receipt")
    p = tinylm("convert", hf, "-o", out)
    check("convert whose default receipt path exists is refused before any work",
          refused(p, "receipt.cbor") and not os.path.exists(out), describe(p))
    p = tinylm("convert", hf, "-o", out, "--force")
    check("convert --force replaces both outputs",
          p.returncode == 0 and open(receipt, "rb").read() != b"an older receipt",
          describe(p))

    model = os.path.join(WORK, "model.slm")
    shutil.copyfile(MODEL_SRC, model)
    model_digest = digest(model)
    for force in ([], ["--force"]):
        p = tinylm("run", model, "--prompt", "hi", "-n", "2", "--receipt", model, *force)
        check("run --receipt MODEL %s is refused" % " ".join(force),
              refused(p, "model.slm") and digest(model) == model_digest
              and not temps(WORK), describe(p))
    mlink = os.path.join(WORK, "model-link.cbor")
    os.symlink(model, mlink)
    p = tinylm("run", model, "--prompt", "hi", "-n", "2", "--receipt", mlink, "--force")
    check("run --receipt (a symlink to MODEL) --force is refused",
          refused(p, "model-link.cbor") and digest(model) == model_digest, describe(p))
    conv = os.path.join(WORK, "conv.json")
    with open(conv, "w") as f:
        json.dump({"messages": [{"role": "user", "content": "hi"}]}, f)
    p = tinylm("run", model, "--messages", conv, "-n", "2", "--receipt", conv, "--force")
    check("run --receipt CONV.json (its --messages) --force is refused",
          refused(p, "conv.json"), describe(p))
    r = os.path.join(WORK, "run.cbor")
    with open(r, "wb") as f:
        f.write(b"keep")
    p = tinylm("run", model, "--prompt", "hi", "-n", "2", "--receipt", r)
    check("run --receipt over an existing file is refused without --force",
          refused(p, "--force") and open(r, "rb").read() == b"keep", describe(p))
    p = tinylm("run", model, "--prompt", "hi", "-n", "2", "--receipt", r, "--force")
    check("run --receipt --force replaces it with a receipt",
          p.returncode == 0 and open(r, "rb").read() != b"keep", describe(p))

    # verify --dump: a golden with the tiny model's logits shape (the
    # values do not matter: the dump is written whatever the comparison).
    golden = os.path.join(WORK, "g.cbor")
    with open(golden, "wb") as f:
        f.write(golden_doc([1, 346], "f32", bytes(4 * 346)))
    g_digest = digest(golden)
    for force in ([], ["--force"]):
        p = tinylm("verify", model, "--golden", golden, "--dump", golden, *force)
        check("verify --dump GOLDEN %s is refused" % " ".join(force),
              refused(p, "g.cbor") and digest(golden) == g_digest, describe(p))
    p = tinylm("verify", model, "--golden", golden, "--dump", model, "--force")
    check("verify --dump MODEL --force is refused",
          refused(p, "model.slm") and digest(model) == model_digest, describe(p))
    dump = os.path.join(WORK, "dump.cbor")
    p = tinylm("verify", model, "--golden", golden, "--dump", dump)
    check("verify --dump a new file writes it", os.path.exists(dump), describe(p))
    p = tinylm("verify", model, "--golden", golden, "--dump", dump)
    check("verify --dump over an existing file is refused without --force",
          refused(p, "--force"), describe(p))
    p = tinylm("verify", model, "--golden", golden, "--dump", dump, "--force")
    check("verify --dump --force replaces it", p.returncode in (0, 1)
          and "invalid_argument" not in p.stderr.decode(), describe(p))

    # chat: /save! is the force; a chat may replace its own earlier save.
    other = os.path.join(WORK, "other.json")
    with open(other, "w") as f:
        f.write("the user's notes")
    saved = os.path.join(WORK, "saved.json")
    script = "\n".join(["/save " + model, "/save! " + model, "/save " + other,
                        "/save " + saved, "/save " + saved, "/quit", ""])
    p = tinylm("chat", model, stdin=script.encode())
    err = p.stderr.decode(errors="replace")
    check("chat /save MODEL and /save! MODEL are refused",
          digest(model) == model_digest and err.count("error: invalid_argument: " + model) == 2,
          err[-600:])
    check("chat /save over a file it did not write is refused (/save! named)",
          open(other).read() == "the user's notes" and "not replaced without /save!" in err,
          err[-600:])
    check("chat /save twice to its own file: both saved",
          err.count("to " + saved) == 2 and json.load(open(saved)).get("messages") == [],
          err[-600:])
    p = tinylm("chat", model, stdin=("/save! %s\n/quit\n" % other).encode())
    check("chat /save! replaces an existing file",
          open(other).read().lstrip().startswith("{"), describe(p))


# --- signals and error paths ---------------------------------------------

def default_signals():
    """A terminal's dispositions for the signals these checks send: a shell
    starts background jobs with SIGINT ignored (and nohup SIGHUP), and an
    ignored signal stays ignored across exec, so a check run from such a
    job would measure the inherited disposition, not tinylm."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def interrupted():
    # Big enough that q4 conversion under ASan writes its temporary file for
    # seconds (about 100 MB of bf16 weights).
    hf = synth("big", {"vocab_size": 346, "hidden_size": 1024,
                       "intermediate_size": 3072, "num_hidden_layers": 4,
                       "num_attention_heads": 8, "num_key_value_heads": 4,
                       "head_dim": 128})
    outdir = os.path.join(WORK, "sig")
    os.mkdir(outdir)
    out = os.path.join(outdir, "big.slm")
    for sig in (signal.SIGINT, signal.SIGTERM):
        with open(out, "wb") as f:
            f.write(b"previous artifact")
        proc = subprocess.Popen([TINYLM, "convert", hf, "-o", out, "--quant", "q4",
                                 "--force"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, preexec_fn=default_signals)
        seen = []
        deadline = time.time() + 60
        while not seen and proc.poll() is None and time.time() < deadline:
            seen = temps(outdir)
            time.sleep(0.005)
        time.sleep(0.1)  # inside the write, which lasts seconds
        proc.send_signal(sig)
        proc.wait(timeout=60)
        name = signal.Signals(sig).name
        check("%s during convert: killed by %s, no temporary file left" % (name, name),
              seen != [] and proc.returncode == -sig and temps(outdir) == [],
              "temp seen %s, exit %s, left %s, stderr %r" %
              (seen, proc.returncode, temps(outdir), proc.stderr.read()[-300:]))
        check("%s during convert: the destination is untouched" % name,
              open(out, "rb").read() == b"previous artifact")
        os.remove(out)

    # synth writes its shards through temporary files too.
    final = {"config.json", "generation_config.json", "tokenizer.json",
             "tokenizer_config.json", "model.safetensors"}
    cfg = os.path.join(WORK, "big.json")
    for sig in (signal.SIGINT, signal.SIGTERM):
        sdir = os.path.join(WORK, "synth-" + signal.Signals(sig).name)
        proc = subprocess.Popen([TINYLM, "synth", "--config", cfg, "--seed", "2", "-o", sdir,
                                 "--tokenizer-dir", TINY_TOKENIZER],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                preexec_fn=default_signals)
        extra = []
        deadline = time.time() + 60
        while not extra and proc.poll() is None and time.time() < deadline:
            extra = sorted(set(os.listdir(sdir)) - final) if os.path.isdir(sdir) else []
            time.sleep(0.002)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        left = sorted(os.listdir(sdir)) if os.path.isdir(sdir) else []
        # issue 23 item 13: the partial directory is removed (a rerun is
        # not blocked), not only the temporary file.
        check("%s during synth: killed by it, the directory it created removed"
              % signal.Signals(sig).name,
              extra != [] and proc.returncode == -sig and not os.path.exists(sdir),
              "seen %s, exit %s, left %s" % (extra, proc.returncode, left))

    # A checkpoint the file system cannot hold (about 6.6 TB) is refused at
    # once with the estimate, nothing written.
    huge = os.path.join(WORK, "huge.json")
    with open(huge, "w") as f:
        json.dump({"vocab_size": 346, "hidden_size": 65536, "intermediate_size": 1048576,
                   "num_hidden_layers": 16}, f)
    hdir = os.path.join(WORK, "synth-huge")
    proc = subprocess.Popen([TINYLM, "synth", "--config", huge, "--seed", "1", "-o", hdir,
                             "--tokenizer-dir", TINY_TOKENIZER],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        err = proc.communicate(timeout=30)[1].decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        err = "still writing after 30 s: " + proc.communicate()[1].decode(errors="replace")
    check("synth of 6.6 TB: refused at once with the estimate, nothing written",
          proc.returncode == 1 and err.startswith("error: io: ")
          and "needs about 6597" in err and "free" in err and not os.path.exists(hdir),
          "exit %s, %s" % (proc.returncode, err[-300:]))
    shutil.rmtree(hdir, ignore_errors=True)

    # Ctrl-C during run: the reply so far and its receipt, then the
    # process ends as killed by SIGINT (a shell's 130), never exit 0.
    receipt = os.path.join(WORK, "sigint.receipt")
    proc = subprocess.Popen([TINYLM, "run", MODEL_SRC, "--prompt", "Once", "-n", "-1",
                             "--receipt", receipt], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_signals)
    first = proc.stdout.read(1)  # the reply has begun
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    # (`out` stays the artifact path the EFBIG check below writes to.)
    _, err = proc.communicate(timeout=120)
    err = err.decode(errors="replace")
    check("SIGINT during run: killed by SIGINT (130), not exit 0",
          first != b"" and proc.returncode == -signal.SIGINT, "exit %s, %s" % (proc.returncode, err[-300:]))
    check("SIGINT during run: the cancelled reply's summary and receipt",
          "[cancelled after" in err and os.path.exists(receipt), err[-300:])

    # A write that fails half way (the file size limit: EFBIG) is an io
    # error and removes its temporary file.
    p = tinylm("convert", hf, "-o", out, "--quant", "q4", fsize=4 << 20)
    check("convert failing on write (EFBIG): io error, no temporary file, no output",
          p.returncode == 1 and p.stderr.startswith(b"error: io: ")
          and temps(outdir) == [] and not os.path.exists(out), describe(p))


# --- permissions -----------------------------------------------------------

def permissions():
    hf = os.path.join(WORK, "hf")
    model = os.path.join(WORK, "model.slm")
    golden = os.path.join(WORK, "g.cbor")
    for umask, want in ((0o077, 0o600), (0o022, 0o644), (0o002, 0o664)):
        out = os.path.join(WORK, "umask-%03o.slm" % umask)
        p = tinylm("convert", hf, "-o", out, umask=umask)
        modes = [stat.S_IMODE(os.stat(x).st_mode) for x in (out, out + ".receipt.cbor")
                 if os.path.exists(x)]
        check("umask %03o: new artifact and receipt are %03o" % (umask, want),
              p.returncode == 0 and modes == [want, want], "%s %s" % (describe(p), modes))
    priv = os.path.join(WORK, "private.slm")
    shutil.copyfile(MODEL_SRC, priv)
    os.chmod(priv, 0o600)
    p = tinylm("convert", hf, "-o", priv, "--force", "--receipt",
               os.path.join(WORK, "private.receipt.cbor"), umask=0o022)
    check("convert --force over a 0600 file keeps 0600",
          p.returncode == 0 and stat.S_IMODE(os.stat(priv).st_mode) == 0o600, describe(p))
    dump = os.path.join(WORK, "private-dump.cbor")
    with open(dump, "wb") as f:
        f.write(b"x")
    os.chmod(dump, 0o640)
    p = tinylm("verify", model, "--golden", golden, "--dump", dump, "--force", umask=0o022)
    check("verify --dump --force over a 0640 file keeps 0640",
          stat.S_IMODE(os.stat(dump).st_mode) == 0o640 and os.path.getsize(dump) > 1,
          describe(p))
    r = os.path.join(WORK, "private-run.cbor")
    with open(r, "wb") as f:
        f.write(b"x")
    os.chmod(r, 0o600)
    p = tinylm("run", model, "--prompt", "hi", "-n", "2", "--receipt", r, "--force",
               umask=0o022)
    check("run --receipt --force over a 0600 file keeps 0600",
          p.returncode == 0 and stat.S_IMODE(os.stat(r).st_mode) == 0o600, describe(p))
    conv = os.path.join(WORK, "private.json")
    with open(conv, "w") as f:
        f.write("{}")
    os.chmod(conv, 0o600)
    p = tinylm("chat", model, stdin=("/save! %s\n/quit\n" % conv).encode(), umask=0o022)
    check("chat /save! over a 0600 file keeps 0600",
          stat.S_IMODE(os.stat(conv).st_mode) == 0o600
          and open(conv).read().lstrip().startswith("{\n"), describe(p))


# --- inputs that are not regular files -------------------------------------

def special_inputs():
    hf = synth("sharded", {"vocab_size": 346}, "--shards", "2")
    shards = sorted(n for n in os.listdir(hf) if n.startswith("model-"))
    victim = os.path.join(hf, shards[1])
    os.rename(victim, victim + ".orig")

    def refused_at_once(what, path, make, undo, *want):
        """Convert with path replaced by make(path): exit 1, every want in
        the error, within 20 s (a hang or an endless read is a timeout)."""
        make(path)
        t0 = time.time()
        try:
            p = tinylm("convert", hf, "-o", os.path.join(WORK, "special.slm"), timeout=30)
            ok = (p.returncode == 1 and all(w in p.stderr for w in want)
                  and time.time() - t0 < 20
                  and not os.path.exists(os.path.join(WORK, "special.slm")))
            detail = describe(p)
        except subprocess.TimeoutExpired:
            ok, detail = False, "timed out (hang or endless read)"
        undo(path)
        check(what, ok, detail)

    zero = lambda path: os.symlink("/dev/zero", path)  # noqa: E731
    refused_at_once("a shard that is a symlink to /dev/zero is refused at once", victim,
                    zero, os.remove, b"error: invalid_model: ", b"is a character device")
    refused_at_once("a shard that is a FIFO is refused, not waited on", victim,
                    os.mkfifo, os.remove, b"a FIFO")
    refused_at_once("a shard that is a directory is refused", victim,
                    os.mkdir, os.rmdir, b"is a directory")
    os.rename(victim + ".orig", victim)
    p = tinylm("convert", hf, "-o", os.path.join(WORK, "ok.slm"), timeout=30)
    check("the same sharded checkpoint with regular files converts", p.returncode == 0,
          describe(p))
    index = os.path.join(hf, "model.safetensors.index.json")
    os.rename(index, index + ".orig")
    refused_at_once("an index that is a FIFO is refused, not waited on", index,
                    os.mkfifo, os.remove, b"a FIFO")
    os.rename(index + ".orig", index)
    refused_at_once("a generation_config.json that is a FIFO is refused, not waited on",
                    os.path.join(hf, "generation_config.json"), os.mkfifo, os.remove,
                    b"a FIFO")

    # A stream has no size to check first: reading stops at 1 GiB.
    p = tinylm("hash", "/dev/zero", timeout=300)
    check("hash /dev/zero stops at the 1 GiB stream limit with a typed error",
          p.returncode == 1 and p.stderr.startswith(b"error: bounds: /dev/zero: more than 1024 MiB"),
          describe(p))

    # stdin still works where "-" is accepted.
    p = tinylm("hash", "-", stdin=b"abc")
    check("hash - reads stdin",
          p.returncode == 0 and p.stdout.startswith(hashlib.sha256(b"abc").hexdigest().encode()),
          describe(p))


# --- golden documents ------------------------------------------------------

def golden_overflow():
    model = os.path.join(WORK, "model.slm")
    for shape, dtype in (([1, 1 << 30, 1 << 30, 2], "f64"), ([1, 4, 1 << 30, 1 << 30], "f32")):
        g = os.path.join(WORK, "wrap-%s.cbor" % dtype)
        with open(g, "wb") as f:
            f.write(golden_doc(shape, dtype, b""))
        p = tinylm("verify", model, "--golden", g)
        # The golden is the bad argument, not the model (issue 28.6).
        check("verify --golden with shape %s %s and no data is invalid_argument naming --golden"
              % (shape, dtype),
              p.returncode == 1
              and p.stderr.startswith(b"error: invalid_argument: --golden " + g.encode() + b": ")
              and b"disagree" in p.stderr, describe(p))


# --- writers racing to one new name -----------------------------------------

def racing_writers():
    hf = synth("race-hf", {"vocab_size": 346, "hidden_size": 256, "intermediate_size": 512})
    ref = os.path.join(WORK, "race-ref.slm")
    p = tinylm("convert", hf, "-o", ref)
    if not check("race: the reference conversion", p.returncode == 0, describe(p)):
        return
    obs_ref = os.path.join(WORK, "race-ref.obs")
    p = tinylm("observe", ref, "--prompt", "hi", "-o", obs_ref)
    check("race: the reference observation", p.returncode == 0, describe(p))
    writers = {
        "convert": lambda out: ["convert", hf, "-o", out],
        "observe": lambda out: ["observe", ref, "--prompt", "hi", "-o", out],
    }
    for name, argv in writers.items():
        for attempt in range(3):
            out = os.path.join(WORK, "race-%s-%d.out" % (name, attempt))
            procs = [subprocess.Popen([TINYLM, *argv(out)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE) for _ in range(6)]
            results = [(q.wait(timeout=300), q.stderr.read().decode(errors="replace"))
                       for q in procs]
            for q in procs:
                q.stdout.close()
                q.stderr.close()
            winners = [err for rc, err in results if rc == 0]
            losers = [err for rc, err in results if rc != 0]
            label = "race %s #%d: 6 writers to one new name" % (name, attempt)
            check(label + ": exactly one succeeds", len(winners) == 1,
                  [rc for rc, _ in results])
            check(label + ": every other one says exists",
                  all(e.startswith("error: invalid_argument: ") and "exists" in e
                      for e in losers), losers)
            check(label + ": the file is a complete output, no temporary left",
                  digest(out) == digest(ref if name == "convert" else obs_ref)
                  and not [n for n in temps(WORK) if n.startswith("race-")],
                  temps(WORK))


def main():
    global TINYLM, WORK
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    TINYLM = os.path.abspath(sys.argv[1])
    WORK = os.path.abspath(sys.argv[2])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    overwrites()
    racing_writers()
    golden_overflow()
    permissions()
    special_inputs()
    interrupted()
    sys.exit(summary())


if __name__ == "__main__":
    main()
