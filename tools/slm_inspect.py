#!/usr/bin/python3
"""Independent reader and inspector for tinylm `.slm` artifacts.

Written from the specification alone (docs/slm.md: header, section table,
tensor directory, metadata, `tinylm inspect`; docs/quant.md for the q8/q4
block sizes), without reading the C reader, so that the two implementations
cross-check each other. It always verifies everything (like
`tinylm inspect --verify`): the header, the header digest, the section
layout (SLM-1..SLM-4), every section digest, the tensor directory
(SLM-10..SLM-12), every tensor digest, and that the metadata is a
deterministic CBOR map (docs/cbor.md) with "format" == "tinylm.slm".

Usage: slm_inspect.py MODEL.slm [--json]

--json prints the object of docs/slm.md "`tinylm inspect`" (with
"verified": true) as compact JSON with sorted keys. A violation prints
`error: <code>: <message>` on stderr and exits 1; usage errors exit 2.
Needs only the standard library, python3-cbor2 and tools/blake3_ref.py.
"""

import argparse
import hashlib
import io
import json
import os
import re
import struct
import sys

import cbor2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blake3_ref import blake3  # noqa: E402

MAGIC = b"\x89SLM\r\n\x1a\n"
HEADER_LEN = 64
TABLE_ENTRY_LEN = 64
MAX_SECTIONS = 16
ALIGN = 64
U64_MAX = (1 << 64) - 1

KIND_METADATA, KIND_TOKENIZER, KIND_TEMPLATE, KIND_TENSOR_DIR, \
    KIND_TENSOR_DATA = 1, 2, 3, 4, 5
KIND_NAMES = {KIND_METADATA: "metadata", KIND_TOKENIZER: "tokenizer",
              KIND_TEMPLATE: "template", KIND_TENSOR_DIR: "tensor_dir",
              KIND_TENSOR_DATA: "tensor_data"}
FLAG_REQUIRED = 1

TD_MAGIC = b"TLTD"
TD_VERSION = 1
TD_HEADER_LEN = 32
TD_ENTRY_LEN = 96
TD_MAX_TENSORS = 65536
MAX_NAME_LEN = 255
MAX_RANK = 4
NAME_RE = re.compile(rb"[A-Za-z0-9._-]+\Z")

DTYPE_NAMES = {1: "f32", 2: "f16", 3: "bf16", 4: "q8", 5: "q4", 6: "q8p",
               7: "q4p"}
QUANT_BLOCK = 32
# Bytes per element (plain dtypes) or per block of 32 elements (q8, q4 and
# their packed layouts q8p, q4p: the same bytes, permuted).
ELEMENT_BYTES = {1: 4, 2: 2, 3: 2}
BLOCK_BYTES = {4: 36, 5: 20, 6: 36, 7: 20}
PACK_GROUP = 16  # SLM-11: blocks per packed group (the last may be short)

HEADER = struct.Struct("<8sHHIQII32s")
TABLE_ENTRY = struct.Struct("<IIQQ32s8s")
TD_HEADER = struct.Struct("<4sIIIQQ")
TD_ENTRY = struct.Struct("<IIII4QQQ32s")


