#include "transcript.h"

#include <string.h>

#include "bytes.h"
#include "hash/blake3.h"
#include "hash/sha256.h"
#include "tl_test.h"

typedef struct sink {
  uint8_t *out;
  size_t cap, len, records;
  int failed;
} sink;

static void emit(sink *s, const void *data, size_t n) {
  if (s->failed || n > s->cap - s->len) {
    s->failed = 1;
    return;
  }
  memcpy(s->out + s->len, data, n);
  s->len += n;
}

static void emit_u32(sink *s, uint32_t v) {
  uint8_t b[4];
  tl_store_le32(b, v);
  emit(s, b, 4);
}

/* SHA-256, 131 bytes of BLAKE3 output, and BLAKE3 fed in seeded pieces. */
static void hash_records(sink *s, tl_test_rng *rng, uint8_t *buf, size_t len) {
  uint8_t d[131];
  tl_blake3_hasher h;
  size_t pos = 0;
  tl_test_rng_fill(rng, buf, len);
  emit_u32(s, (uint32_t)len);
  if (tl_sha256(buf, len, d) != TL_OK) s->failed = 1;
  emit(s, d, 32);
  tl_blake3_hasher_init(&h);
  if (tl_blake3_hasher_update(&h, buf, len) != TL_OK ||
      tl_blake3_hasher_finalize(&h, d, sizeof d) != TL_OK)
    s->failed = 1;
  emit(s, d, sizeof d);
  tl_blake3_hasher_init(&h);
  while (pos < len) {
    size_t step = (size_t)(tl_test_rng_next(rng) % 5000);
    if (step > len - pos) step = len - pos;
    if (tl_blake3_hasher_update(&h, buf + pos, step) != TL_OK) s->failed = 1;
    pos += step;
  }
  if (tl_blake3_hasher_finalize(&h, d, 32) != TL_OK) s->failed = 1;
  emit(s, d, 32);
  s->records += 3;
}

size_t tl_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                     size_t *records) {
  sink s = {out, cap, 0, 0, 0};
  tl_test_rng rng = {20261202};
  /* Block (64) and chunk (1024) boundaries, then seeded lengths. */
  for (size_t k = 0; k <= 40; k++) {
    hash_records(&s, &rng, scratch, k * 64 + (k % 3));
    hash_records(&s, &rng, scratch, k * 1024 + (k % 3) - (k > 0));
  }
  for (int i = 0; i < 60; i++)
    hash_records(&s, &rng, scratch,
                 (size_t)(tl_test_rng_next(&rng) % (1u << 20)));
  hash_records(&s, &rng, scratch, TL_TRANSCRIPT_SCRATCH);
  *records = s.records;
  return s.failed ? 0 : s.len;
}
