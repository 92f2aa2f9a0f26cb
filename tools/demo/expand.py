#!/usr/bin/python3
"""Expands the demo model's compact weights into a Hugging Face checkpoint directory.

    expand.py --weights demo.safetensors[.xz] --idmap idmap.json
              --tokenizer-dir DIR -o OUTDIR

The compact file (tools/demo/train.py; committed xz-compressed, which
--weights takes as it is) has V embedding rows, row i being
token idmap["ids"][i]; the output's model.safetensors has all vocab_size
rows, every row outside the id map exactly zero (so those tokens' logits are
exactly 0, as the trainer's loss assumed), and the other tensors byte for
byte. OUTDIR also gets config.json, generation_config.json (greedy, EOS
<|im_end|>) and the tokenizer's tokenizer.json and tokenizer_config.json,
which `tinylm convert OUTDIR` takes like any checkpoint. Standard library
only (no torch, no numpy), so `make demo` runs it on a fresh clone.

Refused, with "error: <code>: <detail>" on stderr and exit 1, before
anything is written: an id map that is not strictly increasing ids below
vocab_size, or that names a token the tokenizer lacks (code idmap); one that
differs from the id map recorded in the weights file (idmap); a tensor
missing, extra, or of another shape or dtype than the demo model's
(shape; the shape is the one the file's metadata records, else
model.CONFIG); an unreadable or malformed file, or xz stream (io, format); an OUTDIR that
exists and is not empty (exists). The directory is written under a temporary
name and renamed into place.
"""

import json
import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import model as demo_model  # noqa: E402
from cli import Fail, parse_flags  # noqa: E402

IM_END_ID = 151645
ENDOFTEXT_ID = 151643


def tokenizer_ids(tokenizer_dir):
    """Every id the tokenizer defines (BPE vocabulary and added tokens)."""
    try:
        with open(os.path.join(tokenizer_dir, "tokenizer.json"), "rb") as f:
            tok = json.load(f)
        ids = set(tok["model"]["vocab"].values())
        ids.update(t["id"] for t in tok.get("added_tokens", []))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Fail("io", "tokenizer.json in %s: %s" % (tokenizer_dir, e))
    return ids


def check_idmap(idmap, known):
    if not isinstance(idmap, dict) or not isinstance(idmap.get("ids"), list) \
            or not isinstance(idmap.get("vocab_size"), int):
        raise Fail("idmap", "the id map is not {\"vocab_size\": N, \"ids\": [...]}")
    ids, n = idmap["ids"], idmap["vocab_size"]
    if not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise Fail("idmap", "the ids are not a non-empty list of integers")
    for a, b in zip(ids, ids[1:]):
        if b <= a:
            raise Fail("idmap", "ids not strictly increasing at %d, %d" % (a, b))
    if ids[0] < 0 or ids[-1] >= n:
        raise Fail("idmap", "id %d outside 0..%d" % (ids[0] if ids[0] < 0 else ids[-1], n - 1))
    if max(known) >= n:
        raise Fail("idmap", "the tokenizer has id %d, vocab_size is %d" % (max(known), n))
    for t in ids:
        if t not in known:
            raise Fail("idmap", "id %d is not a token of the tokenizer" % t)


def hf_config(cfg, vocab_size):
    return {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": ENDOFTEXT_ID, "eos_token_id": IM_END_ID, "head_dim": cfg["head_dim"],
        "hidden_act": "silu", "hidden_size": cfg["hidden_size"], "initializer_range": 0.02,
        "intermediate_size": cfg["intermediate_size"], "max_position_embeddings": 4096,
        "max_window_layers": cfg["num_hidden_layers"], "model_type": "qwen3",
        "num_attention_heads": cfg["num_attention_heads"], "num_hidden_layers": cfg["num_hidden_layers"],
        "num_key_value_heads": cfg["num_key_value_heads"], "rms_norm_eps": cfg["rms_norm_eps"],
        "rope_scaling": None, "rope_theta": cfg["rope_theta"], "sliding_window": None,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": vocab_size}


def expand(weights, idmap_path, tokenizer_dir, out):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise Fail("exists", "%s exists and is not an empty directory" % out)
    try:
        with open(idmap_path, "rb") as f:
            idmap = json.load(f)
    except OSError as e:
        raise Fail("io", str(e))
    except ValueError as e:
        raise Fail("idmap", "%s is not JSON: %s" % (idmap_path, e))
    check_idmap(idmap, tokenizer_ids(tokenizer_dir))
    ids, n = idmap["ids"], idmap["vocab_size"]
    try:
        tensors, meta = demo_model.read_safetensors(weights)
    except OSError as e:
        raise Fail("io", str(e))
    except ValueError as e:
        raise Fail("format", "%s: %s" % (weights, e))
    if meta.get("tinylm_demo_idmap") is not None and json.loads(meta["tinylm_demo_idmap"]) != ids:
        raise Fail("idmap", "%s was trained with another id map than %s" % (weights, idmap_path))
    try:
        cfg = demo_model.config_of(meta)
    except ValueError as e:
        raise Fail("format", "%s: %s" % (weights, e))
    want = demo_model.tensor_shapes(cfg, len(ids))
    for name in sorted(set(tensors) | set(want)):
        if name not in tensors:
            raise Fail("shape", "tensor %s is missing" % name)
        if name not in want:
            raise Fail("shape", "unexpected tensor %s" % name)
        dt, shape, _ = tensors[name]
        if shape != want[name] or dt != "BF16":
            raise Fail("shape", "tensor %s is %s %s, the demo model's is BF16 %s" % (name, dt, shape, want[name]))
    h = cfg["hidden_size"]
    row = 2 * h
    compact = tensors["model.embed_tokens.weight"][2]
    full = bytearray(n * row)
    for i, t in enumerate(ids):
        full[t * row:(t + 1) * row] = compact[i * row:(i + 1) * row]
    tensors["model.embed_tokens.weight"] = ("BF16", [n, h], bytes(full))
    parent = os.path.dirname(os.path.abspath(out))
    tmp = os.path.join(parent, "." + os.path.basename(os.path.abspath(out)) + ".expanding")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        os.makedirs(tmp)
        demo_model.write_safetensors(os.path.join(tmp, "model.safetensors"), tensors, {"format": "pt"})
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(hf_config(cfg, n), f, indent=2)
        with open(os.path.join(tmp, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": ENDOFTEXT_ID, "do_sample": False, "eos_token_id": IM_END_ID,
                       "pad_token_id": ENDOFTEXT_ID}, f, indent=2)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(tokenizer_dir, name), os.path.join(tmp, name))
        if os.path.isdir(out):
            os.rmdir(out)  # empty, checked above
        os.rename(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Fail("io", str(e))


def main(argv):
    opts = parse_flags(argv, ("--weights", "--idmap", "--tokenizer-dir", "-o"), __doc__)
    if opts is None:
        return 2
    try:
        expand(opts["--weights"], opts["--idmap"], opts["--tokenizer-dir"], opts["-o"])
    except Fail as e:
        print("error: %s: %s" % (e.code, e), file=sys.stderr)
        return 1
    print("wrote %s" % opts["-o"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