class SlmError(Exception):
    """A violation of the specification: code is the tinylm error code."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def invalid(message):
    return SlmError("invalid_model", message)


def align_up(value):
    return -(-value // ALIGN) * ALIGN


# ---------------------------------------------------------------- header


def parse_header(data):
    """Check SLM-1 and the header digest (SLM-2); return the header fields
    as a dict."""
    if len(data) < HEADER_LEN:
        raise invalid(f"file is {len(data)} bytes, shorter than the "
                      f"{HEADER_LEN}-byte header")
    (magic, major, minor, header_len, file_len, n_sections, table_off,
     digest) = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise invalid(f"offset 0: bad magic {magic.hex()}")
    if major != 1:
        raise SlmError("unsupported_abi",
                       f"offset 8: version_major {major} (expected 1)")
    if header_len != HEADER_LEN:
        raise invalid(f"offset 12: header_len {header_len} "
                      f"(expected {HEADER_LEN})")
    if file_len != len(data):
        raise invalid(f"offset 16: file_len {file_len} but the file has "
                      f"{len(data)} bytes")
    if not 1 <= n_sections <= MAX_SECTIONS:
        raise invalid(f"offset 24: n_sections {n_sections} "
                      f"(expected 1..{MAX_SECTIONS})")
    if table_off != HEADER_LEN:
        raise invalid(f"offset 28: table_off {table_off} "
                      f"(expected {HEADER_LEN})")
    table_end = table_off + n_sections * TABLE_ENTRY_LEN
    if table_end > len(data):
        raise invalid(f"offset 24: the section table ({n_sections} entries) "
                      f"ends at {table_end}, past the end of the file")
    covered = bytes(data[:32]) + bytes(data[table_off:table_end])
    if blake3(covered) != digest:
        raise SlmError("hash_mismatch", "offset 32: header digest mismatch")
    return {"version": f"{major}.{minor}", "n_sections": n_sections,
            "table_off": table_off, "table_end": table_end}


# ---------------------------------------------------------- section table


def parse_section_table(data, header):
    """Parse and check the section table (SLM-3, SLM-4); return the
    sections as dicts in table order."""
    sections = []
    seen_kinds = set()
    prev_end = header["table_end"]
    for index in range(header["n_sections"]):
        field = header["table_off"] + index * TABLE_ENTRY_LEN
        kind, flags, offset, length, digest, reserved = \
            TABLE_ENTRY.unpack_from(data, field)
        check_table_entry(field, kind, flags, reserved, seen_kinds)
        check_section_place(data, field, offset, length, prev_end)
        prev_end = offset + length
        sections.append({"kind": kind,
                         "required": bool(flags & FLAG_REQUIRED),
                         "offset": offset, "length": length,
                         "digest": digest, "field": field})
    if prev_end != len(data):
        raise invalid(f"the last section ends at {prev_end}, not at "
                      f"file_len {len(data)}")
    return sections


def check_table_entry(field, kind, flags, reserved, seen_kinds):
    if flags & ~FLAG_REQUIRED:
        raise invalid(f"offset {field + 4}: section flags {flags:#x} set "
                      f"bits other than bit 0")
    if any(reserved):
        raise invalid(f"offset {field + 56}: section reserved bytes are not "
                      f"zero")
    if kind in seen_kinds:
        raise invalid(f"offset {field}: section kind {kind} appears twice")
    seen_kinds.add(kind)
    if kind not in KIND_NAMES and flags & FLAG_REQUIRED:
        raise SlmError("unsupported_abi", f"offset {field}: required section "
                       f"of unknown kind {kind}")


def check_section_place(data, field, offset, length, prev_end):
    """SLM-4: the section starts at the first multiple of 64 at or after
    the previous section's end (the only layout a writer produces), the
    gap is zero and the section lies inside the file."""
    expected = align_up(prev_end)
    if offset != expected:
        raise invalid(f"offset {field + 8}: section offset {offset} "
                      f"(expected {expected}: 64-aligned, right after the "
                      f"previous section)")
    if length > len(data) - offset:
        raise invalid(f"offset {field + 16}: section [{offset}, "
                      f"{offset}+{length}) runs past the end of the file")
    if any(data[prev_end:offset]):
        raise invalid(f"offset {prev_end}: nonzero padding before the "
                      f"section at {offset}")


def verify_section_digests(data, sections):
    for sec in sections:
        body = data[sec["offset"]:sec["offset"] + sec["length"]]
        if blake3(body) != sec["digest"]:
            raise SlmError("hash_mismatch", f"offset {sec['field'] + 24}: "
                           f"digest mismatch in section of kind "
                           f"{sec['kind']} at {sec['offset']}")


def section_of_kind(sections, kind):
    for sec in sections:
        if sec["kind"] == kind:
            return sec
    return None


# -------------------------------------------------------- tensor directory


def tensor_data_len(dtype, shape, field):
    """SLM-11: the exact byte length of a tensor, with 64-bit overflow
    checks. Every factor is >= 1, so the final product overflows exactly
    when some partial product does."""
    rows = 1
    for dim in shape[:-1]:
        rows *= dim
    n = shape[-1]
    if dtype in ELEMENT_BYTES:
        size = ELEMENT_BYTES[dtype] * rows * n
    else:
        size = rows * (-(-n // QUANT_BLOCK)) * BLOCK_BYTES[dtype]
    if size > U64_MAX:
        raise SlmError("integer_overflow", f"offset {field}: the byte length "
                       f"of shape {list(shape)} does not fit 64 bits")
    return size


def parse_tensor_dir_header(data, sec):
    base, length = sec["offset"], sec["length"]
    if length < TD_HEADER_LEN:
        raise invalid(f"offset {base}: tensor directory is {length} bytes, "
                      f"shorter than its {TD_HEADER_LEN}-byte header")
    magic, version, n, entry_len, names_off, names_len = \
        TD_HEADER.unpack_from(data, base)
    if magic != TD_MAGIC:
        raise invalid(f"offset {base}: bad tensor directory magic "
                      f"{magic.hex()}")
    if version != TD_VERSION:
        raise invalid(f"offset {base + 4}: tensor directory version "
                      f"{version}")
    if not 1 <= n <= TD_MAX_TENSORS:
        raise invalid(f"offset {base + 8}: n_tensors {n} "
                      f"(expected 1..{TD_MAX_TENSORS})")
    if entry_len != TD_ENTRY_LEN:
        raise invalid(f"offset {base + 12}: entry_len {entry_len}")
    if names_off != TD_HEADER_LEN + TD_ENTRY_LEN * n:
        raise invalid(f"offset {base + 16}: names_off {names_off} "
                      f"(expected {TD_HEADER_LEN + TD_ENTRY_LEN * n})")
    if names_off + names_len != length:
        raise invalid(f"offset {base + 24}: names_len {names_len}: the "
                      f"directory would end at {names_off + names_len}, "
                      f"its section has {length} bytes")
    return n, base + names_off, names_len


def check_tensor_name(data, field, name_off, name_len, next_name_off,
                      names_abs, names_len, prev_name):
    """SLM-10 for one entry; return the name."""
    if name_off != next_name_off:
        raise invalid(f"offset {field}: name_off {name_off} (expected "
                      f"{next_name_off})")
    if not 1 <= name_len <= MAX_NAME_LEN:
        raise invalid(f"offset {field + 4}: name_len {name_len} "
                      f"(expected 1..{MAX_NAME_LEN})")
    if name_off + name_len > names_len:
        raise invalid(f"offset {field + 4}: name runs past the names area")
    name = bytes(data[names_abs + name_off:names_abs + name_off + name_len])
    if not NAME_RE.match(name):
        raise invalid(f"offset {names_abs + name_off}: tensor name {name!r} "
                      f"has a byte outside [A-Za-z0-9._-]")
    if prev_name is not None and name <= prev_name:
        raise invalid(f"offset {field}: tensor name {name!r} is not after "
                      f"{prev_name!r} (names must be strictly ascending)")
    return name


def check_tensor_shape(field, dtype, rank, dims):
    if dtype not in DTYPE_NAMES:
        raise invalid(f"offset {field + 8}: unknown dtype {dtype}")
    if not 1 <= rank <= MAX_RANK:
        raise invalid(f"offset {field + 12}: rank {rank} "
                      f"(expected 1..{MAX_RANK})")
    for axis, dim in enumerate(dims):
        if (dim >= 1) != (axis < rank):
            raise invalid(f"offset {field + 16 + 8 * axis}: dim {axis} is "
                          f"{dim} with rank {rank}")
    return dims[:rank]


def check_tensor_placement(field, data_off, data_len, expected_off,
                           data_sec):
    """SLM-12 for one tensor: its offset and the zero gap before it."""
    if data_off != expected_off:
        raise invalid(f"offset {field + 48}: data_off {data_off} (expected "
                      f"{expected_off})")
    if data_len > data_sec["length"] - data_off:
        raise invalid(f"offset {field + 56}: tensor [{data_off}, "
                      f"{data_off}+{data_len}) runs past the tensor data "
                      f"section ({data_sec['length']} bytes)")


def parse_tensor_dir(data, dir_sec, data_sec):
    """Parse and check the tensor directory against the tensor data
    section (SLM-10..SLM-12); return the tensors as dicts."""
    n, names_abs, names_len = parse_tensor_dir_header(data, dir_sec)
    tensors = []
    prev_name, next_name_off, prev_end = None, 0, 0
    for index in range(n):
        field = dir_sec["offset"] + TD_HEADER_LEN + index * TD_ENTRY_LEN
        (name_off, name_len, dtype, rank, d0, d1, d2, d3, data_off, data_len,
         digest) = TD_ENTRY.unpack_from(data, field)
        name = check_tensor_name(data, field, name_off, name_len,
                                 next_name_off, names_abs, names_len,
                                 prev_name)
        shape = check_tensor_shape(field, dtype, rank, (d0, d1, d2, d3))
        expected_len = tensor_data_len(dtype, shape, field + 16)
        if data_len != expected_len:
            raise invalid(f"offset {field + 56}: data_len {data_len} "
                          f"(expected {expected_len} for "
                          f"{DTYPE_NAMES[dtype]} {list(shape)})")
        expected_off = 0 if index == 0 else align_up(prev_end)
        check_tensor_placement(field, data_off, data_len, expected_off,
                               data_sec)
        check_zero_gap(data, data_sec["offset"], prev_end, data_off)
        tensors.append({"name": name.decode("ascii"),
                        "dtype": DTYPE_NAMES[dtype], "shape": list(shape),
                        "offset": data_sec["offset"] + data_off,
                        "length": data_len, "digest": digest,
                        "field": field})
        prev_name, next_name_off = name, name_off + name_len
        prev_end = data_off + data_len
    if next_name_off != names_len:
        raise invalid(f"offset {dir_sec['offset'] + 24}: names_len "
                      f"{names_len} but the names end at {next_name_off}")
    if prev_end != data_sec["length"]:
        raise invalid(f"offset {data_sec['field'] + 16}: tensor data section "
                      f"is {data_sec['length']} bytes, the last tensor ends "
                      f"at {prev_end}")
    return tensors


def unpack_group(packed_q8, g, m):
    """SLM-11's packed group of m blocks back to the stored blocks: the m
    scales, then code row s (q8: s < 8, codes 4s..4s+3, each XOR 0x80;
    q4: s < 4, byte k holding element 8s+k low and 8s+4+k high) of block
    j at 4*m*s + 4*j."""
    out = bytearray()
    codes = g[4 * m:]
    for j in range(m):
        out += g[4 * j:4 * j + 4]
        if packed_q8:
            for s in range(8):
                out += bytes(b ^ 0x80 for b in codes[4 * m * s + 4 * j:
                                                     4 * m * s + 4 * j + 4])
        else:
            elems = [0] * 32
            for s in range(4):
                for k in range(4):
                    b = codes[4 * m * s + 4 * j + k]
                    elems[8 * s + k] = b & 0x0F
                    elems[8 * s + 4 + k] = b >> 4
            out += bytes(elems[2 * i] | elems[2 * i + 1] << 4
                         for i in range(16))
    return bytes(out)


def stored_bytes(dtype, shape, body):
    """A q8p/q4p tensor's bytes in the stored layout (docs/quant.md
    Q-12): the blocks the packed groups stand for, row by row."""
    packed_q8 = dtype == "q8p"
    bb = 36 if packed_q8 else 20
    n = shape[-1]
    nb = -(-n // QUANT_BLOCK)
    rb = nb * bb
    out = bytearray()
    for r in range(len(body) // rb if rb else 0):
        row = body[r * rb:(r + 1) * rb]
        for b in range(0, nb, PACK_GROUP):
            m = min(PACK_GROUP, nb - b)
            out += unpack_group(packed_q8, bytes(row[b * bb:(b + m) * bb]), m)
    return bytes(out)


def check_zero_gap(data, base, start, end):
    if any(data[base + start:base + end]):
        raise invalid(f"offset {base + start}: nonzero padding between "
                      f"tensors")


def verify_tensor_digests(data, tensors):
    for t in tensors:
        body = data[t["offset"]:t["offset"] + t["length"]]
        if blake3(body) != t["digest"]:
            raise SlmError("hash_mismatch", f"offset {t['field'] + 64}: "
                           f"digest mismatch in tensor {t['name']}")


# --------------------------------------------------------------- metadata


def decode_cbor(body, what):
    """Decode exactly one CBOR item spanning all of body."""
    stream = io.BytesIO(body)
    try:
        value = cbor2.CBORDecoder(stream).decode()
    except (cbor2.CBORDecodeError, ValueError, EOFError) as exc:
        raise invalid(f"{what} is not CBOR: {exc}") from exc
    if stream.tell() != len(body):
        raise invalid(f"{what}: trailing bytes after the CBOR item")
    return value


def cbor_head(major, value):
    """A shortest-form CBOR head (docs/cbor.md CBOR-2)."""
    if value < 24:
        return bytes([major << 5 | value])
    for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if value < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | info]) + struct.pack(fmt, value)
    raise invalid(f"integer {value} does not fit a CBOR head")


def deterministic_cbor(value):
    """The one encoding of value in the tinylm CBOR profile (docs/cbor.md:
    shortest heads, definite lengths, no floats, no tags, map keys in
    bytewise order of their encodings)."""
    if value is False or value is True or value is None:
        return {False: b"\xf4", True: b"\xf5", None: b"\xf6"}[value]
    if isinstance(value, int):
        return cbor_head(0, value) if value >= 0 else cbor_head(1, -1 - value)
    if isinstance(value, bytes):
        return cbor_head(2, len(value)) + value
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return cbor_head(3, len(raw)) + raw
    if isinstance(value, (list, tuple)):
        return cbor_head(4, len(value)) + b"".join(
            deterministic_cbor(v) for v in value)
    if isinstance(value, dict):
        pairs = sorted((deterministic_cbor(k), deterministic_cbor(v))
                       for k, v in value.items())
        return cbor_head(5, len(pairs)) + b"".join(k + v for k, v in pairs)
    raise invalid(f"a CBOR {type(value).__name__} is outside the tinylm "
                  f"CBOR profile")


def parse_metadata(data, sec):
    body = bytes(data[sec["offset"]:sec["offset"] + sec["length"]])
    meta = decode_cbor(body, "metadata")
    if deterministic_cbor(meta) != body:
        raise invalid("metadata is not deterministic CBOR (docs/cbor.md)")
    if not isinstance(meta, dict):
        raise invalid("metadata is not a CBOR map")
    if meta.get("format") != "tinylm.slm":
        raise invalid(f"metadata format is {meta.get('format')!r}, not "
                      f"'tinylm.slm'")
    if not isinstance(meta.get("artifact_kind"), str):
        raise invalid("metadata has no text artifact_kind")
    return meta


def to_json_value(value, path):
    """A decoded CBOR value as JSON data (text, integers, booleans, null,
    arrays and text-keyed maps map directly; anything else is refused)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, list):
        return [to_json_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: to_json_value(v, f"{path}.{k}") for k, v in value.items()}
    raise invalid(f"metadata {path}: a {type(value).__name__} has no JSON "
                  f"form")


