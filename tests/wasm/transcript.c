#include "transcript.h"

#include <string.h>

#include "arena.h"
#include "bytes.h"
#include "cbor/cbor.h"
#include "cbor_gen.h"
#include "hash/blake3.h"
#include "hash/sha256.h"
#include "model/qwen3.h"
#include "model/model_gen.h"
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

/* Verdict of the strict reader: status, fault kind and offset. */
static void emit_verdict(sink *s, const uint8_t *doc, size_t len) {
  tl_cbor_limits limits = tl_cbor_limits_default();
  tl_cbor_fault fault;
  tl_status st = tl_cbor_validate(doc, len, &limits, &fault);
  emit_u32(s, (uint32_t)st);
  emit_u32(s, (uint32_t)fault.kind);
  emit_u32(s, (uint32_t)fault.offset);
  s->records++;
}

/* Seeded documents from the writer, their verdicts, their re-encoding
 * through reader + writer, and the verdicts on mutated copies. */
static void cbor_records(sink *s, uint8_t *scratch) {
  enum { DOC_CAP = 65536, ARENA_CAP = 1 << 20 };
  uint8_t *doc = scratch, *copy = scratch + DOC_CAP;
  uint8_t *arena_mem = scratch + 2 * DOC_CAP;
  tl_cbor_limits no_tags = tl_cbor_limits_default();
  tl_cbor_gen gen = {77, &no_tags, 0};
  tl_test_rng rng = {78};
  for (int i = 0; i < 400; i++) {
    tl_cbor_writer w;
    tl_cbor_reader r;
    tl_arena arena;
    size_t len, copy_len = 0;
    tl_status st;
    tl_arena_init(&arena, arena_mem, ARENA_CAP);
    tl_cbor_writer_init(&w, doc, DOC_CAP, &arena);
    st = tl_cbor_gen_document(&gen, &w, &len);
    if (st == TL_ERR_CONFLICT) continue; /* keys collided: next draw */
    if (st != TL_OK) {
      s->failed = 1;
      return;
    }
    emit_u32(s, (uint32_t)len);
    emit(s, doc, len);
    emit_verdict(s, doc, len);
    tl_arena_init(&arena, arena_mem, ARENA_CAP);
    tl_cbor_writer_init(&w, copy, DOC_CAP, &arena);
    st = tl_cbor_reader_init(&r, doc, len, &no_tags);
    if (st == TL_OK) st = tl_cbor_copy_item(&r, &w);
    if (st == TL_OK) st = tl_cbor_writer_finish(&w, &copy_len);
    emit_u32(s, (uint32_t)st);
    emit(s, copy, copy_len);
    s->records++;
    for (int m = 0; m < 4 && len > 0; m++) {
      size_t at = (size_t)(tl_test_rng_next(&rng) % len);
      uint8_t saved = doc[at];
      doc[at] = (uint8_t)tl_test_rng_next(&rng);
      emit_verdict(s, doc, len - (m == 3)); /* the last also truncates */
      doc[at] = saved;
    }
  }
}

/* One forward call on a model_gen model: its status, the cache length,
 * the last position's logits as f32 bits, and the BLAKE3 of every layer
 * and KV head's K and V rows [0, len) (the cache as f32 bits; both hosts
 * little-endian). */
static void forward_record(sink *s, const tl_qwen3 *m, tl_qwen3_cache *c,
                           const uint32_t *ids, size_t n, tl_arena *scratch,
                           float *logits) {
  uint8_t d[32];
  tl_status st;
  memset(logits, 0, m->cfg.vocab * sizeof(float));
  st = tl_qwen3_forward(m, c, ids, n, logits, NULL, scratch, NULL);
  if (st != TL_OK) s->failed = 1;
  emit_u32(s, (uint32_t)st);
  emit_u32(s, c->len);
  for (size_t i = 0; i < m->cfg.vocab; i++)
    emit_u32(s, tl_f32_to_bits(logits[i]));
  for (uint32_t l = 0; l < m->cfg.layers; l++)
    for (uint32_t h = 0; h < m->cfg.kv_heads; h++)
      for (int kv = 0; kv < 2; kv++) {
        /* the strict lane's f32 rows or the fast lane's binary16 (F-11) */
        size_t at = tl_qwen3_cache_at(c, l, h, 0), len = (size_t)c->len * c->head_dim;
        const void *rows = c->k16 != NULL ? (const void *)((kv ? c->v16 : c->k16) + at)
                                          : (const void *)((kv ? c->v : c->k) + at);
        if (tl_blake3(rows, len * (c->k16 != NULL ? 2 : sizeof(float)), d) != TL_OK)
          s->failed = 1;
        emit(s, d, 32);
      }
  s->records++;
}

/* The forward calls of one model: a one-token prompt, a 7-token prefill
 * followed by three decode steps, and a 41-token prefill. */
static void forward_sequence(sink *s, const tl_qwen3 *m, tl_qwen3_cache *c,
                             const uint32_t *ids, tl_arena *work, float *logits) {
  c->len = 0;
  forward_record(s, m, c, ids, 1, work, logits);
  c->len = 0;
  forward_record(s, m, c, ids, 7, work, logits);
  for (size_t i = 7; i < 10; i++)
    forward_record(s, m, c, ids + i, 1, work, logits);
  c->len = 0;
  forward_record(s, m, c, ids, 41, work, logits);
}

