/* tl_tok_load: a parser of untrusted bytes. Every field of the section
 * (docs/tokenizer-section.md, TOK-S-1..6) is validated before it is used,
 * then the lookup structures are built in the caller's arena:
 *   - the merge hash table: (left, right) -> (rank, result), open
 *     addressing with linear probing at load factor <= 3/4;
 *   - a 256 x 256 table of the merge ranks of byte pairs (BPE's first step);
 *   - the added tokens: flags, the pattern each is matched with (NFC of the
 *     content for `normalized` ones), the bytes HF's decoder makes of it, a
 *     bitmap of added ids, and one byte trie per matching set.
 * Memory: tl_tok_load_arena_bound. Time: linear in the section. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checked.h"
#include "tok_internal.h"
#include "unicode.h"
#include "utf8.h"

#define HDR_MAGIC 0
#define HDR_VERSION_MAJOR 4
#define HDR_VERSION_MINOR 6
#define HDR_PROFILE 8
#define HDR_NFC_VERSION 12
#define HDR_CLASS_VERSION 16
#define HDR_N_TOKENS 20
#define HDR_N_MERGES 24
#define HDR_N_ADDED 28
#define HDR_INDEX_OFF 32
#define HDR_BYTES_OFF 36
#define HDR_BYTES_LEN 40
#define HDR_MERGES_OFF 44
#define HDR_ADDED_OFF 48
#define HDR_SECTION_LEN 52
#define HDR_RESERVED 56

#define ALL_FLAGS                                                         \
  (TL_TOK_ADDED_SPECIAL | TL_TOK_ADDED_NORMALIZED | TL_TOK_ADDED_LSTRIP | \
   TL_TOK_ADDED_RSTRIP | TL_TOK_ADDED_SINGLE_WORD)

/* ---- the arena bound ---------------------------------------------------- */

typedef struct counts {
  uint32_t n_tokens, n_merges, n_added, bytes_len;
  uint64_t added_bytes, added_max; /* the added tokens' contents */
} counts;

/* Capacity >= 4/3 of the merges (load factor <= 3/4, about 0.58 for
 * Qwen3: 151387 merges in 262144 slots, 4 MiB); 4 slots per cache line
 * keep most probes in one line. */
static uint32_t mtab_bits_for(uint32_t n_merges) {
  uint32_t bits = 4;
  while (((uint64_t)3 << bits) < 4 * (uint64_t)n_merges) bits++;
  return bits;
}

/* Adds count * size (+ alignment slack: no allocation asks for more than
 * 64) to *total. */
