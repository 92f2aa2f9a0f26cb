/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room beyond the tokenizer's own bound, for the chat-template program. */
#define TEMPLATE_ARENA_EXTRA (4u << 20)

void tl_native_slm_error(const char *path, const uint8_t *file, size_t len,
                         tl_status st, size_t at, char *err, size_t err_cap) {
  uint64_t declared;
  if (tl_slm_declared_len(file, len, &declared) == TL_OK && declared > len)
    snprintf(err, err_cap, "%s: truncated: %zu of %llu bytes", path, len,
             (unsigned long long)declared);
  else if (len > 0 && len < TL_SLM_HEADER_LEN &&
           memcmp(file, TL_SLM_MAGIC, len < 8 ? len : 8) == 0)
    snprintf(err, err_cap, "%s: truncated: %zu bytes, inside the %d-byte header",
             path, len, TL_SLM_HEADER_LEN);
  else
    snprintf(err, err_cap, "%s: not a valid .slm artifact (%s at byte %zu)",
             path, tl_status_name(st), at);
}

/* Validates and loads the bytes m->view holds (path names them in err);
 * on failure releases everything, the view included. */
static tl_status open_loaded(const char *path, tl_native_model *m, char *err,
                             size_t err_cap) {
  const tl_slm_section *sec;
  size_t at = 0, arena_len;
  tl_status st;
  st =
      tl_slm_open(&m->slm, m->view.data, m->view.len, TL_SLM_VERIFY_EAGER, &at);
  if (st != TL_OK) {
    tl_native_slm_error(path, m->view.data, m->view.len, st, at, err, err_cap);
    goto fail;
  }
  st = tl_slm_artifact(&m->slm, &m->kind);
  if (st != TL_OK) {
    snprintf(err, err_cap,
             "%s: the metadata does not describe a tinylm artifact (SLM-4a)",
             path);
    goto fail;
  }
  st = tl_slm_find(&m->slm, TL_SLM_TOKENIZER, &sec);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: has no tokenizer section", path);
    goto fail;
  }
  st = tl_tok_load_arena_bound(sec->data, sec->len, &arena_len);
  if (st == TL_OK && arena_len > SIZE_MAX - TEMPLATE_ARENA_EXTRA)
    st = TL_ERR_INTEGER_OVERFLOW;
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: invalid tokenizer section (%s)", path,
             tl_status_name(st));
    goto fail;
  }
  arena_len += TEMPLATE_ARENA_EXTRA;
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
  if (tl_slm_find(&m->slm, TL_SLM_TEMPLATE, &sec) == TL_OK) {
    st = tl_tmpl_section_load(sec->data, sec->len, &m->arena, &m->tmpl);
    if (st != TL_OK) {
      snprintf(err, err_cap, "%s: invalid chat-template section (%s)", path,
               tl_status_name(st));
      goto fail;
    }
    m->has_template = true;
  }
  if (m->kind == TL_SLM_ARTIFACT_MODEL) {
    st = tl_slm_tensors_open(&m->tensors, &m->slm, TL_SLM_VERIFY_EAGER, &at);
    if (st != TL_OK) {
      snprintf(err, err_cap, "%s: invalid tensor directory or data (%s at "
               "byte %zu)", path, tl_status_name(st), at);
      goto fail;
    }
    m->has_tensors = true;
  }
  return TL_OK;
fail:
  tl_native_model_close(m);
  return st;
}

tl_status tl_native_model_open(const char *path, tl_native_model *m, char *err,
                               size_t err_cap) {
  tl_status st;
  memset(m, 0, sizeof *m);
  st = tl_file_open_view(path, &m->view, err, err_cap);
  if (st != TL_OK) return st;
  return open_loaded(path, m, err, err_cap);
}

tl_status tl_native_model_open_bytes(const uint8_t *data, size_t len, bool take,
                                     const char *name, tl_native_model *m,
                                     char *err, size_t err_cap) {
  memset(m, 0, sizeof *m);
  m->view.data = data;
  m->view.len = len;
  /* A view with a buffer frees it on close; one without borrows. */
  if (take) m->view.buffer = (uint8_t *)data;
  return open_loaded(name, m, err, err_cap);
}

void tl_native_model_close(tl_native_model *m) {
  tl_file_close_view(&m->view);
  free(m->arena_mem);
  memset(m, 0, sizeof *m);
}
