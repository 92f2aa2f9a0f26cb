"""Tensors of a tinylm `.slm` model artifact as NumPy float32 arrays.

Written from the specifications alone (docs/slm.md for the container,
docs/quant.md for the element encodings), not from the C sources, so that
an oracle fed from it (tools/oracle/qwen3_ref.py --slm) stays independent
of the runtime it checks. The container is parsed and checked by
tools/slm_inspect.py (also written from docs/slm.md); this module adds the
decoding of the stored bytes:

  * f32, f16, bf16: elementwise, exact (Q-9);
  * q8, q4: per block of 32 elements along the last dim (Q-10..Q-12),
    y = q * d as one f32 multiplication (Q-16), with every check of Q-17
    (scale sign and finiteness, q8 code -128, q4 nibble 0, non-zero codes
    in padding positions or under a zero scale, a product that is Inf; Inf
    or NaN in f32/f16/bf16 tensors);
  * q8p, q4p (docs/slm.md SLM-11a): the packed groups put back into the
    stored blocks, then as q8, q4.

Decoded bytes that break a rule raise slm_inspect.SlmError
("invalid_model"), like a container violation.

Needs NumPy, python3-cbor2 and tools/blake3_ref.py (through slm_inspect).
"""

import hashlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slm_inspect as si  # noqa: E402

QUANT_BLOCK = 32
# dtype -> (block bytes, largest code magnitude)
QUANT = {"q8": (36, 127), "q4": (20, 7)}


def invalid(message):
    return si.SlmError("invalid_model", message)


def _check_finite(name, a):
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise invalid("tensor %s: element %d is %r (Q-17: stored f32/f16/bf16 "
                      "values are finite)" % (name, int(bad[0]), float(a.reshape(-1)[bad[0]])))


def _decode_blocks(name, dtype, shape, raw):
    """q8/q4 bytes -> float32 array of `shape` (Q-10..Q-17)."""
    block_bytes = QUANT[dtype][0]
    n = shape[-1]
    rows = 1
    for d in shape[:-1]:
        rows *= d
    nb = -(-n // QUANT_BLOCK)
    if len(raw) != rows * nb * block_bytes:
        raise si.SlmError("bounds", "tensor %s: %d bytes, %s %s needs %d"
                          % (name, len(raw), dtype, list(shape),
                             rows * nb * block_bytes))
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows, nb, block_bytes)
    dbits = np.ascontiguousarray(blocks[:, :, 0:4]).view("<u4")[:, :, 0]
    where = lambda idx: "row %d block %d" % (int(idx[0]), int(idx[1]))  # noqa: E731
    neg = np.argwhere(dbits >> np.uint32(31))
    if neg.size:
        raise invalid("tensor %s %s: scale with the sign bit set (Q-17)"
                      % (name, where(neg[0])))
    nonfinite = np.argwhere((dbits & np.uint32(0x7F800000)) == np.uint32(0x7F800000))
    if nonfinite.size:
        raise invalid("tensor %s %s: scale is not finite (Q-17)"
                      % (name, where(nonfinite[0])))
    d = dbits.view("<f4")
    if dtype == "q8":
        codes = np.ascontiguousarray(blocks[:, :, 4:36]).view(np.int8)
        bad = np.argwhere(codes == -128)
        if bad.size:
            raise invalid("tensor %s %s element %d: q8 code -128 (Q-17)"
                          % (name, where(bad[0]), int(bad[0][2])))
    else:
        b = blocks[:, :, 4:20]
        nib = np.empty((rows, nb, QUANT_BLOCK), dtype=np.uint8)
        nib[:, :, 0::2] = b & 0xF   # element 2j: low nibble
        nib[:, :, 1::2] = b >> 4    # element 2j+1: high nibble
        bad = np.argwhere(nib == 0)
        if bad.size:
            raise invalid("tensor %s %s element %d: q4 nibble 0 (Q-17)"
                          % (name, where(bad[0]), int(bad[0][2])))
        codes = nib.astype(np.int8) - np.int8(8)
    m = n - QUANT_BLOCK * (nb - 1)  # present elements of the last block
    if m < QUANT_BLOCK:
        pad = np.argwhere(codes[:, nb - 1, m:] != 0)
        if pad.size:
            raise invalid("tensor %s row %d block %d element %d: non-zero code "
                          "in a padding position (Q-11, Q-17)"
                          % (name, int(pad[0][0]), nb - 1, m + int(pad[0][1])))
    zero = np.argwhere((dbits == 0)[:, :, None] & (codes != 0))
    if zero.size:
        raise invalid("tensor %s %s element %d: non-zero code under a zero "
                      "scale (Q-17)" % (name, where(zero[0]), int(zero[0][2])))
    # one f32 multiplication, RNE (NumPy float32 arithmetic is IEEE
    # binary32 with subnormals honoured); code 0 gives +0 as d >= +0.
    with np.errstate(over="ignore"):
        y = codes.astype(np.float32) * d[:, :, None]
    inf = np.argwhere(np.isinf(y))
    if inf.size:
        raise invalid("tensor %s %s element %d: q*d is Inf (Q-17)"
                      % (name, where(inf[0]), int(inf[0][2])))
    return y.reshape(rows, nb * QUANT_BLOCK)[:, :n].reshape(shape)


