#include "gen/generate.h"

#include <string.h>

const char *tl_stop_reason_name(tl_stop_reason r) {
  switch (r) {
    case TL_STOP_EOS: return "eos";
    case TL_STOP_STRING: return "stop_string";
    case TL_STOP_MAX_TOKENS: return "max_tokens";
    case TL_STOP_CONTEXT: return "context_full";
    case TL_STOP_CANCELLED: return "cancelled";
    case TL_STOP_NONE: break;
  }
  return "none";
}

static bool is_eos(const tl_gen_params *p, uint32_t id) {
  for (size_t i = 0; i < p->n_eos; i++)
    if (p->eos[i] == id) return true;
  return false;
}

static bool cancelled(const tl_gen_params *p) {
  return p->cancelled != NULL && p->cancelled(p->cb_ctx);
}

static tl_status forward(const tl_qwen3 *m, tl_qwen3_cache *cache, const tl_gen_params *p,
                         const uint32_t *ids, size_t n, tl_arena *scratch, float *logits,
                         tl_gen_result *r) {
  if (p->forward != NULL) return p->forward(p->forward_ctx, cache, ids, n, logits, &r->fault);
  return tl_qwen3_forward(m, cache, ids, n, logits, NULL, scratch, &r->fault);
}

/* The earliest end of a stop-string match in raw[0..len) that ends after
 * from (the bytes before from were checked already); SIZE_MAX if none.
 * *start gets where the match begins (of matches with that end, the one
 * that begins first: as if the bytes came one at a time, so the result
 * does not depend on how the output was split into tokens). */
static size_t find_stop(const tl_gen_params *p, const uint8_t *raw, size_t len,
                        size_t from, size_t *start) {
  size_t best = SIZE_MAX;
  for (size_t s = 0; s < p->n_stops; s++) {
    size_t n = p->stop_lens[s];
    if (n == 0 || n > len) continue;
    for (size_t end = (from > n ? from : n); end <= len; end++) {
      if (end > best || (end == best && end - n >= *start)) break;
      if (memcmp(raw + end - n, p->stops[s], n) == 0) {
        best = end;
        *start = end - n;
        break;
      }
    }
  }
  return best;
}

/* The visible bytes that come before raw byte offset raw_pos: a token's
 * visible bytes are its raw bytes, or none (special tokens). */
static size_t visible_before(const tl_tokenizer *tok, const tl_gen_result *r,
                             size_t raw_pos) {
  size_t ro = 0, vo = 0;
  for (size_t i = 0; i < r->n_ids && ro < raw_pos; i++) {
    size_t rl = 0, vl = 0, bad;
    /* Lengths only (cap 0): TL_ERR_BOUNDS with the length, or TL_OK. */
    tl_tok_decode(tok, &r->ids[i], 1, TL_TOK_DECODE_RAW, NULL, 0, &rl, &bad);
    tl_tok_decode(tok, &r->ids[i], 1, TL_TOK_DECODE_VISIBLE, NULL, 0, &vl, &bad);
    if (raw_pos - ro < rl) {
      if (vl != 0) vo += raw_pos - ro;
      break;
    }
    ro += rl;
    vo += vl;
  }
  return vo;
}

/* How many trailing bytes of v[0..len) may still begin a stop string. */
static size_t holdback(const tl_gen_params *p, const uint8_t *v, size_t len) {
  size_t keep = 0;
  for (size_t s = 0; s < p->n_stops; s++) {
    size_t n = p->stop_lens[s];
    if (n == 0) continue; /* never matches (find_stop skips it too) */
    for (size_t k = (n - 1 < len ? n - 1 : len); k > keep; k--)
      if (memcmp(v + len - k, p->stops[s], k) == 0) {
        keep = k;
        break;
      }
  }
  return keep;
}

