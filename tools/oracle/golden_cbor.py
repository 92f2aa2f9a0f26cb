"""Shared pieces of the Qwen3 forward-pass oracles (docs/golden.md).

Used by tools/oracle/qwen3_ref.py (NumPy) and tools/oracle/qwen3_torch.py
(transformers). Written from the docs (golden.md, cbor.md, synth.md,
qwen3-config.md, safetensors.md) only; it does not read the C sources.

Contents:
  * cbor_encode(obj): deterministic CBOR (docs/cbor.md profile: shortest
    heads, definite lengths, no floats, map keys sorted by their encoded
    bytes, duplicates refused) for None, bool, int, bytes, str, list/tuple,
    dict.
  * STAGES / stage_sort_key / make_record / golden_document: the
    `tinylm.golden/1` document and record layout.
  * resolve_config(hf_dir): config.json with Qwen3Config's defaults, the
    effective values used by the forward pass and the CBOR "config" map.
  * SafeTensorsDir: a small safetensors reader (single file or sharded via
    model.safetensors.index.json; BF16, F16, F32, F64).
  * parse_cli(argv, prog, precisions, extra): the common command line
    (extra adds a producer's own options).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

FORMAT = "tinylm.golden/1"

# (name, inside a layer) in the order of the computation (docs/golden.md).
STAGES = [
    ("embedding", False),
    ("attn_norm", True),
    ("q", True),
    ("k", True),
    ("v", True),
    ("q_norm", True),
    ("k_norm", True),
    ("q_rope", True),
    ("k_rope", True),
    ("scores", True),
    ("scores_masked", True),
    ("probs", True),
    ("attn_out", True),
    ("o_proj", True),
    ("attn_residual", True),
    ("mlp_norm", True),
    ("gate", True),
    ("up", True),
    ("act", True),
    ("down", True),
    ("layer_out", True),
    ("final_norm", False),
    ("logits", False),
]
STAGE_NAMES = [s for s, _ in STAGES]
STAGE_INDEX = {s: i for i, s in enumerate(STAGE_NAMES)}
LAYER_STAGES = {s for s, inside in STAGES if inside}


class OracleError(Exception):
    """A refused input (bad checkpoint, bad argument): message for the user."""


# --------------------------------------------------------------------------
# Deterministic CBOR (docs/cbor.md)
# --------------------------------------------------------------------------

def _head(major, arg):
    if arg < 0:
        raise ValueError("negative head argument")
    if arg < 24:
        return bytes([(major << 5) | arg])
    if arg < 0x100:
        return bytes([(major << 5) | 24, arg])
    if arg < 0x10000:
        return bytes([(major << 5) | 25]) + struct.pack(">H", arg)
    if arg < 0x100000000:
        return bytes([(major << 5) | 26]) + struct.pack(">I", arg)
    if arg < 0x10000000000000000:
        return bytes([(major << 5) | 27]) + struct.pack(">Q", arg)
    raise ValueError("integer out of the CBOR range: %d" % arg)


def _enc(obj, out, depth):
    if depth > 32:
        raise ValueError("CBOR nesting deeper than 32")
    if obj is None:
        out.append(b"\xf6")
    elif obj is True:
        out.append(b"\xf5")
    elif obj is False:
        out.append(b"\xf4")
    elif isinstance(obj, (int, np.integer)):
        v = int(obj)
        out.append(_head(0, v) if v >= 0 else _head(1, -1 - v))
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        b = bytes(obj)
        out.append(_head(2, len(b)))
        out.append(b)
    elif isinstance(obj, str):
        b = obj.encode("utf-8")  # raises on lone surrogates
        out.append(_head(3, len(b)))
        out.append(b)
    elif isinstance(obj, (list, tuple)):
        out.append(_head(4, len(obj)))
        for item in obj:
            _enc(item, out, depth + 1)
    elif isinstance(obj, dict):
        pairs = []
        for k, v in obj.items():
            kb = []
            _enc(k, kb, depth + 1)
            vb = []
            _enc(v, vb, depth + 1)
            pairs.append((b"".join(kb), b"".join(vb)))
        pairs.sort(key=lambda p: p[0])
        for a, b in zip(pairs, pairs[1:]):
            if a[0] == b[0]:
                raise ValueError("duplicate CBOR map key")
        out.append(_head(5, len(pairs)))
        for kb, vb in pairs:
            out.append(kb)
            out.append(vb)
    elif isinstance(obj, float):
        raise TypeError("floats are not part of the CBOR profile "
                        "(write them as bytes or text)")
    else:
        raise TypeError("cannot encode %r as CBOR" % type(obj).__name__)


def cbor_encode(obj):
    out = []
    _enc(obj, out, 1)
    return b"".join(out)


# --------------------------------------------------------------------------
# Records and the document
# --------------------------------------------------------------------------

def float_text(x):
    """Python repr text of a float, as the effective config writes it."""
    return repr(float(x))


def stage_sort_key(rec):
    """Records in the order of the computation: embedding, then per layer
    (ascending) its stages in table order, then final_norm, logits; ties
    (none in a valid document) by name."""
    name, layer = rec["name"], rec["layer"]
    if layer is None:
        group = -1 if STAGE_INDEX[name] < STAGE_INDEX["attn_norm"] else 1 << 62
    else:
        group = layer
    return (group, STAGE_INDEX[name], name)


def make_record(name, layer, array, precision):
    """array: the captured rows ([T, ...]), any float dtype; it is written
    in the document's precision, little-endian, row-major."""
    if name not in STAGE_INDEX:
        raise ValueError("unknown stage %r" % name)
    if (layer is None) == (name in LAYER_STAGES):
        raise ValueError("stage %r with layer %r" % (name, layer))
    dt = {"f64": "<f8", "f32": "<f4"}[precision]
    a = np.ascontiguousarray(np.asarray(array).astype(dt, copy=False))
    return {"name": name, "layer": None if layer is None else int(layer),
            "shape": [int(d) for d in a.shape], "dtype": precision,
            "data": a.tobytes(order="C")}


