/* Builds small TLTK tokenizer sections (docs/tokenizer-section.md) for
 * tests and fuzz targets, without the converter.
 *
 *   static tok_builder b;
 *   tok_build_init(&b);                  ids 0..255: the single bytes
 *   tok_build_merge(&b, "Ġ t");          a merge in tokenizer.json's
 *                                        byte-level notation; its result
 *                                        becomes a new token (or reuses one)
 *   tok_build_added(&b, "<s>", flags);   added tokens follow, in order
 *   len = tok_build_finish(&b, buf, cap);
 *
 * Header-only (static inline) and freestanding, like the tests. Writes
 * the layout the converter writes: header, index, bytes, merges, added. */
#ifndef TL_TESTS_TOK_BUILD_H
#define TL_TESTS_TOK_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TOK_BUILD_MAX_TOKENS 4096
#define TOK_BUILD_MAX_BYTES 65536
#define TOK_BUILD_MAX_MERGES 4096

typedef struct tok_builder {
  uint32_t n_tokens, n_merges, n_added, n_bytes;
  bool failed;
  uint32_t off[TOK_BUILD_MAX_TOKENS + 1];
  uint8_t bytes[TOK_BUILD_MAX_BYTES];
  uint32_t merges[TOK_BUILD_MAX_MERGES][3];
  uint32_t added[TOK_BUILD_MAX_TOKENS][2];
} tok_builder;

static inline void tok_build_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* Appends a token; returns its id (UINT32_MAX when full). */
static inline uint32_t tok_build_token(tok_builder *b, const uint8_t *s,
                                       size_t n) {
  if (b->n_tokens >= TOK_BUILD_MAX_TOKENS ||
      n > TOK_BUILD_MAX_BYTES - b->n_bytes) {
    b->failed = true;
    return UINT32_MAX;
  }
  memcpy(b->bytes + b->n_bytes, s, n);
  b->n_bytes += (uint32_t)n;
  b->off[++b->n_tokens] = b->n_bytes;
  return b->n_tokens - 1;
}

static inline uint32_t tok_build_find(const tok_builder *b, const uint8_t *s,
                                      size_t n) {
  for (uint32_t i = 0; i < b->n_tokens; i++)
    if (b->off[i + 1] - b->off[i] == n &&
        memcmp(b->bytes + b->off[i], s, n) == 0)
      return i;
  return UINT32_MAX;
}

static inline void tok_build_init(tok_builder *b) {
  memset(b, 0, sizeof *b);
  for (unsigned i = 0; i < 256; i++) {
    uint8_t c = (uint8_t)i;
    tok_build_token(b, &c, 1);
  }
}

/* GPT-2 bytes_to_unicode, inverted: the byte a character stands for. */
static inline int tok_build_bl_byte(uint32_t cp) {
  unsigned n = 0;
  if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) ||
      (cp >= 0xAE && cp <= 0xFF))
    return (int)cp;
  for (unsigned byte = 0; byte < 256; byte++) {
    if ((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
        (byte >= 0xAE && byte <= 0xFF))
      continue;
    if (cp == 256 + n) return (int)byte;
    n++;
  }
  return -1;
}

/* Byte-level text (UTF-8, characters of the byte-level alphabet) to raw
 * bytes; returns the length or SIZE_MAX. */
static inline size_t tok_build_unbl(const char *s, size_t n, uint8_t *out) {
  size_t i = 0, k = 0;
  while (i < n) {
    uint32_t c = (uint8_t)s[i];
    int byte;
    if (c >= 0xC0 && c < 0xE0 && i + 1 < n) {
      c = (c & 0x1F) << 6 | ((uint8_t)s[i + 1] & 0x3F);
      i += 2;
    } else {
      i += 1;
    }
    byte = tok_build_bl_byte(c);
    if (byte < 0) return SIZE_MAX;
    out[k++] = (uint8_t)byte;
  }
  return k;
}

