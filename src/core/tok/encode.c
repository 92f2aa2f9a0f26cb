/* tl_tok_encode: the pipeline of HF tokenizers' encode for profile 1.
 *
 *   1. strict UTF-8 validation (the offset of the first maximal ill-formed
 *      subpart on failure);
 *   2. split out the added tokens whose `normalized` flag is clear, on the
 *      raw text (added.c);
 *   3. NFC-normalize each remaining span on its own (unicode.h), then split
 *      out the `normalized` added tokens on the normalized span;
 *   4. pre-tokenize each remaining piece of normalized text (pretok.c) and
 *      run byte-level BPE on every piece (bpe.c).
 *
 * Offsets are byte ranges of the original input. As in HF, a token made of
 * normalized bytes [b0, b1) gets from the start of the original range of
 * the character holding byte b0 to the end of the one holding byte b1 - 1:
 * a token that covers part of a multi-byte character gets the whole
 * character; through NFC, each normalized character's original range is
 * its alignment (unicode.h). A `normalized` added token is mapped the same
 * way; a non-normalized one gets its match (with stripped whitespace).
 *
 * Memory (tl_tok_encode_scratch_bound): the word cache, one span's NFC
 * result, and the BPE scratch of the longest piece; see the bound. Nothing
 * is kept across calls. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checked.h"
#include "tok_internal.h"
#include "unicode.h"
#include "utf8.h"

/* Word cache entries: one per 8 input bytes, between these. */
#define CACHE_MIN 64u
#define CACHE_MAX 16384u

typedef struct enc {
  const struct tl_tokenizer *t;
  tl_arena *scratch;
  tl_tok_cache cache;
  uint32_t *ids;
  tl_tok_span *offsets;
  size_t cap, n;
  const uint8_t *orig; /* the whole input */
  size_t orig_len;
  /* the span being processed: its original offset, its normalized text
   * and, unless NFC left it unchanged, one alignment per code point */
  size_t base;
  const uint8_t *norm;
  size_t norm_len;
  const tl_uni_span *align;
  size_t cur_cp, cur_byte; /* a cursor over the normalized code points */
  size_t piece_pos;        /* where BPE's next token starts in norm */
} enc;

static void push(enc *e, uint32_t id, size_t start, size_t end) {
  if (e->n < e->cap) {
    e->ids[e->n] = id;
    if (e->offsets != NULL) {
      e->offsets[e->n].start = (uint32_t)start;
      e->offsets[e->n].end = (uint32_t)end;
    }
  }
  e->n++;
}

static size_t utf8_len(uint8_t lead) {
  return lead < 0x80u ? 1 : lead < 0xE0u ? 2 : lead < 0xF0u ? 3 : 4;
}

/* Moves the cursor onto the code point holding normalized byte x. Queries
 * come in increasing order, so this is amortised O(1). */
static void seek(enc *e, size_t x) {
  while (e->cur_byte > x) {
    do e->cur_byte--;
    while ((e->norm[e->cur_byte] & 0xC0u) == 0x80u);
    e->cur_cp--;
  }
  for (;;) {
    size_t n = utf8_len(e->norm[e->cur_byte]);
    if (e->cur_byte + n > x) return;
    e->cur_byte += n;
    e->cur_cp++;
  }
}

/* Emits a token made of normalized bytes [b0, b1) of the current span. */
static void emit_norm(enc *e, uint32_t id, size_t b0, size_t b1) {
  size_t start, end;
  if (e->align == NULL) { /* identity: widen to whole characters */
    start = e->base + b0;
    end = e->base + b1;
    while ((e->orig[start] & 0xC0u) == 0x80u) start--;
    while (end < e->orig_len && (e->orig[end] & 0xC0u) == 0x80u) end++;
  } else {
    seek(e, b0);
    start = e->base + e->align[e->cur_cp].start;
    seek(e, b1 - 1);
    end = e->base + e->align[e->cur_cp].end;
  }
  push(e, id, start, end);
}

