/* CBOR documents into malloc'd buffers (cbor_alloc.h). Also built into
 * the wasm32 API modules: no jansson here. */
#include "cbor_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json/json.h"

tl_status tl_cbor_encode_alloc(tl_cbor_emit_fn emit, const void *arg,
                               uint8_t **out, size_t *out_len) {
  size_t cap = 4096;
  for (;;) {
    uint8_t *buf = malloc(cap), *scratch = malloc(cap * 4);
    tl_arena arena;
    tl_cbor_writer w;
    tl_status st;
    size_t len = 0;
    if (buf == NULL || scratch == NULL) {
      free(buf);
      free(scratch);
      return TL_ERR_OUT_OF_MEMORY;
    }
    tl_arena_init(&arena, scratch, cap * 4);
    tl_cbor_writer_init(&w, buf, cap, &arena);
    emit(&w, arg);
    st = tl_cbor_writer_finish(&w, &len);
    free(scratch);
    if (st == TL_OK) {
      *out = buf;
      *out_len = len;
      return TL_OK;
    }
    free(buf);
    if ((st != TL_ERR_BOUNDS && st != TL_ERR_OUT_OF_MEMORY) || cap > (1u << 28))
      return st;
    cap *= 4;
  }
}

void tl_cbor_put_float_text(tl_cbor_writer *w, double d) {
  char buf[64];
  tl_json_out o = tl_json_out_make((uint8_t *)buf, sizeof buf);
  tl_py_float_repr(d, &o);
  tl_cbor_put_text(w, buf, o.len);
}

void tl_cbor_put_u32s(tl_cbor_writer *w, const uint32_t *ids, size_t n) {
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) tl_cbor_put_uint(w, ids[i]);
  tl_cbor_end_array(w);
}

void tl_cbor_put_cstr(tl_cbor_writer *w, const char *s) {
  tl_cbor_put_text(w, s, strlen(s));
}
