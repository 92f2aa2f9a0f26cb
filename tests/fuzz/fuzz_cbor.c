/* libFuzzer target for src/core/cbor (docs/cbor.md). Two passes over each
 * input:
 *
 * 1. The input as a document. tl_cbor_validate and an independent walk
 *    (reader + tl_cbor_copy_item + finish) must give the same status and
 *    fault; a fault must lie within the input; allowing tags never turns
 *    acceptance into rejection; a valid document must re-encode through
 *    the writer to the identical bytes (CBOR-13), and every proper prefix
 *    of it must be rejected as truncated (CBOR-1).
 *
 * 2. The input as a program for the writer (one op per byte, arguments
 *    from the following bytes), with arena fault injection. Whatever the
 *    calls, the writer returns a status; if it finishes, its output must
 *    pass the strict reader and copy to itself (the writer produces only
 *    the profile: shortest heads, sorted unique keys, valid UTF-8). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cbor/cbor.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static const uint64_t fuzz_tags[] = {0, 1, 2, 6, 24, 55799};

static tl_cbor_limits tag_limits(void) {
  tl_cbor_limits l = tl_cbor_limits_default();
  l.n_allowed_tags = sizeof fuzz_tags / sizeof fuzz_tags[0];
  memcpy(l.allowed_tags, fuzz_tags, sizeof fuzz_tags);
  return l;
}

/* Reads doc strictly and re-encodes it; returns the first failure. */
static tl_status recode(const uint8_t *doc, size_t len, const tl_cbor_limits *l,
                        uint8_t *out, size_t cap, size_t *out_len,
                        tl_cbor_fault *fault) {
  tl_cbor_reader r;
  tl_cbor_writer w;
  tl_arena scratch;
  /* Open maps' offsets (8 bytes per item + 8 per map), index arrays and a
   * body copy: 32 bytes per input byte is plenty. */
  size_t mem_cap = 32 * len + 4096;
  uint8_t *mem = malloc(mem_cap);
  tl_status st;
  CHECK(mem != NULL);
  CHECK(tl_arena_init(&scratch, mem, mem_cap) == TL_OK);
  CHECK(tl_cbor_reader_init(&r, doc, len, l) == TL_OK);
  CHECK(tl_cbor_writer_init(&w, out, cap, &scratch) == TL_OK);
  st = tl_cbor_copy_item(&r, &w);
  if (st == TL_OK) st = tl_cbor_reader_finish(&r);
  if (st == TL_OK) {
    st = tl_cbor_writer_finish(&w, out_len);
    CHECK(st == TL_OK); /* valid input always fits and never conflicts */
    CHECK(scratch.used == 0);
  }
  *fault = r.fault;
  free(mem);
  return st;
}

static void document_pass(const uint8_t *data, size_t size) {
  tl_cbor_limits with_tags = tag_limits();
  tl_cbor_fault f_default, f_tags, f_walk;
  tl_status s_default, s_tags, s_walk;
  uint8_t *out = malloc(size + 1);
  size_t out_len = 0;
  CHECK(out != NULL);
  s_default = tl_cbor_validate(data, size, NULL, &f_default);
  s_tags = tl_cbor_validate(data, size, &with_tags, &f_tags);
  s_walk = recode(data, size, &with_tags, out, size, &out_len, &f_walk);
  CHECK(s_tags == s_walk);
  CHECK(f_tags.kind == f_walk.kind && f_tags.offset == f_walk.offset);
  if (s_default == TL_OK) CHECK(s_tags == TL_OK);
  if (s_default != TL_OK) {
    CHECK(s_default == TL_ERR_INVALID_CBOR);
    CHECK(f_default.kind != TL_CBOR_FAULT_NONE && f_default.offset <= size);
  }
  if (s_tags != TL_OK) {
    CHECK(s_tags == TL_ERR_INVALID_CBOR);
    CHECK(f_tags.kind != TL_CBOR_FAULT_NONE && f_tags.offset <= size);
    /* A document fault is never an integer-range or type fault. */
    CHECK(f_tags.kind != TL_CBOR_FAULT_INT_RANGE &&
          f_tags.kind != TL_CBOR_FAULT_TYPE);
  } else {
    tl_cbor_fault f;
    CHECK(f_tags.kind == TL_CBOR_FAULT_NONE);
    CHECK(out_len == size && memcmp(out, data, size) == 0);
    /* Self-delimiting: the longest proper prefix is cut short. */
    if (size > 0) {
      CHECK(tl_cbor_validate(data, size - 1, &with_tags, &f) ==
            TL_ERR_INVALID_CBOR);
      CHECK(f.kind == TL_CBOR_FAULT_TRUNCATED ||
            f.kind == TL_CBOR_FAULT_LENGTH);
    }
  }
  free(out);
}

