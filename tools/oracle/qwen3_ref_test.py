#!/usr/bin/python3
"""Self-checks of tools/oracle/qwen3_ref.py (and golden_cbor.py).

    /usr/bin/python3 tools/oracle/qwen3_ref_test.py [--tinylm PATH] [--keep DIR]

Builds small synthetic checkpoints with `tinylm synth` (build/gcc/tinylm;
`make -j2 native` is run when it is missing), runs the oracle on them and
checks: the document schema and its deterministic encoding, byte-identical
reruns, causality (a prefix prompt's captures equal the first rows of a
longer prompt's, exactly, f64 and f32), position and stage selection,
f32 against f64, probability rows, the causal mask, sharded/separate-head
checkpoints, refusals, Qwen3Config defaults, RMSNorm and rope by hand
(plain Python floats, math.cos/sin), a whole 1-layer forward pass in
plain Python loops (no NumPy) against the NumPy f64 logits, and --slm
(weights from a `tinylm convert` artifact): a --quant source artifact gives
the safetensors path's records byte for byte (tied and untied), q8/q4
weights decoded by tools/slm_read.py equal a plain struct decoder of
docs/quant.md and lie within Q-16's bound (about scale/2) of the source
(short tail blocks included),
the embedding record holds the decoded rows, and refusals (tokenizer-only
artifact, config disagreement, missing tensor, corrupted bytes).

Prints `N passed, N failed`; exit status 1 when anything failed.
"""

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import reference_blas  # noqa: E402
from checks import check, summary  # noqa: E402

reference_blas.ensure()  # before numpy loads its BLAS

import cbor2  # noqa: E402
import numpy as np  # noqa: E402

import golden_cbor as gc  # noqa: E402

REF = os.path.join(HERE, "qwen3_ref.py")
PY = sys.executable or "/usr/bin/python3"