def greedy_continuation(last_logits, ids, n):
    """n greedy steps after the prompt ids, the oracles' shared rule:
    last_logits(seq) is the logits row of seq's last position from a run of
    the whole sequence (no cache); each step appends its argmax (lowest id
    on ties). Returns (ids, margins): margins[i] = top-1 minus top-2 logit
    at step i, in float64 (golden_document's "continuation")."""
    seq, out, margins = list(ids), [], []
    for _ in range(n):
        logits = np.asarray(last_logits(seq)).astype(np.float64)
        top = int(np.argmax(logits))
        second = np.max(np.delete(logits, top))
        out.append(top)
        margins.append(float(logits[top] - second))
        seq.append(top)
    return out, margins


def golden_document(producer, config_map, weights, ids, positions, records,
                    continuation=None):
    """producer: {"name","version","precision"}; continuation: None or
    (ids, margins) of a greedy continuation; returns the CBOR bytes."""
    recs = sorted(records, key=stage_sort_key)
    seen = set()
    for r in recs:
        key = (r["name"], r["layer"])
        if key in seen:
            raise ValueError("duplicate record %r" % (key,))
        seen.add(key)
    doc = {"format": FORMAT,
           "producer": {"name": producer["name"],
                        "version": producer["version"],
                        "precision": producer["precision"]},
           "model": {"config": config_map, "weights": weights},
           "prompt": {"ids": [int(i) for i in ids]},
           "positions": [int(p) for p in positions],
           "records": recs}
    if continuation is not None:
        cont_ids, margins = continuation
        doc["continuation"] = {
            "ids": [int(i) for i in cont_ids],
            "margins": np.asarray(margins, dtype="<f8").tobytes()}
    return cbor_encode(doc)


def record_array(rec):
    """Inverse of make_record (for tests and tools)."""
    dt = {"f64": "<f8", "f32": "<f4"}[rec["dtype"]]
    return np.frombuffer(rec["data"], dtype=dt).reshape(rec["shape"])


# --------------------------------------------------------------------------
# config.json -> effective config (docs/qwen3-config.md; Qwen3Config defaults)
# --------------------------------------------------------------------------

