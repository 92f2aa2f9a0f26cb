/* Seeded random CBOR documents for the tests: see cbor_gen.h. Freestanding
 * (core headers only) so the wasm identity transcript can use it too. */
#include "cbor_gen.h"

#include "utf8.h"

static uint64_t next(tl_cbor_gen *g) { /* splitmix64 */
  uint64_t z = (g->state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static uint64_t below(tl_cbor_gen *g, uint64_t n) { return next(g) % n; }

/* Every head-width boundary, as n for major type 0 and for major type 1. */
static const uint64_t boundaries[] = {0,
                                      1,
                                      10,
                                      23,
                                      24,
                                      25,
                                      100,
                                      255,
                                      256,
                                      1000,
                                      65535,
                                      65536,
                                      0xFFFFFFFFu,
                                      UINT64_C(0x100000000),
                                      UINT64_C(0x7FFFFFFFFFFFFFFF),
                                      UINT64_C(0x8000000000000000),
                                      UINT64_MAX - 1,
                                      UINT64_MAX};

static void gen_int(tl_cbor_gen *g, tl_cbor_writer *w) {
  uint64_t v;
  if (below(g, 2) == 0) {
    v = boundaries[below(g, sizeof boundaries / sizeof boundaries[0])];
  } else {
    unsigned bits = (unsigned)below(g, 65);
    v = bits == 0    ? 0
        : bits == 64 ? next(g)
                     : next(g) & ((UINT64_C(1) << bits) - 1);
  }
  if (below(g, 2) == 0)
    tl_cbor_put_uint(w, v);
  else
    tl_cbor_put_negative(w, v);
}

static void gen_text(tl_cbor_gen *g, tl_cbor_writer *w) {
  char buf[64];
  size_t len = 0, n = (size_t)below(g, 12);
  for (size_t i = 0; i < n; i++) {
    uint32_t cp;
    switch (below(g, 6)) {
      case 0:
        cp = (uint32_t)below(g, 0x80); /* U+0000 included */
        break;
      case 1:
        cp = 0x80 + (uint32_t)below(g, 0x800 - 0x80);
        break;
      case 2:
        cp = 0x800 + (uint32_t)below(g, 0x10000 - 0x800);
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        break;
      case 3:
        cp = 0x10000 + (uint32_t)below(g, 0x110000 - 0x10000);
        break;
      default:
        cp = 'a' + (uint32_t)below(g, 4); /* short, colliding keys */
        break;
    }
    len += tl_utf8_encode(cp, (uint8_t *)buf + len);
  }
  tl_cbor_put_text(w, buf, len);
}

static void gen_bytes(tl_cbor_gen *g, tl_cbor_writer *w) {
  uint8_t buf[40];
  size_t n =
      (size_t)below(g, 3) == 0 ? (size_t)below(g, 40) : (size_t)below(g, 4);
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)next(g);
  tl_cbor_put_bytes(w, buf, n);
}

static void gen_item(tl_cbor_gen *g, tl_cbor_writer *w, size_t depth, int key);

/* A map with pairs in random order; keys of mixed types. */
static void gen_map(tl_cbor_gen *g, tl_cbor_writer *w, size_t depth, int key) {
  size_t n = (size_t)below(g, key ? 3 : 7);
  tl_cbor_begin_map(w, n);
  for (size_t i = 0; i < n; i++) {
    gen_item(g, w, depth + 1, 1);
    gen_item(g, w, depth + 1, key);
  }
  tl_cbor_end_map(w);
}

static void gen_array(tl_cbor_gen *g, tl_cbor_writer *w, size_t depth,
                      int key) {
  size_t n = (size_t)below(g, key ? 3 : 8);
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) gen_item(g, w, depth + 1, key);
  tl_cbor_end_array(w);
}

/* depth: containers open around this item. key: inside a map key, where
 * bool is left out (Python would fold it into 0 and 1). */
static void gen_item(tl_cbor_gen *g, tl_cbor_writer *w, size_t depth, int key) {
  /* Containers only while the budget and the depth limit allow. */
  int may_nest = g->budget > 0 && depth + 1 < TL_CBOR_MAX_DEPTH;
  g->budget--;
  for (;;) {
    switch (below(g, 10)) {
      case 0:
      case 1:
        gen_int(g, w);
        return;
      case 2:
        gen_text(g, w);
        return;
      case 3:
        gen_bytes(g, w);
        return;
      case 4:
        if (key) continue;
        tl_cbor_put_bool(w, below(g, 2) == 0);
        return;
      case 5:
        tl_cbor_put_null(w);
        return;
      case 6:
      case 7:
        if (!may_nest) continue;
        gen_array(g, w, depth, key);
        return;
      case 8:
        if (!may_nest) continue;
        gen_map(g, w, depth, key);
        return;
      default:
        if (!may_nest || g->tags->n_allowed_tags == 0) continue;
        tl_cbor_put_tag(
            w, g->tags->allowed_tags[below(g, g->tags->n_allowed_tags)]);
        gen_item(g, w, depth + 1, key);
        return;
    }
  }
}

/* Sometimes a chain of nested containers up to the depth limit. */
static void gen_deep(tl_cbor_gen *g, tl_cbor_writer *w) {
  size_t d = 1 + (size_t)below(g, TL_CBOR_MAX_DEPTH);
  for (size_t i = 0; i < d; i++) {
    if (g->tags->n_allowed_tags != 0 && below(g, 4) == 0) {
      tl_cbor_put_tag(w, g->tags->allowed_tags[0]);
    } else if (below(g, 2) == 0) {
      tl_cbor_begin_array(w, 1);
    } else {
      tl_cbor_begin_map(w, 1);
      gen_int(g, w);
    }
  }
  gen_item(g, w, d, 0); /* the budget is spent: a scalar */
  for (size_t i = d; i-- > 0;) {
    /* Close what is open, innermost first (tags close by themselves). */
    if (w->depth == 0) break;
    if (w->stack[w->depth - 1].kind == TL_CBOR_ARRAY)
      tl_cbor_end_array(w);
    else if (w->stack[w->depth - 1].kind == TL_CBOR_MAP)
      tl_cbor_end_map(w);
  }
}

tl_status tl_cbor_gen_document(tl_cbor_gen *g, tl_cbor_writer *w, size_t *len) {
  g->budget = (int)below(g, 40);
  if (below(g, 40) == 0) {
    g->budget = 0;
    gen_deep(g, w);
  } else {
    gen_item(g, w, 0, 0);
  }
  return tl_cbor_writer_finish(w, len);
}
