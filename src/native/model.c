#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tokenizer's lookup tables are built at load; they take a small
 * multiple of the section's size. */
#define TOK_ARENA_FACTOR 8
#define TOK_ARENA_EXTRA (16u << 20)

tl_status tl_native_model_open(const char *path, tl_native_model *m, char *err,
                               size_t err_cap) {
  const tl_slm_section *sec;
  size_t at = 0, arena_len;
  tl_status st;
  memset(m, 0, sizeof *m);
  st = tl_file_open_view(path, &m->view, err, err_cap);
  if (st != TL_OK) return st;
  st =
      tl_slm_open(&m->slm, m->view.data, m->view.len, TL_SLM_VERIFY_EAGER, &at);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: not a valid .slm artifact (%s at byte %zu)",
             path, tl_status_name(st), at);
    goto fail;
  }
  st = tl_slm_find(&m->slm, TL_SLM_TOKENIZER, &sec);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: has no tokenizer section", path);
    goto fail;
  }
  if (sec->len > (SIZE_MAX - TOK_ARENA_EXTRA) / TOK_ARENA_FACTOR) {
    st = TL_ERR_INTEGER_OVERFLOW;
    snprintf(err, err_cap, "%s: tokenizer section too large", path);
    goto fail;
  }
  arena_len = sec->len * TOK_ARENA_FACTOR + TOK_ARENA_EXTRA;
  m->arena_mem = malloc(arena_len);
  if (m->arena_mem == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    snprintf(err, err_cap, "%s: out of memory", path);
    goto fail;
  }
  tl_arena_init(&m->arena, m->arena_mem, arena_len);
  st = tl_tok_load(sec->data, sec->len, &m->arena, &m->tok);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: invalid tokenizer section (%s)", path,
             tl_status_name(st));
    goto fail;
  }
  return TL_OK;
fail:
  tl_native_model_close(m);
  return st;
}

void tl_native_model_close(tl_native_model *m) {
  tl_file_close_view(&m->view);
  free(m->arena_mem);
  memset(m, 0, sizeof *m);
}
