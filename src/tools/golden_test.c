/* Golden documents (golden.h): a well-formed document reads back with its
 * values, and shapes whose element or byte counts do not fit a size_t are
 * refused before any allocation (issue 17, finding 1: [2^30, 2^30, 2] f64
 * with empty data wrapped count * 8 to 0 and the loop wrote 2^61 doubles). */
#include "golden.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cbor_doc.h"
#include "tl_test.h"

typedef struct doc_spec {
  const char *dtype;
  const uint64_t *shape;
  size_t rank;
  const uint8_t *data;
  size_t data_len;
  size_t n_margins; /* bytes of "margins" = 8 * n_margins */
  bool continuation;
} doc_spec;

static void emit(tl_cbor_writer *w, const void *arg) {
  const doc_spec *d = arg;
  static const uint8_t margins[16];
  tl_cbor_begin_map(w, d->continuation ? 5 : 4);
  tl_cbor_put_cstr(w, "format");
  tl_cbor_put_cstr(w, "tinylm.golden/1");
  tl_cbor_put_cstr(w, "prompt");
  tl_cbor_begin_map(w, 1);
  tl_cbor_put_cstr(w, "ids");
  tl_cbor_begin_array(w, 2);
  tl_cbor_put_uint(w, 7);
  tl_cbor_put_uint(w, 9);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
  tl_cbor_put_cstr(w, "positions");
  tl_cbor_begin_array(w, 2);
  tl_cbor_put_uint(w, 0);
  tl_cbor_put_uint(w, 1);
  tl_cbor_end_array(w);
  if (d->continuation) {
    tl_cbor_put_cstr(w, "continuation");
    tl_cbor_begin_map(w, 2);
    tl_cbor_put_cstr(w, "ids");
    tl_cbor_begin_array(w, 1);
    tl_cbor_put_uint(w, 3);
    tl_cbor_end_array(w);
    tl_cbor_put_cstr(w, "margins");
    tl_cbor_put_bytes(w, margins, 8 * d->n_margins);
    tl_cbor_end_map(w);
  }
  tl_cbor_put_cstr(w, "records");
  tl_cbor_begin_array(w, 1);
  tl_cbor_begin_map(w, 5);
  tl_cbor_put_cstr(w, "name");
  tl_cbor_put_cstr(w, "logits");
  tl_cbor_put_cstr(w, "layer");
  tl_cbor_put_null(w);
  tl_cbor_put_cstr(w, "dtype");
  tl_cbor_put_cstr(w, d->dtype);
  tl_cbor_put_cstr(w, "shape");
  tl_cbor_begin_array(w, d->rank);
  for (size_t i = 0; i < d->rank; i++) tl_cbor_put_uint(w, d->shape[i]);
  tl_cbor_end_array(w);
  tl_cbor_put_cstr(w, "data");
  tl_cbor_put_bytes(w, d->data, d->data_len);
  tl_cbor_end_map(w);
  tl_cbor_end_array(w);
  tl_cbor_end_map(w);
}

static tl_status read_spec(tl_test_ctx *t, const doc_spec *d, tl_golden *g) {
  uint8_t *doc = NULL;
  size_t len = 0;
  char err[256];
  tl_status st;
  if (!TL_EXPECT_OK(t, tl_cbor_encode_alloc(emit, d, &doc, &len)))
    return TL_ERR_INTERNAL_INVARIANT;
  st = tl_golden_read(doc, len, g, err, sizeof err);
  free(doc);
  return st;
}

static void a_record_reads_back(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 3};
  uint8_t data[6 * 4];
  tl_golden g;
  for (size_t i = 0; i < 6; i++)
    tl_store_le32(data + 4 * i, tl_f32_to_bits((float)i - 2.5f));
  doc_spec d = {"f32", shape, 2, data, sizeof data, 1, true};
  if (!TL_EXPECT_OK(t, read_spec(t, &d, &g))) return;
  TL_EXPECT_EQ_U64(t, g.n_records, 1);
  TL_EXPECT_EQ_U64(t, g.records[0].count, 6);
  TL_EXPECT(t, g.records[0].values[5] == 2.5);
  TL_EXPECT_EQ_U64(t, g.n_continuation, 1);
  tl_golden_free(&g);
}

/* count * 8 and count * sizeof(double) are 2^64: both wrap to 0. */
static void wrapping_f64_shape_is_refused(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 1u << 30, 1u << 30};
  tl_golden g;
  doc_spec d = {"f64", shape, 3, (const uint8_t *)"", 0, 0, false};
  TL_EXPECT_STATUS(t, read_spec(t, &d, &g), TL_ERR_INVALID_MODEL);
}