/* Appends id's raw and visible bytes. */
static tl_status append_bytes(const tl_tokenizer *tok, uint32_t id,
                              tl_gen_result *r) {
  size_t n = 0, bad;
  tl_status st = tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_RAW, r->raw + r->raw_len,
                               r->raw_cap - r->raw_len, &n, &bad);
  if (st != TL_OK) return st;
  r->raw_len += n;
  st = tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_VISIBLE, r->visible + r->visible_len,
                     r->visible_cap - r->visible_len, &n, &bad);
  if (st != TL_OK) return st;
  r->visible_len += n;
  return TL_OK;
}

tl_status tl_generate(const tl_qwen3 *m, tl_qwen3_cache *cache,
                      const tl_tokenizer *tok, const uint32_t *prompt,
                      size_t n_prompt, const tl_gen_params *p,
                      tl_arena *scratch, float *logits, tl_gen_result *r) {
  size_t chunk, streamed = 0, checked = 0;
  tl_status st = TL_OK;
  if (m == NULL || cache == NULL || tok == NULL || p == NULL || r == NULL ||
      logits == NULL || p->choose == NULL || (prompt == NULL && n_prompt) ||
      r->ids_cap < p->max_new)
    return TL_ERR_INVALID_ARGUMENT;
  r->n_ids = r->raw_len = r->visible_len = r->prompt_fed = 0;
  r->stop = TL_STOP_NONE;
  if (n_prompt == 0) return TL_ERR_INVALID_ARGUMENT; /* no logits to start */
  chunk = p->prefill_chunk ? p->prefill_chunk : 64;
  while (r->prompt_fed < n_prompt) {
    size_t n = n_prompt - r->prompt_fed < chunk ? n_prompt - r->prompt_fed : chunk;
    if (cancelled(p)) {
      r->stop = TL_STOP_CANCELLED;
      return TL_OK;
    }
    st = forward(m, cache, p, prompt + r->prompt_fed, n, scratch, logits, r);
    if (st != TL_OK) return st;
    r->prompt_fed += n;
    if (p->on_prefill != NULL) p->on_prefill(p->cb_ctx, r->prompt_fed, n_prompt);
  }
  for (;;) {
    uint32_t id;
    size_t start = 0, end;
    if (r->n_ids == p->max_new) {
      r->stop = TL_STOP_MAX_TOKENS;
      break;
    }
    st = p->choose(p->choose_ctx, logits, m->cfg.vocab, r->ids, r->n_ids, &id);
    if (st != TL_OK) return st;
    r->ids[r->n_ids++] = id;
    if (p->on_token != NULL) p->on_token(p->cb_ctx, id);
    st = append_bytes(tok, id, r);
    if (st != TL_OK) return st;
    if (is_eos(p, id)) {
      r->stop = TL_STOP_EOS;
      break;
    }
    end = find_stop(p, r->raw, r->raw_len, checked, &start);
    checked = r->raw_len;
    if (end != SIZE_MAX) {
      /* The visible bytes end before the match: those of the tokens
       * before it, and of the token it starts in up to its start (a
       * special token's text in the match has no visible bytes, so the
       * raw and visible tails need not have the same length). */
      r->visible_len = visible_before(tok, r, start);
      r->stop = TL_STOP_STRING;
      break;
    }
    {
      size_t final_len = r->visible_len - holdback(p, r->visible, r->visible_len);
      if (final_len > streamed && p->on_visible != NULL)
        p->on_visible(p->cb_ctx, r->visible + streamed, final_len - streamed);
      if (final_len > streamed) streamed = final_len;
    }
    if (r->n_ids == p->max_new) {
      r->stop = TL_STOP_MAX_TOKENS;
      break;
    }
    if (cache->len >= cache->capacity || cache->len >= m->cfg.max_positions) {
      r->stop = TL_STOP_CONTEXT;
      break;
    }
    if (cancelled(p)) {
      r->stop = TL_STOP_CANCELLED;
      break;
    }
    st = forward(m, cache, p, &id, 1, scratch, logits, r);
    if (st != TL_OK) return st;
  }
  if (r->visible_len > streamed && p->on_visible != NULL)
    p->on_visible(p->cb_ctx, r->visible + streamed, r->visible_len - streamed);
  return TL_OK;
}