def _load_json(path):
    def no_dups(pairs):
        d = {}
        for k, v in pairs:
            if k in d:
                raise OracleError("%s: duplicate key %r" % (path, k))
            d[k] = v
        return d
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"), object_pairs_hook=no_dups)


def _int_field(cfg, key, default, lo=1):
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise OracleError("config.json: $.%s: expected an integer >= %d, got %r"
                          % (key, lo, v))
    return v


def _num_field(cfg, key, default):
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise OracleError("config.json: $.%s: expected a number, got %r" % (key, v))
    v = float(v)
    if not (v > 0 and v != float("inf")):
        raise OracleError("config.json: $.%s: expected a finite number > 0" % key)
    return v


def _token_id_from_tokenizer_config(tc, key):
    tok = tc.get(key)
    if isinstance(tok, dict):
        tok = tok.get("content")
    if not isinstance(tok, str):
        return None
    for sid, entry in (tc.get("added_tokens_decoder") or {}).items():
        if isinstance(entry, dict) and entry.get("content") == tok:
            return int(sid)
    return None


def resolve_config(hf_dir):
    """Returns (cfg, config_map): cfg holds the values the forward pass uses
    (python ints/floats/bools), config_map the CBOR "model.config" map."""
    path = os.path.join(hf_dir, "config.json")
    if not os.path.isfile(path):
        raise OracleError("%s: no config.json" % hf_dir)
    raw = _load_json(path)
    if not isinstance(raw, dict):
        raise OracleError("config.json: not a JSON object")
    if raw.get("model_type", "qwen3") != "qwen3":
        raise OracleError("config.json: $.model_type: %r is not qwen3" % raw["model_type"])

    c = {}
    c["vocab_size"] = _int_field(raw, "vocab_size", 151936)
    c["hidden_size"] = _int_field(raw, "hidden_size", 4096)
    c["intermediate_size"] = _int_field(raw, "intermediate_size", 22016)
    c["num_hidden_layers"] = _int_field(raw, "num_hidden_layers", 32)
    c["num_attention_heads"] = _int_field(raw, "num_attention_heads", 32)
    if "num_key_value_heads" in raw and raw["num_key_value_heads"] is None:
        c["num_key_value_heads"] = c["num_attention_heads"]
    else:
        c["num_key_value_heads"] = _int_field(raw, "num_key_value_heads", 32)
    if c["num_attention_heads"] % c["num_key_value_heads"]:
        raise OracleError("config.json: num_key_value_heads %d does not divide "
                          "num_attention_heads %d" % (c["num_key_value_heads"],
                                                      c["num_attention_heads"]))
    # Qwen3Config: head_dim defaults to 128 (not hidden/heads); an explicit
    # null falls back to hidden // heads as the attention module does.
    if "head_dim" in raw and raw["head_dim"] is None:
        c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    else:
        c["head_dim"] = _int_field(raw, "head_dim", 128)
    if c["head_dim"] % 2:
        raise OracleError("config.json: $.head_dim: rope needs an even head_dim")
    c["max_position_embeddings"] = _int_field(raw, "max_position_embeddings", 32768)
    c["rms_norm_eps"] = _num_field(raw, "rms_norm_eps", 1e-6)

    rope_theta = raw.get("rope_theta", 10000.0)
    rp = raw.get("rope_parameters")
    if isinstance(rp, dict):  # newer transformers spelling
        if rp.get("rope_type", "default") != "default":
            raise OracleError("config.json: $.rope_parameters: only default rope")
        rope_theta = rp.get("rope_theta", rope_theta)
    c["rope_theta"] = _num_field({"rope_theta": rope_theta}, "rope_theta", 10000.0)

    rs = raw.get("rope_scaling")
    if rs is not None:
        if not (isinstance(rs, dict)
                and rs.get("rope_type", rs.get("type")) == "default"
                and set(rs) <= {"rope_type", "type", "rope_theta"}):
            raise OracleError("config.json: $.rope_scaling: %r is not supported" % (rs,))
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        raise OracleError("config.json: $.hidden_act: %r is not supported" % (act,))
    if raw.get("attention_bias", False) is not False:
        raise OracleError("config.json: $.attention_bias: only false is supported")
    if raw.get("use_sliding_window", False) is not False:
        raise OracleError("config.json: $.use_sliding_window: only false is supported")
    lt = raw.get("layer_types")
    if lt is not None and (not isinstance(lt, list)
                           or len(lt) != c["num_hidden_layers"]
                           or any(x != "full_attention" for x in lt)):
        raise OracleError("config.json: $.layer_types: only full_attention layers")
    tie = raw.get("tie_word_embeddings", False)  # Qwen3Config's default
    if not isinstance(tie, bool):
        raise OracleError("config.json: $.tie_word_embeddings: expected a bool")
    c["tie_word_embeddings"] = tie
    td, dd = raw.get("torch_dtype"), raw.get("dtype")
    if td is not None and dd is not None and td != dd:
        raise OracleError("config.json: torch_dtype %r and dtype %r disagree" % (td, dd))
    source_dtype = td if td is not None else dd

    # bos/pad: the first present claim (config.json, generation_config.json,
    # tokenizer_config.json); they do not affect the forward pass.
    gen, tc = {}, {}
    gp = os.path.join(hf_dir, "generation_config.json")
    tp = os.path.join(hf_dir, "tokenizer_config.json")
    if os.path.isfile(gp):
        gen = _load_json(gp)
    if os.path.isfile(tp):
        tc = _load_json(tp)
    special = {}
    for key, tkey in (("bos_token_id", "bos_token"), ("pad_token_id", "pad_token")):
        v = raw.get(key)
        if v is None:
            v = gen.get(key)
        if v is None:
            v = _token_id_from_tokenizer_config(tc, tkey)
        special[key] = v

    cmap = {
        "vocab_size": c["vocab_size"],
        "hidden_size": c["hidden_size"],
        "intermediate_size": c["intermediate_size"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": c["num_key_value_heads"],
        "head_dim": c["head_dim"],
        "hidden_act": "silu",
        "rms_norm_eps": float_text(c["rms_norm_eps"]),
        "rope_theta": float_text(c["rope_theta"]),
        "rope_scaling": None,
        "attention_bias": False,
        "max_position_embeddings": c["max_position_embeddings"],
        "tie_word_embeddings": c["tie_word_embeddings"],
        "use_sliding_window": False,
        "layer_types": "full_attention",
        "source_dtype": source_dtype,
        "bos_token_id": special["bos_token_id"],
        "pad_token_id": special["pad_token_id"],
    }
    return c, cmap


# --------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------

_ST_DTYPES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}


