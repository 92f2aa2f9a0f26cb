/* What the grammar fuzz targets (fuzz_grammar_gbnf.c, _regex.c, _schema.c)
 * check of a reader, whatever its input language. Per input:
 *
 * 1. The input read into a fresh arena. A refusal has one of the statuses
 *    grammar.h names, a non-empty NUL-terminated message, an offset inside
 *    the input, and no grammar.
 * 2. An accepted grammar read again into another arena gives the same
 *    digest (the receipt's grammar id must not depend on memory).
 * 3. One allocation failing (which one: chosen from the input) gives
 *    TL_ERR_OUT_OF_MEMORY or the same outcome and digest as step 1.
 * 4. A short walk of a matcher over a small vocabulary (every single byte
 *    and some multi-byte strings, among them split UTF-8) in an arena of
 *    the matcher's minimum size, so its cache flushes run: at each step a
 *    token of the mask is accepted and one outside it is refused; a
 *    refused accept leaves the state as it was (the same mask after it);
 *    the mask agrees with accept on a few tokens checked by replaying the
 *    text so far into a reset matcher; EOS is allowed exactly when the
 *    text is a sentence; a finished matcher allows no token. */
#ifndef TL_FUZZ_GRAMMAR_CHECK_H
#define TL_FUZZ_GRAMMAR_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "grammar/grammar.h"

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

typedef tl_status (*grammar_reader)(tl_arena *arena, const uint8_t *text, size_t len,
                                    const tl_grammar **out, tl_gerror *err);

enum { GC_REGION = 1 << 24, GC_STEPS = 8, GC_TEXT = 256 };

static uint8_t gc_mem1[GC_REGION], gc_mem2[GC_REGION], gc_mem3[GC_REGION];

/* The vocabulary: ids 0..255 are the single bytes, then these strings,
 * then one token with no bytes (a special token: never in a mask). */
static const char *const gc_multi[] = {
    "{\"", "\":", "\",", "true", "false", "null", "  ", "\n\n", "ab", "abc", "aaaa",
    "\xc3\xa9", "\xe6\x97\xa5", "\xe6\x97", "\x97\xa5", "\xf0\x9f\x98\x80", "0.5", "-1",
    "[]", "{}", "\"}", "::=", " \"", "12", "2024-01-", "@example.com"};
enum { GC_MULTI = sizeof gc_multi / sizeof gc_multi[0], GC_TOKENS = 256 + GC_MULTI + 1 };
enum { GC_WORDS = (GC_TOKENS + 63) / 64 };

static const tl_gvocab *gc_vocab(void) {
  static uint8_t mem[1 << 20];
  static const tl_gvocab *v;
  static uint8_t singles[256];
  if (v == NULL) {
    const uint8_t *bytes[GC_TOKENS];
    uint32_t lens[GC_TOKENS];
    tl_arena a;
    for (int i = 0; i < 256; i++) {
      singles[i] = (uint8_t)i;
      bytes[i] = singles + i;
      lens[i] = 1;
    }
    for (int i = 0; i < GC_MULTI; i++) {
      bytes[256 + i] = (const uint8_t *)gc_multi[i];
      lens[256 + i] = (uint32_t)strlen(gc_multi[i]);
    }
    bytes[GC_TOKENS - 1] = NULL;
    lens[GC_TOKENS - 1] = 0;
    CHECK(tl_arena_init(&a, mem, sizeof mem) == TL_OK);
    CHECK(tl_gvocab_build(&a, GC_TOKENS, bytes, lens, &v) == TL_OK);
    CHECK(tl_gvocab_tokens(v) == GC_TOKENS);
  }
  return v;
}

static void gc_token(uint32_t id, const uint8_t **bytes, size_t *len) {
  static uint8_t singles[256];
  if (id < 256) {
    singles[id] = (uint8_t)id;
    *bytes = singles + id;
    *len = 1;
  } else {
    *bytes = (const uint8_t *)gc_multi[id - 256];
    *len = strlen(gc_multi[id - 256]);
  }
}

