#!/usr/bin/env python3
"""transformers' own Qwen3 forward pass, captured as a tinylm.golden/1 document.

    qwen3_torch.py HF_DIR --ids "1 2 3" [--precision f32]
                   [--positions all|0,5,7] [--stages all|name,name]
                   [--weights TEXT] [--greedy N] -o OUT.cbor

Same command line and same CBOR document (docs/golden.md) as
tools/oracle/qwen3_ref.py, with producer {"name": "transformers",
"version": "transformers-X torch-Y", "precision": "f32"}. Only f32:
transformers computes RMSNorm (hidden_states.to(float32)), the rotary
cos/sin tables and the attention softmax (softmax(..., dtype=float32)) in
float32 whatever the model dtype, so even a float64 model would not give
what an "f64" run's name says.

How the stages are obtained
---------------------------
The model is loaded with
    Qwen3ForCausalLM.from_pretrained(HF_DIR, torch_dtype=torch.float32,
                                     attn_implementation="eager")
on the CPU (bf16 weights widen exactly), with
torch.use_deterministic_algorithms(True) and TF32 off
(torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 =
False), and run once on the whole prompt from position 0 (use_cache=False,
output_attentions=True). Forward hooks record:

    embedding      model.embed_tokens output
    attn_norm      layers[l].input_layernorm output
    q, k, v        self_attn.q_proj / k_proj / v_proj outputs
    q_norm, k_norm self_attn.q_norm / k_norm outputs ([S, heads, D] -> [S, heads*D])
    attn_out       self_attn.o_proj input;  o_proj: its output
    attn_residual  post_attention_layernorm input;  mlp_norm: its output
    gate, up       mlp.gate_proj / up_proj outputs
    act            mlp.down_proj input;  down: its output
    layer_out      layers[l] output
    final_norm     model.norm output;  logits: lm_head output

q_rope, k_rope, scores and scores_masked are recomputed from the hooked
q_norm/k_norm outputs exactly as modeling_qwen3 does: cos, sin =
model.model.rotary_emb(x, position_ids); apply_rotary_pos_emb (from
transformers.models.qwen3.modeling_qwen3); scores = (q @ repeat_kv(k)^T) *
self_attn.scaling; scores_masked sets keys after the query to -inf.
probs are the attention weights transformers returns (output_attentions);
they are checked against softmax(scores_masked) recomputed in float32 (a
warning on stderr when they differ by more than 1e-6), and the recomputation
is used when a transformers version returns none.

--greedy N: after the capture, N greedy steps by the rule of
tools/oracle/qwen3_ref.py (golden_cbor.greedy_continuation): each step runs
the whole sequence again from position 0 without a KV cache (use_cache=
False), appends the argmax of the last position's float32 logits (lowest
id on ties) and records the margin top-1 minus top-2 in float64 (little-
endian f64 bytes in "continuation"). Not run on the development machine
(no torch there): written from qwen3_ref.py's continuation, with only the
model call differing. The goldens in tests/golden/transformers/ got their
continuations by this same rule from a separate script (their README).

model.config is the effective config derived from config.json by the same
code as qwen3_ref.py (tools/oracle/golden_cbor.py); the script checks that
the loaded model's config agrees (eps, rope theta, shapes, tying).

Running it on the device machine
--------------------------------
torch and transformers exist only on the device machine (not on the
development machine). From the repository root of the working tree the
`run` tool copies there (the checkpoint must travel with it: build it into
an untracked, non-ignored folder, or name it in `carry`; keep it small,
64 MiB in all), for example:

    # here
    build/gcc/tinylm synth --config tiny.json --seed 7 -o tmp-golden/hf \
        --tokenizer-dir tests/fixtures/tiny-tokenizer
    # device machine (`run` tool), writes $OUT/torch.cbor:
    python3 tools/oracle/qwen3_torch.py tmp-golden/hf --ids "1 72 300 320" \
        -o "$OUT/torch.cbor" --weights "synth tiny seed 7 bf16"

It needs numpy (imported by golden_cbor.py) but not cbor2: the CBOR writer
is golden_cbor.cbor_encode. It runs on the CPU only and prints one line on
stderr (versions, seconds, the probs cross-check). Exit status 0 on success,
1 for a refused input or missing torch/transformers (message on stderr),
2 for a usage error. Importing this module never imports torch.
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import golden_cbor as gc  # noqa: E402

PRODUCER = "transformers"


def _import_torch():
    try:
        import torch
        import transformers
        from transformers import Qwen3ForCausalLM
        from transformers.models.qwen3 import modeling_qwen3
    except ImportError as e:
        raise gc.OracleError(
            "qwen3_torch.py needs torch and transformers (with Qwen3 support, "
            ">= 4.51); they are installed only on the device machine: %s" % e)
    return torch, transformers, Qwen3ForCausalLM, modeling_qwen3


def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def _check_model_config(model, c):
    mc = model.config
    problems = []

    def want(name, got, exp):
        if got != exp:
            problems.append("%s: model %r, config.json %r" % (name, got, exp))

    for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "num_key_value_heads", "head_dim"):
        want(k, getattr(mc, k, None), c[k])
    want("rms_norm_eps", float(mc.rms_norm_eps), c["rms_norm_eps"])
    theta = getattr(mc, "rope_theta", None)
    rp = getattr(mc, "rope_parameters", None)
    if isinstance(rp, dict) and "rope_theta" in rp:
        theta = rp["rope_theta"]
    if theta is not None:
        want("rope_theta", float(theta), c["rope_theta"])
    want("tie_word_embeddings", bool(mc.tie_word_embeddings), c["tie_word_embeddings"])
    impl = getattr(mc, "_attn_implementation", None)
    want("attn_implementation", impl, "eager")
    if problems:
        raise gc.OracleError("the loaded model disagrees with config.json: "
                             + "; ".join(problems))


def forward(torch, mq, model, c, ids, positions, stages):
    S = len(ids)
    L, A, K, D = (c["num_hidden_layers"], c["num_attention_heads"],
                  c["num_key_value_heads"], c["head_dim"])
    sel = np.asarray(positions, dtype=np.int64)
    got = {}  # (name, layer) -> float32 numpy [S, ...]
    hooks = []

    def keep(name, layer, t):
        got[(name, layer)] = t.detach().to(torch.float32).cpu().clone().reshape(S, -1).numpy()

    def out_hook(name, layer):
        def h(mod, inp, out):
            keep(name, layer, _first(out))
        return h

    def in_out_hook(name_in, name_out, layer):
        def h(mod, inp, out):
            keep(name_in, layer, _first(inp))
            keep(name_out, layer, _first(out))
        return h

    m = model.model
    hooks.append(m.embed_tokens.register_forward_hook(out_hook("embedding", None)))
    for l, layer in enumerate(m.layers):
        at, mlp = layer.self_attn, layer.mlp
        hooks += [
            layer.input_layernorm.register_forward_hook(out_hook("attn_norm", l)),
            at.q_proj.register_forward_hook(out_hook("q", l)),
            at.k_proj.register_forward_hook(out_hook("k", l)),
            at.v_proj.register_forward_hook(out_hook("v", l)),
            at.q_norm.register_forward_hook(out_hook("q_norm", l)),
            at.k_norm.register_forward_hook(out_hook("k_norm", l)),
            at.o_proj.register_forward_hook(in_out_hook("attn_out", "o_proj", l)),
            layer.post_attention_layernorm.register_forward_hook(
                in_out_hook("attn_residual", "mlp_norm", l)),
            mlp.gate_proj.register_forward_hook(out_hook("gate", l)),
            mlp.up_proj.register_forward_hook(out_hook("up", l)),
            mlp.down_proj.register_forward_hook(in_out_hook("act", "down", l)),
            layer.register_forward_hook(out_hook("layer_out", l)),
        ]
    hooks.append(m.norm.register_forward_hook(out_hook("final_norm", None)))
    hooks.append(model.lm_head.register_forward_hook(out_hook("logits", None)))

    input_ids = torch.tensor([ids], dtype=torch.long)
    position_ids = torch.arange(S, dtype=torch.long)[None, :]
    with torch.no_grad():
        out = model(input_ids=input_ids, position_ids=position_ids, use_cache=False,
                    output_attentions=True)
        for h in hooks:
            h.remove()
        attentions = getattr(out, "attentions", None)
        missing = [(s, l) for s, inside in gc.STAGES for l in (range(L) if inside else [None])
                   if s not in ("q_rope", "k_rope", "scores", "scores_masked", "probs")
                   and (s, l) not in got]
        if missing:
            raise gc.OracleError("hooks did not fire for %s" % missing[:6])

        x = torch.from_numpy(got[("embedding", None)]).reshape(1, S, -1)
        cos, sin = m.rotary_emb(x, position_ids)
        later = torch.arange(S)[None, :] > torch.arange(S)[:, None]  # [query, key]
        worst = 0.0
        for l, layer in enumerate(m.layers):
            at = layer.self_attn
            qn = torch.from_numpy(got[("q_norm", l)]).reshape(1, S, A, D).transpose(1, 2)
            kn = torch.from_numpy(got[("k_norm", l)]).reshape(1, S, K, D).transpose(1, 2)
            qr, kr = mq.apply_rotary_pos_emb(qn, kn, cos, sin)
            keep("q_rope", l, qr.transpose(1, 2))
            keep("k_rope", l, kr.transpose(1, 2))
            kk = mq.repeat_kv(kr, at.num_key_value_groups)
            sc = torch.matmul(qr, kk.transpose(2, 3)) * at.scaling  # [1, A, S, S]
            scm = sc.masked_fill(later[None, None], float("-inf"))
            pr = torch.nn.functional.softmax(scm, dim=-1, dtype=torch.float32)
            if attentions is not None and attentions[l] is not None:
                aw = attentions[l].detach().to(torch.float32)
                worst = max(worst, float((aw - pr).abs().max()))
                pr = aw
            for name, t in (("scores", sc), ("scores_masked", scm), ("probs", pr)):
                # [1, A, S(query), S(key)] -> [S, A, S]
                got[(name, l)] = t[0].transpose(0, 1).contiguous().clone().numpy()
        if worst > 1e-6:
            print("warning: transformers' attention weights differ from "
                  "softmax(scores_masked) by up to %.3g" % worst, file=sys.stderr)

    records = []
    for (name, layer), a in got.items():
        if name in stages:
            rows = a[sel]
            if name in ("scores", "scores_masked", "probs"):
                rows = rows.reshape(len(sel), A, S)
            records.append(gc.make_record(name, layer, rows, "f32"))
    return records, worst, attentions is not None


def greedy(torch, model, ids, n):
    """n greedy steps after the prompt (see --greedy): (ids, margins)."""
    def last_logits(seq):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([seq], dtype=torch.long),
                        position_ids=torch.arange(len(seq), dtype=torch.long)[None, :],
                        use_cache=False)
        return out.logits[0, -1].detach().to(torch.float32).cpu().numpy()
    return gc.greedy_continuation(last_logits, ids, n)


def run(argv):
    args = gc.parse_cli(argv, "qwen3_torch.py", __doc__.splitlines()[0],
                        precisions=("f32",), default_precision="f32")
    c, cmap = gc.resolve_config(args.hf_dir)
    st = gc.SafeTensorsDir(args.hf_dir)  # headers only: the weights label
    ids = gc.parse_ids(args.ids)
    for t in ids:
        if t >= c["vocab_size"]:
            raise gc.OracleError("token id %d is not below vocab_size %d"
                                 % (t, c["vocab_size"]))
    positions = gc.parse_positions(args.positions, len(ids))
    stages = gc.parse_stages(args.stages)
    torch, transformers, Qwen3ForCausalLM, mq = _import_torch()

    t0 = time.time()
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = Qwen3ForCausalLM.from_pretrained(args.hf_dir, torch_dtype=torch.float32,
                                             attn_implementation="eager")
    model = model.to("cpu").float().eval()
    for n, p in model.named_parameters():
        if p.dtype != torch.float32:
            raise gc.OracleError("parameter %s is %s, not float32" % (n, p.dtype))
    _check_model_config(model, c)
    if c["tie_word_embeddings"] and not torch.equal(model.lm_head.weight,
                                                    model.model.embed_tokens.weight):
        raise gc.OracleError("tie_word_embeddings is true but the model's lm_head "
                             "differs from embed_tokens")

    records, worst, had_attn = forward(torch, mq, model, c, ids, positions, stages)
    continuation = greedy(torch, model, ids, args.greedy) if args.greedy else None
    version = "transformers-%s torch-%s" % (transformers.__version__, torch.__version__)
    weights = args.weights or gc.default_weights_label(args.hf_dir, st)
    doc = gc.golden_document({"name": PRODUCER, "version": version, "precision": "f32"},
                             cmap, weights, ids, positions, records, continuation)
    gc.write_file(args.out, doc)
    print("qwen3_torch: %s, %d tokens, %d records, %.1f s; probs from %s "
          "(max |diff| to the recomputed softmax %.3g)"
          % (version, len(ids), len(records), time.time() - t0,
             "output_attentions" if had_attn else "the recomputed softmax", worst),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(gc.main_wrapper(lambda: run(sys.argv[1:])))
