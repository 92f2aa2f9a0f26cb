/* libFuzzer target for src/core/json (docs/json.md). Per input:
 *
 * 1. The input as a JSON document, parsed with small limits. Refusals carry
 *    a typed status, an offset inside the input, a reason, and leave the
 *    arena exactly as it was. An accepted document is formatted with
 *    json.dumps rules; that text must parse again and format to the same
 *    bytes (a fixed point), measuring mode must agree with the written
 *    length, and str() must succeed.
 * 2. The first 8 bytes as a double: repr() read back gives the same bits
 *    (shortest digits vs the correctly rounded reader).
 * 3. Arena fault injection: the same document with allocation k failing
 *    gives TL_ERR_OUT_OF_MEMORY or the same result, never anything else. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static tl_status parse(const uint8_t *d, size_t n, uint8_t *mem, size_t cap,
                       size_t fail_k, tl_arena *a, tl_json_value **v,
                       tl_json_error *e) {
  tl_json_limits lim = tl_json_limits_default();
  lim.max_depth = 64;
  lim.max_values = 4096;
  CHECK(tl_arena_init(a, mem, cap) == TL_OK);
  a->fail_countdown = fail_k;
  return tl_json_parse(d, n, &lim, a, v, e);
}

static uint8_t *dumps(const tl_json_value *v, size_t *len) {
  tl_json_out m = tl_json_out_make(NULL, 0);
  tl_py_json_dumps(v, &m);
  CHECK(m.status == TL_OK);
  uint8_t *buf = malloc(m.len + 1);
  CHECK(buf != NULL);
  tl_json_out o = tl_json_out_make(buf, m.len);
  tl_py_json_dumps(v, &o);
  CHECK(o.status == TL_OK && o.len == m.len);
  *len = o.len;
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t cap = 64 * size + 65536;
  uint8_t *mem = malloc(cap), *mem2 = malloc(cap);
  tl_arena a, a2;
  tl_json_value *v = NULL, *v2 = NULL;
  tl_json_error e;
  CHECK(mem != NULL && mem2 != NULL);
  tl_status st = parse(data, size, mem, cap, 0, &a, &v, &e);
  if (st != TL_OK) {
    CHECK(st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_INVALID_UTF8);
    CHECK(v == NULL && a.used == 0);
    CHECK(e.offset <= size && e.reason != NULL && e.line >= 1 && e.column >= 1);
  } else {
    size_t len1, len2;
    uint8_t *t1 = dumps(v, &len1);
    CHECK(parse(t1, len1, mem2, cap, 0, &a2, &v2, &e) == TL_OK);
    uint8_t *t2 = dumps(v2, &len2);
    CHECK(len1 == len2 && memcmp(t1, t2, len1) == 0);
    free(t1);
    free(t2);
    tl_json_out o = tl_json_out_make(NULL, 0);
    tl_py_str(v, &o);
    CHECK(o.status == TL_OK);
  }
  /* 3: allocation failures. */
  size_t used = a.used;
  for (size_t k = 1; k <= 8; k++) {
    tl_json_value *v3 = NULL;
    tl_status s3 = parse(data, size, mem2, cap, k, &a2, &v3, &e);
    if (s3 == TL_ERR_OUT_OF_MEMORY) {
      CHECK(a2.used == 0 && v3 == NULL);
      continue;
    }
    CHECK(s3 == st);
    if (s3 == TL_OK) CHECK(a2.used == used);
    break;
  }
  /* 2: the first 8 bytes as a double. */
  if (size >= 8) {
    double d;
    uint64_t b, back;
    char buf[64];
    memcpy(&b, data, 8);
    memcpy(&d, &b, 8);
    if (((b >> 52) & 0x7FF) != 0x7FF) {
      tl_json_out o = tl_json_out_make((uint8_t *)buf, sizeof buf);
      tl_py_float_repr(d, &o);
      CHECK(o.status == TL_OK && o.len <= 24);
      CHECK(parse((const uint8_t *)buf, o.len, mem2, cap, 0, &a2, &v2, &e) ==
            TL_OK);
      CHECK(v2->type == TL_JSON_FLOAT);
      memcpy(&back, &v2->u.f, 8);
      CHECK(back == b);
    }
  }
  free(mem);
  free(mem2);
  return 0;
}