def model_summary(meta):
    """The inspect object's config and ledger_entries of a model."""
    effective = meta.get("config")
    if not isinstance(effective, dict) or \
            not isinstance(effective.get("config"), dict):
        raise invalid("metadata config is not an effective config map with "
                      "a config map")
    ledger = meta.get("ledger")
    if not isinstance(ledger, list):
        raise invalid("metadata ledger is not an array")
    return to_json_value(effective["config"], "$.config.config"), len(ledger)


# ---------------------------------------------------------------- reader


def check_kinds(sections, meta):
    """The tensor sections come as a pair, exactly in model artifacts."""
    has_dir = section_of_kind(sections, KIND_TENSOR_DIR) is not None
    has_data = section_of_kind(sections, KIND_TENSOR_DATA) is not None
    if has_dir != has_data:
        raise invalid("a tensor directory needs a tensor data section and "
                      "the other way round")
    if has_dir != (meta["artifact_kind"] == "model"):
        raise invalid(f"artifact_kind {meta['artifact_kind']!r} "
                      f"{'with' if has_dir else 'without'} tensor sections")


def inspect_bytes(data):
    """Verify a whole artifact; return the `tinylm inspect --json` object."""
    data = memoryview(data)
    header = parse_header(data)
    sections = parse_section_table(data, header)
    verify_section_digests(data, sections)
    meta_sec = section_of_kind(sections, KIND_METADATA)
    if meta_sec is None:
        raise invalid("no metadata section")
    meta = parse_metadata(data, meta_sec)
    check_kinds(sections, meta)
    tensors, config, ledger_entries = [], None, 0
    dir_sec = section_of_kind(sections, KIND_TENSOR_DIR)
    if dir_sec is not None:
        tensors = parse_tensor_dir(data, dir_sec,
                                   section_of_kind(sections,
                                                   KIND_TENSOR_DATA))
        verify_tensor_digests(data, tensors)
        config, ledger_entries = model_summary(meta)
    info = {
        "artifact_id": hashlib.sha256(data).hexdigest(),
        "file_bytes": len(data),
        "version": header["version"],
        "verified": True,
        "sections": [{"kind": KIND_NAMES.get(s["kind"], s["kind"]),
                      "offset": s["offset"], "length": s["length"],
                      "required": s["required"], "blake3": s["digest"].hex()}
                     for s in sections],
        "artifact_kind": meta["artifact_kind"],
        "tensors": [{"name": t["name"], "dtype": t["dtype"],
                     "shape": t["shape"], "offset": t["offset"],
                     "length": t["length"], "blake3": t["digest"].hex()}
                    for t in tensors],
        "config": config,
        "ledger_entries": ledger_entries,
    }
    acq = meta.get("acquisition")
    if acq is not None:  # docs/acquisition.md §Binding
        if not isinstance(acq, dict) or not isinstance(acq.get("receipt_id"), bytes):
            raise invalid("metadata acquisition is not a map with a receipt_id")
        info["acquisition"] = {k: v.hex() if isinstance(v, bytes) else
                               to_json_value(v, "$.acquisition." + k)
                               for k, v in acq.items()}
    return info