static tl_status need(size_t *total, size_t count, size_t size) {
  size_t b;
  if (tl_mul_size(count, size, &b) != TL_OK ||
      tl_add_size(b, 64, &b) != TL_OK || tl_add_size(*total, b, total) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  return TL_OK;
}

static tl_status bound_from_counts(const counts *c, size_t *bytes) {
  size_t total = 0, pat, nodes, nfc, added;
  tl_status st = TL_OK;
  /* the added tokens' patterns (NFC'd ones: at most 3 bytes out per byte
   * in) and decode bytes; NFC's working memory (27 per byte + 64) is
   * released after each token */
  if (tl_u64_to_size(c->added_bytes, &added) != TL_OK ||
      tl_u64_to_size(c->added_max, &nfc) != TL_OK ||
      tl_mul_size(added, 3, &pat) != TL_OK ||
      tl_add_size(pat, 2, &nodes) != TL_OK ||
      tl_mul_size(nfc, 27, &nfc) != TL_OK ||
      tl_add_size(nfc, 64 + 4 * 64, &nfc) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  st |= need(&total, 1, sizeof(struct tl_tokenizer));
  st |= need(&total, (size_t)1 << mtab_bits_for(c->n_merges),
             sizeof(tl_tok_merge_slot));
  st |= need(&total, 65536, sizeof(uint32_t));
  st |= need(&total, c->n_tokens / 8u + 1u, 1);
  st |= need(&total, c->n_added, sizeof(tl_tok_added_info));
  st |= need(&total, pat, 1);                    /* normalized patterns */
  st |= need(&total, added, 1);                  /* decode bytes */
  st |= need(&total, c->n_added, 2 * 16);        /* their alignment slack */
  st |= need(&total, 2 * (size_t)c->n_added, 4); /* the sets' members */
  /* two tries: first, count, term, edge byte, edge child per node */
  st |= need(&total, 2 * nodes, 4 + 2 + 4 + 1 + 4);
  /* transient: the trie's sorted index + BFS queue, or NFC's work */
  {
    size_t tmp = 0;
    st |= need(&tmp, c->n_added, 4);
    st |= need(&tmp, nodes, 4 * 4);
    st |= tl_add_size(total, tmp > nfc ? tmp : nfc, &total);
  }
  if (st != TL_OK) return TL_ERR_INTEGER_OVERFLOW;
  *bytes = total;
  return TL_OK;
}

/* Reads the counts of a section whose header passed check_header. The
 * added tokens' lengths are summed as the index says, whether or not it
 * is valid yet (tl_tok_load checks it before using it). */
static tl_status read_counts(const uint8_t *s, counts *c) {
  const uint8_t *index = s + tl_tok_rd32(s + HDR_INDEX_OFF);
  const uint8_t *added = s + tl_tok_rd32(s + HDR_ADDED_OFF);
  c->n_tokens = tl_tok_rd32(s + HDR_N_TOKENS);
  c->n_merges = tl_tok_rd32(s + HDR_N_MERGES);
  c->n_added = tl_tok_rd32(s + HDR_N_ADDED);
  c->bytes_len = tl_tok_rd32(s + HDR_BYTES_LEN);
  c->added_bytes = 0;
  c->added_max = 0;
  for (uint32_t i = 0; i < c->n_added; i++) {
    uint32_t id = tl_tok_rd32(added + 8u * (size_t)i), a, b;
    if (id >= c->n_tokens) return TL_ERR_INVALID_MODEL;
    a = tl_tok_rd32(index + 4u * (size_t)id);
    b = tl_tok_rd32(index + 4u * ((size_t)id + 1));
    if (b > a) {
      c->added_bytes += b - a;
      if (b - a > c->added_max) c->added_max = b - a;
    }
  }
  return TL_OK;
}

static tl_status check_header(const uint8_t *s, size_t len);

tl_status tl_tok_load_arena_bound(const uint8_t *section, size_t len,
                                  size_t *bytes) {
  counts c;
  tl_status st;
  if (bytes == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (section == NULL || len < TL_TOK_HEADER_LEN || len > UINT32_MAX)
    return TL_ERR_INVALID_MODEL;
  st = check_header(section, len);
  if (st == TL_OK) st = read_counts(section, &c);
  if (st != TL_OK) return st;
  return bound_from_counts(&c, bytes);
}

/* ---- header and layout (TOK-S-2, TOK-S-6) -------------------------------- */

typedef struct region {
  uint64_t off, len;
} region;

static bool regions_ok(const region *r, size_t n, size_t section_len) {
  for (size_t i = 0; i < n; i++) {
    if (r[i].off % 4 != 0 || r[i].off < TL_TOK_HEADER_LEN ||
        r[i].off > section_len || r[i].len > section_len - r[i].off)
      return false;
    for (size_t j = 0; j < i; j++)
      if (r[i].len != 0 && r[j].len != 0 && r[i].off < r[j].off + r[j].len &&
          r[j].off < r[i].off + r[i].len)
        return false;
  }
  return true;
}

static tl_status check_header(const uint8_t *s, size_t len) {
  region r[4];
  uint32_t n_tokens = tl_tok_rd32(s + HDR_N_TOKENS);
  if (memcmp(s + HDR_MAGIC, TL_TOK_MAGIC, 4) != 0) return TL_ERR_INVALID_MODEL;
  /* TOK-S-6 asks for TL_ERR_INVALID_MODEL for every field, a newer major
   * version and another profile or Unicode version included */
  if ((s[HDR_VERSION_MAJOR] | s[HDR_VERSION_MAJOR + 1] << 8) !=
          TL_TOK_VERSION_MAJOR ||
      tl_tok_rd32(s + HDR_PROFILE) != TL_TOK_PROFILE_QWEN2_BYTE_BPE ||
      tl_tok_rd32(s + HDR_NFC_VERSION) != TL_TOK_NFC_UNICODE_VERSION ||
      tl_tok_rd32(s + HDR_CLASS_VERSION) != TL_TOK_CLASS_UNICODE_VERSION)
    return TL_ERR_INVALID_MODEL;
  if (tl_tok_rd32(s + HDR_SECTION_LEN) != len) return TL_ERR_INVALID_MODEL;
  for (size_t i = HDR_RESERVED; i < TL_TOK_HEADER_LEN; i++)
    if (s[i] != 0) return TL_ERR_INVALID_MODEL;
  if (n_tokens < 256) return TL_ERR_INVALID_MODEL;
  r[0].off = tl_tok_rd32(s + HDR_INDEX_OFF);
  r[0].len = 4 * ((uint64_t)n_tokens + 1);
  r[1].off = tl_tok_rd32(s + HDR_BYTES_OFF);
  r[1].len = tl_tok_rd32(s + HDR_BYTES_LEN);
  r[2].off = tl_tok_rd32(s + HDR_MERGES_OFF);
  r[2].len = 12 * (uint64_t)tl_tok_rd32(s + HDR_N_MERGES);
  r[3].off = tl_tok_rd32(s + HDR_ADDED_OFF);
  r[3].len = 8 * (uint64_t)tl_tok_rd32(s + HDR_N_ADDED);
  return regions_ok(r, 4, len) ? TL_OK : TL_ERR_INVALID_MODEL;
}

/* TOK-S-3: index starts at 0, every token has >= 1 byte, and the last
 * entry is token_bytes_len. */
static tl_status check_index(struct tl_tokenizer *t, uint32_t bytes_len) {
  uint32_t prev = tl_tok_rd32(t->index);
  if (prev != 0) return TL_ERR_INVALID_MODEL;
  t->max_token_len = 0;
  for (uint32_t i = 1; i <= t->n_tokens; i++) {
    uint32_t at = tl_tok_rd32(t->index + 4u * (size_t)i);
    if (at <= prev) return TL_ERR_INVALID_MODEL;
    if (at - prev > t->max_token_len) t->max_token_len = at - prev;
    prev = at;
  }
  return prev == bytes_len ? TL_OK : TL_ERR_INVALID_MODEL;
}

static const uint8_t *tok_bytes(const struct tl_tokenizer *t, uint32_t id) {
  return t->bytes + tl_tok_rd32(t->index + 4u * (size_t)id);
}

/* ---- added tokens (TOK-S-5) --------------------------------------------- */

int tl_tok_byte_level_byte(uint32_t cp) {
  /* GPT-2 bytes_to_unicode: printable Latin-1 stands for itself; the other
   * 68 bytes, in order, are U+0100..U+0143. */
  static const uint8_t shifted[68] = {
      0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
      0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
      0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x7F, 0x80, 0x81,
      0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D,
      0x8E, 0x8F, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
      0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xAD};
  if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) ||
      (cp >= 0xAE && cp <= 0xFF))
    return (int)cp;
  if (cp >= 0x100 && cp < 0x100 + 68) return shifted[cp - 0x100];
  return -1;
}

/* HF's ByteLevel decoder (tokenizers 0.22.2, decode_chain) maps a token
 * string character by character through the byte-level alphabet and falls
 * back to the string's own UTF-8 when any character is outside it. Model
 * tokens are stored as bytes already; for an added token the content is
 * the string, so e.g. content "é" would decode to the single byte E9. */
static tl_status decode_bytes(tl_tok_added_info *a, tl_arena *arena) {
  size_t pos = 0, n = 0;
  uint8_t *out;
  void *p;
  tl_status st;
  while (pos < a->pattern_len) {
    uint32_t cp;
    if (tl_utf8_next(a->pattern, a->pattern_len, &pos, &cp) != TL_OK)
      return TL_ERR_INVALID_MODEL;
    if (tl_tok_byte_level_byte(cp) < 0) {
      a->dec = a->pattern; /* the content itself */
      a->dec_len = a->pattern_len;
      return TL_OK;
    }
    n++;
  }
  st = tl_arena_alloc(arena, n, 1, &p);
  if (st != TL_OK) return st;
  out = p;
  pos = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = 0;
    tl_utf8_next(a->pattern, a->pattern_len, &pos, &cp);
    out[i] = (uint8_t)tl_tok_byte_level_byte(cp);
  }
  a->dec = out;
  a->dec_len = n;
  return TL_OK;
}

