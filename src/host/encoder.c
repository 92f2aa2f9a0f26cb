/* Encoding through a loaded tokenizer with reusable, growing buffers. Also
 * built into the wasm32 API modules (docs/web.md, Modules): use only the C
 * library web/wasm/hosted provides (no jansson, files or threads). */
#include "encoder.h"

#include <stdlib.h>

static tl_status grow(void **p, size_t *cap, size_t need, size_t elem) {
  void *q;
  if (need <= *cap) return TL_OK;
  if (need > SIZE_MAX / elem) return TL_ERR_INTEGER_OVERFLOW;
  q = realloc(*p, need * elem);
  if (q == NULL) return TL_ERR_OUT_OF_MEMORY;
  *p = q;
  *cap = need;
  return TL_OK;
}

tl_status tl_encoder_run(tl_encoder *e, const uint8_t *text, size_t len,
                         size_t *n, size_t *err_offset) {
  return tl_encoder_run_plain(e, text, len, NULL, 0, n, err_offset);
}

tl_status tl_encoder_run_plain(tl_encoder *e, const uint8_t *text, size_t len,
                               const tl_tok_span *plain, size_t n_plain, size_t *n,
                               size_t *err_offset) {
  size_t scratch_need, ids_need = len + 16;
  tl_arena scratch;
  tl_status st = tl_tok_encode_scratch_bound(len, &scratch_need);
  if (st != TL_OK) return st;
  st = grow(&e->scratch_mem, &e->scratch_cap, scratch_need, 1);
  for (int attempt = 0; st == TL_OK && attempt < 2; attempt++) {
    size_t cap = e->ids_cap;
    st = grow((void **)&e->ids, &cap, ids_need, sizeof *e->ids);
    if (st == TL_OK) {
      cap = e->ids_cap;
      st = grow((void **)&e->spans, &cap, ids_need, sizeof *e->spans);
      e->ids_cap = cap;
    }
    if (st != TL_OK) break;
    tl_arena_init(&scratch, e->scratch_mem, e->scratch_cap);
    st = tl_tok_encode_plain(e->tok, text, len, plain, n_plain, &scratch, e->ids,
                             e->spans, e->ids_cap, n, err_offset);
    if (st != TL_ERR_BOUNDS) break;
    ids_need = *n; /* the encoder said how many it needs */
  }
  return st;
}

void tl_encoder_free(tl_encoder *e) {
  free(e->scratch_mem);
  free(e->ids);
  free(e->spans);
  e->scratch_mem = NULL;
  e->ids = NULL;
  e->spans = NULL;
  e->scratch_cap = e->ids_cap = 0;
}

tl_status tl_decoder_run(const tl_tokenizer *tok, const uint32_t *ids,
                         size_t n, tl_tok_decode_mode mode, uint8_t **out,
                         size_t *len, size_t *bad) {
  size_t cap = 4 * n + 64;
  tl_status st = TL_ERR_BOUNDS;
  *out = NULL;
  for (int attempt = 0; attempt < 2 && st == TL_ERR_BOUNDS; attempt++) {
    free(*out);
    *out = malloc(cap ? cap : 1);
    if (*out == NULL) return TL_ERR_OUT_OF_MEMORY;
    st = tl_tok_decode(tok, ids, n, mode, *out, cap, len, bad);
    cap = *len;
  }
  return st;
}