def _unpack_groups(dtype, g, m):
    """Packed groups [rows, k, m * block bytes] -> stored blocks [rows, k,
    m, block bytes] (SLM-11a: m scales, then code row s of block j at
    4m + 4m*s + 4j)."""
    rows, k = g.shape[0], g.shape[1]
    scales = g[:, :, :4 * m].reshape(rows, k, m, 4)
    steps = 8 if dtype == "q8p" else 4
    codes = g[:, :, 4 * m:].reshape(rows, k, steps, m, 4).transpose(0, 1, 3, 2, 4)
    if dtype == "q8p":
        codes = codes.reshape(rows, k, m, 32) ^ np.uint8(0x80)
    else:
        # row s byte i: element 8s + i low, 8s + 4 + i high
        e = np.stack([codes & 0x0F, codes >> 4], axis=4)  # [.., s, half, i]
        e = e.reshape(rows, k, m, 32)
        codes = e[..., 0::2] | (e[..., 1::2] << 4)
    return np.concatenate([scales, codes], axis=3)


def unpack(dtype, shape, raw):
    """A q8p/q4p tensor's bytes in the stored layout (Q-12)."""
    bb = QUANT[dtype[:2]][0]
    n = shape[-1]
    nb = -(-n // QUANT_BLOCK)
    rows = len(raw) // (nb * bb) if nb else 0
    r = np.frombuffer(raw, dtype=np.uint8).reshape(rows, nb * bb)
    full = nb // 16
    parts = []
    if full:
        g = r[:, :full * 16 * bb].reshape(rows, full, 16 * bb)
        parts.append(_unpack_groups(dtype, g, 16).reshape(rows, -1))
    if nb % 16:
        m = nb % 16
        g = r[:, full * 16 * bb:].reshape(rows, 1, m * bb)
        parts.append(_unpack_groups(dtype, g, m).reshape(rows, -1))
    return np.concatenate(parts, axis=1).tobytes() if parts else b""


def decode(name, dtype, shape, raw):
    """Stored bytes of one tensor -> float32 array of `shape`."""
    shape = tuple(shape)
    if dtype in ("q8p", "q4p"):
        raw, dtype = unpack(dtype, shape, raw), dtype[:2]
    if dtype in QUANT:
        return _decode_blocks(name, dtype, shape, raw)
    if dtype == "f32":
        a = np.frombuffer(raw, dtype="<f4")
    elif dtype == "f16":
        a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype == "bf16":
        u = np.frombuffer(raw, dtype="<u2").astype("<u4") << np.uint32(16)
        a = u.view("<f4")
    else:
        raise invalid("tensor %s: unknown dtype %r" % (name, dtype))
    count = 1
    for d in shape:
        count *= d
    if a.size != count:
        raise si.SlmError("bounds", "tensor %s: %d elements, shape %s needs %d"
                          % (name, a.size, list(shape), count))
    _check_finite(name, a)
    return a.astype(np.float32, copy=False).reshape(shape)


class SlmModel:
    """A model artifact, checked on open: header and its digest, the section
    table and layout, the metadata (deterministic CBOR, format
    "tinylm.slm", artifact_kind "model"), the tensor directory against the
    tensor data section; with digests=True (the default) also every section
    and tensor digest (BLAKE3 in pure Python: about 2 MiB/s)."""

    def __init__(self, path, digests=True):
        self.path = path
        with open(path, "rb") as f:
            self.data = f.read()
        mv = memoryview(self.data)
        header = si.parse_header(mv)
        sections = si.parse_section_table(mv, header)
        if digests:
            si.verify_section_digests(mv, sections)
        else:  # still every section but the (large) tensor data
            si.verify_section_digests(
                mv, [s for s in sections if s["kind"] != si.KIND_TENSOR_DATA])
        meta_sec = si.section_of_kind(sections, si.KIND_METADATA)
        if meta_sec is None:
            raise invalid("no metadata section")
        self.meta = si.parse_metadata(mv, meta_sec)
        si.check_kinds(sections, self.meta)
        if self.meta["artifact_kind"] != "model":
            raise invalid("artifact_kind is %r: no tensors (a model artifact "
                          "is needed)" % self.meta["artifact_kind"])
        tensors = si.parse_tensor_dir(
            mv, si.section_of_kind(sections, si.KIND_TENSOR_DIR),
            si.section_of_kind(sections, si.KIND_TENSOR_DATA))
        if digests:
            si.verify_tensor_digests(mv, tensors)
        self.tensors = {t["name"]: t for t in tensors}
        self.digests = digests

    def artifact_id(self):
        return hashlib.sha256(self.data).hexdigest()

    def config(self):
        """The metadata's effective config map ("config"."config")."""
        eff = self.meta.get("config")
        if not isinstance(eff, dict) or not isinstance(eff.get("config"), dict):
            raise invalid("metadata config is not an effective config map "
                          "with a config map")
        return eff["config"]

    def __contains__(self, name):
        return name in self.tensors

    def raw(self, name):
        """(dtype name, shape tuple, stored bytes)."""
        t = self.tensors[name]
        return (t["dtype"], tuple(t["shape"]),
                self.data[t["offset"]:t["offset"] + t["length"]])

    def get(self, name):
        """The decoded tensor (float32)."""
        dt, shape, raw = self.raw(name)
        return decode(name, dt, shape, raw)
