#!/usr/bin/python3
"""Tests of tools/slm_inspect.py and tools/blake3_ref.py.

BLAKE3 is checked against the official vectors (src/core/hash/
blake3_vectors.h) and, when installed, the b3sum tool. The inspector is run
on small .slm files built here by a tiny writer that follows docs/slm.md
(not the C writer), first valid ones, then corrupted ones that must be
rejected with the right error code; and on build/tok/qwen3-tokenizer.slm
when `make tok-slm` has built it.

Run: /usr/bin/python3 tools/slm_inspect_test.py  (prints "N passed, N
failed"; exits 1 when any test fails).
"""

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import cbor2

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
from blake3_ref import blake3, blake3_hex  # noqa: E402
sys.path.insert(0, os.path.join(TOOLS, "..", "tests", "support"))
from checks import check, skip, summary  # noqa: E402
import slm_inspect  # noqa: E402
from slm_inspect import SlmError, inspect_bytes  # noqa: E402

INSPECT = os.path.join(TOOLS, "slm_inspect.py")
VECTORS_H = os.path.join(ROOT, "src", "core", "hash", "blake3_vectors.h")
TOKENIZER_SLM = os.path.join(ROOT, "build", "tok", "qwen3-tokenizer.slm")

# ------------------------------------------------------------------ writer

MAGIC = b"\x89SLM\r\n\x1a\n"
DTYPES = {"f32": 1, "f16": 2, "bf16": 3, "q8": 4, "q4": 5, "q8p": 6, "q4p": 7}
KIND_NAMES = {1: "metadata", 2: "tokenizer", 3: "template", 4: "tensor_dir",
              5: "tensor_data"}