# -------------------------------------------------------------------- CLI


def format_summary(info):
    lines = [f"artifact id   {info['artifact_id']}",
             f"file bytes    {info['file_bytes']}",
             f"version       {info['version']}",
             f"artifact kind {info['artifact_kind']}",
             "verified      yes (header, sections, tensors)",
             "", f"sections ({len(info['sections'])}):"]
    for s in info["sections"]:
        lines.append(f"  {str(s['kind']):<12} offset {s['offset']:>12}  "
                     f"length {s['length']:>12}  "
                     f"{'required' if s['required'] else 'optional'}  "
                     f"blake3 {s['blake3']}")
    if info["tensors"]:
        lines += ["", f"tensors ({len(info['tensors'])}):"]
        for t in info["tensors"]:
            shape = "x".join(str(d) for d in t["shape"])
            lines.append(f"  {t['name']:<48} {t['dtype']:<5} {shape:<16} "
                         f"offset {t['offset']:>12}  length {t['length']:>12}")
    if info["config"] is not None:
        lines += ["", "config:"]
        lines += [f"  {k} = {json.dumps(v)}"
                  for k, v in sorted(info["config"].items())]
        lines.append(f"ledger entries {info['ledger_entries']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Verify and describe a tinylm .slm artifact "
                    "(independent reader written from docs/slm.md).")
    parser.add_argument("artifact", help="path of the .slm file")
    parser.add_argument("--json", action="store_true",
                        help="print the `tinylm inspect --json` object")
    parser.add_argument("--stored-digests", action="store_true",
                        help="print, for each q8p/q4p tensor, its name and "
                             "the BLAKE3 of the stored blocks it decodes to")
    args = parser.parse_args(argv)
    try:
        with open(args.artifact, "rb") as f:
            data = f.read()
    except OSError as exc:
        parser.error(f"cannot read {args.artifact}: {exc.strerror}")
    try:
        info = inspect_bytes(data)
    except SlmError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    if args.stored_digests:
        for t in info["tensors"]:
            if t["dtype"] in ("q8p", "q4p"):
                body = data[t["offset"]:t["offset"] + t["length"]]
                print(t["name"], blake3(stored_bytes(t["dtype"], t["shape"],
                                                     body)).hex())
    elif args.json:
        print(json.dumps(info, sort_keys=True, separators=(",", ":")))
    else:
        print(format_summary(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
