"""The demo model's Qwen3 forward pass in torch, and its compact weights file.

Written here from the Qwen3 architecture (not transformers): RMSNorm,
per-head q/k RMSNorm before rotary embedding (rotate-half form, theta 1e6),
grouped-query attention with a causal mask, SwiGLU MLP, tied embeddings.
The vocabulary is the compact one (idmap.json): row i is token ids[i]; every
other row of the full model is exactly zero, so its logit is exactly 0 and
the full log-partition is logaddexp(logsumexp(compact logits),
log(vocab_size - V)) (full_log_z).

Only tools/demo/train.py and tools/demo/evaluate.py import torch through this
module; the weights-file helpers at the bottom need only the standard
library, for the expander and `make test`.
"""

import json
import lzma
import math
import struct

# The demo model's shape (issue 15); vocab comes from the id map.
CONFIG = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 768,
          "rms_norm_eps": 1e-6, "rope_theta": 1000000.0}


def config_of(meta):
    """The model shape a weights file records (train.py's tinylm_demo_config
    metadata; CONFIG when absent). ValueError when it is not CONFIG's keys
    with positive values and heads that divide evenly."""
    if "tinylm_demo_config" not in meta:
        return dict(CONFIG)
    try:
        cfg = json.loads(meta["tinylm_demo_config"])
    except ValueError as e:
        raise ValueError("tinylm_demo_config is not JSON: %s" % e)
    if not isinstance(cfg, dict) or set(cfg) != set(CONFIG) or not all(
            isinstance(cfg[k], (int, float)) and not isinstance(cfg[k], bool) and cfg[k] > 0 for k in CONFIG) \
            or cfg["num_attention_heads"] % cfg["num_key_value_heads"] or cfg["head_dim"] % 2:
        raise ValueError("tinylm_demo_config is not a valid model shape: %r" % (cfg,))
    return cfg


def tensor_shapes(cfg, v):
    """HF tensor name -> shape of the compact model (embedding has v rows)."""
    h, d, i = cfg["hidden_size"], cfg["head_dim"], cfg["intermediate_size"]
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h]}
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        shapes.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [nq * d, h], p + "self_attn.k_proj.weight": [nkv * d, h],
            p + "self_attn.v_proj.weight": [nkv * d, h], p + "self_attn.o_proj.weight": [h, nq * d],
            p + "self_attn.q_norm.weight": [d], p + "self_attn.k_norm.weight": [d],
            p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h],
            p + "mlp.down_proj.weight": [h, i]})
    return shapes


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> (dtype string "BF16"/"F32", shape, raw little-endian bytes)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dt, shape, raw = tensors[name]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)  # the data starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for name in sorted(tensors):
            f.write(tensors[name][2])


XZ_MAGIC = b"\xfd7zXZ\x00"
# An xz file that expands past this is refused, not read into memory (the
# demo model's weights are 6.4 MB).
XZ_MAX_BYTES = 1 << 30