def align64(n):
    return -(-n // 64) * 64


def cbor(value):
    """Deterministic CBOR. Every map key here is text shorter than 24 bytes,
    where cbor2's length-first canonical order equals RFC 8949 bytewise
    order (docs/cbor.md CBOR-8)."""
    return cbor2.dumps(value, canonical=True)


def f32_bytes(values):
    return struct.pack(f"<{len(values)}f", *values)


def q8_bytes(rows, n, scale=0.5):
    """Valid q8 rows (quant.md): per 32-element block an f32 scale, then 32
    int8 codes; positions past n hold code 0."""
    out = bytearray()
    for r in range(rows):
        for b in range(-(-n // 32)):
            out += struct.pack("<f", scale)
            out += bytes((((r + b + i) % 100) - 50) & 0xFF
                         if b * 32 + i < n else 0 for i in range(32))
    return bytes(out)


def sample_tensors():
    """(name, dtype, shape, data) in directory (name) order."""
    return [
        ("model.embed_tokens.weight", "q8", [3, 40], q8_bytes(3, 40)),
        ("model.layers.0.input_layernorm.weight", "f32", [5],
         f32_bytes([1.0, 0.5, -2.0, 3.25, 0.0])),
        ("model.norm.weight", "f32", [2, 3],
         f32_bytes([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])),
    ]


def directory_plan(tensors):
    """One directory entry per tensor, laid out as SLM-12 requires."""
    plan, end = [], 0
    for name, dtype, shape, data in tensors:
        off = 0 if not plan else align64(end)
        plan.append({"name": name.encode(), "dtype": DTYPES[dtype],
                     "shape": list(shape), "data_off": off,
                     "data_len": len(data), "data": data,
                     "blake3": blake3(data)})
        end = off + len(data)
    return plan


def encode_tensor_dir(plan):
    names = b"".join(e["name"] for e in plan)
    out = b"TLTD" + struct.pack("<IIIQQ", 1, len(plan), 96,
                                32 + 96 * len(plan), len(names))
    name_off = 0
    for e in plan:
        shape = e["shape"] + [0] * (4 - len(e["shape"]))
        out += struct.pack("<IIII4QQQ", name_off, len(e["name"]), e["dtype"],
                           len(e["shape"]), *shape, e["data_off"],
                           e["data_len"]) + e["blake3"]
        name_off += len(e["name"])
    return out + names


def encode_tensor_data(plan):
    end = max(e["data_off"] + len(e["data"]) for e in plan)
    out = bytearray(end)
    for e in plan:
        out[e["data_off"]:e["data_off"] + len(e["data"])] = e["data"]
    return bytes(out)


def template_section():
    ir = b"template IR bytes"
    return cbor({"format": "tinylm-template-section", "version": 1, "ir": ir,
                 "ir_sha256": hashlib.sha256(ir).digest(),
                 "source_sha256": bytes(32), "special_tokens_json": "{}"})


EFFECTIVE_CONFIG = {"schema": "qwen3/1", "profile": None,
                    "config": {"vocab_size": 3, "hidden_size": 40,
                               "num_hidden_layers": 1, "rms_norm_eps": "1e-06",
                               "tie_word_embeddings": True,
                               "rope_scaling": None,
                               "eos_token_ids": [1, 2]},
                    "defaults": [], "documentary": {}, "deviations": []}


def metadata(kind, n_ledger=3):
    meta = {"format": "tinylm.slm", "artifact_kind": kind,
            "converter": {"name": "tinylm convert", "version": "0.1.0"},
            "chat_template": {"source_sha256": bytes(32),
                              "ir_sha256": bytes(32)},
            "tokenizer": {"profile": "qwen2-byte-bpe", "n_tokens": 3,
                          "n_merges": 0, "n_added": 0,
                          "section_sha256": bytes(32), "sources": []}}
    if kind == "model":
        meta.update({"config": EFFECTIVE_CONFIG,
                     "config_sha256": hashlib.sha256(
                         cbor(EFFECTIVE_CONFIG)).digest(),
                     "quantization": {"requested": "q8", "block": 32,
                                      "rule": "2-D q8, 1-D f32"},
                     "ledger": [{"source": f"t{i}"} for i in range(n_ledger)],
                     "sources": []})
    return cbor(meta)


def model_sections(plan=None):
    """(kind, flags, body) of a model artifact, in writer order."""
    plan = plan if plan is not None else directory_plan(sample_tensors())
    return [(1, 1, metadata("model")), (2, 1, b"tokenizer section" * 5),
            (3, 1, template_section()), (4, 1, encode_tensor_dir(plan)),
            (5, 1, encode_tensor_data(plan))]


def tokenizer_sections():
    return [(1, 1, metadata("tokenizer-only")), (2, 1, b"tok" * 100),
            (3, 1, template_section())]


def build(sections, minor=0):
    """The file bytes: header, table, then each section at the next
    multiple of 64 (SLM-4)."""
    table_end = 64 + 64 * len(sections)
    offsets, end = [], table_end
    for _, _, body in sections:
        offsets.append(align64(end))
        end = offsets[-1] + len(body)
    out = bytearray(end)
    for i, ((kind, flags, body), off) in enumerate(zip(sections, offsets)):
        struct.pack_into("<IIQQ", out, 64 + 64 * i, kind, flags, off,
                         len(body))
        out[off:off + len(body)] = body
    struct.pack_into("<8sHHIQII", out, 0, MAGIC, 1, minor, 64, end,
                     len(sections), 64)
    return reseal(out)


def table_entries(data):
    n = struct.unpack_from("<I", data, 24)[0]
    for i in range(n):
        yield (64 + 64 * i,) + struct.unpack_from("<IIQQ", data, 64 + 64 * i)


def reseal(data):
    """Recompute every section digest and then the header digest."""
    out = bytearray(data)
    for field, _, _, off, length in table_entries(out):
        out[field + 24:field + 56] = blake3(out[off:off + length])
    n = struct.unpack_from("<I", out, 24)[0]
    out[32:64] = blake3(bytes(out[:32]) + bytes(out[64:64 + 64 * n]))
    return bytes(out)


def section_offset(data, kind):
    for _, k, _, off, _ in table_entries(data):
        if k == kind:
            return off
    raise KeyError(kind)


def flip(data, pos, seal=False):
    out = bytearray(data)
    out[pos] ^= 0x01
    return reseal(out) if seal else bytes(out)


def patch(data, pos, fmt, *values, seal=True):
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, *values)
    return reseal(out) if seal else bytes(out)


# --------------------------------------------------------------- harness

def error_code(data):
    """The error code the inspector gives data, or None when it accepts."""
    try:
        inspect_bytes(data)
    except SlmError as exc:
        return exc.code, exc.message
    return None, ""


def expect_error(name, data, code, message_part=""):
    got, message = error_code(data)
    check(name, got == code and message_part in message,
          f"expected {code} ({message_part!r}), got {got}: {message}")


def run_cli(data, *args):
    with tempfile.NamedTemporaryFile(suffix=".slm", delete=False) as f:
        f.write(data)
    try:
        return subprocess.run([sys.executable, INSPECT, f.name, *args],
                              capture_output=True, text=True)
    finally:
        os.unlink(f.name)


# ---------------------------------------------------------- blake3 tests


def official_vectors():
    """(input_len, hash hex) of each vector: the first 64 hex digits of the
    first string group after the length."""
    with open(VECTORS_H) as f:
        text = f.read()
    for n, strings in re.findall(r'\{(\d+),\s*((?:"[0-9a-f]+"\s*)+)', text):
        yield int(n), "".join(re.findall(r'"([0-9a-f]+)"', strings))[:64]


def test_blake3_vectors():
    vectors = list(official_vectors())
    check("blake3 vector table found", len(vectors) >= 22, str(len(vectors)))
    for n, expected in vectors:
        got = blake3_hex(bytes(i % 251 for i in range(n)))
        check(f"blake3 vector len={n}", got == expected, got)


def test_blake3_b3sum():
    if shutil.which("b3sum") is None:
        skip("b3sum not installed")
        return
    for n in (0, 64, 65, 1000, 1024 * 7 + 3, 70001):
        data = os.urandom(n)
        ref = subprocess.run(["b3sum", "--no-names", "-"], input=data,
                             capture_output=True).stdout.decode().split()[0]
        check(f"blake3 vs b3sum len={n}", blake3_hex(data) == ref)


# ------------------------------------------------------ valid artifacts


def expected_object(data, sections, plan):
    """What the inspector must print for a file built from sections."""
    offsets = {k: off for _, k, _, off, _ in table_entries(data)}
    tensors = []
    if plan:
        base = offsets[5]
        tensors = [{"name": e["name"].decode(),
                    "dtype": {v: k for k, v in DTYPES.items()}[e["dtype"]],
                    "shape": e["shape"], "offset": base + e["data_off"],
                    "length": e["data_len"], "blake3": e["blake3"].hex()}
                   for e in plan]
    return {"artifact_id": hashlib.sha256(data).hexdigest(),
            "file_bytes": len(data), "version": "1.0", "verified": True,
            "sections": [{"kind": KIND_NAMES.get(k, k), "offset": offsets[k],
                          "length": len(body), "required": bool(flags & 1),
                          "blake3": blake3_hex(body)}
                         for k, flags, body in sections],
            "artifact_kind": "model" if plan else "tokenizer-only",
            "tensors": tensors,
            "config": EFFECTIVE_CONFIG["config"] if plan else None,
            "ledger_entries": 3 if plan else 0}


def test_valid_model():
    plan = directory_plan(sample_tensors())
    sections = model_sections(plan)
    data = build(sections)
    proc = run_cli(data, "--json")
    check("model: exit 0", proc.returncode == 0, proc.stderr)
    want = json.dumps(expected_object(data, sections, plan), sort_keys=True,
                      separators=(",", ":"))
    check("model: --json object", proc.stdout.strip() == want,
          f"\n got {proc.stdout.strip()}\nwant {want}")
    text = run_cli(data)
    check("model: summary", text.returncode == 0 and
          hashlib.sha256(data).hexdigest() in text.stdout and
          "model.norm.weight" in text.stdout, text.stdout + text.stderr)
    check("model: tensors 64-aligned",
          all(t["offset"] % 64 == 0
              for t in json.loads(proc.stdout or "{}").get("tensors", [])))


def test_valid_tokenizer_only():
    sections = tokenizer_sections()
    data = build(sections)
    proc = run_cli(data, "--json")
    want = expected_object(data, sections, None)
    check("tokenizer-only: --json", proc.returncode == 0 and
          json.loads(proc.stdout or "null") == want,
          proc.stdout + proc.stderr)


def test_valid_variants():
    check("minor version 7 accepted",
          error_code(build(model_sections(), minor=7))[0] is None)
    extra = model_sections() + [(99, 0, b"future optional section")]
    check("unknown optional section skipped",
          error_code(build(extra))[0] is None)
    q4 = sample_tensors()
    zero_block = struct.pack("<f", 0.0) + b"\x88" * 16
    q4[0] = ("model.embed_tokens.weight", "q4", [3, 40], zero_block * 6)
    check("q4 tensor accepted",
          error_code(build(model_sections(directory_plan(q4))))[0] is None)


def pack_spec(dtype, rows, n, stored):
    """SLM-11a element by element (the inspector decodes group by group):
    each code moved from its stored place to its packed one."""
    bb = 36 if dtype == "q8" else 20
    nb = -(-n // 32)
    out = bytearray(len(stored))
    for r in range(rows):
        for blk in range(nb):
            g0, j = blk - blk % 16, blk % 16
            m = min(16, nb - g0)
            src = r * nb * bb + blk * bb
            base = r * nb * bb + g0 * bb
            out[base + 4 * j:base + 4 * j + 4] = stored[src:src + 4]
            for e in range(32):
                if dtype == "q8":
                    at = base + 4 * m + 4 * m * (e // 4) + 4 * j + e % 4
                    out[at] = stored[src + 4 + e] ^ 0x80
                else:
                    nib = stored[src + 4 + e // 2] >> (4 * (e % 2)) & 0xF
                    at = base + 4 * m + 4 * m * (e // 8) + 4 * j + e % 4
                    out[at] |= nib << (4 if e % 8 >= 4 else 0)
    return bytes(out)


def test_packed_layout():
    """q8p/q4p tensors (SLM-11a): accepted, named, and decoded back to the
    stored blocks (groups of 16 and a short one of 3)."""
    rows, n = 2, 600
    q8 = q8_bytes(rows, n)
    q4 = b"".join(struct.pack("<f", 0.25) + bytes((i * 37 + 1) & 0xFF or 0x11
                                                  for i in range(16))
                  for _ in range(rows * 19))
    for dtype, stored in (("q8", q8), ("q4", q4)):
        packed = pack_spec(dtype, rows, n, stored)
        tensors = sample_tensors()
        tensors[0] = ("model.embed_tokens.weight", dtype + "p", [rows, n], packed)
        proc = run_cli(build(model_sections(directory_plan(tensors))), "--json")
        got = json.loads(proc.stdout or "{}").get("tensors", [{}])[0].get("dtype")
        check(f"{dtype}p tensor accepted and named", proc.returncode == 0 and
              got == dtype + "p", proc.stdout + proc.stderr)
        check(f"{dtype}p decodes to the stored blocks",
              slm_inspect.stored_bytes(dtype + "p", [rows, n], packed) == stored)
        try:
            import slm_read  # the oracle's reader: NumPy, vectorised
        except ImportError:
            skip("tools/slm_read.py needs NumPy")
        else:
            check(f"{dtype}p decodes to the stored blocks (slm_read.py)",
                  slm_read.unpack(dtype + "p", [rows, n], packed) == stored)
        proc = run_cli(build(model_sections(directory_plan(tensors))),
                       "--stored-digests")
        check(f"{dtype}p --stored-digests", proc.stdout.split() ==
              ["model.embed_tokens.weight", blake3(stored).hex()],
              proc.stdout + proc.stderr)


def test_tokenizer_artifact():
    if not os.path.exists(TOKENIZER_SLM):
        skip(f"{TOKENIZER_SLM} not built (make tok-slm)")
        return
    proc = subprocess.run([sys.executable, INSPECT, TOKENIZER_SLM, "--json"],
                          capture_output=True, text=True)
    obj = json.loads(proc.stdout or "null") if proc.returncode == 0 else None
    check("qwen3-tokenizer.slm accepted", obj is not None and
          obj["artifact_kind"] == "tokenizer-only" and obj["tensors"] == [],
          proc.stderr)


# --------------------------------------------------- corrupted artifacts


def test_header_corruptions():
    good = build(model_sections())
    expect_error("wrong magic", patch(good, 0, "8s", b"\x89SLM\n\x1a\n\0"),
                 "invalid_model", "magic")
    expect_error("major version 2", patch(good, 8, "<H", 2),
                 "unsupported_abi")
    expect_error("header_len 80", patch(good, 12, "<I", 80), "invalid_model",
                 "header_len")
    expect_error("file_len off by one", patch(good, 16, "<Q", len(good) + 1),
                 "invalid_model", "file_len")
    expect_error("table_off 128", patch(good, 28, "<I", 128),
                 "invalid_model", "table_off")
    expect_error("n_sections 0", patch(good, 24, "<I", 0), "invalid_model",
                 "n_sections")
    expect_error("truncated file", good[:-1], "invalid_model")
    expect_error("short file", good[:40], "invalid_model")
    expect_error("flipped version_minor byte", flip(good, 10), "hash_mismatch",
                 "header digest")
    expect_error("flipped table byte", flip(good, 64 + 64 + 8 + 1),
                 "hash_mismatch", "header digest")


def test_table_corruptions():
    good = build(model_sections())
    expect_error("flags bit 1", patch(good, 64 + 4, "<I", 3),
                 "invalid_model", "flags")
    expect_error("reserved byte", patch(good, 64 + 63, "B", 1),
                 "invalid_model", "reserved")
    expect_error("duplicate kind", patch(good, 64 + 64, "<I", 1),
                 "invalid_model", "twice")
    required_unknown = model_sections() + [(99, 1, b"future")]
    expect_error("unknown required kind", build(required_unknown),
                 "unsupported_abi")
    meta_len = struct.unpack_from("<Q", good, 64 + 16)[0]
    check("test setup: a gap after the metadata", meta_len % 64 != 0)
    expect_error("section not at next multiple of 64",
                 patch(good, 64 + 64 + 8, "<Q", align64(384 + meta_len) + 64),
                 "invalid_model", "section offset")
    expect_error("nonzero padding between sections",
                 patch(good, 384 + meta_len, "B", 7), "invalid_model",
                 "padding")


def test_section_digests():
    good = build(model_sections())
    for _, kind, _, off, length in table_entries(good):
        expect_error(f"flipped byte in section {kind}",
                     flip(good, off + length // 2), "hash_mismatch",
                     f"kind {kind}")


def test_directory_corruptions():
    tensors = sample_tensors()
    unsorted = [tensors[1], tensors[0], tensors[2]]
    expect_error("unsorted tensor names",
                 build(model_sections(directory_plan(unsorted))),
                 "invalid_model", "ascending")
    dup = [tensors[0], tensors[0]]
    expect_error("duplicate tensor names",
                 build(model_sections(directory_plan(dup))),
                 "invalid_model", "ascending")
    bad_name = [("model.norm weight", "f32", [1], f32_bytes([1.0]))]
    expect_error("space in tensor name",
                 build(model_sections(directory_plan(bad_name))),
                 "invalid_model", "outside")

    plan = directory_plan(tensors)
    plan[0]["data_len"] -= 36
    expect_error("q8 data_len one block short",
                 build(model_sections(plan)), "invalid_model", "data_len")

    plan = directory_plan(tensors)
    plan[1]["data_off"] += 4
    expect_error("misaligned data_off", build(model_sections(plan)),
                 "invalid_model", "data_off")

    plan = directory_plan(tensors)
    plan[2]["data_off"] += 64
    expect_error("aligned but not packed data_off",
                 build(model_sections(plan)), "invalid_model", "data_off")

    plan = directory_plan(tensors)
    plan[2]["shape"] = [2, 4]
    expect_error("shape change breaks data_len", build(model_sections(plan)),
                 "invalid_model", "data_len")

    plan = directory_plan(tensors)
    plan[1]["shape"] = [1 << 32, 1 << 31, 2]
    expect_error("data_len overflows 64 bits", build(model_sections(plan)),
                 "integer_overflow")

    plan = directory_plan(tensors)
    plan[1]["dtype"] = 8
    expect_error("unknown dtype", build(model_sections(plan)),
                 "invalid_model", "dtype")


def test_padding_and_tensor_digest():
    plan = directory_plan(sample_tensors())
    good = build(model_sections(plan))
    data_off = section_offset(good, 5)
    gap = data_off + plan[0]["data_len"]
    check("test setup: a gap after tensor 0", gap % 64 != 0)
    expect_error("nonzero padding between tensors", flip(good, gap, True),
                 "invalid_model", "padding between tensors")
    expect_error("flipped tensor byte, digests resealed",
                 flip(good, data_off + plan[1]["data_off"] + 2, True),
                 "hash_mismatch", "tensor model.layers.0")
    expect_error("flipped tensor byte, not resealed",
                 flip(good, data_off + plan[1]["data_off"] + 2),
                 "hash_mismatch", "section of kind 5")


def test_metadata_corruptions():
    sections = model_sections()
    sections[0] = (1, 1, cbor({"format": "other"}))
    expect_error("metadata format", build(sections), "invalid_model",
                 "format")
    sections[0] = (1, 1, cbor([1, 2]))
    expect_error("metadata not a map", build(sections), "invalid_model",
                 "map")
    sections[0] = (1, 1, b"\xff\x00")
    expect_error("metadata not CBOR", build(sections), "invalid_model",
                 "CBOR")
    sections[0] = (1, 1, metadata("model") + b"\x00")
    expect_error("metadata trailing bytes", build(sections), "invalid_model",
                 "trailing")
    sections[0] = (1, 1, cbor2.dumps({"artifact_kind": "model",
                                      "format": "tinylm.slm"}))
    expect_error("metadata keys not sorted", build(sections),
                 "invalid_model", "deterministic")
    sections[0] = (1, 1, b"\xa1\x66format\x6atinylm.slm")
    check("test setup: a one-key map", cbor2.loads(sections[0][2]) ==
          {"format": "tinylm.slm"})
    sections[0] = (1, 1, b"\xb8\x01" + sections[0][2][1:])
    expect_error("metadata non-shortest map head", build(sections),
                 "invalid_model", "deterministic")
    sections[0] = (1, 1, cbor2.dumps({"format": "tinylm.slm", "x": 1.5},
                                     canonical=True))
    expect_error("metadata float", build(sections), "invalid_model",
                 "profile")


def test_cli_errors():
    bad = patch(build(tokenizer_sections()), 8, "<H", 2)
    proc = run_cli(bad, "--json")
    check("cli: exit 1 and error line", proc.returncode == 1 and
          proc.stdout == "" and
          proc.stderr.startswith("error: unsupported_abi: "), proc.stderr)
    usage = subprocess.run([sys.executable, INSPECT], capture_output=True)
    check("cli: usage error exits 2", usage.returncode == 2)


def main():
    for test in (test_blake3_vectors, test_blake3_b3sum, test_valid_model,
                 test_valid_tokenizer_only, test_valid_variants,
                 test_packed_layout,
                 test_tokenizer_artifact, test_header_corruptions,
                 test_table_corruptions, test_section_digests,
                 test_directory_corruptions, test_padding_and_tensor_digest,
                 test_metadata_corruptions, test_cli_errors):
        test()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
