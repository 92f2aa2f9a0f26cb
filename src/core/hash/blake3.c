/* BLAKE3 as specified in "BLAKE3: one function, fast everywhere"
 * (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020): §2.1 tree structure,
 * §2.2 compression function, §2.3 modes, §2.4 chunks, §2.5 parent nodes,
 * §2.6 extendable output; §5.1 incremental hashing with a chunk state and
 * a stack of chaining values.
 *
 * Structure: the input is cut into 1024-byte chunks, each hashed on its own
 * as a chain of 64-byte blocks (counter = chunk index) to a 32-byte
 * chaining value (CV); CVs are combined pairwise in parent nodes up a
 * binary tree in which every left subtree holds the largest power of two
 * of chunks that leaves something for the right. The root node's last
 * compression is done with the ROOT flag, once per 64-byte output block,
 * with the output block index as counter: that is the output stream.
 *
 * The tree is built incrementally on a stack of chaining values of
 * complete subtrees. Merges are lazy: a pushed subtree is merged with its
 * left neighbours only when the next subtree is about to be pushed, or when
 * bytes arrive in a new chunk, since a merge could otherwise compute the
 * root without its ROOT flag. So:
 *   - the chunk in progress is compressed to its CV only when more input
 *     shows it is not the last chunk;
 *   - whole chunks in a long update go to the tree directly, even the
 *     update's last ones, but a run that covers the whole stream so far as
 *     one subtree is pushed as its two halves (it may be the root);
 *   - when the chunk in progress holds bytes, the stack is fully merged:
 *     one subtree per set bit of chunk_counter;
 *   - when it is empty and chunks were pushed, the stack holds two or more
 *     entries and the root is the merge of all of them.
 *
 * Backends: whole chunks that start at a chunk boundary of an update longer
 * than a chunk go to the backend's hash_many (blake3_impl.h) in batches of
 * up to 64, and so do the parent levels inside each batch; that is where
 * the SIMD twins earn their keep. A chunk assembled across updates, the
 * merges on the stack and the output blocks use the portable compression,
 * whatever the backend. */
#include "hash/blake3.h"

#include <string.h>

#include "bytes.h"
#include "hash/blake3_impl.h"

/* ---- the compression function (§2.2) ---------------------------------- */

static inline uint32_t rotr32(uint32_t x, unsigned n) {
  return x >> n | x << (32 - n);
}

/* The quarter-round G on state words a, b, c, d with message words x, y. */
#define TL_B3_G(a, b, c, d, x, y) \
  do {                            \
    a = a + b + (x);              \
    d = rotr32(d ^ a, 16);        \
    c = c + d;                    \
    b = rotr32(b ^ c, 12);        \
    a = a + b + (y);              \
    d = rotr32(d ^ a, 8);         \
    c = c + d;                    \
    b = rotr32(b ^ c, 7);         \
  } while (0)

/* One round on the locals v0..v15 of compress_rounds: G on the columns,
 * then on the diagonals, reading message word m[s[i]] where the
 * specification reads word i. s is a constant row of tl_b3_schedule, so
 * every index folds to a constant (a loop over the rounds keeps them as
 * loads and measured about a third slower with gcc and clang). */
#define TL_B3_ROUND(s)                                 \
  do {                                                 \
    TL_B3_G(v0, v4, v8, v12, m[(s)[0]], m[(s)[1]]);    \
    TL_B3_G(v1, v5, v9, v13, m[(s)[2]], m[(s)[3]]);    \
    TL_B3_G(v2, v6, v10, v14, m[(s)[4]], m[(s)[5]]);   \
    TL_B3_G(v3, v7, v11, v15, m[(s)[6]], m[(s)[7]]);   \
    TL_B3_G(v0, v5, v10, v15, m[(s)[8]], m[(s)[9]]);   \
    TL_B3_G(v1, v6, v11, v12, m[(s)[10]], m[(s)[11]]); \
    TL_B3_G(v2, v7, v8, v13, m[(s)[12]], m[(s)[13]]);  \
    TL_B3_G(v3, v4, v9, v14, m[(s)[14]], m[(s)[15]]);  \
  } while (0)

/* The 16-word state after the seven rounds, before the feed-forward.
 * block is always 64 bytes (zero-padded by the caller); block_len is the
 * number of those bytes that are input. The state lives in named locals so
 * that compilers keep as much of it in registers as they can. */
