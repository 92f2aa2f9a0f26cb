#include "golden.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "cbor_doc.h"
#include "checked.h"

static tl_status bad(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status bad(char *err, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return TL_ERR_INVALID_MODEL;
}

/* The smallest record: a map head (1), "name" (5) and a stage name (2+),
 * "shape" (6) [n] (2), "dtype" (6) "f32" (4), "data" (5) and 4+ bytes (5). */
#define GOLDEN_MIN_RECORD_BYTES 36u

static tl_status read_u32_array(tl_cbor_reader *r, uint32_t **out, size_t *n) {
  size_t count, bytes;
  if (tl_cbor_expect_array(r, &count) != TL_OK) return TL_ERR_INVALID_MODEL;
  if (tl_mul_size(count ? count : 1, sizeof **out, &bytes) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  *out = malloc(bytes);
  if (*out == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++) {
    uint64_t v;
    if (tl_cbor_expect_uint(r, &v) != TL_OK || v > UINT32_MAX)
      return TL_ERR_INVALID_MODEL;
    (*out)[i] = (uint32_t)v;
  }
  *n = count;
  return TL_OK;
}

static tl_status read_text(tl_cbor_reader *r, char *buf, size_t cap) {
  const char *s;
  size_t len;
  if (tl_cbor_expect_text(r, &s, &len) != TL_OK) return TL_ERR_INVALID_MODEL;
  snprintf(buf, cap, "%.*s", (int)len, s);
  return TL_OK;
}

static tl_status read_record(tl_cbor_reader *r, tl_golden_record *rec,
                             char *err, size_t cap) {
  size_t n_pairs, elem = 0, data_len = 0, want_len, values_len;
  const uint8_t *data = NULL;
  char name[32] = "";
  memset(rec, 0, sizeof *rec);
  rec->layer = -1;
  if (tl_cbor_expect_map(r, &n_pairs) != TL_OK)
    return bad(err, cap, "a record is not a map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen;
    tl_cbor_item it;
    if (tl_cbor_expect_text(r, &k, &klen) != TL_OK)
      return bad(err, cap, "a record key is not text");
    if (tl_cbor_text_is(k, klen, "name")) {
      if (read_text(r, name, sizeof name) != TL_OK)
        return bad(err, cap, "record name is not text");
    } else if (tl_cbor_text_is(k, klen, "layer")) {
      if (tl_cbor_read(r, &it) != TL_OK) return bad(err, cap, "bad layer");
      if (it.type == TL_CBOR_UINT && it.value < 65536) rec->layer = (int32_t)it.value;
      else if (it.type != TL_CBOR_NULL) return bad(err, cap, "bad layer");
    } else if (tl_cbor_text_is(k, klen, "shape")) {
      size_t rank;
      if (tl_cbor_expect_array(r, &rank) != TL_OK || rank == 0 ||
          rank > TL_GOLDEN_MAX_RANK)
        return bad(err, cap, "record '%s': bad shape", name);
      rec->rank = rank;
      rec->count = 1;
      for (size_t d = 0; d < rank; d++) {
        uint64_t v;
        if (tl_cbor_expect_uint(r, &v) != TL_OK || v == 0 || v > (1u << 30) ||
            tl_mul_size(rec->count, (size_t)v, &rec->count) != TL_OK)
          return bad(err, cap, "record '%s': bad shape", name);
        rec->shape[d] = (size_t)v;
      }
    } else if (tl_cbor_text_is(k, klen, "dtype")) {
      char dt[8];
      if (read_text(r, dt, sizeof dt) != TL_OK) return bad(err, cap, "bad dtype");
      elem = strcmp(dt, "f64") == 0 ? 8 : strcmp(dt, "f32") == 0 ? 4 : 0;
      if (elem == 0) return bad(err, cap, "record '%s': dtype '%s'", name, dt);
    } else if (tl_cbor_text_is(k, klen, "data")) {
      if (tl_cbor_expect_bytes(r, &data, &data_len) != TL_OK)
        return bad(err, cap, "record '%s': data is not bytes", name);
    } else if (tl_cbor_skip(r) != TL_OK) {
      return bad(err, cap, "malformed record");
    }
  }
  rec->stage = tl_qwen3_stage_find(name, strlen(name));
  if (rec->stage == TL_QWEN3_STAGE_COUNT)
    return bad(err, cap, "unknown stage '%s'", name);
  /* The element count comes from the file: every size derived from it is
   * checked, or [2^30, 2^30, 2] f64 wraps to 0 bytes and passes. */
  if (rec->rank == 0 || elem == 0 || data == NULL ||
      tl_mul_size(rec->count, elem, &want_len) != TL_OK || data_len != want_len ||
      tl_mul_size(rec->count, sizeof *rec->values, &values_len) != TL_OK)
    return bad(err, cap, "record '%s' layer %d: shape, dtype and data disagree",
               name, (int)rec->layer);
  rec->values = malloc(values_len ? values_len : 1);
  if (rec->values == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < rec->count; i++)
    rec->values[i] = elem == 8 ? tl_bits_to_f64(tl_load_le64(data + 8 * i))
                               : (double)tl_bits_to_f32(tl_load_le32(data + 4 * i));
  return TL_OK;
}

static tl_status read_doc(tl_cbor_reader *r, tl_golden *g, char *err,
                          size_t cap) {
  size_t n_pairs;
  bool format_ok = false;
  tl_status st;
  if (tl_cbor_expect_map(r, &n_pairs) != TL_OK)
    return bad(err, cap, "not a CBOR map");
  for (size_t i = 0; i < n_pairs; i++) {
    const char *k;
    size_t klen, n;
    if (tl_cbor_expect_text(r, &k, &klen) != TL_OK) return bad(err, cap, "bad key");
    if (tl_cbor_text_is(k, klen, "format")) {
      char f[32];
      if (read_text(r, f, sizeof f) != TL_OK) return bad(err, cap, "bad format");
      format_ok = strcmp(f, "tinylm.golden/1") == 0;
    } else if (tl_cbor_text_is(k, klen, "producer")) {
      if (tl_cbor_expect_map(r, &n) != TL_OK) return bad(err, cap, "bad producer");
      for (size_t j = 0; j < n; j++) {
        if (tl_cbor_expect_text(r, &k, &klen) != TL_OK) return bad(err, cap, "bad producer");
        if (tl_cbor_text_is(k, klen, "name")) st = read_text(r, g->producer, sizeof g->producer);
        else if (tl_cbor_text_is(k, klen, "precision")) st = read_text(r, g->precision, sizeof g->precision);
        else st = tl_cbor_skip(r);
        if (st != TL_OK) return bad(err, cap, "bad producer");
      }
    } else if (tl_cbor_text_is(k, klen, "prompt")) {
      if (tl_cbor_expect_map(r, &n) != TL_OK) return bad(err, cap, "bad prompt");
      for (size_t j = 0; j < n; j++) {
        if (tl_cbor_expect_text(r, &k, &klen) != TL_OK) return bad(err, cap, "bad prompt");
        st = tl_cbor_text_is(k, klen, "ids") ? read_u32_array(r, &g->ids, &g->n_ids)
                                : tl_cbor_skip(r);
        if (st != TL_OK) return st == TL_ERR_OUT_OF_MEMORY ? st : bad(err, cap, "bad prompt ids");
      }
    } else if (tl_cbor_text_is(k, klen, "positions")) {
      st = read_u32_array(r, &g->positions, &g->n_positions);
      if (st != TL_OK) return st == TL_ERR_OUT_OF_MEMORY ? st : bad(err, cap, "bad positions");
    } else if (tl_cbor_text_is(k, klen, "continuation")) {
      const uint8_t *m = NULL;
      size_t m_len = 0, margins_len;
      if (tl_cbor_expect_map(r, &n) != TL_OK) return bad(err, cap, "bad continuation");
      for (size_t j = 0; j < n; j++) {
        if (tl_cbor_expect_text(r, &k, &klen) != TL_OK) return bad(err, cap, "bad continuation");
        if (tl_cbor_text_is(k, klen, "ids")) st = read_u32_array(r, &g->continuation, &g->n_continuation);
        else if (tl_cbor_text_is(k, klen, "margins")) st = tl_cbor_expect_bytes(r, &m, &m_len) == TL_OK ? TL_OK : TL_ERR_INVALID_MODEL;
        else st = tl_cbor_skip(r);
        if (st != TL_OK) return st == TL_ERR_OUT_OF_MEMORY ? st : bad(err, cap, "bad continuation");
      }
      if (m == NULL || m_len / 8 != g->n_continuation || m_len % 8 != 0 ||
          tl_mul_size(g->n_continuation, sizeof *g->margins, &margins_len) != TL_OK)
        return bad(err, cap, "continuation: one f64 margin per id is required");
      g->margins = malloc(margins_len ? margins_len : 1);
      if (g->margins == NULL) return TL_ERR_OUT_OF_MEMORY;
      for (size_t j = 0; j < g->n_continuation; j++)
        g->margins[j] = tl_bits_to_f64(tl_load_le64(m + 8 * j));
    } else if (tl_cbor_text_is(k, klen, "records")) {
      if (tl_cbor_expect_array(r, &n) != TL_OK) return bad(err, cap, "bad records");
      /* name, shape, dtype and data take at least GOLDEN_MIN_RECORD_BYTES
       * each: a declared count the bytes cannot hold sizes nothing */
      if (n > (r->len - r->pos) / GOLDEN_MIN_RECORD_BYTES)
        return bad(err, cap, "records: more than the document holds");
      g->records = calloc(n ? n : 1, sizeof *g->records);
      if (g->records == NULL) return TL_ERR_OUT_OF_MEMORY;
      for (size_t j = 0; j < n; j++) {
        st = read_record(r, &g->records[j], err, cap);
        g->n_records = j + 1;
        if (st != TL_OK) return st;
      }
    } else if (tl_cbor_skip(r) != TL_OK) {
      return bad(err, cap, "malformed document");
    }
  }
  if (!format_ok) return bad(err, cap, "\"format\" is not \"tinylm.golden/1\"");
  if (g->n_ids == 0 || g->n_positions == 0)
    return bad(err, cap, "the prompt or the positions are empty");
  for (size_t i = 0; i < g->n_positions; i++)
    if (g->positions[i] >= g->n_ids || (i > 0 && g->positions[i] <= g->positions[i - 1]))
      return bad(err, cap, "positions must be ascending and inside the prompt");
  for (size_t i = 0; i < g->n_records; i++)
    if (g->records[i].shape[0] != g->n_positions)
      return bad(err, cap, "record '%s': first dim is not the positions",
                 tl_qwen3_stage_name(g->records[i].stage));
  return TL_OK;
}

tl_status tl_golden_read(const uint8_t *doc, size_t len, tl_golden *g,
                         char *err, size_t err_cap) {
  tl_cbor_reader r;
  tl_status st;
  memset(g, 0, sizeof *g);
  st = tl_cbor_reader_init(&r, doc, len, NULL);
  if (st == TL_OK) st = read_doc(&r, g, err, err_cap);
  if (st == TL_OK && tl_cbor_reader_finish(&r) != TL_OK)
    st = bad(err, err_cap, "trailing bytes after the document");
  if (st != TL_OK) tl_golden_free(g);
  return st;
}

void tl_golden_free(tl_golden *g) {
  for (size_t i = 0; i < g->n_records; i++) free(g->records[i].values);
  free(g->records);
  free(g->ids);
  free(g->positions);
  free(g->continuation);
  free(g->margins);
  memset(g, 0, sizeof *g);
}

typedef struct run_doc {
  const tl_golden *g;
  uint8_t **bytes; /* each record's values as little-endian f32 */
  const uint8_t *metadata;
  size_t metadata_len;
  const char *weights;
  tl_golden_producer producer;
} run_doc;

/* Copies metadata["config"]["config"] (the effective config map). */
static void put_config(tl_cbor_writer *w, const run_doc *d) {
  tl_cbor_reader r;
  if (tl_cbor_reader_init(&r, d->metadata, d->metadata_len, NULL) == TL_OK &&
      tl_cbor_map_find(&r, "config") == TL_OK &&
      tl_cbor_map_find(&r, "config") == TL_OK)
    tl_cbor_copy_item(&r, w);
  else
    tl_cbor_put_null(w);
}

static void emit_run(tl_cbor_writer *w, const void *arg) {
  const run_doc *d = arg;
  const tl_golden *g = d->g;
  tl_cbor_begin_map(w, 6);
  tl_cbor_put_cstr(w, "model");
  tl_cbor_begin_map(w, 2);
  tl_cbor_put_cstr(w, "config");
  put_config(w, d);
  tl_cbor_put_cstr(w, "weights");
  tl_cbor_put_cstr(w, d->weights);
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.golden/1");
  tl_cbor_put_cstr(w, "prompt");
  tl_cbor_begin_map(w, 1);
  tl_cbor_put_cstr(w, "ids");
  tl_cbor_begin_array(w, g->n_ids);
  for (size_t i = 0; i < g->n_ids; i++) tl_cbor_put_uint(w, g->ids[i]);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "records");
  tl_cbor_begin_array(w, g->n_records);
  for (size_t r = 0; r < g->n_records; r++) {
    const tl_golden_record *rec = &g->records[r];
    tl_cbor_begin_map(w, 5);
    tl_cbor_put_cstr(w, "data");
    tl_cbor_put_bytes(w, d->bytes[r], 4 * rec->count);
    tl_cbor_put_cstr(w, "name");
    tl_cbor_put_cstr(w, tl_qwen3_stage_name(rec->stage));
    tl_cbor_put_cstr(w, "dtype");
    tl_cbor_put_cstr(w, "f32");
    tl_cbor_put_cstr(w, "layer");
    if (rec->layer < 0) tl_cbor_put_null(w);
    else tl_cbor_put_uint(w, (uint64_t)rec->layer);
    tl_cbor_put_cstr(w, "shape");
    tl_cbor_begin_array(w, rec->rank);
    for (size_t k = 0; k < rec->rank; k++) tl_cbor_put_uint(w, rec->shape[k]);
    tl_cbor_end_array(w);
    tl_cbor_end_map(w);
  }
  tl_cbor_end_array(w);
  tl_cbor_put_cstr(w, "producer");
  tl_cbor_begin_map(w, 4);
  tl_cbor_put_cstr(w, "name");
  tl_cbor_put_cstr(w, d->producer.name);
  tl_cbor_put_cstr(w, "version");
  tl_cbor_put_cstr(w, TL_VERSION_STRING);
  tl_cbor_put_cstr(w, "profile");
  tl_cbor_put_cstr(w, d->producer.profile);
  tl_cbor_put_cstr(w, "precision");
  tl_cbor_put_cstr(w, "f32");
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "positions");
  tl_cbor_begin_array(w, g->n_positions);
  for (size_t i = 0; i < g->n_positions; i++) tl_cbor_put_uint(w, g->positions[i]);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
}

tl_status tl_golden_write_run(const tl_golden *g, float *const *values,
                              const uint8_t *metadata, size_t metadata_len,
                              const char *weights, tl_golden_producer p,
                              uint8_t **out, size_t *out_len) {
  run_doc d = {g, NULL, metadata, metadata_len, weights, p};
  tl_status st = TL_OK;
  d.bytes = calloc(g->n_records ? g->n_records : 1, sizeof *d.bytes);
  if (d.bytes == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t r = 0; r < g->n_records && st == TL_OK; r++) {
    size_t n_bytes; /* emit_run's 4 * count is this product, checked here */
    st = tl_mul_size(g->records[r].count, 4, &n_bytes);
    d.bytes[r] = st == TL_OK ? malloc(n_bytes ? n_bytes : 1) : NULL;
    if (st == TL_OK && d.bytes[r] == NULL) st = TL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; st == TL_OK && i < g->records[r].count; i++)
      tl_store_le32(d.bytes[r] + 4 * i, tl_f32_to_bits(values[r][i]));
  }
  if (st == TL_OK) st = tl_cbor_encode_alloc(emit_run, &d, out, out_len);
  for (size_t r = 0; r < g->n_records; r++) free(d.bytes[r]);
  free(d.bytes);
  return st;
}
