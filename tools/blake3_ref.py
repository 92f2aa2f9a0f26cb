"""BLAKE3-256 (unkeyed hash mode) in pure Python, written from the BLAKE3
specification (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020).

Independent of tinylm's C implementation: tools/slm_inspect.py uses it to
cross-check the digests in .slm artifacts. Only the default 32-byte output
of the plain hash is provided (no keyed hash, no key derivation, no XOF).

Structure (spec section 2):
  * the input is split into 1024-byte chunks, each chunk into 64-byte
    blocks; a chunk's blocks are chained through the compression function
    starting from the IV, with CHUNK_START on the first block and CHUNK_END
    on the last; the block counter t is the chunk index;
  * chunk chaining values are merged pairwise into a binary tree whose left
    subtrees are complete and as large as possible (PARENT flag, t = 0);
  * the root node (a lone chunk's last block, or the top parent) is
    compressed once more with ROOT; its first 8 words are the digest.

The compression function is generated as straight-line code (7 rounds of 8
G calls, message schedule resolved at import) so that every state word and
message word is a local variable: that is several times faster in CPython
than a loop over lists.
"""

import struct

__all__ = ["blake3", "blake3_hex"]

IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
      0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)
MSG_PERMUTATION = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)

CHUNK_START = 1
CHUNK_END = 2
PARENT = 4
ROOT = 8

BLOCK_LEN = 64
CHUNK_LEN = 1024

# The G function's (a, b, c, d) state indices: four columns, four diagonals.
_G_LANES = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
            (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))

_unpack_block = struct.Struct("<16I").unpack
_pack_words = struct.Struct("<8I").pack


def _message_schedule():
    """The message word order of each of the 7 rounds: round 0 uses words
    0..15 in order; each next round permutes the previous order."""
    order = list(range(16))
    rounds = []
    for _ in range(7):
        rounds.append(order)
        order = [order[p] for p in MSG_PERMUTATION]
    return rounds


def _rotr_lines(dst, src, n):
    """Source lines computing v{dst} = rotr32(v{dst} ^ v{src}, n)."""
    return [f"v{dst} ^= v{src}",
            f"v{dst} = (v{dst} >> {n}) | ((v{dst} << {32 - n}) & 0xFFFFFFFF)"]


def _g_lines(a, b, c, d, mx, my):
    """Source lines of one G call on state words a, b, c, d."""
    return ([f"v{a} = (v{a} + v{b} + m{mx}) & 0xFFFFFFFF"]
            + _rotr_lines(d, a, 16)
            + [f"v{c} = (v{c} + v{d}) & 0xFFFFFFFF"]
            + _rotr_lines(b, c, 12)
            + [f"v{a} = (v{a} + v{b} + m{my}) & 0xFFFFFFFF"]
            + _rotr_lines(d, a, 8)
            + [f"v{c} = (v{c} + v{d}) & 0xFFFFFFFF"]
            + _rotr_lines(b, c, 7))


def _compress_source():
    """Source of compress(cv, m, counter, block_len, flags) -> 8-word tuple
    (the truncated output: words i of the state xor words i + 8)."""
    body = [
        ", ".join(f"v{i}" for i in range(8)) + ", = cv",
        ", ".join(f"m{i}" for i in range(16)) + ", = m",
        ", ".join(f"v{i}" for i in range(8, 12)) + " = " +
        ", ".join(hex(w) for w in IV[:4]),
        "v12 = counter & 0xFFFFFFFF",
        "v13 = counter >> 32",
        "v14 = block_len",
        "v15 = flags",
    ]
    for order in _message_schedule():
        for lane, (a, b, c, d) in enumerate(_G_LANES):
            body += _g_lines(a, b, c, d, order[2 * lane], order[2 * lane + 1])
    body.append("return (" + ", ".join(f"v{i} ^ v{i + 8}" for i in range(8))
                + ")")
    return ("def compress(cv, m, counter, block_len, flags):\n"
            + "".join(f"    {line}\n" for line in body))


def _build_compress():
    namespace = {}
    exec(compile(_compress_source(), "<blake3 compress>", "exec"), namespace)
    return namespace["compress"]


_compress = _build_compress()


def _block_words(data, start, end):
    """The 16 message words of data[start:end] (at most 64 bytes), the
    block zero-padded to 64 bytes."""
    if end - start == BLOCK_LEN:
        return _unpack_block(data[start:end])
    return _unpack_block(bytes(data[start:end]).ljust(BLOCK_LEN, b"\0"))


def _chunk_node(data, start, end, chunk_index):
    """Chain all but the last block of a chunk; return its unfinished
    output node (cv, words, counter, block_len, flags) of the last block."""
    compress = _compress
    unpack = _unpack_block
    cv = IV
    flags = CHUNK_START
    pos = start
    while end - pos > BLOCK_LEN:
        cv = compress(cv, unpack(data[pos:pos + BLOCK_LEN]), chunk_index,
                      BLOCK_LEN, flags)
        flags = 0
        pos += BLOCK_LEN
    return (cv, _block_words(data, pos, end), chunk_index, end - pos,
            flags | CHUNK_END)


def _parent_node(left_cv, right_cv):
    """The unfinished output node of a parent of two chaining values."""
    return (IV, left_cv + right_cv, 0, BLOCK_LEN, PARENT)


def _chaining_value(node):
    cv, words, counter, block_len, flags = node
    return _compress(cv, words, counter, block_len, flags)


def _root_words(node):
    cv, words, counter, block_len, flags = node
    return _compress(cv, words, counter, block_len, flags | ROOT)


def blake3(data):
    """BLAKE3-256 digest (32 bytes) of a bytes-like object."""
    data = memoryview(data).cast("B")
    n_chunks = max(1, -(-len(data) // CHUNK_LEN))
    stack = []
    for index in range(n_chunks - 1):
        start = index * CHUNK_LEN
        cv = _chaining_value(_chunk_node(data, start, start + CHUNK_LEN,
                                         index))
        merged = index + 1
        while merged & 1 == 0:
            cv = _chaining_value(_parent_node(stack.pop(), cv))
            merged >>= 1
        stack.append(cv)
    last = n_chunks - 1
    node = _chunk_node(data, last * CHUNK_LEN, len(data), last)
    while stack:
        node = _parent_node(stack.pop(), _chaining_value(node))
    return _pack_words(*_root_words(node))


def blake3_hex(data):
    """BLAKE3-256 of data as 64 lowercase hex digits."""
    return blake3(data).hex()
