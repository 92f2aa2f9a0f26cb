#include "conflict.h"

#include "cbor_doc.h"

static void emit_conflict(tl_cbor_writer *w, const void *arg) {
  const tl_conflict *c = arg;
  tl_cbor_begin_map(w, 4);
  tl_cbor_put_cstr(w, "conflict");
  tl_cbor_put_cstr(w, c->kind);
  tl_cbor_put_cstr(w, "field");
  tl_cbor_put_cstr(w, c->field);
  tl_cbor_put_cstr(w, "sources");
  tl_cbor_begin_array(w, c->n_sources);
  for (size_t i = 0; i < c->n_sources; i++) {
    const tl_conflict_source *s = &c->sources[i];
    tl_cbor_begin_map(w, s->has_ids ? 3 : 2);
    tl_cbor_put_cstr(w, "file");
    tl_cbor_put_cstr(w, s->file);
    tl_cbor_put_cstr(w, "value");
    if (s->value == NULL)
      tl_cbor_put_null(w);
    else
      tl_cbor_put_json(w, s->value);
    if (s->has_ids) {
      tl_cbor_put_cstr(w, "ids");
      tl_cbor_put_u32s(w, s->ids, s->n_ids);
    }
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
  tl_cbor_put_cstr(w, "message");
  tl_cbor_put_cstr(w, c->message);
  tl_cbor_end_map(w);
}

tl_status tl_conflict_encode(const tl_conflict *c, uint8_t **out, size_t *len) {
  return tl_cbor_encode_alloc(emit_conflict, c, out, len);
}