class SafeTensorsDir:
    """model.safetensors, or the shards named by model.safetensors.index.json."""

    def __init__(self, hf_dir):
        self.dir = hf_dir
        self.entries = {}  # name -> (path, dtype, shape, begin, end)
        single = os.path.join(hf_dir, "model.safetensors")
        index = os.path.join(hf_dir, "model.safetensors.index.json")
        if os.path.isfile(single):
            files = ["model.safetensors"]
            wanted = None
        elif os.path.isfile(index):
            idx = _load_json(index)
            wm = idx.get("weight_map") if isinstance(idx, dict) else None
            if not isinstance(wm, dict):
                raise OracleError("%s: no weight_map object" % index)
            wanted = wm
            files = sorted(set(wm.values()))
        else:
            raise OracleError("%s: neither model.safetensors nor "
                              "model.safetensors.index.json" % hf_dir)
        for fn in files:
            self._read_header(os.path.join(hf_dir, fn))
        if wanted is not None:
            for name, fn in wanted.items():
                e = self.entries.get(name)
                if e is None or os.path.basename(e[0]) != fn:
                    raise OracleError("%s: weight_map names %s in %s, not found there"
                                      % (index, name, fn))

    def _read_header(self, path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise OracleError("%s: truncated header length" % path)
            n = struct.unpack("<Q", head)[0]
            if n > size - 8:
                raise OracleError("%s: header length %d exceeds the file" % (path, n))
            hdr = json.loads(f.read(n).decode("utf-8"))
        base = 8 + n
        for name, e in hdr.items():
            if name == "__metadata__":
                continue
            dt, shape, (b, en) = e["dtype"], e["shape"], e["data_offsets"]
            if dt not in _ST_DTYPES:
                raise OracleError("%s: %s: dtype %s not supported" % (path, name, dt))
            count = 1
            for d in shape:
                count *= d
            if en - b != count * _ST_DTYPES[dt] or b < 0 or base + en > size:
                raise OracleError("%s: %s: bad data_offsets" % (path, name))
            if name in self.entries:
                raise OracleError("%s: tensor %s appears twice" % (path, name))
            self.entries[name] = (path, dt, tuple(shape), base + b, base + en)

    def __contains__(self, name):
        return name in self.entries

    def raw(self, name):
        path, dt, shape, b, e = self.entries[name]
        with open(path, "rb") as f:
            f.seek(b)
            data = f.read(e - b)
        if len(data) != e - b:
            raise OracleError("%s: %s: truncated data" % (path, name))
        return dt, shape, data

    def get(self, name, dtype, shape=None):
        """The tensor as an array of `dtype` (np.float32 or np.float64).
        BF16 widens exactly (the 16 bits become the top half of an f32)."""
        if name not in self.entries:
            raise OracleError("%s: missing tensor %s" % (self.dir, name))
        dt, shp, data = self.raw(name)
        if shape is not None and tuple(shape) != shp:
            raise OracleError("%s: shape %s, expected %s" % (name, list(shp), list(shape)))
        if dt == "BF16":
            u = np.frombuffer(data, dtype="<u2").astype("<u4") << np.uint32(16)
            a = u.view("<f4")
        elif dt == "F16":
            a = np.frombuffer(data, dtype="<f2")
        elif dt == "F32":
            a = np.frombuffer(data, dtype="<f4")
        else:
            a = np.frombuffer(data, dtype="<f8")
        return a.astype(dtype).reshape(shp)


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def parse_ids(text):
    toks = text.replace(",", " ").split()
    if not toks:
        raise OracleError("--ids: empty prompt")
    ids = []
    for t in toks:
        if not t.isdigit():
            raise OracleError("--ids: %r is not a token id" % t)
        ids.append(int(t))
    return ids


def parse_positions(text, n):
    if text == "all":
        return list(range(n))
    ps = set()
    for t in text.split(","):
        t = t.strip()
        if not t.isdigit():
            raise OracleError("--positions: %r is not a position" % t)
        p = int(t)
        if p >= n:
            raise OracleError("--positions: %d is outside the %d-token prompt" % (p, n))
        ps.add(p)
    return sorted(ps)


def parse_stages(text):
    if text == "all":
        return set(STAGE_NAMES)
    out = set()
    for t in text.split(","):
        t = t.strip()
        if t not in STAGE_INDEX:
            raise OracleError("--stages: unknown stage %r (known: %s)"
                              % (t, ", ".join(STAGE_NAMES)))
        out.add(t)
    return out


def parse_cli(argv, prog, description, precisions=("f64", "f32"), default_precision="f64",
              extra=None):
    """extra: None, or a function adding a producer's own options to the
    argparse parser."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("hf_dir", metavar="HF_DIR", help="Hugging Face checkpoint directory")
    ap.add_argument("--ids", required=True, help='prompt token ids, e.g. "1 2 3"')
    ap.add_argument("--precision", choices=list(precisions), default=default_precision)
    ap.add_argument("--positions", default="all", help='"all" or e.g. "0,5,7"')
    ap.add_argument("--stages", default="all", help='"all" or e.g. "q_rope,probs"')
    ap.add_argument("--weights", default=None,
                    help='the model.weights text (default: "<dir name> <dtype>")')
    ap.add_argument("--greedy", type=int, default=0, metavar="N",
                    help="also record a greedy continuation of N tokens")
    ap.add_argument("-o", dest="out", required=True, metavar="OUT.cbor")
    if extra is not None:
        extra(ap)
    return ap.parse_args(argv)


def default_weights_label(hf_dir, st):
    dts = sorted({e[1].lower() for e in st.entries.values()})
    return "%s %s" % (os.path.basename(os.path.normpath(hf_dir)), "+".join(dts))


def write_file(path, data):
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main_wrapper(fn):
    try:
        return fn()
    except OracleError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