static uint64_t gc_next(uint64_t *s) { /* xorshift64 */
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static bool gc_allowed(const uint64_t *mask, uint32_t id) { return (mask[id / 64] >> (id % 64)) & 1; }

static tl_status gc_read(grammar_reader read, uint8_t *mem, size_t fail_k, const uint8_t *data,
                         size_t size, const tl_grammar **g, tl_gerror *e) {
  tl_arena a;
  CHECK(tl_arena_init(&a, mem, GC_REGION) == TL_OK);
  a.fail_countdown = fail_k;
  *g = NULL;
  return read(&a, data, size, g, e);
}

static void gc_check_refusal(tl_status st, const tl_gerror *e, const tl_grammar *g, size_t size) {
  /* grammar.h's statuses, and TL_ERR_INVALID_UTF8 for text that is not UTF-8 */
  CHECK(st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_UNSUPPORTED_FEATURE ||
        st == TL_ERR_BOUNDS || st == TL_ERR_OUT_OF_MEMORY || st == TL_ERR_INVALID_UTF8);
  CHECK(e->status == st && g == NULL);
  CHECK(memchr(e->message, '\0', sizeof e->message) != NULL && e->message[0] != '\0');
  CHECK(e->offset <= size);
}

/* Replays text[0..n) and then token id into a reset matcher: whether the
 * token is accepted there. */
static bool gc_replay_accepts(tl_gmatcher *m, const uint8_t *text, size_t n, uint32_t id) {
  const uint8_t *b;
  size_t len;
  tl_gmatcher_reset(m);
  CHECK(tl_gmatcher_accept(m, text, n) == TL_OK);
  gc_token(id, &b, &len);
  return tl_gmatcher_accept(m, b, len) == TL_OK;
}

static void gc_walk(const tl_grammar *g, uint64_t seed) {
  const tl_gvocab *v = gc_vocab();
  size_t need = tl_gmatcher_min_bytes(g, v);
  tl_arena a;
  tl_gmatcher *m;
  uint8_t text[GC_TEXT];
  size_t n = 0;
  if (need > GC_REGION) return;
  CHECK(tl_arena_init(&a, gc_mem3, need) == TL_OK);
  tl_status st = tl_gmatcher_new(&a, g, v, (uint32_t)(seed & 1 ? TL_GM_LEADING_NEWLINES : 0), &m);
  if (st == TL_ERR_OUT_OF_MEMORY) return;
  CHECK(st == TL_OK);
  for (int step = 0; step < GC_STEPS; step++) {
    uint64_t mask[GC_WORDS], again[GC_WORDS];
    uint32_t in[GC_TOKENS], out[GC_TOKENS], n_in = 0, n_out = 0;
    bool eos, eos2;
    const uint8_t *b;
    size_t len;
    st = tl_gmatcher_mask(m, mask, &eos);
    if (st == TL_ERR_OUT_OF_MEMORY) return;
    CHECK(st == TL_OK);
    CHECK(eos == tl_gmatcher_accepting(m));
    for (uint32_t id = 0; id < GC_TOKENS - 1; id++) {
      if (gc_allowed(mask, id))
        in[n_in++] = id;
      else
        out[n_out++] = id;
    }
    CHECK(!gc_allowed(mask, GC_TOKENS - 1));
    CHECK(GC_TOKENS % 64 == 0 || mask[GC_WORDS - 1] >> (GC_TOKENS % 64) == 0);
    if (tl_gmatcher_finished(m)) CHECK(n_in == 0);
    /* one token outside the mask is refused and changes nothing */
    if (n_out > 0) {
      gc_token(out[gc_next(&seed) % n_out], &b, &len);
      CHECK(tl_gmatcher_accept(m, b, len) == TL_ERR_INVALID_ARGUMENT);
      st = tl_gmatcher_mask(m, again, &eos2);
      if (st == TL_ERR_OUT_OF_MEMORY) return;
      CHECK(st == TL_OK && eos2 == eos && memcmp(mask, again, sizeof mask) == 0);
    }
    /* the mask agrees with accept on two tokens from each side */
    for (int k = 0; k < 4; k++) {
      bool from_in = k < 2;
      if ((from_in ? n_in : n_out) == 0) continue;
      uint32_t id = from_in ? in[gc_next(&seed) % n_in] : out[gc_next(&seed) % n_out];
      CHECK(gc_replay_accepts(m, text, n, id) == from_in);
    }
    tl_gmatcher_reset(m);
    CHECK(tl_gmatcher_accept(m, text, n) == TL_OK);
    if (n_in == 0) return;
    gc_token(in[gc_next(&seed) % n_in], &b, &len);
    if (n + len > sizeof text) return;
    CHECK(tl_gmatcher_accept(m, b, len) == TL_OK);
    memcpy(text + n, b, len);
    n += len;
  }
}

static int gc_check(grammar_reader read, const uint8_t *data, size_t size) {
  const tl_grammar *g, *g2;
  tl_gerror e, e2;
  uint8_t d1[32], d2[32];
  uint64_t seed = 0x9E3779B97F4A7C15u;
  if (size > 1 << 16) return 0;
  for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 0x100000001B3u;
  if (seed == 0) seed = 1;
  tl_status st = gc_read(read, gc_mem1, 0, data, size, &g, &e);
  if (st != TL_OK) {
    gc_check_refusal(st, &e, g, size);
  } else {
    CHECK(g != NULL);
    CHECK(tl_grammar_rules(g) <= TL_GRAMMAR_MAX_RULES && tl_grammar_elems(g) <= TL_GRAMMAR_MAX_ELEMS);
    tl_grammar_digest(g, d1);
    CHECK(gc_read(read, gc_mem2, 0, data, size, &g2, &e2) == TL_OK);
    tl_grammar_digest(g2, d2);
    CHECK(memcmp(d1, d2, 32) == 0);
  }
  /* one allocation fails */
  tl_status st3 = gc_read(read, gc_mem2, 1 + gc_next(&seed) % 32, data, size, &g2, &e2);
  if (st3 == TL_ERR_OUT_OF_MEMORY && st != TL_ERR_OUT_OF_MEMORY) {
    gc_check_refusal(st3, &e2, g2, size);
  } else {
    CHECK(st3 == st);
    if (st == TL_OK) {
      tl_grammar_digest(g2, d2);
      CHECK(memcmp(d1, d2, 32) == 0);
    } else {
      gc_check_refusal(st3, &e2, g2, size);
    }
  }
  if (st == TL_OK) gc_walk(g, seed);
  return 0;
}

#endif