static inline void compress_rounds(uint32_t out[16], const uint32_t cv[8],
                                   const uint8_t block[64], uint8_t block_len,
                                   uint64_t counter, uint8_t flags) {
  uint32_t m[16];
  uint32_t v0 = cv[0], v1 = cv[1], v2 = cv[2], v3 = cv[3];
  uint32_t v4 = cv[4], v5 = cv[5], v6 = cv[6], v7 = cv[7];
  uint32_t v8 = TL_B3_IV0, v9 = TL_B3_IV1, v10 = TL_B3_IV2, v11 = TL_B3_IV3;
  uint32_t v12 = (uint32_t)counter, v13 = (uint32_t)(counter >> 32);
  uint32_t v14 = block_len, v15 = flags;
  for (int i = 0; i < 16; i++) m[i] = tl_load_le32(block + 4 * i);
  TL_B3_ROUND(tl_b3_schedule[0]);
  TL_B3_ROUND(tl_b3_schedule[1]);
  TL_B3_ROUND(tl_b3_schedule[2]);
  TL_B3_ROUND(tl_b3_schedule[3]);
  TL_B3_ROUND(tl_b3_schedule[4]);
  TL_B3_ROUND(tl_b3_schedule[5]);
  TL_B3_ROUND(tl_b3_schedule[6]);
  out[0] = v0;
  out[1] = v1;
  out[2] = v2;
  out[3] = v3;
  out[4] = v4;
  out[5] = v5;
  out[6] = v6;
  out[7] = v7;
  out[8] = v8;
  out[9] = v9;
  out[10] = v10;
  out[11] = v11;
  out[12] = v12;
  out[13] = v13;
  out[14] = v14;
  out[15] = v15;
}

/* cv <- the first 8 output words (the chaining value). */
static void compress_in_place(uint32_t cv[8], const uint8_t block[64],
                              uint8_t block_len, uint64_t counter,
                              uint8_t flags) {
  uint32_t v[16];
  compress_rounds(v, cv, block, block_len, counter, flags);
  for (int i = 0; i < 8; i++) cv[i] = v[i] ^ v[i + 8];
}

/* All 16 output words, as 64 little-endian bytes (§2.6). */
static void compress_xof(const uint32_t cv[8], const uint8_t block[64],
                         uint8_t block_len, uint64_t counter, uint8_t flags,
                         uint8_t out[64]) {
  uint32_t v[16];
  compress_rounds(v, cv, block, block_len, counter, flags);
  for (int i = 0; i < 8; i++) {
    tl_store_le32(out + 4 * i, v[i] ^ v[i + 8]);
    tl_store_le32(out + 32 + 4 * i, v[i + 8] ^ cv[i]);
  }
}

static void store_cv(uint8_t out[32], const uint32_t cv[8]) {
  for (int i = 0; i < 8; i++) tl_store_le32(out + 4 * i, cv[i]);
}

static void load_key(uint32_t key[8], const uint8_t bytes[32]) {
  for (int i = 0; i < 8; i++) key[i] = tl_load_le32(bytes + 4 * i);
}

void tl_blake3_hash_many_portable(const uint8_t *in, size_t n_inputs,
                                  size_t blocks, const uint32_t key[8],
                                  uint64_t counter, bool increment_counter,
                                  uint8_t flags, uint8_t flags_start,
                                  uint8_t flags_end, uint8_t *out) {
  for (size_t i = 0; i < n_inputs; i++) {
    uint32_t cv[8];
    memcpy(cv, key, sizeof cv);
    for (size_t b = 0; b < blocks; b++) {
      uint8_t f = flags;
      if (b == 0) f |= flags_start;
      if (b + 1 == blocks) f |= flags_end;
      compress_in_place(cv, in + 64 * b, 64, counter, f);
    }
    store_cv(out + 32 * i, cv);
    in += 64 * blocks;
    if (increment_counter) counter++;
  }
}

/* ---- backends ---------------------------------------------------------- */

