/* Special-token text in messages kept as text (serve_escape.h). */
#define _GNU_SOURCE /* memmem */
#include "serve_escape.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_http.h" /* tl_srv_buf */

/* A marker is U+10FFFD (a private-use character), the special's index in
 * decimal, U+10FFFD: no special text contains it, and a template copies a
 * content's characters as they are. */
static const char fence[] = "\xF4\x8F\xBF\xBD";
#define FENCE_LEN 4

tl_status tl_srv_specials_load(const tl_tokenizer *tok, tl_srv_specials *out) {
  uint32_t n_ids = tl_tok_vocab_size(tok);
  memset(out, 0, sizeof *out);
  for (uint32_t id = 0; id < n_ids; id++) {
    const uint8_t *b;
    size_t n;
    if (!tl_tok_is_special(tok, id) || tl_tok_token_bytes(tok, id, &b, &n) != TL_OK || n == 0)
      continue;
    if (out->n % 32 == 0) {
      const uint8_t **t = realloc(out->text, (out->n + 32) * sizeof *t);
      size_t *l = t != NULL ? realloc(out->len, (out->n + 32) * sizeof *l) : NULL;
      if (t != NULL) out->text = t;
      if (l == NULL) {
        tl_srv_specials_free(out);
        return TL_ERR_OUT_OF_MEMORY;
      }
      out->len = l;
    }
    out->text[out->n] = b;
    out->len[out->n++] = n;
  }
  return TL_OK;
}

void tl_srv_specials_free(tl_srv_specials *s) {
  free(s->text);
  free(s->len);
  memset(s, 0, sizeof *s);
}

/* The special whose text starts at p (the longest), or -1. */
static long special_at(const tl_srv_specials *s, const char *p, size_t left) {
  long best = -1;
  for (size_t k = 0; k < s->n; k++)
    if (s->len[k] <= left && memcmp(p, s->text[k], s->len[k]) == 0 &&
        (best < 0 || s->len[k] > s->len[best]))
      best = (long)k;
  return best;
}

static json_t *marked(const tl_srv_specials *s, const char *t, size_t n) {
  tl_srv_buf b = {0};
  json_t *v;
  for (size_t i = 0; i < n;) {
    long k = special_at(s, t + i, n - i);
    if (k < 0) {
      (void)tl_srv_buf_add(&b, t + i, 1);
      i++;
      continue;
    }
    char num[24];
    int m = snprintf(num, sizeof num, "%ld", k);
    (void)tl_srv_buf_add(&b, fence, FENCE_LEN);
    (void)tl_srv_buf_add(&b, num, (size_t)m);
    (void)tl_srv_buf_add(&b, fence, FENCE_LEN);
    i += s->len[k];
  }
  v = b.failed ? NULL : json_stringn(b.p != NULL ? b.p : "", b.len);
  tl_srv_buf_free(&b);
  return v;
}

tl_status tl_srv_escape_mark(const tl_srv_specials *s, const char *conv, size_t len, char **out,
                             size_t *out_len) {
  json_t *doc, *msgs, *m;
  size_t i;
  tl_status st = TL_OK;
  *out = NULL;
  if (memmem(conv, len, fence, FENCE_LEN) != NULL) return TL_ERR_INVALID_ARGUMENT;
  if ((doc = json_loadb(conv, len, 0, NULL)) == NULL) return TL_ERR_INVALID_ARGUMENT;
  msgs = json_object_get(doc, "messages");
  json_array_foreach(msgs, i, m) {
    json_t *c = json_object_get(m, "content"), *v;
    if (!json_is_string(c)) continue;
    if ((v = marked(s, json_string_value(c), json_string_length(c))) == NULL ||
        json_object_set_new(m, "content", v) != 0) {
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    }
  }
  if (st == TL_OK && (*out = json_dumps(doc, JSON_COMPACT)) == NULL) st = TL_ERR_OUT_OF_MEMORY;
  if (*out != NULL) *out_len = strlen(*out);
  json_decref(doc);
  return st;
}

tl_status tl_srv_escape_restore(const tl_srv_specials *s, const uint8_t *text, size_t len,
                                uint8_t **out, size_t *out_len, tl_tok_span **plain,
                                size_t *n_plain) {
  tl_srv_buf b = {0}, spans = {0};
  const char *t = (const char *)text;
  *out = NULL;
  *plain = NULL;
  *n_plain = 0;
  for (size_t i = 0; i < len;) {
    const char *open = memmem(t + i, len - i, fence, FENCE_LEN), *close = NULL;
    char *end;
    unsigned long k = 0;
    if (open != NULL) {
      k = strtoul(open + FENCE_LEN, &end, 10);
      close = end;
    }
    if (open == NULL || close == open + FENCE_LEN || k >= s->n ||
        (size_t)(close - t) + FENCE_LEN > len || memcmp(close, fence, FENCE_LEN) != 0) {
      /* no marker from here on (a fence the template made up stays) */
      size_t stop = open == NULL ? len : (size_t)(open - t) + FENCE_LEN;
      (void)tl_srv_buf_add(&b, t + i, stop - i);
      i = stop;
      continue;
    }
    (void)tl_srv_buf_add(&b, t + i, (size_t)(open - t) - i);
    {
      tl_tok_span sp = {(uint32_t)b.len, (uint32_t)(b.len + s->len[k])};
      (void)tl_srv_buf_add(&spans, (const char *)&sp, sizeof sp);
    }
    (void)tl_srv_buf_add(&b, (const char *)s->text[k], s->len[k]);
    i = (size_t)(close - t) + FENCE_LEN;
  }
  if (b.failed || spans.failed || b.len > UINT32_MAX) {
    tl_srv_buf_free(&b);
    tl_srv_buf_free(&spans);
    return TL_ERR_OUT_OF_MEMORY;
  }
  *out = (uint8_t *)(b.p != NULL ? b.p : calloc(1, 1));
  *out_len = b.len;
  *plain = (tl_tok_span *)(void *)spans.p;
  *n_plain = spans.len / sizeof(tl_tok_span);
  return *out != NULL ? TL_OK : TL_ERR_OUT_OF_MEMORY;
}