TINY = {"vocab_size": 346, "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16}
ONE = {"vocab_size": 346, "hidden_size": 24, "intermediate_size": 40,
       "num_hidden_layers": 1, "num_attention_heads": 4,
       "num_key_value_heads": 2, "head_dim": 8,
       "rope_theta": 10000.0, "rms_norm_eps": 1e-5}



# --------------------------------------------------------------------------

def tinylm_binary(arg):
    path = arg or os.path.join(ROOT, "build", "gcc", "tinylm")
    if not os.access(path, os.X_OK):
        subprocess.run(["make", "-j2", "native"], cwd=ROOT, check=True)
    return path


def synth(tinylm, cfg, out, *extra):
    cfgpath = out + ".json"
    with open(cfgpath, "w") as f:
        json.dump(cfg, f)
    subprocess.run([tinylm, "synth", "--config", cfgpath, "--seed", "7", "-o", out,
                    "--tokenizer-dir",
                    os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")]
                   + list(extra), check=True, stdout=subprocess.DEVNULL)
    return out


def ref(hf, ids, out, *extra, expect=0):
    p = subprocess.run([PY, REF, hf, "--ids", " ".join(map(str, ids)), "-o", out]
                       + list(extra), capture_output=True, text=True)
    if p.returncode != expect:
        raise AssertionError("qwen3_ref.py exit %d (expected %d): %s"
                             % (p.returncode, expect, p.stderr))
    if expect:
        return p.stderr
    with open(out, "rb") as f:
        return f.read()


def load(data):
    doc = cbor2.loads(data)
    recs = {(r["name"], r["layer"]): gc.record_array(r) for r in doc["records"]}
    return doc, recs


# --------------------------------------------------------------------------
# An independent plain-Python model (no NumPy): safetensors via struct.

def py_tensors(hf):
    with open(os.path.join(hf, "model.safetensors"), "rb") as f:
        blob = f.read()
    n = struct.unpack_from("<Q", blob, 0)[0]
    hdr = json.loads(blob[8:8 + n])
    out = {}
    for name, e in hdr.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        raw = blob[8 + n + b:8 + n + en]
        assert e["dtype"] == "BF16"
        vals = [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                for h in struct.unpack("<%dH" % (len(raw) // 2), raw)]
        shape = e["shape"]
        if len(shape) == 1:
            out[name] = vals
        else:
            r, c = shape
            out[name] = [vals[i * c:(i + 1) * c] for i in range(r)]
    return out


def py_rmsnorm(x, w, eps):
    ms = sum(v * v for v in x) / len(x)
    r = 1.0 / math.sqrt(ms + eps)
    return [w[i] * (x[i] * r) for i in range(len(x))]


def py_matvec(W, x):
    return [math.fsum(W[o][i] * x[i] for i in range(len(x))) for o in range(len(W))]


def py_rope(x, pos, theta):
    d = len(x)
    h = d // 2
    out = [0.0] * d
    for i in range(h):
        ang = pos * (1.0 / theta ** ((2 * i) / d))
        c, s = math.cos(ang), math.sin(ang)
        out[i] = x[i] * c - x[i + h] * s
        out[i + h] = x[i + h] * c + x[i] * s
    return out


def py_forward(hf, cfg, ids):
    """Logits for every position of `ids` in plain Python floats."""
    W = py_tensors(hf)
    H, I = cfg["hidden_size"], cfg["intermediate_size"]
    A, K, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    E = W["model.embed_tokens.weight"]
    xs = [list(E[t]) for t in ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        qs, ks, vs = [], [], []
        for pos, x in enumerate(xs):
            h = py_rmsnorm(x, W[p + "input_layernorm.weight"], eps)
            q = py_matvec(W[p + "self_attn.q_proj.weight"], h)
            k = py_matvec(W[p + "self_attn.k_proj.weight"], h)
            v = py_matvec(W[p + "self_attn.v_proj.weight"], h)
            qh = [py_rope(py_rmsnorm(q[a * D:(a + 1) * D], W[p + "self_attn.q_norm.weight"], eps),
                          pos, theta) for a in range(A)]
            kh = [py_rope(py_rmsnorm(k[j * D:(j + 1) * D], W[p + "self_attn.k_norm.weight"], eps),
                          pos, theta) for j in range(K)]
            qs.append(qh)
            ks.append(kh)
            vs.append([v[j * D:(j + 1) * D] for j in range(K)])
        new = []
        for i, x in enumerate(xs):
            att = []
            for a in range(A):
                kv = a // (A // K)
                sc = [math.fsum(qs[i][a][d] * ks[j][kv][d] for d in range(D)) / math.sqrt(D)
                      for j in range(i + 1)]
                m = max(sc)
                ex = [math.exp(s - m) for s in sc]
                tot = math.fsum(ex)
                pr = [e / tot for e in ex]
                att += [math.fsum(pr[j] * vs[j][kv][d] for j in range(i + 1)) for d in range(D)]
            o = py_matvec(W[p + "self_attn.o_proj.weight"], att)
            x1 = [x[n] + o[n] for n in range(H)]
            hm = py_rmsnorm(x1, W[p + "post_attention_layernorm.weight"], eps)
            g = py_matvec(W[p + "mlp.gate_proj.weight"], hm)
            u = py_matvec(W[p + "mlp.up_proj.weight"], hm)
            act = [g[n] / (1.0 + math.exp(-g[n])) * u[n] for n in range(I)]
            dn = py_matvec(W[p + "mlp.down_proj.weight"], act)
            new.append([x1[n] + dn[n] for n in range(H)])
        xs = new
    logits = []
    for x in xs:
        fn = py_rmsnorm(x, W["model.norm.weight"], eps)
        logits.append(py_matvec(E, fn))  # tied embeddings
    return logits


# --------------------------------------------------------------------------
# --slm: weights from a .slm artifact

def convert(tinylm, hf, out, quant):
    """`tinylm convert` of a copy of hf without generation_config.json
    (synth's copies the publisher's EOS disagreement, which convert refuses
    outside the 0.6B profile; the weights are the same). quant None: a
    tokenizer-only artifact."""
    conv = hf.rstrip("/") + ".conv"
    if not os.path.isdir(conv):
        shutil.copytree(hf, conv, ignore=shutil.ignore_patterns("generation_config.json"))
    opts = ["--quant", quant] if quant else ["--tokenizer-only"]
    subprocess.run([tinylm, "convert", conv, "-o", out] + opts,
                   check=True, stdout=subprocess.DEVNULL)
    return out


def py_dequant(dtype, shape, raw):
    """docs/quant.md Q-10..Q-16 in plain Python: flat list of f32 values."""
    block_bytes = {"q8": 36, "q4": 20}[dtype]
    n = shape[-1]
    rows = len(raw) // (-(-n // 32) * block_bytes)
    out = []
    for r in range(rows):
        for b in range(-(-n // 32)):
            off = (r * -(-n // 32) + b) * block_bytes
            d = struct.unpack_from("<f", raw, off)[0]
            if dtype == "q8":
                codes = struct.unpack_from("<32b", raw, off + 4)
            else:
                codes = []
                for byte in raw[off + 4:off + 20]:
                    codes += [(byte & 15) - 8, (byte >> 4) - 8]
            for i in range(min(32, n - 32 * b)):
                # one f32 multiply: the exact double product rounded once
                out.append(struct.unpack("<f", struct.pack("<f", codes[i] * d))[0])
    return out


def block_scales(dtype, shape, raw):
    """The scale d of every element's block, flat, in element order."""
    block_bytes = {"q8": 36, "q4": 20}[dtype]
    n = shape[-1]
    nb = -(-n // 32)
    out = []
    for r in range(len(raw) // (nb * block_bytes)):
        for b in range(nb):
            d = struct.unpack_from("<f", raw, (r * nb + b) * block_bytes)[0]
            out += [d] * min(32, n - 32 * b)
    return np.asarray(out)


def check_decoded(hf, slm, q, n_quantized, tag):
    """Every tensor of a q8/q4 artifact decoded by tools/slm_read.py: equal
    to py_dequant, within Q-16's bound of the source (1-D tensors exact)."""
    sys.path.insert(0, os.path.dirname(HERE))
    import slm_inspect
    import slm_read
    src = gc.SafeTensorsDir(hf)
    m = slm_read.SlmModel(slm)
    plain_ok, bound_ok, worst, quantized = True, True, 0.0, 0
    for name in sorted(m.tensors):
        dt, shape, raw = m.raw(name)
        if dt in ("q8p", "q4p"):
            # convert's default layout: its blocks put back by the other
            # spec-written reader (slm_inspect.py), then decoded plainly
            raw, dt = slm_inspect.stored_bytes(dt, shape, bytes(raw)), dt[:-1]
        y = m.get(name).astype(np.float64).reshape(-1)
        x = src.get(name, np.float64).reshape(-1)
        if dt == "f32":
            bound_ok &= bool(np.array_equal(x, y))
            continue
        quantized += 1
        plain_ok &= bool(np.array_equal(np.asarray(py_dequant(dt, shape, raw)), y))
        d = block_scales(dt, shape, raw)
        err = np.abs(y - x)
        bound_ok &= bool(np.all(err <= d * (0.5 + 2.0 ** -16) + 2.0 ** -149))
        worst = max(worst, float(np.max(err / np.where(d > 0, d, 1.0))))
    check("slm %s %s: every 2-D tensor quantized (%d)" % (tag, q, quantized),
          quantized == n_quantized)
    check("slm %s %s: slm_read decoding equals a plain struct decoder" % (tag, q), plain_ok)
    check("slm %s %s: decoded weights within d/2 (Q-16) of the source, 1-D exact "
          "(worst |y-x|/d %.4f)" % (tag, q, worst),
          bound_ok and 0.3 < worst <= 0.5 + 2.0 ** -16)
    return m


def test_slm(tinylm, tmp, tiny, shard, ids):
    import qwen3_ref
    sys.path.insert(0, os.path.dirname(HERE))
    import slm_read
    o = lambda n: os.path.join(tmp, n)  # noqa: E731
    c, _ = gc.resolve_config(tiny)

    # a lossless artifact gives the safetensors path's bytes (tied model:
    # the artifact stores no lm_head.weight; greedy included)
    base = ref(tiny, ids, o("s_st.cbor"), "--greedy", "4")
    slm = convert(tinylm, tiny, o("tiny-source.slm"), "source")
    got = ref(tiny, ids, o("s_src.cbor"), "--greedy", "4", "--slm", slm)
    db, ds = cbor2.loads(base), cbor2.loads(got)
    check("slm: --quant source artifact gives byte-identical records and continuation",
          gc.cbor_encode(db["records"]) == gc.cbor_encode(ds["records"])
          and db["continuation"] == ds["continuation"])
    check("slm: tied artifact stores no lm_head.weight",
          "lm_head.weight" not in slm_read.SlmModel(slm))
    check("slm: weights label names the artifact",
          ds["model"]["weights"].startswith("slm tiny-source.slm sha256:")
          and ds["model"]["weights"].endswith("quant source (bf16+f32)")
          and db["model"]["weights"] == "tiny bf16", ds["model"]["weights"])
    check("slm: --weights TEXT is kept as given",
          cbor2.loads(ref(tiny, ids[:2], o("s_w.cbor"), "--slm", slm, "--weights", "W x"))
          ["model"]["weights"] == "W x")

    # untied (config.json says so; the artifact stores lm_head.weight)
    untied = o("untied")
    shutil.copytree(shard, untied)
    with open(os.path.join(untied, "config.json")) as f:
        cj = json.load(f)
    cj["tie_word_embeddings"] = False
    with open(os.path.join(untied, "config.json"), "w") as f:
        json.dump(cj, f)
    uslm = convert(tinylm, untied, o("untied.slm"), "source")
    du = cbor2.loads(ref(untied, ids, o("u_st.cbor")))
    dus = cbor2.loads(ref(untied, ids, o("u_slm.cbor"), "--slm", uslm))
    check("slm: untied artifact (lm_head.weight stored) gives byte-identical records",
          "lm_head.weight" in slm_read.SlmModel(uslm)
          and gc.cbor_encode(du["records"]) == gc.cbor_encode(dus["records"]))

    # q8 / q4: decoded weights equal a plain decoder of docs/quant.md and lie
    # within |y - x| <= d (1/2 + 2^-16) + 2^-149 of the source
    for q in ("q8", "q4"):
        qslm = convert(tinylm, tiny, o("tiny-%s.slm" % q), q)
        m = check_decoded(tiny, qslm, q, 15, "tiny")
        dq, rq = load(ref(tiny, ids, o("s_%s.cbor" % q), "--slm", qslm))
        E = m.get("model.embed_tokens.weight").astype(np.float64)
        _, rb = load(base)
        check("slm %s: the embedding record holds the decoded rows" % q,
              np.array_equal(rq[("embedding", None)], E[ids]))
        e = rel_err(rq[("logits", None)], rb[("logits", None)])
        check("slm %s: logits differ from the source weights' and stay close" % q,
              0 < e < (0.05 if q == "q8" else 0.5), "rel %.3g" % e)

    # refusals
    tok = convert(tinylm, tiny, o("tok.slm"), None)
    err = ref(tiny, ids, o("x.cbor"), "--slm", tok, expect=1)
    check("slm refuse: tokenizer-only artifact", "tokenizer-only" in err, err)
    err = ref(untied, ids, o("x.cbor"), "--slm", slm, expect=1)
    check("slm refuse: config.json disagrees with the artifact",
          "tie_word_embeddings" in err, err)
    try:
        qwen3_ref.SlmWeights(slm, c).get("model.layers.9.mlp.up_proj.weight", np.float64)
        check("slm refuse: missing tensor", False)
    except gc.OracleError as ex:
        check("slm refuse: missing tensor", "missing tensor" in str(ex), str(ex))
    bad = o("bad-q8.slm")
    shutil.copyfile(o("tiny-q8.slm"), bad)
    t = slm_read.SlmModel(bad).tensors["model.layers.0.mlp.up_proj.weight"]
    packed = t["dtype"] == "q8p"  # convert's default layout (SLM-11a)
    with open(bad, "r+b") as f:
        # the first code of the first block: after a stored block's scale,
        # or after a packed group's scales, offset by 128 there
        f.seek(t["offset"] + (4 * min(16, -(-t["shape"][-1] // 32)) if packed else 4))
        f.write(b"\x00" if packed else b"\x80")
    err = ref(tiny, ids, o("x.cbor"), "--slm", bad, expect=1)
    check("slm refuse: corrupted tensor bytes (digest)", "hash_mismatch" in err, err)
    err = ref(tiny, ids, o("x.cbor"), "--slm", bad, "--no-slm-digests", expect=1)
    check("slm refuse: q8 code -128 (Q-17) with --no-slm-digests",
          "-128" in err and "up_proj" in err, err)
    err = ref(tiny, ids, o("x.cbor"), "--no-slm-digests", expect=1)
    check("slm refuse: --no-slm-digests without --slm", "--slm" in err, err)
    check("slm refuse: no output file written", not os.path.exists(o("x.cbor")))


# --------------------------------------------------------------------------

def rel_err(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    fin = np.isfinite(b)
    scale = max(1e-300, float(np.max(np.abs(b[fin]))) if fin.any() else 1.0)
    return float(np.max(np.abs(a[fin] - b[fin]))) / scale if fin.any() else 0.0


def test_cbor_encoder():
    e = gc.cbor_encode
    check("cbor: {10:0,100:0}", e({100: 0, 10: 0}) == bytes.fromhex("a20a00186400"))
    check("cbor: {256:0,'a':0} bytewise order",
          e({"a": 0, 256: 0}) == bytes.fromhex("a2190100006161 00".replace(" ", "")))
    check("cbor: shortest heads", e([23, 24, 255, 256, 65535, 65536, 2 ** 32, -1, -25])
          == bytes.fromhex("89171818 18ff 190100 19ffff 1a00010000 1b0000000100000000 20 3818"
                           .replace(" ", "")))
    # encoded-bytes order: the head carries the length, so shorter text first
    check("cbor: text keys in encoded-bytes order",
          list(cbor2.loads(e({"bb": 1, "c": 2, "a": 3, "ab": 4}))) == ["a", "c", "ab", "bb"])
    check("cbor: mixed key types in encoded-bytes order",
          list(cbor2.loads(e({"a": 0, b"a": 0, -1: 0, 1: 0})))[:3] == [1, -1, b"a"])
    for bad in (1.5, {1: 1.0}):
        try:
            e(bad)
            check("cbor: float refused", False)
        except TypeError:
            check("cbor: float refused", True)
    check("cbor: null/bool/bytes",
          e([None, True, False, b"\x01"]) == bytes.fromhex("84f6f5f44101"))


def test_schema(data, c, ids, positions, precision):
    doc, recs = load(data)
    check("schema: re-encoding is identical (deterministic CBOR)",
          gc.cbor_encode(doc) == data)
    check("schema: format", doc["format"] == "tinylm.golden/1")
    check("schema: producer", doc["producer"]["name"] == "numpy-qwen3-ref"
          and doc["producer"]["precision"] == precision
          and isinstance(doc["producer"]["version"], str))
    check("schema: prompt", doc["prompt"] == {"ids": ids})
    check("schema: positions", doc["positions"] == positions)
    cfg = doc["model"]["config"]
    check("schema: config values", cfg["hidden_size"] == c["hidden_size"]
          and cfg["rms_norm_eps"] == "1e-06" and cfg["rope_theta"] == "1000000.0"
          and cfg["tie_word_embeddings"] is True and cfg["head_dim"] == c["head_dim"])
    check("schema: weights text", isinstance(doc["model"]["weights"], str))
    T, S = len(positions), len(ids)
    H, A, K, D = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    I, V, L = c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    shapes = {"embedding": [T, H], "attn_norm": [T, H], "q": [T, A * D], "k": [T, K * D],
              "v": [T, K * D], "q_norm": [T, A * D], "k_norm": [T, K * D],
              "q_rope": [T, A * D], "k_rope": [T, K * D], "scores": [T, A, S],
              "scores_masked": [T, A, S], "probs": [T, A, S], "attn_out": [T, A * D],
              "o_proj": [T, H], "attn_residual": [T, H], "mlp_norm": [T, H],
              "gate": [T, I], "up": [T, I], "act": [T, I], "down": [T, H],
              "layer_out": [T, H], "final_norm": [T, H], "logits": [T, V]}
    expect = [("embedding", None)] + [(s, l) for l in range(L) for s, inside in gc.STAGES
                                      if inside] + [("final_norm", None), ("logits", None)]
    got = [(r["name"], r["layer"]) for r in doc["records"]]
    check("schema: every stage, in computation order", got == expect, str(got[:5]))
    esz = 8 if precision == "f64" else 4
    ok = all(r["shape"] == shapes[r["name"]] and r["dtype"] == precision
             and len(r["data"]) == esz * int(np.prod(r["shape"])) for r in doc["records"])
    check("schema: shapes, dtypes, data lengths", ok)
    nonfinite_ok = all(np.isfinite(a).all() for (n, _), a in recs.items() if n != "scores_masked")
    check("schema: finite values outside scores_masked", nonfinite_ok)


def test_mask_probs(recs, positions, S, precision, tag):
    tol = 1e-13 if precision == "f64" else 2e-6
    q = np.asarray(positions)[:, None, None]
    key = np.arange(S)[None, None, :]
    later = key > q
    for (name, layer), a in sorted(recs.items(), key=lambda kv: str(kv[0])):
        if name == "scores_masked":
            sc = recs[("scores", layer)]
            m = np.broadcast_to(later, a.shape)
            check("%s: scores_masked -inf exactly where key > query (layer %d)" % (tag, layer),
                  bool(np.all(np.isneginf(a[m]))) and bool(np.all(np.isfinite(a[~m])))
                  and np.array_equal(a[~m], sc[~m]))
        if name == "probs":
            m = np.broadcast_to(later, a.shape)
            sums = a.sum(axis=-1)
            check("%s: probs rows sum to 1 (layer %d)" % (tag, layer),
                  float(np.max(np.abs(sums - 1))) <= tol * S, str(np.max(np.abs(sums - 1))))
            check("%s: probs 0 on masked keys, >= 0 elsewhere (layer %d)" % (tag, layer),
                  bool(np.all(a[m] == 0)) and bool(np.all(a >= 0)))
    return later


def test_hand(hf, recs, ids, positions, c):
    W = py_tensors(hf)
    eps, theta, D = c["rms_norm_eps"], c["rope_theta"], c["head_dim"]
    r = positions.index(1)
    emb = W["model.embed_tokens.weight"][ids[1]]
    check("hand: embedding row = bf16 bits of the token's row",
          list(recs[("embedding", None)][r]) == emb)
    want = py_rmsnorm(emb, W["model.layers.0.input_layernorm.weight"], eps)
    check("hand: RMSNorm of the embedding row (plain floats)",
          rel_err(recs[("attn_norm", 0)][r], want) <= 1e-14,
          str(rel_err(recs[("attn_norm", 0)][r], want)))
    kn = list(recs[("k_norm", 0)][r])
    kr = recs[("k_rope", 0)][r]
    want = []
    for h in range(c["num_key_value_heads"]):
        want += py_rope(kn[h * D:(h + 1) * D], 1, theta)
    check("hand: rope at position 1 (math.cos/sin)", rel_err(kr, want) <= 1e-14,
          str(rel_err(kr, want)))
    r0 = positions.index(0)
    check("hand: rope at position 0 is the identity",
          np.array_equal(recs[("q_rope", 0)][r0], recs[("q_norm", 0)][r0]))
    # k_norm per head from k (plain floats)
    k = list(recs[("k", 0)][r])
    want = []
    for h in range(c["num_key_value_heads"]):
        want += py_rmsnorm(k[h * D:(h + 1) * D], W["model.layers.0.self_attn.k_norm.weight"], eps)
    check("hand: k_norm per head (plain floats)", rel_err(kn, want) <= 1e-14)


def test_config_defaults(tmp):
    d = os.path.join(tmp, "cfgdefaults")
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                   "vocab_size": 10, "hidden_size": 8, "num_key_value_heads": None}, f)
    c, m = gc.resolve_config(d)
    check("config: Qwen3Config defaults",
          c["head_dim"] == 128 and c["rope_theta"] == 10000.0 and c["rms_norm_eps"] == 1e-6
          and c["tie_word_embeddings"] is False and c["num_attention_heads"] == 32
          and c["num_key_value_heads"] == 32 and c["intermediate_size"] == 22016
          and m["rope_theta"] == "10000.0" and m["rms_norm_eps"] == "1e-06"
          and m["max_position_embeddings"] == 32768 and m["source_dtype"] is None, str(m))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "qwen3", "rope_scaling": {"rope_type": "yarn", "factor": 4}}, f)
    try:
        gc.resolve_config(d)
        check("config: rope_scaling refused", False)
    except gc.OracleError:
        check("config: rope_scaling refused", True)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinylm", default=None)
    ap.add_argument("--keep", default=None, help="work in this directory and keep it")
    args = ap.parse_args(argv)
    tinylm = tinylm_binary(args.tinylm)
    tmp = args.keep or tempfile.mkdtemp(prefix="qwen3_ref_test.")
    os.makedirs(tmp, exist_ok=True)
    try:
        run_tests(tinylm, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return summary()


def run_tests(tinylm, tmp):
    test_cbor_encoder()
    test_config_defaults(tmp)

    tiny = synth(tinylm, TINY, os.path.join(tmp, "tiny"))
    c, _ = gc.resolve_config(tiny)
    ids = [1, 72, 300, 320, 5, 256, 17]
    S = len(ids)
    allpos = list(range(S))
    o = lambda n: os.path.join(tmp, n)  # noqa: E731

    d64 = ref(tiny, ids, o("a64.cbor"))
    d64b = ref(tiny, ids, o("a64b.cbor"))
    d32 = ref(tiny, ids, o("a32.cbor"), "--precision", "f32")
    d32b = ref(tiny, ids, o("a32b.cbor"), "--precision", "f32")
    check("determinism: two f64 runs give identical bytes", d64 == d64b)
    check("determinism: two f32 runs give identical bytes", d32 == d32b)
    test_schema(d64, c, ids, allpos, "f64")
    test_schema(d32, c, ids, allpos, "f32")
    doc64, r64 = load(d64)
    doc32, r32 = load(d32)
    check("records: masked scores are IEEE -inf bytes",
          struct.pack("<d", float("-inf")) in next(
              r["data"] for r in doc64["records"] if r["name"] == "scores_masked"))

    test_mask_probs(r64, allpos, S, "f64", "f64")
    test_mask_probs(r32, allpos, S, "f32", "f32")

    # f32 against f64
    worst = []
    for key, a in r64.items():
        e = rel_err(r32[key], a)
        worst.append((e, key))
        check("f32~f64: %s layer %s" % key, e <= 2e-4, "rel %.3g" % e)
        if key[0] == "scores_masked":
            check("f32~f64: same -inf pattern (%s)" % (key[1],),
                  np.array_equal(np.isneginf(r32[key]), np.isneginf(a)))
    worst.sort(reverse=True)
    print("f32 vs f64, worst stages: %s" % ", ".join("%s/%s %.2g" % (k[0], k[1], e)
                                                     for e, k in worst[:3]))

    # causality: a prefix prompt's captures are the first rows of the longer one's
    for prec, rl in (("f64", r64), ("f32", r32)):
        P = 4
        dp = ref(tiny, ids[:P], o("p%s.cbor" % prec), "--precision", prec)
        _, rp = load(dp)
        bad = []
        for key, a in rp.items():
            b = rl[key][:P]
            if key[0] in ("scores", "scores_masked", "probs"):
                b = b[:, :, :P]
            if not np.array_equal(a, b):
                bad.append(key)
        check("causality (%s): prefix captures equal the first rows exactly" % prec,
              not bad, str(bad[:4]))
        check("causality (%s): probs of the long prompt are 0 beyond the prefix rows" % prec,
              all(np.all(rl[("probs", layer)][:P, :, P:] == 0)
                  for layer in range(c["num_hidden_layers"])))

    # position and stage selection
    dsel = ref(tiny, ids, o("sel.cbor"), "--positions", "5,1,5")
    docs, rs = load(dsel)
    check("positions: sorted, deduplicated", docs["positions"] == [1, 5])
    check("positions: rows equal the all-positions rows",
          all(np.array_equal(a, r64[k][[1, 5]]) for k, a in rs.items()))
    dst = ref(tiny, ids, o("st.cbor"), "--stages", "probs,logits,embedding")
    doct, rt = load(dst)
    check("stages: only the chosen stages, in order",
          [(r["name"], r["layer"]) for r in doct["records"]]
          == [("embedding", None), ("probs", 0), ("probs", 1), ("logits", None)])
    check("stages: equal to the full capture",
          all(np.array_equal(a, r64[k]) for k, a in rt.items()))

    # sharded, separate lm_head (a byte copy) -> the same numbers
    shard = synth(tinylm, TINY, o("shard"), "--shards", "3", "--separate-lm-head")
    check("sharded: index file present",
          os.path.isfile(os.path.join(shard, "model.safetensors.index.json")))
    dsh = ref(shard, ids, o("sh.cbor"))
    _, rsh = load(dsh)
    check("sharded + separate lm_head: same records as the single file",
          all(np.array_equal(a, r64[k]) for k, a in rsh.items()) and rsh.keys() == r64.keys())
    # f32 checkpoint loads
    f32ck = synth(tinylm, TINY, o("f32ck"), "--dtype", "f32")
    df = ref(f32ck, ids, o("f32ck.cbor"))
    _, rf = load(df)
    check("f32 checkpoint: runs, close to the bf16 one",
          rel_err(rf[("logits", None)], r64[("logits", None)]) < 0.1)

    # refusals
    err = ref(tiny, [1, 346], o("x.cbor"), expect=1)
    check("refuse: id >= vocab_size", "vocab_size" in err, err)
    err = ref(tiny, [1, 2], o("x.cbor"), "--positions", "2", expect=1)
    check("refuse: position outside the prompt", "position" in err, err)
    err = ref(tiny, [1, 2], o("x.cbor"), "--stages", "nope", expect=1)
    check("refuse: unknown stage", "unknown stage" in err, err)
    # tied but lm_head differs: corrupt the copy's lm_head bytes
    bad = o("badhead")
    shutil.copytree(shard, bad)
    st = gc.SafeTensorsDir(bad)
    path, _, _, b, _ = st.entries["lm_head.weight"]
    with open(path, "r+b") as f:
        f.seek(b)
        x = f.read(1)
        f.seek(b)
        f.write(bytes([x[0] ^ 1]))
    err = ref(bad, [1, 2], o("x.cbor"), expect=1)
    check("refuse: tied embeddings with a different lm_head", "lm_head" in err, err)
    check("refuse: no output file written", not os.path.exists(o("x.cbor")))

    test_slm(tinylm, tmp, tiny, shard, ids)

    # qwen3_torch.py: importable without torch; a clear refusal when torch is absent
    try:
        import qwen3_torch  # noqa: F401
        check("qwen3_torch: importable", True)
    except Exception as e:  # pragma: no cover
        check("qwen3_torch: importable", False, repr(e))
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    if not have_torch:
        p = subprocess.run([PY, os.path.join(HERE, "qwen3_torch.py"), tiny, "--ids", "1 2",
                            "-o", o("t.cbor")], capture_output=True, text=True)
        check("qwen3_torch: exit 1 naming torch when it is missing",
              p.returncode == 1 and "torch" in p.stderr and not os.path.exists(o("t.cbor")),
              p.stderr)

    # hand-computed pieces
    test_hand(tiny, r64, ids, allpos, c)

    # a whole 1-layer forward pass in plain Python against NumPy f64
    one = synth(tinylm, ONE, o("one"))
    c1, m1 = gc.resolve_config(one)
    for q in ("q8", "q4"):  # rows of 24 and 40: short tail blocks
        check_decoded(one, convert(tinylm, one, o("one-%s.slm" % q), q), q, 8, "one")
    check("config: overrides read (rope_theta, rms_norm_eps)",
          m1["rope_theta"] == "10000.0" and m1["rms_norm_eps"] == "1e-05")
    for pr in ([300], [300, 7, 321]):
        d1 = ref(one, pr, o("one.cbor"))
        _, r1 = load(d1)
        want = py_forward(one, c1, pr)
        got = r1[("logits", None)]
        e = max(rel_err(got[i], want[i]) for i in range(len(pr)))
        check("plain Python 1-layer logits, %d-token prompt (rel <= 1e-12)" % len(pr),
              e <= 1e-12, "rel %.3g" % e)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