static void emit_bpe(void *ctx, uint32_t id, uint32_t len) {
  enc *e = ctx;
  emit_norm(e, id, e->piece_pos, e->piece_pos + len);
  e->piece_pos += len;
}

/* Pre-tokenizes norm[a, b) on its own and encodes every piece. The next
 * piece is found one step ahead, so its cache entry can be fetched while
 * this one is encoded. */
static tl_status pieces(enc *e, size_t a, size_t b) {
  const uint8_t *s = e->norm + a;
  size_t len = b - a, pos = 0,
         end = len > 0 ? tl_tok_pretok_next(s, len, 0) : 0;
  while (pos < len) {
    size_t next = end < len ? tl_tok_pretok_next(s, len, end) : len;
    tl_status st;
    tl_tok_bpe_prefetch(&e->cache, s + end, next - end);
    e->piece_pos = a + pos;
    st = tl_tok_bpe_word(e->t, s + pos, end - pos, e->scratch, &e->cache,
                         emit_bpe, e);
    if (st != TL_OK) return st;
    pos = end;
    end = next;
  }
  return TL_OK;
}

/* Text below U+0300 is NFC and aligned with itself: a quick check on the
 * bytes (every character from U+0300 up has a lead byte >= 0xCC). */
static bool nfc_quick(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] >= 0xCCu) return false;
  return true;
}

/* A span of the original text between non-normalized added tokens. */
static tl_status span(enc *e, size_t base, size_t n) {
  tl_arena_mark mark = tl_arena_mark_now(e->scratch);
  tl_status st = TL_OK;
  e->base = base;
  e->norm = e->orig + base;
  e->norm_len = n;
  e->align = NULL;
  e->cur_cp = 0;
  e->cur_byte = 0;
  if (!nfc_quick(e->orig + base, n)) {
    tl_uni_nfc_result r;
    st = tl_uni_nfc(e->orig + base, n, 0, e->scratch, &r);
    if (st != TL_OK) return st;
    if (!r.identity) {
      e->norm = r.text;
      e->norm_len = r.len;
      e->align = r.align;
    }
  }
  if (e->t->n_norm == 0) {
    st = pieces(e, 0, e->norm_len);
  } else {
    tl_tok_added_iter it;
    tl_tok_split sp;
    tl_tok_added_iter_init(&it, e->t, &e->t->trie_norm, e->norm, e->norm_len);
    while (st == TL_OK && tl_tok_added_iter_next(&it, &sp)) {
      if (sp.is_token)
        emit_norm(e, sp.id, sp.start, sp.end);
      else
        st = pieces(e, sp.start, sp.end);
    }
  }
  tl_arena_rewind(e->scratch, mark);
  return st;
}

static uint32_t cache_entries(size_t len) {
  uint32_t n = CACHE_MIN;
  while (n < CACHE_MAX && n < len / 8) n *= 2;
  return n;
}