def read_weights_bytes(path):
    """The file's bytes; an xz file (the committed weights are
    demo.safetensors.xz, to stay under the repository's file-size limit) is
    decompressed. ValueError on a malformed or oversized xz stream."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(XZ_MAGIC):
        return data
    d = lzma.LZMADecompressor(lzma.FORMAT_XZ)
    try:
        out = d.decompress(data, XZ_MAX_BYTES)
    except lzma.LZMAError as e:
        raise ValueError("xz: %s" % e)
    if len(out) >= XZ_MAX_BYTES:
        raise ValueError("xz: expands past %d bytes" % XZ_MAX_BYTES)
    if not d.eof:
        raise ValueError("xz: the stream is truncated")
    if d.unused_data:
        raise ValueError("xz: %d bytes after the stream" % len(d.unused_data))
    return out


def read_safetensors(path):
    """name -> (dtype, shape, raw bytes), and the metadata, from a
    .safetensors file or its xz compression; ValueError on a malformed file."""
    data = read_weights_bytes(path)
    if len(data) < 8:
        raise ValueError("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("header length %d past the end of the file" % n)
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise ValueError("header is not JSON: %s" % e)
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        try:
            dt, shape, (a, b) = t["dtype"], t["shape"], t["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ValueError("tensor %s: malformed entry" % name)
        size = {"BF16": 2, "F32": 4}.get(dt)
        if size is None:
            raise ValueError("tensor %s: dtype %r (BF16 or F32 expected)" % (name, dt))
        if not (isinstance(a, int) and isinstance(b, int) and 0 <= a <= b <= len(body)):
            raise ValueError("tensor %s: data offsets out of the file" % name)
        if b - a != size * math.prod(shape):
            raise ValueError("tensor %s: %d bytes for shape %s" % (name, b - a, shape))
        out[name] = (dt, shape, body[a:b])
    return out, meta


def torch_model():
    """The nn.Module class, built on first use so that importing this file never imports torch."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, n, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    class Layer(nn.Module):
        def __init__(self, c):
            super().__init__()
            h, d = c["hidden_size"], c["head_dim"]
            self.nq, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], d
            self.input_layernorm = RMSNorm(h, c["rms_norm_eps"])
            self.post_attention_layernorm = RMSNorm(h, c["rms_norm_eps"])
            self.q_proj = nn.Linear(h, self.nq * d, bias=False)
            self.k_proj = nn.Linear(h, self.nkv * d, bias=False)
            self.v_proj = nn.Linear(h, self.nkv * d, bias=False)
            self.o_proj = nn.Linear(self.nq * d, h, bias=False)
            self.q_norm = RMSNorm(d, c["rms_norm_eps"])
            self.k_norm = RMSNorm(d, c["rms_norm_eps"])
            self.gate_proj = nn.Linear(h, c["intermediate_size"], bias=False)
            self.up_proj = nn.Linear(h, c["intermediate_size"], bias=False)
            self.down_proj = nn.Linear(c["intermediate_size"], h, bias=False)

        def forward(self, x, cos, sin, mask):
            b, t, _ = x.shape
            y = self.input_layernorm(x)
            q = self.q_norm(self.q_proj(y).view(b, t, self.nq, self.d)).transpose(1, 2)
            k = self.k_norm(self.k_proj(y).view(b, t, self.nkv, self.d)).transpose(1, 2)
            v = self.v_proj(y).view(b, t, self.nkv, self.d).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            rep = self.nq // self.nkv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            s = (q @ k.transpose(-1, -2)) * (self.d ** -0.5) + mask
            a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, self.nq * self.d)
            x = x + self.o_proj(a)
            y = self.post_attention_layernorm(x)
            return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))

    def rope(x, cos, sin):
        half = x.shape[-1] // 2
        rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rot * sin

    class Qwen3Demo(nn.Module):
        def __init__(self, c, v):
            super().__init__()
            self.c = c
            self.embed_tokens = nn.Embedding(v, c["hidden_size"])
            self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
            self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])

        def forward(self, ids):
            """ids [B, T] compact indices -> compact logits [B, T, V] (float32)."""
            t = ids.shape[1]
            d = self.c["head_dim"]
            inv = 1.0 / (self.c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
            ang = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
            ang = torch.cat((ang, ang), dim=-1)
            cos, sin = ang.cos(), ang.sin()
            mask = torch.full((t, t), float("-inf")).triu(1)
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return self.norm(x) @ self.embed_tokens.weight.t()

        def hf_state(self):
            """HF tensor name -> float32 tensor."""
            out = {"model.embed_tokens.weight": self.embed_tokens.weight, "model.norm.weight": self.norm.weight}
            for l, layer in enumerate(self.layers):
                p = "model.layers.%d." % l
                for n in ("input_layernorm", "post_attention_layernorm"):
                    out[p + n + ".weight"] = getattr(layer, n).weight
                for n in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"):
                    out[p + "self_attn." + n + ".weight"] = getattr(layer, n).weight
                for n in ("gate_proj", "up_proj", "down_proj"):
                    out[p + "mlp." + n + ".weight"] = getattr(layer, n).weight
            return out

        def load_hf_state(self, tensors):
            own = self.hf_state()
            with torch.no_grad():
                for name, t in own.items():
                    t.copy_(tensors[name])

    return Qwen3Demo


def full_log_z(compact_logits, vocab_size):
    """log of the full-vocabulary partition function: the compact rows plus
    (vocab_size - V) rows whose logit is exactly 0."""
    import torch
    v = compact_logits.shape[-1]
    return torch.logaddexp(torch.logsumexp(compact_logits, dim=-1),
                           torch.tensor(math.log(vocab_size - v), dtype=compact_logits.dtype))


def to_bf16_bytes(t):
    import torch
    return t.detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()


def from_raw(dt, shape, raw):
    """float32 tensor from BF16/F32 little-endian bytes."""
    import numpy as np
    import torch
    if dt == "BF16":
        a = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return torch.from_numpy(a.view(np.float32).reshape(shape).copy())
    return torch.from_numpy(np.frombuffer(raw, dtype="<f4").reshape(shape).copy())
