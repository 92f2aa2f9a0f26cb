#!/usr/bin/python3
"""NumPy reference of the Qwen3 forward pass: writes a tinylm.golden/1 capture.

    qwen3_ref.py HF_DIR --ids "1 2 3" [--precision f64|f32]
                 [--positions all|0,5,7] [--stages all|name,name]
                 [--weights TEXT] [--greedy N]
                 [--slm MODEL.slm [--no-slm-digests]] -o OUT.cbor

An independent oracle for the C runtime (docs/golden.md), written from
transformers' modeling_qwen3.py semantics and the repository's docs, not
from the C sources. Runs with Debian's python3-numpy; no torch.

The prompt is fed from position 0; every position is computed (keys and
values need them all) and the stages of docs/golden.md are captured at the
chosen query positions.

--precision f64: every weight widened to float64, all arithmetic in float64
  (inv_freq, cos/sin, RMSNorm, softmax included).
--precision f32: float32 throughout, in transformers' float32 order of
  operations: RMSNorm w * (x * rsqrt(mean(x^2) + eps)); inv_freq =
  1 / (theta ** (arange(0, D, 2) / D)) in f32; q * cos + rotate_half(q) *
  sin; scores = (q @ k^T) * f32(D^-0.5); softmax in f32; silu(g) * u.

--slm MODEL.slm: the weights (and only the weights) come from a tinylm
  model artifact instead of HF_DIR's safetensors files, decoded per
  docs/quant.md (tools/slm_read.py: f32/f16/bf16 elementwise, q8/q4 as
  code * scale in f32), so that a lossy artifact (--quant q8|q4|f16|bf16)
  is compared with the same values it holds. The config still comes from
  HF_DIR/config.json and must agree with the artifact's (shapes, norms,
  rope, tying). A tied model's artifact stores no lm_head.weight: the
  head is the embedding. The artifact is checked on open (container,
  metadata, every section and tensor digest; --no-slm-digests skips the
  tensor data's digests, which pure-Python BLAKE3 reads at ~2 MiB/s).
  The default model.weights label names the artifact, its SHA-256 and its
  stored dtypes.

Causality by construction: the softmax and probs . v of query i use only
keys 0..i (arrays whose shapes depend on i alone), so a prefix prompt's
captures equal the first rows of a longer prompt's.

Exit status 0 on success, 1 for a refused input (message on stderr), 2 for
a usage error.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reference_blas  # noqa: E402

if __name__ == "__main__":
    reference_blas.ensure()  # before numpy loads its BLAS

import numpy as np  # noqa: E402

import golden_cbor as gc  # noqa: E402

PRODUCER = "numpy-qwen3-ref"
VERSION = "1.0 numpy-" + np.__version__


def rmsnorm(x, w, eps, dt):
    """RMSNorm over the last axis: w * (x * 1/sqrt(mean(x^2) + eps))."""
    var = np.mean(x * x, axis=-1, keepdims=True, dtype=dt)
    r = dt(1.0) / np.sqrt(var + dt(eps))
    return w * (x * r)


def rope_tables(n, head_dim, theta, dt):
    """cos, sin [n, head_dim] for positions 0..n-1 (rotate_half layout:
    the D/2 frequencies repeated twice)."""
    half = np.arange(0, head_dim, 2, dtype=np.int64).astype(dt) / dt(head_dim)
    inv_freq = dt(1.0) / (dt(theta) ** half)
    pos = np.arange(n, dtype=np.int64).astype(dt)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dt), np.sin(emb).astype(dt)


def apply_rope(x, cos, sin):
    """x [S, n_heads, D]; cos/sin [S, D]."""
    d2 = x.shape[-1] // 2
    rot = np.concatenate([-x[..., d2:], x[..., :d2]], axis=-1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def forward(st, c, ids, positions, stages, precision):
    """Returns the list of records (golden_cbor.make_record)."""
    dt = np.float64 if precision == "f64" else np.float32
    V, H, I = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    L, A, K, D = (c["num_hidden_layers"], c["num_attention_heads"],
                  c["num_key_value_heads"], c["head_dim"])
    eps, G = c["rms_norm_eps"], A // K
    S = len(ids)
    for t in ids:
        if t >= V:
            raise gc.OracleError("token id %d is not below vocab_size %d" % (t, V))
    sel = np.asarray(positions, dtype=np.int64)
    records = []

    def cap(name, layer, rows):
        if name in stages:
            records.append(gc.make_record(name, layer, rows, precision))

    E = st.get("model.embed_tokens.weight", dt, (V, H))
    if c["tie_word_embeddings"]:
        if "lm_head.weight" in st:
            a, b = st.raw("lm_head.weight"), st.raw("model.embed_tokens.weight")
            same = (a == b) if a[0] == b[0] else np.array_equal(
                st.get("lm_head.weight", np.float64), E.astype(np.float64))
            if not same:
                raise gc.OracleError("tie_word_embeddings is true but lm_head.weight "
                                     "differs from model.embed_tokens.weight")
        head = E
    else:
        head = None  # read when needed

    x = E[np.asarray(ids, dtype=np.int64)].copy()
    if not c["tie_word_embeddings"]:
        del E
    cap("embedding", None, x[sel])

    cos, sin = rope_tables(S, D, c["rope_theta"], dt)
    scale = dt(D ** -0.5)
    later = np.arange(S)[None, :] > np.arange(S)[:, None]  # [query, key]: key > query

    with np.errstate(over="ignore"):
        for l in range(L):
            p = "model.layers.%d." % l

            def w(n, shape):
                return st.get(p + n, dt, shape)

            h = rmsnorm(x, w("input_layernorm.weight", (H,)), eps, dt)
            cap("attn_norm", l, h[sel])
            q = h @ w("self_attn.q_proj.weight", (A * D, H)).T
            k = h @ w("self_attn.k_proj.weight", (K * D, H)).T
            v = h @ w("self_attn.v_proj.weight", (K * D, H)).T
            cap("q", l, q[sel])
            cap("k", l, k[sel])
            cap("v", l, v[sel])
            qn = rmsnorm(q.reshape(S, A, D), w("self_attn.q_norm.weight", (D,)), eps, dt)
            kn = rmsnorm(k.reshape(S, K, D), w("self_attn.k_norm.weight", (D,)), eps, dt)
            cap("q_norm", l, qn.reshape(S, A * D)[sel])
            cap("k_norm", l, kn.reshape(S, K * D)[sel])
            qr = apply_rope(qn, cos, sin)
            kr = apply_rope(kn, cos, sin)
            cap("q_rope", l, qr.reshape(S, A * D)[sel])
            cap("k_rope", l, kr.reshape(S, K * D)[sel])

            qh = np.ascontiguousarray(qr.transpose(1, 0, 2))  # [A, S, D]
            kh = np.ascontiguousarray(kr.transpose(1, 0, 2))  # [K, S, D]
            vh = np.ascontiguousarray(v.reshape(S, K, D).transpose(1, 0, 2))
            scores = np.empty((A, S, S), dtype=dt)  # [head, query, key]
            for hd in range(A):
                scores[hd] = qh[hd] @ kh[hd // G].T
            scores *= scale
            if "scores" in stages:
                cap("scores", l, scores[:, sel, :].transpose(1, 0, 2))
            if "scores_masked" in stages:
                sm = np.where(later[None, sel, :], dt(-np.inf), scores[:, sel, :])
                cap("scores_masked", l, sm.transpose(1, 0, 2))

            attn = np.empty((S, A, D), dtype=dt)
            want_probs = "probs" in stages
            probs = np.zeros((len(sel), A, S), dtype=dt) if want_probs else None
            row_of = {int(pp): r for r, pp in enumerate(sel)}
            for i in range(S):
                s = scores[:, i, :i + 1]  # keys 0..i only
                m = s.max(axis=1, keepdims=True)
                e = np.exp(s - m)
                pr = e / e.sum(axis=1, keepdims=True)
                attn[i] = np.matmul(pr.reshape(K, G, i + 1),
                                    vh[:, :i + 1, :]).reshape(A, D)
                if want_probs and i in row_of:
                    probs[row_of[i], :, :i + 1] = pr
            del scores
            if want_probs:
                cap("probs", l, probs)
            attn = attn.reshape(S, A * D)
            cap("attn_out", l, attn[sel])
            o = attn @ w("self_attn.o_proj.weight", (H, A * D)).T
            cap("o_proj", l, o[sel])
            x1 = x + o
            cap("attn_residual", l, x1[sel])
            hm = rmsnorm(x1, w("post_attention_layernorm.weight", (H,)), eps, dt)
            cap("mlp_norm", l, hm[sel])
            g = hm @ w("mlp.gate_proj.weight", (I, H)).T
            u = hm @ w("mlp.up_proj.weight", (I, H)).T
            cap("gate", l, g[sel])
            cap("up", l, u[sel])
            act = (g / (dt(1.0) + np.exp(-g))) * u
            cap("act", l, act[sel])
            dn = act @ w("mlp.down_proj.weight", (H, I)).T
            cap("down", l, dn[sel])
            x = x1 + dn
            cap("layer_out", l, x[sel])

    if "final_norm" in stages or "logits" in stages:
        fn = rmsnorm(x[sel], st.get("model.norm.weight", dt, (H,)), eps, dt)
        cap("final_norm", None, fn)
        if "logits" in stages:
            if head is None:
                head = st.get("lm_head.weight", dt, (V, H))
            cap("logits", None, fn @ head.T)
    return records


def greedy(st, c, ids, n, precision):
    """n greedy steps after the prompt: each step the whole sequence is run
    again and the last position's argmax (lowest id on ties) appended.
    Returns (ids, margins): margins[i] = top-1 minus top-2 logit at step i."""
    def last_logits(seq):
        rec = forward(st, c, seq, [len(seq) - 1], {"logits"}, precision)[0]
        return gc.record_array(rec)[0]
    return gc.greedy_continuation(last_logits, ids, n)


# Config fields an --slm artifact's metadata must share with config.json.
SLM_CONFIG_INTS = ("vocab_size", "hidden_size", "intermediate_size",
                   "num_hidden_layers", "num_attention_heads",
                   "num_key_value_heads", "head_dim", "tie_word_embeddings")
SLM_CONFIG_FLOATS = ("rms_norm_eps", "rope_theta")


class SlmWeights:
    """The weights of a tinylm .slm model artifact, with SafeTensorsDir's
    interface (`in`, raw, get); tensors are looked up by their directory
    names (the checkpoint's tensor names)."""

    def __init__(self, path, c, digests=True):
        tools = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if tools not in sys.path:
            sys.path.insert(0, tools)
        import slm_read  # needs python3-cbor2; only --slm pays for it
        self.path = path
        try:
            self.m = slm_read.SlmModel(path, digests)
            meta_cfg = self.m.config()
        except OSError as e:
            raise gc.OracleError("%s: %s" % (path, e.strerror or e))
        except slm_read.si.SlmError as e:
            raise gc.OracleError("%s: %s" % (path, e))
        self.decode_error = slm_read.si.SlmError
        for key in SLM_CONFIG_INTS + SLM_CONFIG_FLOATS:
            v = meta_cfg.get(key)
            try:
                same = (float(v) == c[key] if key in SLM_CONFIG_FLOATS
                        else (type(v) is type(c[key]) and v == c[key]))
            except (TypeError, ValueError):
                same = False
            if not same:
                raise gc.OracleError("%s: config %s is %r in the artifact, %r in "
                                     "config.json" % (path, key, v, c[key]))

    def __contains__(self, name):
        return name in self.m

    def raw(self, name):
        return self.m.raw(name)

    def get(self, name, dtype, shape=None):
        if name not in self.m:
            raise gc.OracleError("%s: missing tensor %s" % (self.path, name))
        dt, shp, _ = self.m.raw(name)
        if shape is not None and tuple(shape) != shp:
            raise gc.OracleError("%s: shape %s, expected %s"
                                 % (name, list(shp), list(shape)))
        try:
            a = self.m.get(name)
        except self.decode_error as e:
            raise gc.OracleError("%s: %s" % (self.path, e))
        return a.astype(dtype)

    def label(self):
        dts = sorted({t["dtype"] for t in self.m.tensors.values()})
        q = self.m.meta.get("quantization")
        req = q.get("requested") if isinstance(q, dict) else None
        return "slm %s sha256:%s quant %s (%s)" % (
            os.path.basename(self.path), self.m.artifact_id()[:16], req,
            "+".join(dts))


def _cli_extra(ap):
    ap.add_argument("--slm", default=None, metavar="MODEL.slm",
                    help="read the weights from this tinylm model artifact "
                         "(decoded per docs/quant.md) instead of HF_DIR's "
                         "safetensors; the config stays HF_DIR/config.json")
    ap.add_argument("--no-slm-digests", action="store_true",
                    help="with --slm: skip the digests of the tensor data "
                         "(slow in pure Python for large artifacts)")


def run(argv):
    args = gc.parse_cli(argv, "qwen3_ref.py", __doc__.splitlines()[0],
                        extra=_cli_extra)
    c, cmap = gc.resolve_config(args.hf_dir)
    if args.slm is not None:
        st = SlmWeights(args.slm, c, digests=not args.no_slm_digests)
    else:
        if args.no_slm_digests:
            raise gc.OracleError("--no-slm-digests needs --slm")
        st = gc.SafeTensorsDir(args.hf_dir)
    ids = gc.parse_ids(args.ids)
    positions = gc.parse_positions(args.positions, len(ids))
    stages = gc.parse_stages(args.stages)
    records = forward(st, c, ids, positions, stages, args.precision)
    if args.weights:
        weights = args.weights
    elif args.slm is not None:
        weights = st.label()
    else:
        weights = gc.default_weights_label(args.hf_dir, st)
    continuation = greedy(st, c, ids, args.greedy, args.precision) if args.greedy else None
    doc = gc.golden_document({"name": PRODUCER, "version": VERSION,
                              "precision": args.precision},
                             cmap, weights, ids, positions, records, continuation)
    gc.write_file(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(gc.main_wrapper(lambda: run(sys.argv[1:])))