static tl_blake3_hash_many_fn *hash_many_for(unsigned backend) {
  switch (backend) {
    case TL_BLAKE3_PORTABLE:
      return tl_blake3_hash_many_portable;
#if TL_B3_HAVE_X86
    case TL_BLAKE3_SSE41:
      return tl_blake3_hash_many_sse41;
    case TL_BLAKE3_AVX2:
      return tl_blake3_hash_many_avx2;
    case TL_BLAKE3_AVX512:
      return tl_blake3_hash_many_avx512;
#endif
    default:
      return NULL;
  }
}

static bool backend_known(unsigned b) { return b <= TL_BLAKE3_AVX512; }

bool tl_blake3_backend_compiled(tl_blake3_backend b) {
  return hash_many_for((unsigned)b) != NULL;
}

const char *tl_blake3_backend_name(tl_blake3_backend b) {
  switch (b) {
    case TL_BLAKE3_PORTABLE:
      return "portable";
    case TL_BLAKE3_SSE41:
      return "sse4.1";
    case TL_BLAKE3_AVX2:
      return "avx2";
    case TL_BLAKE3_AVX512:
      return "avx512";
  }
  return "unknown";
}

/* ---- the pending output of a node --------------------------------------- */

/* Everything the last compression of a node needs: its chaining value is
 * one compression of this; as the root, the same compression with ROOT and
 * output block counters 0, 1, 2, ... gives the output stream. */
typedef struct output {
  uint32_t cv[8];
  uint8_t block[64];
  uint64_t counter;
  uint8_t block_len;
  uint8_t flags;
} output;

static void output_cv(const output *o, uint8_t out[32]) {
  uint32_t cv[8];
  memcpy(cv, o->cv, sizeof cv);
  compress_in_place(cv, o->block, o->block_len, o->counter, o->flags);
  store_cv(out, cv);
}

static void parent_output(output *o, const uint8_t left[32],
                          const uint8_t right[32], const uint32_t key[8],
                          uint8_t flags) {
  memcpy(o->cv, key, sizeof o->cv);
  memcpy(o->block, left, 32);
  memcpy(o->block + 32, right, 32);
  o->counter = 0;
  o->block_len = 64;
  o->flags = (uint8_t)(flags | TL_B3_PARENT);
}

/* ---- hasher state ------------------------------------------------------ */

static size_t chunk_len(const tl_blake3_hasher *h) {
  return (size_t)h->blocks_compressed * 64 + h->block_len;
}

static uint8_t chunk_start_flag(const tl_blake3_hasher *h) {
  return h->blocks_compressed == 0 ? TL_B3_CHUNK_START : 0;
}

static void chunk_reset(tl_blake3_hasher *h) {
  memcpy(h->cv, h->key, sizeof h->cv);
  memset(h->block, 0, sizeof h->block);
  h->block_len = 0;
  h->blocks_compressed = 0;
}

static void chunk_output(const tl_blake3_hasher *h, output *o) {
  memcpy(o->cv, h->cv, sizeof o->cv);
  memcpy(o->block, h->block, sizeof o->block);
  memset(o->block + h->block_len, 0, sizeof o->block - h->block_len);
  o->counter = h->chunk_counter;
  o->block_len = h->block_len;
  o->flags = (uint8_t)(h->flags | chunk_start_flag(h) | TL_B3_CHUNK_END);
}

/* Absorbs len bytes into the chunk in progress; the caller keeps
 * chunk_len + len <= TL_BLAKE3_CHUNK_LEN. The newest block stays buffered
 * (it may be the chunk's last) until a later byte arrives. */
static void chunk_update(tl_blake3_hasher *h, const uint8_t *p, size_t len) {
  while (len != 0) {
    size_t take;
    if (h->block_len == 64) {
      compress_in_place(h->cv, h->block, 64, h->chunk_counter,
                        (uint8_t)(h->flags | chunk_start_flag(h)));
      h->blocks_compressed++;
      h->block_len = 0;
    }
    /* Whole blocks with more input behind them skip the buffer. */
    while (h->block_len == 0 && len > 64) {
      compress_in_place(h->cv, p, 64, h->chunk_counter,
                        (uint8_t)(h->flags | chunk_start_flag(h)));
      h->blocks_compressed++;
      p += 64;
      len -= 64;
    }
    take = 64 - (size_t)h->block_len;
    if (take > len) take = len;
    memcpy(h->block + h->block_len, p, take);
    h->block_len = (uint8_t)(h->block_len + take);
    p += take;
    len -= take;
  }
}