/* The same calls through the fast lane with the host's variant at each of
 * its thread counts: the first thread count's records stay in the
 * transcript, every other one must reproduce their bytes and is then
 * dropped (so the transcript does not depend on which counts a host
 * has). The q8/q4 weights are packed in place first (the model's bytes,
 * model_len of them at model); the fast lane's own cache (binary16 rows)
 * comes from arena. Leaves m on the strict lane. */
static void fast_records(sink *s, tl_qwen3 *m, uint8_t *model, size_t model_len,
                         tl_arena *arena, const uint32_t *ids, tl_arena *work, float *logits,
                         const tl_transcript_host *host) {
  size_t start = s->len, len = 0, records = 0;
  tl_qwen3_cache c;
  if (tl_qwen3_pack(m, model, model_len, model, host->pars[0]) != TL_OK) s->failed = 1;
  for (size_t t = 0; t < host->n_pars && !s->failed; t++) {
    if (tl_qwen3_set_lane(m, host->kernels, host->pars[t]) != TL_OK ||
        (t == 0 && tl_qwen3_cache_init(&c, m, 48, arena) != TL_OK)) {
      s->failed = 1;
      break;
    }
    forward_sequence(s, m, &c, ids, work, logits);
    if (t == 0) {
      len = s->len - start;
      records = s->records;
      continue;
    }
    if (s->len - start != 2 * len ||
        memcmp(s->out + start, s->out + start + len, len) != 0)
      s->failed = 1;
    s->len = start + len;
    s->records = records;
  }
  if (tl_qwen3_set_lane(m, NULL, NULL) != TL_OK) s->failed = 1;
}

/* Logits of model_gen models in every stored dtype (tied and untied, with
 * widths on and off the block and vector sizes) through the strict lane,
 * then through the fast lane (docs/fast-profile.md): every host must agree
 * on every bit, whichever kernel variant and thread counts it runs. */
static void forward_records(sink *s, uint8_t *scratch,
                            const tl_transcript_host *host) {
  enum { MODEL_CAP = 1u << 20, ARENA_CAP = 1u << 20, SCRATCH_CAP = 2u << 20 };
  static const tl_qtype types[] = {TL_QTYPE_F32, TL_QTYPE_F16, TL_QTYPE_BF16,
                                   TL_QTYPE_Q8, TL_QTYPE_Q4};
  uint8_t *model = scratch, *arena_mem = scratch + MODEL_CAP;
  uint8_t *scratch_mem = arena_mem + ARENA_CAP;
  tl_test_rng rng = {20260611};
  for (size_t variant = 0; variant < 3; variant++) {
    for (size_t d = 0; d < sizeof types / sizeof types[0]; d++) {
      tl_model_gen g = tl_model_gen_tiny(types[d], 1000 + 10 * variant + d);
      tl_arena arena, work;
      tl_slm slm;
      tl_slm_tensors ts;
      tl_qwen3 m;
      tl_qwen3_cache c;
      uint32_t ids[41];
      float *logits;
      size_t len;
      void *p;
      if (variant == 1) { /* wider, tied, another rope base */
        g.vocab = 96;
        g.hidden = 64;
        g.inter = 96;
        g.heads = 4;
        g.kv_heads = 1;
        g.head_dim = 16;
        g.max_positions = 128;
        g.rope_theta = "10000.0";
        g.tie = true;
      } else if (variant == 2) { /* rows off the vector and block sizes */
        g.vocab = 75;
        g.hidden = 40;
        g.inter = 72;
        g.head_dim = 10;
      }
      tl_arena_init(&arena, arena_mem, ARENA_CAP);
      tl_arena_init(&work, scratch_mem, SCRATCH_CAP);
      if (tl_model_gen_build(&g, model, MODEL_CAP, &work, &len) != TL_OK ||
          tl_model_gen_open(model, len, &slm, &ts, &m, &arena) != TL_OK ||
          tl_arena_alloc_array(&arena, g.vocab, sizeof(float), 16, &p) != TL_OK) {
        s->failed = 1;
        return;
      }
      logits = p;
      /* The artifact itself: its bytes are the same on both hosts too. */
      {
        uint8_t digest[32];
        if (tl_blake3(model, len, digest) != TL_OK) s->failed = 1;
        emit_u32(s, (uint32_t)len);
        emit(s, digest, 32);
        s->records++;
      }
      for (size_t i = 0; i < 41; i++)
        ids[i] = (uint32_t)(tl_test_rng_next(&rng) % g.vocab);
      if (tl_qwen3_cache_init(&c, &m, 48, &arena) != TL_OK) {
        s->failed = 1;
        return;
      }
      forward_sequence(s, &m, &c, ids, &work, logits);
      fast_records(s, &m, model, len, &arena, ids, &work, logits, host);
    }
  }
}

size_t tl_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                     const tl_transcript_host *host, size_t *records) {
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
  cbor_records(&s, scratch);
  if (host->kernels == NULL || host->pars == NULL || host->n_pars == 0)
    s.failed = 1;
  else
    forward_records(&s, scratch, host);
  *records = s.records;
  return s.failed ? 0 : s.len;
}