/* "A B": merges tokens A and B (byte-level notation). */
static inline bool tok_build_merge(tok_builder *b, const char *merge) {
  uint8_t x[256], y[256], xy[512];
  const char *sp = merge;
  size_t nx, ny;
  uint32_t a, c, r;
  while (*sp != '\0' && *sp != ' ') sp++; /* the wasm libc has no strchr */
  if (*sp != ' ' || b->n_merges >= TOK_BUILD_MAX_MERGES) goto fail;
  nx = tok_build_unbl(merge, (size_t)(sp - merge), x);
  ny = tok_build_unbl(sp + 1, strlen(sp + 1), y);
  if (nx == SIZE_MAX || ny == SIZE_MAX || nx + ny > sizeof xy) goto fail;
  a = tok_build_find(b, x, nx);
  c = tok_build_find(b, y, ny);
  if (a == UINT32_MAX || c == UINT32_MAX) goto fail;
  memcpy(xy, x, nx);
  memcpy(xy + nx, y, ny);
  r = tok_build_find(b, xy, nx + ny);
  if (r == UINT32_MAX) r = tok_build_token(b, xy, nx + ny);
  if (r == UINT32_MAX) goto fail;
  b->merges[b->n_merges][0] = a;
  b->merges[b->n_merges][1] = c;
  b->merges[b->n_merges][2] = r;
  b->n_merges++;
  return true;
fail:
  b->failed = true;
  return false;
}

/* An added token with its content (UTF-8) and TL_TOK_ADDED_* flags. */
static inline uint32_t tok_build_added(tok_builder *b, const char *content,
                                       uint32_t flags) {
  uint32_t id = tok_build_token(b, (const uint8_t *)content, strlen(content));
  if (id == UINT32_MAX) return id;
  b->added[b->n_added][0] = id;
  b->added[b->n_added][1] = flags;
  b->n_added++;
  return id;
}

/* Serialises; returns the section length, 0 on failure. */
static inline size_t tok_build_finish(const tok_builder *b, uint8_t *out,
                                      size_t cap) {
  size_t index_off = 64, bytes_off, merges_off, added_off, total;
  if (b->failed) return 0;
  bytes_off = index_off + 4 * ((size_t)b->n_tokens + 1);
  merges_off = (bytes_off + b->n_bytes + 3) & ~(size_t)3;
  added_off = merges_off + 12 * (size_t)b->n_merges;
  total = added_off + 8 * (size_t)b->n_added;
  if (total > cap) return 0;
  memset(out, 0, total);
  memcpy(out, "TLTK", 4);
  out[4] = 1; /* version 1.0 */
  tok_build_put32(out + 8, 1);
  tok_build_put32(out + 12, 0x00090000);
  tok_build_put32(out + 16, 0x00100000);
  tok_build_put32(out + 20, b->n_tokens);
  tok_build_put32(out + 24, b->n_merges);
  tok_build_put32(out + 28, b->n_added);
  tok_build_put32(out + 32, (uint32_t)index_off);
  tok_build_put32(out + 36, (uint32_t)bytes_off);
  tok_build_put32(out + 40, b->n_bytes);
  tok_build_put32(out + 44, (uint32_t)merges_off);
  tok_build_put32(out + 48, (uint32_t)added_off);
  tok_build_put32(out + 52, (uint32_t)total);
  for (uint32_t i = 0; i <= b->n_tokens; i++)
    tok_build_put32(out + index_off + 4 * i, b->off[i]);
  memcpy(out + bytes_off, b->bytes, b->n_bytes);
  for (uint32_t i = 0; i < b->n_merges; i++)
    for (int k = 0; k < 3; k++)
      tok_build_put32(out + merges_off + 12 * i + 4 * k, b->merges[i][k]);
  for (uint32_t i = 0; i < b->n_added; i++) {
    tok_build_put32(out + added_off + 8 * i, b->added[i][0]);
    tok_build_put32(out + added_off + 8 * i + 4, b->added[i][1]);
  }
  return total;
}

#endif