static unsigned popcount64(uint64_t x) {
  unsigned n = 0;
  for (; x != 0; x &= x - 1) n++;
  return n;
}

/* Merges the newest stack entries pairwise until one entry per set bit of
 * total_chunks is left: what the tree looks like after that many chunks. */
static void merge_stack(tl_blake3_hasher *h, uint64_t total_chunks) {
  unsigned keep = popcount64(total_chunks);
  while (h->cv_stack_len > keep && h->cv_stack_len >= 2) {
    uint8_t *left = h->cv_stack + 32 * (size_t)(h->cv_stack_len - 2);
    output o;
    parent_output(&o, left, left + 32, h->key, h->flags);
    output_cv(&o, left);
    h->cv_stack_len--;
  }
}

/* Pushes the CV of a complete subtree of 2^level chunks that starts at
 * chunk h->chunk_counter (a multiple of 2^level), after merging what the
 * subtrees before it complete (§5.1.2). */
static void push_subtree(tl_blake3_hasher *h, const uint8_t cv[32],
                         unsigned level) {
  merge_stack(h, h->chunk_counter);
  memcpy(h->cv_stack + 32 * (size_t)h->cv_stack_len, cv, 32);
  h->cv_stack_len++;
  h->chunk_counter += UINT64_C(1) << level;
}

/* Chunks hashed per hash_many call. Stack use: 64 CVs plus half and a
 * quarter as much for the parent levels (3.5 KiB). */
#define TL_B3_BATCH 64

/* Hashes n (1..TL_B3_BATCH) whole chunks at p, starting at chunk
 * h->chunk_counter (the chunk in progress must be empty), and pushes them
 * as the largest aligned subtrees that fit; parent levels inside a subtree
 * also go through hash_many. A subtree that starts the stream and ends the
 * run may be the whole tree, so it is pushed as its two halves and its top
 * merge is left to later (when stream_may_end). */
static void hash_chunks(tl_blake3_hasher *h, const uint8_t *p, size_t n,
                        bool stream_may_end,
                        tl_blake3_hash_many_fn *hash_many) {
  uint8_t cvs[TL_B3_BATCH * 32];
  uint8_t half[TL_B3_BATCH / 2 * 32];
  uint8_t quarter[TL_B3_BATCH / 4 * 32];
  size_t done = 0;
  hash_many(p, n, TL_BLAKE3_CHUNK_LEN / 64, h->key, h->chunk_counter, true,
            h->flags, TL_B3_CHUNK_START, TL_B3_CHUNK_END, cvs);
  while (done < n) {
    const uint8_t *level_cvs = cvs + 32 * done;
    size_t size = 1, count;
    unsigned level = 0;
    /* The largest power of two that fits in what is left and keeps the
     * subtree aligned to its own size in the chunk numbering. */
    while (size * 2 <= n - done &&
           (h->chunk_counter & (uint64_t)(size * 2 - 1)) == 0) {
      size *= 2;
      level++;
    }
    /* A lone chunk at the start is never the whole stream: the caller
     * passes more than one chunk's worth of input. */
    bool maybe_root =
        stream_may_end && h->chunk_counter == 0 && done + size == n;
    size_t stop = maybe_root && size > 1 ? 2 : 1;
    /* Reduce the subtree's CVs level by level, alternating buffers so
     * that a call's input and output never overlap. */
    for (count = size; count > stop; count /= 2) {
      uint8_t *dst = level_cvs == half ? quarter : half;
      hash_many(level_cvs, count / 2, 1, h->key, 0, false,
                (uint8_t)(h->flags | TL_B3_PARENT), 0, 0, dst);
      level_cvs = dst;
    }
    /* count is 1, or 2 for the halves (one level lower). */
    for (size_t i = 0; i < count; i++)
      push_subtree(h, level_cvs + 32 * i, count == 2 ? level - 1 : level);
    done += size;
  }
}

/* The structural invariants a hasher made by these functions keeps. They
 * are what keeps every index below in bounds. */
