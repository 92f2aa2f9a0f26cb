#!/usr/bin/python3
"""Bad-input corpus for `tinylm convert`.

usage: bad_checkpoints.py TINYLM_BINARY WORKDIR

Builds small valid checkpoints with `tinylm synth` (the tiny tokenizer
fixture, 346 tokens), derives malformed checkpoints from them by editing
files (safetensors headers are parsed and rewritten here: u64 LE header
length, JSON header, data), and checks that `tinylm convert CASE -o
CASE.slm --profile qwen3-0.6b-publisher --json` refuses each one with exit
status 1, the expected typed error code, a detail naming the offending
file / tensor / field, and nothing left behind (no CASE.slm, no
CASE.slm.receipt.cbor, no CASE.slm.tmp.*). Positive controls check that the
unmodified checkpoints convert, reproducibly.

Note on EOS: the base checkpoints get a generation_config.json whose
eos_token_id agrees with config.json ([322]), whatever synth wrote (its
--publisher-eos writes the published disagreement, which the
qwen3-0.6b-publisher profile resolves only for the published ids 151645 /
151643, docs/qwen3-config.md, not for the tiny tokenizer's 322 / 320).

stdlib only; prints `ok <case>` / `FAIL <case>: why` and `N passed, N failed`;
exit status 1 on any failure.
"""

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys

PROFILE = "qwen3-0.6b-publisher"
TOKENIZER_DIR = "tests/fixtures/tiny-tokenizer"
SMALL = {
    "vocab_size": 346,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
}
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"
DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2}


class CaseError(Exception):
    pass


# --------------------------------------------------------------------------
# safetensors, by hand


