#!/usr/bin/python3
"""NumPy float64 reference of a Qwen3-Embedding vector.

    qwen3_embed_ref.py HF_DIR --ids "1 2 3" [--dimensions N]

Prints {"append_id": u, "ids": [...], "embedding": [...], "raw_norm": x,
"raw_rms": y} as JSON: raw_norm is the L2 norm of the pooled state's
components that were normalised, raw_rms the RMS of the whole pooled state
(what docs/tolerance.md's embedding bound is computed from). The
sentence-transformers recipe of the checkpoint's own files, independent of
tinylm: tokenizer.json's post-processor (a TemplateProcessing "$A X")
appends token X to the ids; the model (qwen3_ref.forward, float64) runs
from position 0; 1_Pooling/config.json must select last-token pooling, so
the final-norm state of the last position (the appended token) is the
sentence vector; modules.json must end in Normalize, so it is divided by
its L2 norm. --dimensions N (Matryoshka truncation, as the model card
describes): the first N components, normalised again.

Tensor names: the checkpoint is saved from Qwen3Model (no "model."
prefix); qwen3_ref reads the Qwen3ForCausalLM names, so each is looked up
without the prefix.

Exit status 0, 1 for a refused input (message on stderr), 2 for usage.
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reference_blas  # noqa: E402

if __name__ == "__main__":
    reference_blas.ensure()

import numpy as np  # noqa: E402

import golden_cbor as gc  # noqa: E402
import qwen3_ref  # noqa: E402


class Unprefixed:
    """SafeTensorsDir's interface over a Qwen3Model checkpoint: "model.X"
    reads X; there is no lm_head."""

    def __init__(self, st):
        self.st = st

    @staticmethod
    def _name(name):
        return name[6:] if name.startswith("model.") else "(none) " + name

    def __contains__(self, name):
        return self._name(name) in self.st

    def raw(self, name):
        return self.st.raw(self._name(name))

    def get(self, name, dtype, shape=None):
        return self.st.get(self._name(name), dtype, shape)


def appended_id(hf_dir):
    tok = gc._load_json(os.path.join(hf_dir, "tokenizer.json"))
    pp = tok.get("post_processor") or {}
    single = pp.get("single") or []
    if pp.get("type") != "TemplateProcessing" or len(single) != 2 or \
            "SpecialToken" not in single[1]:
        raise gc.OracleError("tokenizer.json: post_processor does not append a token")
    name = single[1]["SpecialToken"]["id"]
    ids = pp["special_tokens"][name]["ids"]
    if len(ids) != 1:
        raise gc.OracleError("tokenizer.json: %s is not one id" % name)
    return ids[0]


def check_modules(hf_dir):
    mods = gc._load_json(os.path.join(hf_dir, "modules.json"))
    types = [m.get("type", "").rsplit(".", 1)[-1] for m in mods]
    if types != ["Transformer", "Pooling", "Normalize"]:
        raise gc.OracleError("modules.json: %s, not Transformer, Pooling, Normalize" % types)
    pool = gc._load_json(os.path.join(hf_dir, mods[1]["path"], "config.json"))
    if not pool.get("pooling_mode_lasttoken") or any(
            v for k, v in pool.items() if k.startswith("pooling_mode_") and
            k != "pooling_mode_lasttoken"):
        raise gc.OracleError("1_Pooling/config.json: not last-token pooling")


def embed(hf_dir, ids, dims=None):
    check_modules(hf_dir)
    c, _ = gc.resolve_config(hf_dir)
    seq = list(ids) + [appended_id(hf_dir)]
    st = Unprefixed(gc.SafeTensorsDir(hf_dir))
    rec = qwen3_ref.forward(st, c, seq, [len(seq) - 1], {"final_norm"}, "f64")[0]
    v = gc.record_array(rec)[0].astype(np.float64)
    rms = float(np.sqrt(np.mean(v * v)))
    if dims is not None:
        if not 1 <= dims <= v.shape[0]:
            raise gc.OracleError("--dimensions %d is not in 1..%d" % (dims, v.shape[0]))
        v = v[:dims]
    norm = float(np.sqrt(np.sum(v * v)))
    return seq, v / norm, norm, rms


def main():
    ap = argparse.ArgumentParser(prog="qwen3_embed_ref.py", description=__doc__.splitlines()[0])
    ap.add_argument("hf_dir")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--dimensions", type=int, default=None)
    a = ap.parse_args()
    seq, v, norm, rms = embed(a.hf_dir, gc.parse_ids(a.ids), a.dimensions)
    print(json.dumps({"append_id": seq[-1], "ids": seq, "embedding": [float(x) for x in v],
                      "raw_norm": norm, "raw_rms": rms}))
    return 0


if __name__ == "__main__":
    sys.exit(gc.main_wrapper(main))