tl_status tl_tok_encode_scratch_bound(size_t len, size_t *bytes) {
  size_t total, nfc, bpe;
  if (bytes == NULL) return TL_ERR_INVALID_ARGUMENT;
  /* NFC of the whole input as one span (unicode.h: 27 per byte + 64);
   * the BPE scratch of a piece as long as the normalized text (<= 3 bytes
   * per input byte); the cache; alignment slack. */
  if (tl_mul_size(len, 27, &nfc) != TL_OK ||
      tl_add_size(nfc, 64 + 4 * TL_ARENA_MIN_ALIGN, &nfc) != TL_OK ||
      tl_mul_size(len, 3, &bpe) != TL_OK ||
      tl_tok_bpe_scratch_bound(bpe, &bpe) != TL_OK ||
      tl_add_size(nfc, bpe, &total) != TL_OK ||
      tl_add_size(
          total,
          (size_t)cache_entries(len) * sizeof(tl_tok_cache_entry) + 2 * 64,
          &total) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  *bytes = total;
  return TL_OK;
}

bool tl_tok_is_special(const tl_tokenizer *tok, uint32_t id) {
  return id < tok->n_tokens && tl_tok_is_added(tok, id) &&
         (tl_tok_added_find(tok, id)->flags & TL_TOK_ADDED_SPECIAL) != 0;
}

/* Whether a special token found at [start, ...) is to be left as text. */
static bool in_plain(const tl_tok_span *plain, size_t n_plain, size_t start) {
  for (size_t i = 0; i < n_plain; i++)
    if (start >= plain[i].start && start < plain[i].end) return true;
  return false;
}

tl_status tl_tok_encode(const tl_tokenizer *tok, const uint8_t *text,
                        size_t len, tl_arena *scratch, uint32_t *ids,
                        tl_tok_span *offsets, size_t ids_cap, size_t *n_ids,
                        size_t *err_offset) {
  return tl_tok_encode_plain(tok, text, len, NULL, 0, scratch, ids, offsets,
                             ids_cap, n_ids, err_offset);
}

tl_status tl_tok_encode_plain(const tl_tokenizer *tok, const uint8_t *text,
                              size_t len, const tl_tok_span *plain,
                              size_t n_plain, tl_arena *scratch, uint32_t *ids,
                              tl_tok_span *offsets, size_t ids_cap,
                              size_t *n_ids, size_t *err_offset) {
  enc e;
  tl_arena_mark mark;
  tl_tok_added_iter it;
  tl_tok_split sp;
  size_t bad = 0, from = 0, to = 0;
  bool pending = false, joined = false;
  tl_status st;
  if (tok == NULL || scratch == NULL || n_ids == NULL ||
      (text == NULL && len != 0) || (ids == NULL && ids_cap != 0) ||
      (plain == NULL && n_plain != 0))
    return TL_ERR_INVALID_ARGUMENT;
  *n_ids = 0;
  if (len > UINT32_MAX) return TL_ERR_INVALID_ARGUMENT; /* offsets are u32 */
  st = tl_utf8_validate(text, len, &bad);
  if (st != TL_OK) {
    if (err_offset != NULL) *err_offset = bad;
    return st;
  }
  memset(&e, 0, sizeof e);
  e.t = tok;
  e.scratch = scratch;
  e.ids = ids;
  e.offsets = offsets;
  e.cap = ids_cap;
  e.orig = text;
  e.orig_len = len;
  mark = tl_arena_mark_now(scratch);
  {
    uint32_t n = cache_entries(len);
    void *p;
    st = tl_arena_alloc_array(scratch, n, sizeof(tl_tok_cache_entry), 64, &p);
    if (st != TL_OK) return st;
    e.cache.e = p;
    e.cache.mask = n - 1;
    memset(p, 0, (size_t)n * sizeof(tl_tok_cache_entry));
  }
  tl_tok_added_iter_init(&it, tok, &tok->trie_raw, text, len);
  /* A text split is encoded once the next token is known: a special token
   * left as text joins the text on both sides into one split, as it would
   * be without that token; other text splits stay apart, as they were. */
  while (st == TL_OK && tl_tok_added_iter_next(&it, &sp)) {
    bool as_text = sp.is_token && tl_tok_is_special(tok, sp.id) &&
                   in_plain(plain, n_plain, sp.start);
    bool token = sp.is_token && !as_text;
    if (pending && (token || !(as_text || joined))) {
      st = span(&e, from, to - from);
      pending = false;
      if (st != TL_OK) break;
    }
    if (token) {
      push(&e, sp.id, sp.start, sp.end);
      continue;
    }
    if (!pending) from = sp.start;
    pending = true;
    to = sp.end;
    joined = as_text;
  }
  if (st == TL_OK && pending) st = span(&e, from, to - from);
  tl_arena_rewind(scratch, mark);
  if (st != TL_OK) return st;
  *n_ids = e.n;
  return e.n <= ids_cap ? TL_OK : TL_ERR_BOUNDS;
}