/* count * 4 is 2^64 (wraps to 0); count * 8 overflows too. */
static void wrapping_f32_shape_is_refused(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 2, 1u << 30, 1u << 30};
  tl_golden g;
  doc_spec d = {"f32", shape, 4, (const uint8_t *)"", 0, 0, false};
  TL_EXPECT_STATUS(t, read_spec(t, &d, &g), TL_ERR_INVALID_MODEL);
}

/* The element count itself past SIZE_MAX (2^90). */
static void element_count_overflow_is_refused(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 1u << 30, 1u << 30, 1u << 30};
  tl_golden g;
  doc_spec d = {"f32", shape, 4, (const uint8_t *)"", 0, 0, false};
  TL_EXPECT_STATUS(t, read_spec(t, &d, &g), TL_ERR_INVALID_MODEL);
}

static void margins_must_match_the_ids(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 1};
  uint8_t data[16] = {0};
  tl_golden g;
  doc_spec d = {"f64", shape, 2, data, sizeof data, 2, true};
  TL_EXPECT_STATUS(t, read_spec(t, &d, &g), TL_ERR_INVALID_MODEL);
}

/* A declared record count is checked against the bytes left before the
 * records are allocated: {"records": [{}, {}, ...]} is refused as such. */
static void record_count_past_the_document_is_refused(tl_test_ctx *t) {
  static uint8_t doc[16 + 4000];
  size_t len = 0;
  char err[256] = "";
  tl_golden g;
  doc[len++] = 0xa1; /* {"records": [4000 x {}]} */
  doc[len++] = 0x67;
  memcpy(doc + len, "records", 7);
  len += 7;
  doc[len++] = 0x99; /* array, 2-byte count */
  doc[len++] = 4000 >> 8;
  doc[len++] = 4000 & 0xff;
  memset(doc + len, 0xa0, 4000);
  len += 4000;
  TL_EXPECT_STATUS(t, tl_golden_read(doc, len, &g, err, sizeof err), TL_ERR_INVALID_MODEL);
  TL_EXPECT(t, strstr(err, "records: more than the document holds") != NULL);
}

/* A run's capture names the lane that produced it (issue 12: the fast
 * lane's dumps were labelled tinylm-scalar), and reads back either way. */
static void run_capture_names_its_lane(tl_test_ctx *t) {
  static const uint64_t shape[] = {2, 3};
  static const tl_golden_producer lanes[] = {{"tinylm-scalar", "scalar-f32/1"},
                                             {"tinylm-fast", "fast/4"}};
  uint8_t data[6 * 4] = {0};
  doc_spec d = {"f32", shape, 2, data, sizeof data, 0, false};
  tl_golden g;
  float row[6] = {1, 2, 3, 4, 5, 6};
  float *values[1] = {row};
  if (!TL_EXPECT_OK(t, read_spec(t, &d, &g))) return;
  for (size_t i = 0; i < 2; i++) {
    uint8_t *doc = NULL;
    size_t len = 0;
    char err[256], profile[32] = "";
    tl_cbor_reader r;
    const char *text;
    size_t text_len = 0;
    tl_golden back;
    if (!TL_EXPECT_OK(t, tl_golden_write_run(&g, values, NULL, 0, "test", lanes[i], &doc,
                                             &len)))
      break;
    if (TL_EXPECT_OK(t, tl_golden_read(doc, len, &back, err, sizeof err))) {
      TL_EXPECT_STR(t, back.producer, lanes[i].name);
      TL_EXPECT(t, back.n_records == 1 && back.records[0].values[5] == 6.0);
      tl_golden_free(&back);
    }
    if (TL_EXPECT_OK(t, tl_cbor_reader_init(&r, doc, len, NULL)) &&
        TL_EXPECT_OK(t, tl_cbor_map_find(&r, "producer")) &&
        TL_EXPECT_OK(t, tl_cbor_map_find(&r, "profile")) &&
        TL_EXPECT_OK(t, tl_cbor_expect_text(&r, &text, &text_len)) &&
        TL_EXPECT(t, text_len < sizeof profile)) {
      memcpy(profile, text, text_len);
      TL_EXPECT_STR(t, profile, lanes[i].profile);
    }
    free(doc);
  }
  tl_golden_free(&g);
}

static const tl_test_case cases[] = {
    TL_CASE(a_record_reads_back),
    TL_CASE(run_capture_names_its_lane),
    TL_CASE(wrapping_f64_shape_is_refused),
    TL_CASE(wrapping_f32_shape_is_refused),
    TL_CASE(element_count_overflow_is_refused),
    TL_CASE(margins_must_match_the_ids),
    TL_CASE(record_count_past_the_document_is_refused),
};
TL_SUITE(golden, cases);