static bool hasher_valid(const tl_blake3_hasher *h) {
  unsigned subtrees;
  if (h == NULL) return false;
  if (h->block_len > 64 || h->blocks_compressed > 15) return false;
  if (h->blocks_compressed != 0 && h->block_len == 0) return false;
  if (h->flags != 0 && h->flags != TL_B3_KEYED_HASH &&
      h->flags != TL_B3_DERIVE_KEY_CONTEXT &&
      h->flags != TL_B3_DERIVE_KEY_MATERIAL)
    return false;
  if (hash_many_for(h->backend) == NULL) return false;
  if (h->chunk_counter >= (UINT64_C(1) << TL_BLAKE3_MAX_DEPTH)) return false;
  subtrees = popcount64(h->chunk_counter);
  if (h->cv_stack_len < subtrees || h->cv_stack_len > TL_BLAKE3_MAX_DEPTH + 1)
    return false;
  if (chunk_len(h) != 0) return h->cv_stack_len == subtrees;
  /* An empty chunk in progress: nothing at all yet, or at least two
   * subtrees waiting for their final merge. */
  return h->chunk_counter == 0 ? h->cv_stack_len == 0 : h->cv_stack_len >= 2;
}

/* The backend new hashers start with: portable until the host, having
 * checked its CPU, names a faster one (tl_blake3_set_default_backend). */
static uint8_t default_backend = TL_BLAKE3_PORTABLE;

static void hasher_init(tl_blake3_hasher *h, const uint32_t key[8],
                        uint8_t flags) {
  memcpy(h->key, key, sizeof h->key);
  h->chunk_counter = 0;
  h->flags = flags;
  h->backend = default_backend;
  h->cv_stack_len = 0;
  memset(h->cv_stack, 0, sizeof h->cv_stack);
  chunk_reset(h);
}

static const uint32_t tl_b3_iv[8] = {TL_B3_IV0, TL_B3_IV1, TL_B3_IV2,
                                     TL_B3_IV3, TL_B3_IV4, TL_B3_IV5,
                                     TL_B3_IV6, TL_B3_IV7};

/* ---- public API -------------------------------------------------------- */

void tl_blake3_hasher_init(tl_blake3_hasher *h) {
  if (h == NULL) return;
  hasher_init(h, tl_b3_iv, 0);
}

tl_status tl_blake3_hasher_init_keyed(tl_blake3_hasher *h,
                                      const uint8_t key[TL_BLAKE3_KEY_LEN]) {
  uint32_t words[8];
  if (h == NULL || key == NULL) return TL_ERR_INVALID_ARGUMENT;
  load_key(words, key);
  hasher_init(h, words, TL_B3_KEYED_HASH);
  return TL_OK;
}

/* derive_key (§2.3): the context string is hashed on its own, with the IV
 * as key and DERIVE_KEY_CONTEXT; the first 32 output bytes key the hash of
 * the material, which uses DERIVE_KEY_MATERIAL. */
tl_status tl_blake3_hasher_init_derive_key(tl_blake3_hasher *h,
                                           const char *context,
                                           size_t context_len) {
  uint8_t context_key[TL_BLAKE3_KEY_LEN];
  uint32_t words[8];
  tl_status st;
  if (h == NULL || (context == NULL && context_len != 0))
    return TL_ERR_INVALID_ARGUMENT;
  hasher_init(h, tl_b3_iv, TL_B3_DERIVE_KEY_CONTEXT);
  st = tl_blake3_hasher_update(h, context, context_len);
  if (st == TL_OK) st = tl_blake3_hasher_finalize(h, context_key, 32);
  if (st != TL_OK) return st;
  load_key(words, context_key);
  hasher_init(h, words, TL_B3_DERIVE_KEY_MATERIAL);
  return TL_OK;
}

tl_status tl_blake3_hasher_set_backend(tl_blake3_hasher *h,
                                       tl_blake3_backend b) {
  if (!hasher_valid(h) || !backend_known((unsigned)b))
    return TL_ERR_INVALID_ARGUMENT;
  if (!tl_blake3_backend_compiled(b)) return TL_ERR_UNSUPPORTED_FEATURE;
  h->backend = (uint8_t)b;
  return TL_OK;
}

tl_status tl_blake3_set_default_backend(tl_blake3_backend b) {
  if (!backend_known((unsigned)b)) return TL_ERR_INVALID_ARGUMENT;
  if (!tl_blake3_backend_compiled(b)) return TL_ERR_UNSUPPORTED_FEATURE;
  default_backend = (uint8_t)b;
  return TL_OK;
}