const tl_tok_added_info *tl_tok_added_find(const struct tl_tokenizer *t,
                                           uint32_t id) {
  size_t lo = 0, hi = t->n_added;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->added[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < t->n_added && t->added[lo].id == id ? &t->added[lo] : NULL;
}

static bool starts_with_space(const tl_tok_added_info *a) {
  size_t pos = 0;
  uint32_t cp = 0;
  return tl_utf8_next(a->pattern, a->pattern_len, &pos, &cp) == TL_OK &&
         tl_uni_is_space(cp);
}

/* One matching set: its members, its trie. HF lets an rstrip token's
 * whitespace run over the start of the next match when a pattern starts
 * with whitespace, and then emits overlapping splits or panics; such a
 * set is refused. */
static tl_status build_set(struct tl_tokenizer *t, tl_tok_added_info *info,
                           bool normalized, tl_arena *arena, tl_tok_trie *trie,
                           uint32_t *n_out) {
  uint32_t *idx, n = 0;
  bool any_rstrip = false, any_space = false;
  void *p;
  tl_status st = tl_arena_alloc_array(arena, t->n_added, 4, 4, &p);
  if (st != TL_OK) return st;
  idx = p;
  for (uint32_t i = 0; i < t->n_added; i++) {
    if (((info[i].flags & TL_TOK_ADDED_NORMALIZED) != 0) != normalized)
      continue;
    idx[n++] = i;
    any_rstrip |= (info[i].flags & TL_TOK_ADDED_RSTRIP) != 0;
    any_space |= starts_with_space(&info[i]);
  }
  if (any_rstrip && any_space) return TL_ERR_UNSUPPORTED_FEATURE;
  *n_out = n;
  return tl_tok_trie_build(info, idx, n, arena, trie);
}

static tl_status load_added(struct tl_tokenizer *t, const uint8_t *rec,
                            tl_arena *arena) {
  tl_tok_added_info *info;
  uint8_t *bits;
  void *p;
  tl_status st;
  st = tl_arena_alloc(arena, t->n_tokens / 8u + 1u, 1, &p);
  if (st != TL_OK) return st;
  bits = p;
  memset(bits, 0, t->n_tokens / 8u + 1u);
  st = tl_arena_alloc_array(arena, t->n_added, sizeof *info, 8, &p);
  if (st != TL_OK) return st;
  info = p;
  for (uint32_t i = 0; i < t->n_added; i++) {
    tl_tok_added_info *a = &info[i];
    a->id = tl_tok_rd32(rec + 8u * (size_t)i);
    a->flags = tl_tok_rd32(rec + 8u * (size_t)i + 4);
    if (a->id >= t->n_tokens || (a->flags & ~(uint32_t)ALL_FLAGS) != 0 ||
        (i > 0 && a->id <= info[i - 1].id))
      return TL_ERR_INVALID_MODEL;
    bits[a->id >> 3] = (uint8_t)(bits[a->id >> 3] | 1u << (a->id & 7u));
    a->pattern = tok_bytes(t, a->id);
    a->pattern_len = tl_tok_len(t, a->id);
    /* contents are strings in tokenizer.json */
    if (tl_utf8_validate(a->pattern, a->pattern_len, NULL) != TL_OK)
      return TL_ERR_INVALID_MODEL;
    st = decode_bytes(a, arena);
    if (st != TL_OK) return st;
    if (a->flags & TL_TOK_ADDED_NORMALIZED) {
      /* HF matches a normalized token by its normalized content */
      tl_uni_nfc_result r;
      tl_arena_mark m;
      uint8_t *copy;
      st = tl_arena_alloc(arena, a->pattern_len * 3, 1, &p);
      if (st != TL_OK) return st;
      copy = p;
      m = tl_arena_mark_now(arena);
      st = tl_uni_nfc(a->pattern, a->pattern_len, 0, arena, &r);
      if (st != TL_OK) return st;
      if (r.len > a->pattern_len * 3) return TL_ERR_INTERNAL_INVARIANT;
      memcpy(copy, r.text, r.len);
      tl_arena_rewind(arena, m);
      a->pattern = copy;
      a->pattern_len = r.len;
    }
  }
  t->added = info;
  t->added_bits = bits;
  st = build_set(t, info, false, arena, &t->trie_raw, &t->n_raw);
  if (st == TL_OK)
    st = build_set(t, info, true, arena, &t->trie_norm, &t->n_norm);
  return st;
}

/* ---- vocabulary and merges (TOK-S-3, TOK-S-4) --------------------------- */

static tl_status load_bytes(struct tl_tokenizer *t) {
  bool seen[256] = {false};
  for (uint32_t id = 0; id < t->n_tokens; id++) {
    uint8_t b;
    if (tl_tok_len(t, id) != 1 || tl_tok_is_added(t, id)) continue;
    b = tok_bytes(t, id)[0];
    if (seen[b]) return TL_ERR_INVALID_MODEL; /* ambiguous first symbol */
    seen[b] = true;
    t->byte_tok[b] = id;
  }
  for (int b = 0; b < 256; b++)
    if (!seen[b]) return TL_ERR_INVALID_MODEL;
  return TL_OK;
}

/* The byte a token stands for when it is a single-byte symbol, else -1. */
static int single_byte(const struct tl_tokenizer *t, uint32_t id) {
  uint8_t b;
  if (tl_tok_len(t, id) != 1) return -1;
  b = tok_bytes(t, id)[0];
  return t->byte_tok[b] == id ? b : -1;
}

static tl_status load_merges(struct tl_tokenizer *t, tl_arena *arena) {
  tl_tok_merge_slot *tab;
  uint32_t *pair;
  uint32_t bits = mtab_bits_for(t->n_merges), mask = (1u << bits) - 1u;
  void *p;
  tl_status st;
  st = tl_arena_alloc_array(arena, (size_t)1 << bits, sizeof *tab, 64, &p);
  if (st != TL_OK) return st;
  tab = p;
  for (size_t i = 0; i <= mask; i++) tab[i].rank = TL_TOK_NONE;
  st = tl_arena_alloc_array(arena, 65536, sizeof *pair, 64, &p);
  if (st != TL_OK) return st;
  pair = p;
  for (size_t i = 0; i < 65536; i++) pair[i] = TL_TOK_NONE;
  for (uint32_t r = 0; r < t->n_merges; r++) {
    const uint8_t *m = t->merges + 12u * (size_t)r;
    uint32_t a = tl_tok_rd32(m), b = tl_tok_rd32(m + 4), c = tl_tok_rd32(m + 8),
             i;
    uint32_t la, lb;
    int ba, bb;
    if (a >= t->n_tokens || b >= t->n_tokens || c >= t->n_tokens)
      return TL_ERR_INVALID_MODEL;
    la = tl_tok_len(t, a);
    lb = tl_tok_len(t, b);
    if ((uint64_t)la + lb != tl_tok_len(t, c) ||
        memcmp(tok_bytes(t, c), tok_bytes(t, a), la) != 0 ||
        memcmp(tok_bytes(t, c) + la, tok_bytes(t, b), lb) != 0)
      return TL_ERR_INVALID_MODEL;
    for (i = tl_tok_merge_hash(a, b, bits); tab[i].rank != TL_TOK_NONE;
         i = (i + 1u) & mask)
      if (tab[i].left == a && tab[i].right == b)
        return TL_ERR_INVALID_MODEL; /* pairs are unique */
    tab[i].left = a;
    tab[i].right = b;
    tab[i].rank = r;
    tab[i].result = c;
    ba = single_byte(t, a);
    bb = single_byte(t, b);
    if (ba >= 0 && bb >= 0) pair[(uint32_t)ba << 8 | (uint32_t)bb] = r;
  }
  t->mtab = tab;
  t->mtab_bits = bits;
  t->byte_pair_rank = pair;
  return TL_OK;
}

/* ---- entry points ------------------------------------------------------- */

tl_status tl_tok_load(const uint8_t *section, size_t len, tl_arena *arena,
                      const tl_tokenizer **out) {
  struct tl_tokenizer *t;
  tl_arena_mark mark;
  counts c;
  size_t bound;
  void *p;
  tl_status st;
  if (out == NULL || arena == NULL) return TL_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (section == NULL || len < TL_TOK_HEADER_LEN || len > UINT32_MAX)
    return TL_ERR_INVALID_MODEL;
  st = check_header(section, len);
  if (st != TL_OK) return st;
  st = read_counts(section, &c);
  if (st != TL_OK) return st;
  if (bound_from_counts(&c, &bound) != TL_OK) return TL_ERR_INVALID_MODEL;
  mark = tl_arena_mark_now(arena);
  st = tl_arena_alloc(arena, sizeof *t, 64, &p);
  if (st != TL_OK) return st;
  t = p;
  memset(t, 0, sizeof *t);
  t->n_tokens = c.n_tokens;
  t->n_merges = c.n_merges;
  t->n_added = c.n_added;
  t->index = section + tl_tok_rd32(section + HDR_INDEX_OFF);
  t->bytes = section + tl_tok_rd32(section + HDR_BYTES_OFF);
  t->merges = section + tl_tok_rd32(section + HDR_MERGES_OFF);
  st = check_index(t, c.bytes_len);
  if (st == TL_OK)
    st = load_added(t, section + tl_tok_rd32(section + HDR_ADDED_OFF), arena);
  if (st == TL_OK) st = load_bytes(t);
  if (st == TL_OK) st = load_merges(t, arena);
  if (st != TL_OK) {
    tl_arena_rewind(arena, mark);
    return st;
  }
  *out = t;
  return TL_OK;
}

uint32_t tl_tok_vocab_size(const tl_tokenizer *tok) {
  return tok == NULL ? 0 : tok->n_tokens;
}

tl_status tl_tok_token_bytes(const tl_tokenizer *tok, uint32_t id,
                             const uint8_t **bytes, size_t *len) {
  if (tok == NULL || bytes == NULL || len == NULL)
    return TL_ERR_INVALID_ARGUMENT;
  if (id >= tok->n_tokens) return TL_ERR_INVALID_ARGUMENT;
  *bytes = tok_bytes(tok, id);
  *len = tl_tok_len(tok, id);
  return TL_OK;
}