/* ------------------------------------------------------------------------ */

typedef struct prog {
  const uint8_t *p;
  size_t n, i;
} prog;

static uint8_t take(prog *g) { return g->i < g->n ? g->p[g->i++] : 0; }

static uint64_t take_u64(prog *g) {
  /* A width byte, then that many bytes: small and boundary values are
   * likely, all values reachable. */
  unsigned w = take(g) % 9;
  uint64_t v = 0;
  for (unsigned k = 0; k < w; k++) v = v << 8 | take(g);
  return v;
}

static void program_pass(const uint8_t *data, size_t size) {
  enum { CAP = 4096 };
  uint8_t *buf = malloc(CAP), *mem = malloc(16384), *out = malloc(CAP);
  tl_cbor_writer w;
  tl_arena scratch;
  prog g = {data, size, 0};
  size_t len = 0;
  tl_status st;
  tl_cbor_limits with_tags = tag_limits();
  CHECK(buf != NULL && mem != NULL && out != NULL);
  CHECK(tl_arena_init(&scratch, mem, 16384) == TL_OK);
  scratch.fail_countdown = take(&g) % 16; /* 0: no injected failure */
  CHECK(tl_cbor_writer_init(&w, buf, CAP, &scratch) == TL_OK);
  while (g.i < g.n) {
    uint8_t op = take(&g);
    switch (op % 12) {
      case 0:
        tl_cbor_put_uint(&w, take_u64(&g));
        break;
      case 1:
        tl_cbor_put_negative(&w, take_u64(&g));
        break;
      case 2: {
        size_t n = take(&g) % 8;
        uint8_t b[8] = {0};
        for (size_t k = 0; k < n; k++) b[k] = take(&g);
        tl_cbor_put_bytes(&w, b, n);
        break;
      }
      case 3: { /* text from code points, so that it is mostly valid */
        uint8_t t[16];
        size_t n = take(&g) % 4, tl = 0;
        for (size_t k = 0; k < n; k++) {
          uint32_t cp = (uint32_t)take(&g) << 8 | take(&g);
          if (take(&g) & 1) cp |= 0x10000;
          tl += tl_utf8_encode(cp, t + tl);
        }
        if (op & 0x80 && tl > 0) t[0] ^= 0x80; /* sometimes ill-formed */
        tl_cbor_put_text(&w, (const char *)t, tl);
        break;
      }
      case 4:
        tl_cbor_put_bool(&w, op & 0x10);
        break;
      case 5:
        tl_cbor_put_null(&w);
        break;
      case 6:
        tl_cbor_put_tag(&w, fuzz_tags[take(&g) % 6]);
        break;
      case 7:
      case 8:
        tl_cbor_begin_array(&w, take(&g) % 5);
        break;
      case 9:
        tl_cbor_begin_map(&w, take(&g) % 5);
        break;
      case 10:
        tl_cbor_end_array(&w);
        break;
      default:
        tl_cbor_end_map(&w);
        break;
    }
    if (w.err != TL_OK) break; /* sticky: nothing more can happen */
  }
  st = tl_cbor_writer_finish(&w, &len);
  CHECK(st == TL_OK || st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_CONFLICT ||
        st == TL_ERR_INVALID_UTF8 || st == TL_ERR_OUT_OF_MEMORY ||
        st == TL_ERR_BOUNDS);
  if (st == TL_OK) {
    tl_cbor_fault f;
    size_t out_len = 0;
    CHECK(len <= CAP);
    CHECK(tl_cbor_validate(buf, len, &with_tags, &f) == TL_OK);
    CHECK(recode(buf, len, &with_tags, out, CAP, &out_len, &f) == TL_OK);
    CHECK(out_len == len && memcmp(out, buf, len) == 0);
  }
  free(buf);
  free(mem);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  document_pass(data, size);
  program_pass(data, size);
  return 0;
}