tl_status tl_blake3_hasher_init_backend(tl_blake3_hasher *h,
                                        tl_blake3_backend b) {
  if (h == NULL) return TL_ERR_INVALID_ARGUMENT;
  tl_blake3_hasher_init(h);
  return tl_blake3_hasher_set_backend(h, b);
}

tl_status tl_blake3_hasher_update(tl_blake3_hasher *h, const void *data,
                                  size_t len) {
  const uint8_t *p = (const uint8_t *)data;
  tl_blake3_hash_many_fn *hash_many;
  uint64_t absorbed;
  if (!hasher_valid(h) || (data == NULL && len != 0))
    return TL_ERR_INVALID_ARGUMENT;
  /* The specification bounds the input at 2^64 - 1 bytes; chunk_counter
   * < 2^54 (checked above) keeps this product exact. */
  absorbed = h->chunk_counter * TL_BLAKE3_CHUNK_LEN + chunk_len(h);
  if ((uint64_t)len > UINT64_MAX - absorbed) return TL_ERR_INTEGER_OVERFLOW;
  hash_many = hash_many_for(h->backend);
  while (len != 0) {
    size_t take;
    /* A full chunk with input behind it is not the last: close it. */
    if (chunk_len(h) == TL_BLAKE3_CHUNK_LEN) {
      output o;
      uint8_t cv[32];
      chunk_output(h, &o);
      output_cv(&o, cv);
      push_subtree(h, cv, 0);
      chunk_reset(h);
    }
    /* At a chunk boundary with more than a chunk to come, whole chunks go
     * to the backend in batches. */
    if (chunk_len(h) == 0 && len > TL_BLAKE3_CHUNK_LEN) {
      size_t n = len / TL_BLAKE3_CHUNK_LEN;
      if (n > TL_B3_BATCH) n = TL_B3_BATCH;
      hash_chunks(h, p, n, n * TL_BLAKE3_CHUNK_LEN == len, hash_many);
      p += n * TL_BLAKE3_CHUNK_LEN;
      len -= n * TL_BLAKE3_CHUNK_LEN;
      continue;
    }
    take = TL_BLAKE3_CHUNK_LEN - chunk_len(h);
    if (take > len) take = len;
    chunk_update(h, p, take);
    p += take;
    len -= take;
    /* The chunk in progress now holds bytes, so nothing on the stack can
     * be the root any more: complete the pending merges. */
    merge_stack(h, h->chunk_counter);
  }
  return TL_OK;
}

tl_status tl_blake3_hasher_finalize(const tl_blake3_hasher *h, uint8_t *out,
                                    size_t out_len) {
  output o;
  uint64_t block_counter = 0;
  size_t i;
  if (!hasher_valid(h) || (out == NULL && out_len != 0))
    return TL_ERR_INVALID_ARGUMENT;
  /* Fold the stack from the newest entry down; the node left over is the
   * root. Its newest entry's right neighbour is the chunk in progress, or,
   * when that is empty, the newest entry is itself the right neighbour of
   * the one below. */
  if (chunk_len(h) == 0 && h->cv_stack_len >= 2) {
    i = h->cv_stack_len - 2u;
    parent_output(&o, h->cv_stack + 32 * i, h->cv_stack + 32 * i + 32, h->key,
                  h->flags);
  } else {
    i = h->cv_stack_len;
    chunk_output(h, &o);
  }
  while (i-- > 0) {
    uint8_t right[32];
    output_cv(&o, right);
    parent_output(&o, h->cv_stack + 32 * i, right, h->key, h->flags);
  }
  while (out_len != 0) {
    uint8_t block[64];
    size_t take = out_len < 64 ? out_len : 64;
    compress_xof(o.cv, o.block, o.block_len, block_counter,
                 (uint8_t)(o.flags | TL_B3_ROOT), block);
    memcpy(out, block, take);
    out += take;
    out_len -= take;
    block_counter++;
  }
  return TL_OK;
}

tl_status tl_blake3(const void *data, size_t len,
                    uint8_t out[TL_BLAKE3_OUT_LEN]) {
  tl_blake3_hasher h;
  tl_status st;
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  tl_blake3_hasher_init(&h);
  st = tl_blake3_hasher_update(&h, data, len);
  if (st != TL_OK) return st;
  return tl_blake3_hasher_finalize(&h, out, TL_BLAKE3_OUT_LEN);
}
