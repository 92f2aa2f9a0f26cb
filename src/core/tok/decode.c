/* Ids back to bytes.
 *
 * raw:        every token's bytes, concatenated: model tokens their raw
 *             bytes, added tokens what HF's ByteLevel decoder makes of
 *             their content (the content itself unless every character of
 *             it is in the byte-level alphabet; see tok_load.c). HF then
 *             applies String::from_utf8_lossy; raw does not, so its output
 *             may be ill-formed UTF-8 (a token can end inside a character).
 * visible:    raw without the tokens flagged special (HF decode with
 *             skip_special_tokens; added tokens that are not special, like
 *             Qwen3's <think> and <tool_call>, stay).
 * diagnostic: raw, made printable and unambiguous: every byte of an
 *             ill-formed subpart (Unicode §3.9 D93b maximal subparts) and
 *             every C0 control, DEL and C1 control (U+0080..U+009F, both of
 *             its bytes) is written as \xHH (two upper-case hex digits), a
 *             backslash as \\, and every other well-formed character as
 *             itself. Newlines and tabs are escaped too, so one decode is
 *             one line. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tok_internal.h"

typedef struct sink {
  uint8_t *out;
  size_t cap, len;
} sink;

static void put(sink *k, const uint8_t *b, size_t n) {
  if (k->len <= k->cap && n <= k->cap - k->len) memcpy(k->out + k->len, b, n);
  k->len += n; /* keeps counting past cap: the length needed */
}

static void put_hex(sink *k, uint8_t b) {
  static const char hex[] = "0123456789ABCDEF";
  uint8_t e[4] = {'\\', 'x', (uint8_t)hex[b >> 4], (uint8_t)hex[b & 15]};
  put(k, e, 4);
}

/* A streaming escaper: bytes go in one at a time, so characters split
 * across tokens are recognised. */
typedef struct escaper {
  uint8_t buf[4];
  size_t have, need;
} escaper;

static void esc_flush(sink *k, escaper *e) {
  for (size_t i = 0; i < e->have; i++) put_hex(k, e->buf[i]);
  e->have = 0;
}

static void esc_byte(sink *k, escaper *e, uint8_t b) {
  if (e->have > 0) {
    uint8_t lo = 0x80, hi = 0xBF;
    if (e->have == 1) { /* Table 3-7's second-byte ranges */
      if (e->buf[0] == 0xE0) lo = 0xA0;
      if (e->buf[0] == 0xED) hi = 0x9F;
      if (e->buf[0] == 0xF0) lo = 0x90;
      if (e->buf[0] == 0xF4) hi = 0x8F;
    }
    if (b >= lo && b <= hi) {
      e->buf[e->have++] = b;
      if (e->have == e->need) {
        if (e->need == 2 && e->buf[0] == 0xC2 && e->buf[1] < 0xA0)
          esc_flush(k, e); /* C1 control */
        else {
          put(k, e->buf, e->have);
          e->have = 0;
        }
      }
      return;
    }
    esc_flush(k, e); /* a maximal ill-formed subpart; b starts afresh */
  }
  if (b < 0x20 || b == 0x7F) {
    put_hex(k, b);
  } else if (b == '\\') {
    put(k, (const uint8_t *)"\\\\", 2);
  } else if (b < 0x80) {
    put(k, &b, 1);
  } else if (b >= 0xC2 && b <= 0xF4) {
    e->buf[0] = b;
    e->have = 1;
    e->need = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  } else {
    put_hex(k, b); /* 80..C1, F5..FF never start a character */
  }
}

tl_status tl_tok_decode(const tl_tokenizer *tok, const uint32_t *ids,
                        size_t n_ids, tl_tok_decode_mode mode, uint8_t *out,
                        size_t cap, size_t *out_len, size_t *bad_index) {
  sink k;
  escaper e = {{0}, 0, 0};
  if (tok == NULL || out_len == NULL || (ids == NULL && n_ids != 0) ||
      (out == NULL && cap != 0) ||
      (mode != TL_TOK_DECODE_RAW && mode != TL_TOK_DECODE_VISIBLE &&
       mode != TL_TOK_DECODE_DIAGNOSTIC))
    return TL_ERR_INVALID_ARGUMENT;
  *out_len = 0;
  for (size_t i = 0; i < n_ids; i++)
    if (ids[i] >= tok->n_tokens) {
      if (bad_index != NULL) *bad_index = i;
      return TL_ERR_INVALID_ARGUMENT;
    }
  k.out = out;
  k.cap = cap;
  k.len = 0;
  for (size_t i = 0; i < n_ids; i++) {
    const uint8_t *b;
    size_t n;
    if (tl_tok_is_added(tok, ids[i])) {
      const tl_tok_added_info *a = tl_tok_added_find(tok, ids[i]);
      if (mode == TL_TOK_DECODE_VISIBLE && (a->flags & TL_TOK_ADDED_SPECIAL))
        continue;
      b = a->dec;
      n = a->dec_len;
    } else {
      b = tok->bytes + tl_tok_rd32(tok->index + 4u * (size_t)ids[i]);
      n = tl_tok_len(tok, ids[i]);
    }
    if (mode == TL_TOK_DECODE_DIAGNOSTIC)
      for (size_t j = 0; j < n; j++) esc_byte(&k, &e, b[j]);
    else
      put(&k, b, n);
  }
  esc_flush(&k, &e);
  *out_len = k.len;
  return k.len <= cap ? TL_OK : TL_ERR_BOUNDS;
}