def st_read_raw(path):
    """(header dict in document order, header length, data bytes)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    return header, n, blob[8 + n:]


def st_write_raw(path, header, data, pad=True):
    """Writes header (a dict, serialised compactly in its order) and data
    verbatim; the offsets in header are not touched."""
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def st_read(path):
    """(metadata or None, [[name, dtype, shape, bytes], ...]) in header
    order."""
    header, _, data = st_read_raw(path)
    meta = header.pop("__metadata__", None)
    tensors = []
    for name, e in header.items():
        b, end = e["data_offsets"]
        tensors.append([name, e["dtype"], list(e["shape"]), bytearray(data[b:end])])
    return meta, tensors


def st_write(path, meta, tensors):
    """A well-formed file: tensors in list order, contiguous offsets."""
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    at = 0
    chunks = []
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [at, at + len(blob)]}
        at += len(blob)
        chunks.append(bytes(blob))
    st_write_raw(path, header, b"".join(chunks))


def find(tensors, name):
    for t in tensors:
        if t[0] == name:
            return t
    raise CaseError("fixture has no tensor %s" % name)


def edit_tensors(path, fn):
    meta, tensors = st_read(path)
    tensors = fn(tensors) or tensors
    st_write(path, meta, tensors)


def set_elem(t, index, raw):
    size = DTYPE_SIZE[t[1]]
    if len(raw) != size:
        raise CaseError("element size mismatch")
    t[3][index * size:(index + 1) * size] = raw


# --------------------------------------------------------------------------
# JSON side files


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def edit_json(path, fn):
    obj = read_json(path)
    obj = fn(obj) or obj
    write_json(path, obj)


# --------------------------------------------------------------------------
# Running the binary


class Runner:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.passed = 0
        self.failed = 0

    def synth(self, name, extra):
        out = os.path.join(self.workdir, name)
        cfg = os.path.join(self.workdir, "small.json")
        if not os.path.exists(cfg):
            write_json(cfg, SMALL)
        cmd = [self.binary, "synth", "--config", cfg, "--seed", "7", "-o", out,
               "--tokenizer-dir", TOKENIZER_DIR] + extra
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        if p.returncode != 0:
            raise SystemExit("synth %s failed (%d): %s" %
                             (name, p.returncode, p.stderr.decode(errors="replace")))
        # The tiny tokenizer's ids are not the published ones the profile
        # resolves: make generation_config.json agree with config.json.
        eos = read_json(os.path.join(out, "config.json"))["eos_token_id"]
        edit_json(os.path.join(out, "generation_config.json"),
                  lambda g: g.__setitem__("eos_token_id", [eos]))
        return out

    def convert(self, case_dir, out, quant=None):
        cmd = [self.binary, "convert", case_dir, "-o", out, "--profile", PROFILE,
               "--json"]
        if quant is not None:
            cmd += ["--quant", quant]
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)

    def report(self, name, why):
        if why is None:
            self.passed += 1
            print("ok %s" % name)
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, why))
        sys.stdout.flush()

    def make_case(self, name, base, edit):
        case_dir = os.path.join(self.workdir, "cases", name)
        shutil.copytree(base, case_dir)
        edit(case_dir)
        return case_dir

    def bad(self, name, base, edit, code, detail_re, conflict=None, quant=None,
            conflict_field=None):
        """One malformed checkpoint: exit 1, error code, detail regex, the
        conflict record for conflicts, and no output files."""
        try:
            case_dir = self.make_case(name, base, edit)
        except (CaseError, OSError, KeyError, ValueError) as e:
            self.report(name, "building the case failed: %r" % (e,))
            return
        out = case_dir + ".slm"
        p = self.convert(case_dir, out, quant)
        self.report(name, self.judge(p, case_dir, out, code, detail_re, conflict,
                                     conflict_field))

    def judge(self, p, case_dir, out, code, detail_re, conflict, conflict_field):
        stdout = p.stdout.decode("utf-8", errors="replace")
        stderr = p.stderr.decode("utf-8", errors="replace")
        problems = []
        left = [f for f in [out, out + ".receipt.cbor"] if os.path.exists(f)]
        left += glob.glob(glob.escape(out) + ".tmp.*")
        left += glob.glob(glob.escape(out) + ".receipt.cbor.tmp.*")
        if left:
            problems.append("left behind: %s" % ", ".join(os.path.basename(f) for f in left))
        if p.returncode != 1:
            problems.append("exit status %d (want 1); stderr: %s" %
                            (p.returncode, stderr.strip()[-400:]))
        doc = None
        lines = [ln for ln in stdout.splitlines() if ln.strip()]
        if len(lines) != 1:
            problems.append("stdout is not one JSON line: %r" % stdout[-400:])
        else:
            try:
                doc = json.loads(lines[0])
            except ValueError:
                problems.append("stdout is not JSON: %r" % lines[0][-400:])
        if doc is not None:
            if not isinstance(doc, dict):
                problems.append("stdout JSON is not an object")
                doc = None
        if doc is not None:
            detail = doc.get("detail")
            if doc.get("error") != code:
                problems.append("error %r (want %r), detail %r" %
                                (doc.get("error"), code, detail))
            if not isinstance(detail, str) or re.search(detail_re, detail) is None:
                problems.append("detail %r does not match /%s/" % (detail, detail_re))
            if conflict is not None:
                rec = doc.get("conflict")
                if not isinstance(rec, dict):
                    problems.append("no \"conflict\" object in the JSON output")
                else:
                    if rec.get("conflict") != conflict:
                        problems.append("conflict kind %r (want %r)" %
                                        (rec.get("conflict"), conflict))
                    if conflict_field is not None and rec.get("field") != conflict_field:
                        problems.append("conflict field %r (want %r)" %
                                        (rec.get("field"), conflict_field))
                    if not isinstance(rec.get("sources"), list) or not rec["sources"]:
                        problems.append("conflict record has no sources")
                    if not isinstance(rec.get("message"), str):
                        problems.append("conflict record has no message")
                if isinstance(detail, str) and not detail.startswith("conflict %s: " % conflict):
                    problems.append("detail does not start with 'conflict %s: '" % conflict)
            elif "conflict" in doc:
                problems.append("unexpected conflict record %r" % (doc["conflict"],))
        if "AddressSanitizer" in stderr or "runtime error" in stderr:
            problems.append("sanitizer report: %s" % stderr[-400:])
        return "; ".join(problems) if problems else None

    def good(self, name, base, quant=None):
        """A valid checkpoint converts (exit 0, artifact and receipt written)
        and a second conversion gives identical bytes."""
        outs = []
        for k in (1, 2):
            out = os.path.join(self.workdir, "cases", "%s.%d.slm" % (name, k))
            p = self.convert(base, out, quant)
            if p.returncode != 0:
                self.report(name, "conversion %d: exit %d: %s %s" %
                            (k, p.returncode, p.stdout.decode(errors="replace").strip(),
                             p.stderr.decode(errors="replace").strip()))
                return
            try:
                doc = json.loads(p.stdout.decode("utf-8"))
            except ValueError:
                self.report(name, "stdout is not JSON: %r" % p.stdout[-300:])
                return
            if not isinstance(doc, dict) or "artifact_id" not in doc:
                self.report(name, "no artifact_id in %r" % (doc,))
                return
            if not os.path.exists(out + ".receipt.cbor"):
                self.report(name, "no receipt written")
                return
            if glob.glob(glob.escape(out) + ".tmp.*"):
                self.report(name, "temporary file left behind")
                return
            outs.append((out, doc["artifact_id"]))
        with open(outs[0][0], "rb") as f:
            a = f.read()
        with open(outs[1][0], "rb") as f:
            b = f.read()
        if a != b:
            self.report(name, "two conversions differ")
        elif outs[0][1] != outs[1][1]:
            self.report(name, "artifact ids differ")
        else:
            self.report(name, None)


# --------------------------------------------------------------------------
# The cases


def q(s):
    return re.escape(s)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    binary = os.path.abspath(argv[1])
    workdir = os.path.abspath(argv[2])
    # synth is run from the repository root (the tokenizer fixture path).
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for sub in ("cases", "base", "sharded", "separate", "f32"):
        shutil.rmtree(os.path.join(workdir, sub), ignore_errors=True)
    os.makedirs(os.path.join(workdir, "cases"), exist_ok=True)

    r = Runner(binary, workdir)
    base = r.synth("base", ["--dtype", "bf16"])
    sharded = r.synth("sharded", ["--dtype", "bf16", "--shards", "2"])
    separate = r.synth("separate", ["--dtype", "bf16", "--separate-lm-head"])
    f32 = r.synth("f32", ["--dtype", "f32"])

    cases = os.path.join(workdir, "cases")
    _, base_tensors = st_read(os.path.join(base, SINGLE))
    order = [t[0] for t in base_tensors]  # header order of the base file
    base_index = read_json(os.path.join(sharded, INDEX))["weight_map"]
    in_shard1 = sorted(n for n, s in base_index.items() if s == SHARD1)
    in_shard2 = sorted(n for n, s in base_index.items() if s == SHARD2)

    def st_path(name, file=SINGLE):
        return os.path.join(cases, name, file)

    def cfg(name):
        return os.path.join(cases, name, "config.json")

    # ---- positive controls ---------------------------------------------
    r.good("control_base", base)
    r.good("control_sharded", sharded)
    r.good("control_separate_lm_head", separate)
    r.good("control_f32_to_f16", f32, quant="f16")

    # ---- one safetensors file: structure (ST-1..ST-9) ------------------
    def truncate(d):
        p = os.path.join(d, SINGLE)
        size = os.path.getsize(p)
        with open(p, "r+b") as f:
            f.truncate(size // 2)
    # The first tensor (header order) whose range ends past the cut.
    header, hlen, data = st_read_raw(os.path.join(base, SINGLE))
    cut_data = (8 + hlen + len(data)) // 2 - 8 - hlen
    first_past = next(n for n, e in header.items()
                      if n != "__metadata__" and e["data_offsets"][1] > cut_data)
    r.bad("truncated_file", base, truncate, "invalid_model",
          q(st_path("truncated_file")) + ": tensor '" + q(first_past) +
          "': field 'data_offsets': end \\d+ is past the data region \\(%d bytes\\)"
          % cut_data)

    def truncate_to_4(d):
        with open(os.path.join(d, SINGLE), "r+b") as f:
            f.truncate(4)
    r.bad("truncated_below_length", base, truncate_to_4, "invalid_model",
          q(st_path("truncated_below_length")) + ": field 'header length': file "
          "is 4 bytes, shorter than the 8-byte header length")

    def header_past_eof(d):
        p = os.path.join(d, SINGLE)
        size = os.path.getsize(p)
        with open(p, "r+b") as f:
            f.write(struct.pack("<Q", size))
    size = os.path.getsize(os.path.join(base, SINGLE))
    r.bad("header_length_past_eof", base, header_past_eof, "invalid_model",
          q(st_path("header_length_past_eof")) +
          ": field 'header length': %d is past the end of the file \\(%d bytes "
          "follow it\\)" % (size, size - 8))

    def header_not_json(d):
        p = os.path.join(d, SINGLE)
        with open(p, "rb") as f:
            blob = bytearray(f.read())
        i = blob.index(b":", 8)  # the first key/value colon
        blob[i] = ord(";")
        with open(p, "wb") as f:
            f.write(blob)
    r.bad("header_not_json", base, header_not_json, "invalid_model",
          q(st_path("header_not_json")) +
          ": field 'header': not valid JSON: .+ at header byte \\d+")

    def header_not_object(d):
        p = os.path.join(d, SINGLE)
        _, _, data = st_read_raw(p)
        st_write_raw(p, [1, 2], b"")
    r.bad("header_not_object", base, header_not_object, "invalid_model",
          q(st_path("header_not_object")) + ": field 'header': not a JSON object")

    victim = order[3]   # a tensor in the middle of the data region
    prev = order[2]

    def overlap(d):
        p = os.path.join(d, SINGLE)
        header, _, data = st_read_raw(p)
        b, e = header[victim]["data_offsets"]
        header[victim]["data_offsets"] = [b - 2, e - 2]
        st_write_raw(p, header, data)
    r.bad("overlapping_ranges", base, overlap, "invalid_model",
          q(st_path("overlapping_ranges")) + ": tensor '" + q(victim) +
          "': field 'data_offsets': range overlaps tensor '" + q(prev) + "'")

    def gap(d):
        # Two bytes inserted before `victim`, every later range shifted.
        p = os.path.join(d, SINGLE)
        header, _, data = st_read_raw(p)
        at = header[victim]["data_offsets"][0]
        for n, e in header.items():
            if n != "__metadata__" and e["data_offsets"][0] >= at:
                e["data_offsets"] = [e["data_offsets"][0] + 2, e["data_offsets"][1] + 2]
        st_write_raw(p, header, data[:at] + b"\0\0" + data[at:])
    r.bad("gap_between_ranges", base, gap, "invalid_model",
          q(st_path("gap_between_ranges")) + ": tensor '" + q(victim) +
          "': field 'data_offsets': gap of 2 bytes before this tensor's range")

    def trailing(d):
        with open(os.path.join(d, SINGLE), "ab") as f:
            f.write(b"\0" * 16)
    r.bad("trailing_bytes", base, trailing, "invalid_model",
          q(st_path("trailing_bytes")) +
          ": 16 trailing bytes after the last tensor in the data region")

    def set_dtype(dtype):
        def edit(d):
            p = os.path.join(d, SINGLE)
            header, _, data = st_read_raw(p)
            header["model.layers.0.mlp.up_proj.weight"]["dtype"] = dtype
            st_write_raw(p, header, data)
        return edit
    r.bad("dtype_I8", base, set_dtype("I8"), "unsupported_quantization",
          q(st_path("dtype_I8")) + ": tensor 'model\\.layers\\.0\\.mlp\\.up_proj"
          "\\.weight': field 'dtype': dtype 'I8' is not supported \\(accepted: "
          "F32, F16, BF16\\)")
    r.bad("dtype_Q4", base, set_dtype("Q4"), "invalid_model",
          q(st_path("dtype_Q4")) + ": tensor 'model\\.layers\\.0\\.mlp\\.up_proj"
          "\\.weight': field 'dtype': dtype 'Q4' is not a safetensors dtype "
          "\\(accepted: F32, F16, BF16\\)")

    def shape_bytes(d):
        p = os.path.join(d, SINGLE)
        header, _, data = st_read_raw(p)
        header["model.norm.weight"]["shape"] = [33]
        st_write_raw(p, header, data)
    r.bad("shape_byte_count_mismatch", base, shape_bytes, "invalid_model",
          q(st_path("shape_byte_count_mismatch")) + ": tensor 'model\\.norm\\."
          "weight': field 'data_offsets': range holds 64 bytes but shape and "
          "dtype need 66")

    def duplicate_key(d):
        p = os.path.join(d, SINGLE)
        with open(p, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack_from("<Q", blob, 0)
        text = blob[8:8 + n].decode().rstrip()
        # Repeat the first tensor entry verbatim: a duplicate JSON key.
        m = re.search(r'"model\.embed_tokens\.weight":\{[^}]*\}', text)
        text = text[:-1] + "," + m.group(0) + "}"
        text = text.encode() + b" " * (-len(text) % 8)
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
    r.bad("duplicate_tensor_key", base, duplicate_key, "invalid_model",
          q(st_path("duplicate_tensor_key")) + ": field 'header': not valid JSON: "
          ".*duplicate key")

    # ---- non-finite and overflowing weights ----------------------------
    def poke(name, index, raw):
        def edit(d):
            def fn(ts):
                set_elem(find(ts, name), index, raw)
            edit_tensors(os.path.join(d, SINGLE), fn)
        return edit
    r.bad("nan_weight", base,
          poke("model.layers.1.mlp.gate_proj.weight", 37, struct.pack("<H", 0x7fc0)),
          "numerical_failure",
          "tensor 'model\\.layers\\.1\\.mlp\\.gate_proj\\.weight' in "
          "model\\.safetensors: element 37 is NaN")
    r.bad("inf_weight", base,
          poke("model.layers.0.self_attn.o_proj.weight", 100, struct.pack("<H", 0x7f80)),
          "numerical_failure",
          "tensor 'model\\.layers\\.0\\.self_attn\\.o_proj\\.weight' in "
          "model\\.safetensors: element 100 is \\+Inf")
    r.bad("neg_inf_norm_weight", base,
          poke("model.layers.1.self_attn.k_norm.weight", 3, struct.pack("<H", 0xff80)),
          "numerical_failure",
          "tensor 'model\\.layers\\.1\\.self_attn\\.k_norm\\.weight' in "
          "model\\.safetensors: element 3 is -Inf")
    r.bad("f32_overflows_f16", f32,
          poke("model.layers.1.mlp.up_proj.weight", 5, struct.pack("<f", 1e6)),
          "numerical_failure",
          "tensor 'model\\.layers\\.1\\.mlp\\.up_proj\\.weight' in "
          "model\\.safetensors: element 5 \\(1000000\\) overflows f16",
          quant="f16")
    r.bad("f32_overflows_bf16", f32,
          poke("model.layers.0.self_attn.v_proj.weight", 300, struct.pack("<f", 3.4e38)),
          "numerical_failure",
          "tensor 'model\\.layers\\.0\\.self_attn\\.v_proj\\.weight' in "
          "model\\.safetensors: element 300 \\(3\\.\\d+e\\+38\\) overflows bf16",
          quant="bf16")

    # ---- shard sets (ST-20..ST-25) -------------------------------------
    def missing_shard(d):
        os.remove(os.path.join(d, SHARD2))
    first2 = next(n for n, s in base_index.items() if s == SHARD2)
    r.bad("missing_shard_file", sharded, missing_shard, "invalid_model",
          q(st_path("missing_shard_file", INDEX)) + ": tensor '" + q(first2) +
          "': field 'weight_map': shard '" + q(st_path("missing_shard_file", SHARD2)) +
          "' is missing")

    dup = in_shard1[0]

    def duplicate_across_shards(d):
        _, t1 = st_read(os.path.join(d, SHARD1))
        copy = find(t1, dup)
        edit_tensors(os.path.join(d, SHARD2),
                     lambda ts: ts + [[copy[0], copy[1], copy[2], bytearray(copy[3])]])
    r.bad("duplicate_across_shards", sharded, duplicate_across_shards,
          "invalid_model",
          q(st_path("duplicate_across_shards", SHARD2)) + ": tensor '" + q(dup) +
          "': duplicate: also in shard " +
          q(st_path("duplicate_across_shards", SHARD1)))

    ghost = "model.layers.0.mlp.gate_proj.bias"

    def map_names_absent(d):
        edit_json(os.path.join(d, INDEX),
                  lambda ix: ix["weight_map"].__setitem__(ghost, SHARD1))
    r.bad("weight_map_tensor_not_in_shard", sharded, map_names_absent,
          "invalid_model",
          q(st_path("weight_map_tensor_not_in_shard", INDEX)) + ": tensor '" +
          q(ghost) + "': field 'weight_map': missing from shard " +
          q(st_path("weight_map_tensor_not_in_shard", SHARD1)))

    moved = in_shard2[-1]

    def map_wrong_shard(d):
        edit_json(os.path.join(d, INDEX),
                  lambda ix: ix["weight_map"].__setitem__(moved, SHARD1))
    r.bad("weight_map_wrong_shard", sharded, map_wrong_shard, "invalid_model",
          q(st_path("weight_map_wrong_shard", SHARD2)) + ": tensor '" + q(moved) +
          "': field 'weight_map': found in this shard but .* names shard '" +
          q(SHARD1) + "'")

    def shard_extra(d):
        edit_tensors(os.path.join(d, SHARD2),
                     lambda ts: ts + [["model.layers.0.extra.weight", "BF16", [4],
                                       bytearray(8)]])
    r.bad("shard_tensor_not_in_weight_map", sharded, shard_extra, "invalid_model",
          q(st_path("shard_tensor_not_in_weight_map", SHARD2)) +
          ": tensor 'model\\.layers\\.0\\.extra\\.weight': extra tensor: not in "
          "the weight_map of " + q(st_path("shard_tensor_not_in_weight_map", INDEX)))

    def bad_shard_in_shard(d):
        with open(os.path.join(d, SHARD2), "ab") as f:
            f.write(b"\0" * 8)
    r.bad("shard_trailing_bytes", sharded, bad_shard_in_shard, "invalid_model",
          q(st_path("shard_trailing_bytes", SHARD2)) +
          ": 8 trailing bytes after the last tensor in the data region")

    # ---- config.json / generation_config.json --------------------------
    r.bad("unknown_config_field", base,
          lambda d: edit_json(os.path.join(d, "config.json"),
                              lambda c: c.__setitem__("output_hidden_states", False)),
          "invalid_model",
          q(cfg("unknown_config_field")) + ": \\$\\.output_hidden_states: unknown "
          "field \\(not in the qwen3/1 schema\\)")

    r.bad("eos_disagreement", base,
          lambda d: edit_json(os.path.join(d, "generation_config.json"),
                              lambda g: g.__setitem__("eos_token_id", [1, 2])),
          "conflict", "eos_token_id: the sources disagree",
          conflict="eos_disagreement", conflict_field="eos_token_id")

    # The raw synth output: the published disagreement with the tiny
    # tokenizer's ids, which the publisher profile does not resolve.
    def published_eos_pair(d):
        c = read_json(os.path.join(d, "config.json"))
        edit_json(os.path.join(d, "generation_config.json"),
                  lambda g: g.__setitem__("eos_token_id",
                                          [c["eos_token_id"], c["bos_token_id"]]))
    r.bad("eos_disagreement_tiny_ids", base, published_eos_pair, "conflict",
          "eos_token_id: the sources disagree", conflict="eos_disagreement",
          conflict_field="eos_token_id")

    # All three files agree on EOS {320} (<|endoftext|>), but the chat
    # template ends an assistant turn with <|im_end|> (322).
    def eos_not_turn_end(d):
        edit_json(os.path.join(d, "config.json"),
                  lambda c: c.__setitem__("eos_token_id", 320))
        edit_json(os.path.join(d, "generation_config.json"),
                  lambda g: g.__setitem__("eos_token_id", [320]))
        edit_json(os.path.join(d, "tokenizer_config.json"),
                  lambda t: t.__setitem__("eos_token", None))
    r.bad("template_eos_disagreement", base, eos_not_turn_end, "conflict",
          "the chat template ends an assistant turn with token 322, which is "
          "not in the effective EOS set",
          conflict="template_eos_disagreement", conflict_field="eos_token_id")

    # vocab_size 322: BOS 320 fits, EOS 322 does not (checked before the
    # tokenizer and the embedding).
    r.bad("eos_out_of_vocab", base,
          lambda d: edit_json(os.path.join(d, "config.json"),
                              lambda c: c.__setitem__("vocab_size", 322)),
          "conflict", "eos_token_id: id 322 is not below vocab_size 322",
          conflict="id_out_of_vocab", conflict_field="eos_token_id")

    r.bad("architecture_llama", base,
          lambda d: edit_json(os.path.join(d, "config.json"),
                              lambda c: c.__setitem__("architectures",
                                                      ["LlamaForCausalLM"])),
          "conflict",
          q(cfg("architecture_llama")) + ": \\$\\.architectures must be exactly "
          "\\[\"Qwen3ForCausalLM\"\\]",
          conflict="architecture_contradictory", conflict_field="architectures")

    # ---- config against tensors / tokenizer ----------------------------
    r.bad("vocab_embedding_mismatch", base,
          lambda d: edit_json(os.path.join(d, "config.json"),
                              lambda c: c.__setitem__("vocab_size", 400)),
          "conflict",
          "tensor 'model\\.embed_tokens\\.weight' in model\\.safetensors has "
          "shape \\[346, 32\\]; the config \\(vocab_size 400, hidden_size 32, "
          "\\.\\.\\.\\) requires \\[400, 32\\]",
          conflict="vocab_embedding_mismatch",
          conflict_field="model.embed_tokens.weight")

    def vocab_below_tokenizer(d):
        edit_json(os.path.join(d, "config.json"),
                  lambda c: c.__setitem__("vocab_size", 340))

        def fn(ts):
            e = find(ts, "model.embed_tokens.weight")
            e[2] = [340, 32]
            e[3] = e[3][:340 * 32 * 2]
        edit_tensors(os.path.join(d, SINGLE), fn)
    r.bad("vocab_below_tokenizer", base, vocab_below_tokenizer, "conflict",
          "the tokenizer has 346 token ids but vocab_size is 340",
          conflict="vocab_tokenizer_mismatch", conflict_field="vocab_size")

    def reshape(d):
        def fn(ts):
            find(ts, "model.layers.1.self_attn.q_proj.weight")[2] = [16, 64]
        edit_tensors(os.path.join(d, SINGLE), fn)
    r.bad("wrong_shape", base, reshape, "conflict",
          "tensor 'model\\.layers\\.1\\.self_attn\\.q_proj\\.weight' in "
          "model\\.safetensors has shape \\[16, 64\\]; the config .* requires "
          "\\[32, 32\\]",
          conflict="shape_mismatch",
          conflict_field="model.layers.1.self_attn.q_proj.weight")

    def wrong_rank(d):
        def fn(ts):
            find(ts, "model.norm.weight")[2] = [1, 32]
        edit_tensors(os.path.join(d, SINGLE), fn)
    r.bad("wrong_rank", base, wrong_rank, "conflict",
          "tensor 'model\\.norm\\.weight' in model\\.safetensors has shape "
          "\\[1, 32\\]; the config .* requires \\[32\\]",
          conflict="shape_mismatch", conflict_field="model.norm.weight")

    def drop(d):
        edit_tensors(os.path.join(d, SINGLE),
                     lambda ts: [t for t in ts
                                 if t[0] != "model.layers.1.post_attention_layernorm.weight"])
    r.bad("missing_tensor", base, drop, "conflict",
          "the config requires tensor 'model\\.layers\\.1\\."
          "post_attention_layernorm\\.weight' and no safetensors file has it",
          conflict="missing_tensor",
          conflict_field="model.layers.1.post_attention_layernorm.weight")

    def extra(d):
        edit_tensors(os.path.join(d, SINGLE),
                     lambda ts: ts + [["model.layers.2.input_layernorm.weight",
                                       "BF16", [32], bytearray(64)]])
    r.bad("unconsumed_tensor", base, extra, "conflict",
          "tensor 'model\\.layers\\.2\\.input_layernorm\\.weight' in "
          "model\\.safetensors is not part of a Qwen3ForCausalLM with this "
          "config; refusing to drop it",
          conflict="unconsumed_tensor",
          conflict_field="model.layers.2.input_layernorm.weight")

    def diverge(d):
        def fn(ts):
            t = find(ts, "lm_head.weight")
            t[3][10] ^= 0x01
        edit_tensors(os.path.join(d, SINGLE), fn)
    r.bad("tied_lm_head_divergent", separate, diverge, "conflict",
          "config\\.json sets tie_word_embeddings, but lm_head\\.weight "
          "\\(model\\.safetensors, BF16\\) is not byte-identical to "
          "model\\.embed_tokens\\.weight \\(model\\.safetensors, BF16\\)",
          conflict="tied_lm_head_divergent", conflict_field="lm_head.weight")

    r.bad("untied_without_lm_head", base,
          lambda d: edit_json(os.path.join(d, "config.json"),
                              lambda c: c.__setitem__("tie_word_embeddings", False)),
          "conflict",
          "the config requires tensor 'lm_head\\.weight' \\(config\\.json sets "
          "tie_word_embeddings false\\) and no safetensors file has it",
          conflict="missing_tensor", conflict_field="lm_head.weight")

    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
