/* Observation records (model/observe.h): one row's digest and summaries
 * against values worked out by hand and BLAKE3 of bytes laid out here; the
 * sink records every capture of a forward pass in the capture's order,
 * with the digest of the row it was given; the document writes
 * deterministically, reads back to the same records, and refuses
 * truncations and schema breaks with typed errors; the comparison finds
 * identical documents identical and locates a planted difference with the
 * bisection verify uses. Freestanding: runs natively and in wasm32. */
#include "model/observe.h"

#include <string.h>

#include "bytes.h"
#include "hash/blake3.h"
#include "model/model_gen.h"
#include "tl_test.h"

#define MODEL_CAP (256u << 10)
#define ARENA_CAP (512u << 10)
#define SCRATCH_CAP (512u << 10)
#define N_TOKENS 5
#define MAX_RECORDS 256
#define DOC_CAP (96u << 10)

static _Alignas(64) uint8_t model_buf[MODEL_CAP];
static _Alignas(64) uint8_t arena_mem[ARENA_CAP];
static _Alignas(64) uint8_t scratch_mem[SCRATCH_CAP];
static tl_observe_record records[MAX_RECORDS];
static uint8_t doc_a[DOC_CAP], doc_b[DOC_CAP];

static const double inf = __builtin_inf();

/* ---- one row ------------------------------------------------------------ */

static void row_summaries_by_hand(tl_test_ctx *t) {
  const float row[5] = {1.0f, -(float)inf, 2.0f, 3.0f, 4.0f};
  tl_observe_record r;
  tl_observe_row(row, 5, &r);
  TL_EXPECT_EQ_U64(t, r.count, 5);
  TL_EXPECT_EQ_U64(t, r.nonfinite, 1);
  /* over 1, 2, 3, 4: all exact in double */
  TL_EXPECT(t, r.min == 1.0 && r.max == 4.0);
  TL_EXPECT(t, r.mean == 2.5);
  TL_EXPECT(t, r.variance == 1.25); /* (2.25 + 0.25 + 0.25 + 2.25) / 4 */
  TL_EXPECT(t, r.l2 == __builtin_sqrt(30.0));
}

static void empty_and_all_masked_rows(tl_test_ctx *t) {
  const float masked[3] = {-(float)inf, -(float)inf, -(float)inf};
  tl_observe_record r;
  tl_observe_row(masked, 3, &r);
  TL_EXPECT_EQ_U64(t, r.nonfinite, 3);
  TL_EXPECT(t, r.min == 0.0 && r.max == 0.0 && r.l2 == 0.0 && r.mean == 0.0 && r.variance == 0.0);
  tl_observe_row(masked, 0, &r);
  TL_EXPECT_EQ_U64(t, r.count, 0);
}

/* The digest is BLAKE3 of the values' little-endian f32 bytes, every NaN
 * written as 0x7fc00000; -0 and +0 stay apart. */
static void digest_is_of_canonical_bytes(tl_test_ctx *t) {
  float row[300];
  uint8_t bytes[4 * 300], want[32];
  tl_observe_record r, r2;
  for (size_t i = 0; i < 300; i++) row[i] = (float)i * 0.25f - 30.0f;
  row[7] = tl_bits_to_f32(0x7fc00001u);  /* a quiet NaN with a payload */
  row[260] = tl_bits_to_f32(0xffffffffu); /* a negative NaN */
  for (size_t i = 0; i < 300; i++)
    tl_store_le32(bytes + 4 * i, i == 7 || i == 260 ? 0x7fc00000u : tl_f32_to_bits(row[i]));
  TL_EXPECT_OK(t, tl_blake3(bytes, sizeof bytes, want));
  tl_observe_row(row, 300, &r); /* past the 256-byte staging buffer */
  TL_EXPECT_MEM(t, r.blake3, want, 32);
  TL_EXPECT_EQ_U64(t, r.nonfinite, 2);
  row[0] = 0.0f;
  tl_observe_row(row, 300, &r);
  row[0] = -0.0f;
  tl_observe_row(row, 300, &r2);
  TL_EXPECT(t, memcmp(r.blake3, r2.blake3, 32) != 0);
}

/* Equality sees every field, each summary to the bit. */
static void record_equal_sees_every_field(tl_test_ctx *t) {
  const float row[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  tl_observe_record a, b;
  tl_observe_row(row, 4, &a);
  a.stage = TL_QWEN3_STAGE_GATE;
  a.layer = 1;
  a.pos = 2;
  for (int field = 0; field < 11; field++) {
    b = a;
    TL_EXPECT(t, tl_observe_record_equal(&a, &b));
    switch (field) {
      case 0: b.stage = TL_QWEN3_STAGE_UP; break;
      case 1: b.layer = 0; break;
      case 2: b.pos = 3; break;
      case 3: b.count++; break;
      case 4: b.nonfinite++; break;
      case 5: b.blake3[31] ^= 0x80; break;
      case 6: b.min = -b.min; break;
      case 7: b.max = tl_bits_to_f64(tl_f64_to_bits(b.max) + 1); break;
      case 8: b.l2 = tl_bits_to_f64(tl_f64_to_bits(b.l2) + 1); break;
      case 9: b.mean = tl_bits_to_f64(tl_f64_to_bits(b.mean) + 1); break;
      default: b.variance = tl_bits_to_f64(tl_f64_to_bits(b.variance) + 1); break;
    }
    if (!TL_EXPECT(t, !tl_observe_record_equal(&a, &b))) tl_test_print_u64(t, (uint64_t)field);
  }
}

/* ---- the sink over a forward pass -------------------------------------- */

typedef struct fixture {
  size_t len;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_qwen3_cache cache;
  tl_arena arena, scratch;
} fixture;

static bool setup(tl_test_ctx *t, fixture *f, tl_qtype type) {
  tl_model_gen g = tl_model_gen_tiny(type, 41);
  memset(f, 0, sizeof *f);
  tl_arena_init(&f->arena, arena_mem, ARENA_CAP);
  tl_arena_init(&f->scratch, scratch_mem, SCRATCH_CAP);
  return TL_EXPECT_OK(t, tl_model_gen_build(&g, model_buf, MODEL_CAP, &f->scratch, &f->len)) &&
         TL_EXPECT_OK(t, tl_model_gen_open(model_buf, f->len, &f->slm, &f->ts, &f->m, &f->arena)) &&
         TL_EXPECT_OK(t, tl_qwen3_cache_init(&f->cache, &f->m, 16, &f->arena));
}

/* A plain sink: each row's place and the BLAKE3 of its bytes as they lie
 * in memory (no NaN in a forward pass; this host is little-endian). */
typedef struct plain {
  struct {
    tl_qwen3_stage stage;
    int32_t layer;
    uint32_t pos;
    uint64_t n;
    uint8_t digest[32];
  } rows[MAX_RECORDS];
  size_t n;
} plain;
static plain seen;

static bool plain_wants(void *ctx, tl_qwen3_stage s, int32_t l, uint32_t p) {
  (void)ctx;
  (void)s;
  (void)l;
  (void)p;
  return true;
}

static void plain_row(void *ctx, tl_qwen3_stage s, int32_t l, uint32_t p, const float *data,
                      size_t n) {
  plain *c = ctx;
  if (c->n == MAX_RECORDS) return;
  c->rows[c->n].stage = s;
  c->rows[c->n].layer = l;
  c->rows[c->n].pos = p;
  c->rows[c->n].n = n;
  tl_blake3(data, n * sizeof *data, c->rows[c->n].digest);
  c->n++;
}

static const uint32_t ids[N_TOKENS] = {3, 17, 42, 9, 60};

/* Observes ids on f into records; the count. */
static size_t observe(tl_test_ctx *t, fixture *f, size_t cap) {
  tl_observer ob;
  tl_qwen3_capture cap_;
  tl_observer_init(&ob, records, cap);
  cap_ = tl_observer_capture(&ob);
  f->cache.len = 0;
  TL_EXPECT_OK(t, tl_qwen3_forward(&f->m, &f->cache, ids, N_TOKENS, NULL, &cap_, &f->scratch, NULL));
  TL_EXPECT_STATUS(t, ob.status, ob.n < cap || ob.n == tl_observe_records_max(&f->m.cfg, N_TOKENS) ? TL_OK : TL_ERR_BOUNDS);
  return ob.n;
}

static void sink_records_every_capture_in_order(tl_test_ctx *t) {
  static const tl_qtype types[] = {TL_QTYPE_F32, TL_QTYPE_Q8};
  for (size_t d = 0; d < 2; d++) {
    fixture f;
    tl_qwen3_capture pc = {plain_wants, plain_row, &seen};
    size_t n;
    if (!setup(t, &f, types[d])) return;
    memset(&seen, 0, sizeof seen);
    TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &f.cache, ids, N_TOKENS, NULL, &pc, &f.scratch, NULL));
    n = observe(t, &f, MAX_RECORDS);
    /* every stage at every position: 3 outside the layers, 20 per layer
     * (docs/golden.md's table) */
    TL_EXPECT_EQ_U64(t, n, N_TOKENS * (3 + 20 * f.m.cfg.layers));
    TL_EXPECT_EQ_U64(t, n, tl_observe_records_max(&f.m.cfg, N_TOKENS));
    TL_EXPECT_EQ_U64(t, n, seen.n);
    for (size_t i = 0; i < n && i < seen.n; i++) {
      const tl_observe_record *r = &records[i];
      if (!TL_EXPECT(t, r->stage == seen.rows[i].stage && r->layer == seen.rows[i].layer &&
                            r->pos == seen.rows[i].pos && r->count == seen.rows[i].n &&
                            memcmp(r->blake3, seen.rows[i].digest, 32) == 0))
        return;
      /* masked scores only in scores_masked, the future keys' */
      TL_EXPECT_EQ_U64(t, r->nonfinite,
                       r->stage == TL_QWEN3_STAGE_SCORES_MASKED
                           ? (uint64_t)f.m.cfg.heads * (N_TOKENS - 1 - r->pos)
                           : 0);
    }
  }
}

static void sink_stops_at_its_capacity(tl_test_ctx *t) {
  fixture f;
  tl_observer ob;
  tl_qwen3_capture cap;
  if (!setup(t, &f, TL_QTYPE_F32)) return;
  memset(records, 0xa5, sizeof records);
  tl_observer_init(&ob, records, 10);
  cap = tl_observer_capture(&ob);
  TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &f.cache, ids, N_TOKENS, NULL, &cap, &f.scratch, NULL));
  TL_EXPECT_STATUS(t, ob.status, TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, ob.n, 10);
  TL_EXPECT_EQ_U64(t, ((uint8_t *)&records[10])[0], 0xa5); /* nothing past it */
}

/* ---- the document ------------------------------------------------------ */

static void set(char *dst, const char *s) { memcpy(dst, s, strlen(s) + 1); }

static tl_observe_meta meta_of(const fixture *f, const char *profile) {
  tl_observe_meta m;
  memset(&m, 0, sizeof m);
  set(m.version, "0.1.0");
  set(m.lane, "fast");
  set(m.profile, profile);
  set(m.host, "native");
  set(m.isa, "scalar");
  m.threads = 3;
  for (int i = 0; i < 32; i++) m.artifact[i] = (uint8_t)(i * 7);
  m.layers = f->m.cfg.layers;
  m.ids = ids;
  m.n_ids = N_TOKENS;
  return m;
}

static void document_round_trip(tl_test_ctx *t) {
  fixture f;
  tl_observe_meta m;
  tl_observe_doc doc;
  size_t n, len = 0, len2 = 0, short_len;
  const char *why = "unset";
  if (!setup(t, &f, TL_QTYPE_Q8)) return;
  n = observe(t, &f, MAX_RECORDS);
  m = meta_of(&f, "fast/4");
  TL_EXPECT_OK(t, tl_observe_write(&m, records, n, doc_a, DOC_CAP, &len, &f.scratch));
  TL_EXPECT(t, len <= tl_observe_doc_bound(&m, n));
  TL_EXPECT_OK(t, tl_observe_write(&m, records, n, doc_b, DOC_CAP, &len2, &f.scratch));
  TL_EXPECT(t, len == len2 && memcmp(doc_a, doc_b, len) == 0); /* deterministic */
  TL_EXPECT_STATUS(t, tl_observe_write(&m, records, n, doc_b, len - 1, &short_len, &f.scratch),
                   TL_ERR_BOUNDS);
  tl_arena_reset(&f.scratch);
  if (!TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &doc, &f.scratch, &why))) return;
  TL_EXPECT(t, why == NULL);
  TL_EXPECT_EQ_U64(t, doc.n_records, n);
  TL_EXPECT_STR(t, doc.meta.profile, "fast/4");
  TL_EXPECT_STR(t, doc.meta.lane, "fast");
  TL_EXPECT_STR(t, doc.meta.isa, "scalar");
  TL_EXPECT_STR(t, doc.meta.host, "native");
  TL_EXPECT_STR(t, doc.meta.version, "0.1.0");
  TL_EXPECT_EQ_U64(t, doc.meta.threads, 3);
  TL_EXPECT_EQ_U64(t, doc.meta.layers, f.m.cfg.layers);
  TL_EXPECT_MEM(t, doc.meta.artifact, m.artifact, 32);
  TL_EXPECT(t, doc.meta.n_ids == N_TOKENS && memcmp(doc.meta.ids, ids, sizeof ids) == 0);
  for (size_t i = 0; i < n; i++) {
    const tl_observe_record *a = &records[i], *b = &doc.records[i];
    if (!TL_EXPECT(t, tl_observe_record_equal(a, b)))
      return;
  }
}

/* Replaces the first occurrence of text from by to (same length). */
static bool patch(uint8_t *doc, size_t len, const char *from, const char *to) {
  size_t n = strlen(from);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(doc + i, from, n) == 0) {
      memcpy(doc + i, to, n);
      return true;
    }
  return false;
}

static void reader_refuses_bad_documents(tl_test_ctx *t) {
  fixture f;
  tl_observe_meta m;
  tl_observe_doc doc;
  size_t n, len = 0;
  const char *why;
  static const char *const patches[][2] = {
      {"tinylm.observe/1", "tinylm.observe/2"}, /* another format */
      {"embedding", "embeddinx"},               /* no such stage */
      {"variance", "varianze"},                 /* an unknown record field */
      {"tinylm", "tinyLM"},                     /* another producer */
  };
  if (!setup(t, &f, TL_QTYPE_F32)) return;
  n = observe(t, &f, MAX_RECORDS);
  m = meta_of(&f, "fast/4");
  if (!TL_EXPECT_OK(t, tl_observe_write(&m, records, n, doc_a, DOC_CAP, &len, &f.scratch))) return;
  /* every truncation is refused, never read past */
  for (size_t cut = 0; cut < len; cut += cut < 256 ? 1 : 97) {
    tl_status st;
    tl_arena_reset(&f.scratch);
    st = tl_observe_read(doc_a, cut, &doc, &f.scratch, &why);
    if (!TL_EXPECT(t, (st == TL_ERR_INVALID_CBOR || st == TL_ERR_INVALID_ARGUMENT) && why != NULL)) {
      tl_test_print(t, "a truncation was accepted\n");
      return;
    }
  }
  for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
    memcpy(doc_b, doc_a, len);
    if (!TL_EXPECT(t, patch(doc_b, len, patches[i][0], patches[i][1]))) continue;
    tl_arena_reset(&f.scratch);
    /* a patched key may also break the key order: either is refused */
    TL_EXPECT(t, tl_observe_read(doc_b, len, &doc, &f.scratch, &why) != TL_OK && why != NULL);
  }
  /* layer 2 of a 2-layer model is past its layers: "layers" patched to 1 */
  memcpy(doc_b, doc_a, len);
  for (size_t i = 0; i + 7 <= len; i++)
    if (memcmp(doc_b + i, "layers", 6) == 0 && doc_b[i + 6] == 0x02) {
      doc_b[i + 6] = 0x01;
      break;
    }
  tl_arena_reset(&f.scratch);
  TL_EXPECT_STATUS(t, tl_observe_read(doc_b, len, &doc, &f.scratch, &why), TL_ERR_INVALID_ARGUMENT);
}

/* A document's declared layers size the comparison (16 stages x layers x
 * positions); its records must justify them: layers x positions <= records
 * (a whole pass holds 3 + 20 x layers per position). A few hundred bytes
 * declaring millions of layers made `observe --compare` take 4 GB. */
static void reader_bounds_what_a_document_declares(tl_test_ctx *t) {
  fixture f;
  tl_observe_meta m;
  tl_observe_doc doc;
  size_t n, len = 0;
  const char *why = NULL;
  if (!setup(t, &f, TL_QTYPE_F32)) return;
  n = observe(t, &f, MAX_RECORDS);
  m = meta_of(&f, "fast/4");
  /* the boundary: layers x positions records are enough, one fewer is not */
  TL_EXPECT(t, n >= (size_t)m.layers * N_TOKENS);
  TL_EXPECT_OK(t, tl_observe_write(&m, records, (size_t)m.layers * N_TOKENS, doc_a, DOC_CAP, &len,
                                   &f.scratch));
  tl_arena_reset(&f.scratch);
  TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &doc, &f.scratch, &why));
  TL_EXPECT(t, tl_observe_compare_bound(&doc) <= 64 * len + 65536); /* linear in the bytes */
  TL_EXPECT_OK(t, tl_observe_write(&m, records, (size_t)m.layers * N_TOKENS - 1, doc_a, DOC_CAP,
                                   &len, &f.scratch));
  tl_arena_reset(&f.scratch);
  TL_EXPECT_STATUS(t, tl_observe_read(doc_a, len, &doc, &f.scratch, &why), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, why != NULL && strlen(why) >= 12 && memcmp(why, "model layers", 12) == 0);
  /* the shape that blew up: millions of layers, one record (the embedding) */
  m.layers = 4000000;
  TL_EXPECT(t, records[0].layer == -1);
  TL_EXPECT_OK(t, tl_observe_write(&m, records, 1, doc_a, DOC_CAP, &len, &f.scratch));
  TL_EXPECT(t, len < 512);
  tl_arena_reset(&f.scratch);
  why = NULL;
  TL_EXPECT_STATUS(t, tl_observe_read(doc_a, len, &doc, &f.scratch, &why), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, why != NULL && strlen(why) >= 12 && memcmp(why, "model layers", 12) == 0);
}

/* ---- comparing ---------------------------------------------------------- */

static size_t find(const tl_observe_doc *d, tl_qwen3_stage s, int32_t layer, uint32_t pos) {
  for (size_t i = 0; i < d->n_records; i++)
    if (d->records[i].stage == s && d->records[i].layer == layer && d->records[i].pos == pos)
      return i;
  return SIZE_MAX;
}

/* Everything computed after (stage, layer, pos) is touched in b, as a
 * fault there would: that record, the same stage at later positions, every
 * later stage of that layer, every later layer and the final stages. */
static void plant(tl_observe_doc *b, tl_qwen3_stage s, int32_t layer, uint32_t pos) {
  for (size_t i = 0; i < b->n_records; i++) {
    tl_observe_record *r = &b->records[i];
    int32_t rl = r->layer < 0 ? (r->stage == TL_QWEN3_STAGE_EMBEDDING ? -2 : 1000) : r->layer;
    bool after = rl > layer || (rl == layer && (r->stage > s || (r->stage == s && r->pos >= pos)));
    if (after) r->blake3[0] ^= 1;
  }
}

static void compare_locates_a_planted_difference(tl_test_ctx *t) {
  fixture f;
  tl_observe_meta m;
  tl_observe_doc a, b;
  tl_observe_diff d;
  size_t n, len = 0, i;
  const char *why;
  static _Alignas(8) uint8_t cmp_mem[64u << 10];
  tl_arena cmp;
  if (!setup(t, &f, TL_QTYPE_Q8)) return;
  n = observe(t, &f, MAX_RECORDS);
  m = meta_of(&f, "fast/4");
  if (!TL_EXPECT_OK(t, tl_observe_write(&m, records, n, doc_a, DOC_CAP, &len, &f.scratch))) return;
  tl_arena_reset(&f.scratch);
  tl_arena_init(&cmp, cmp_mem, sizeof cmp_mem);
  if (!TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &a, &f.scratch, &why)) ||
      !TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &b, &f.scratch, &why)))
    return;
  TL_EXPECT(t, tl_observe_compare_bound(&a) <= sizeof cmp_mem);
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_IDENTICAL && d.compared == n && d.differing == 0);

  /* attn_out of layer 1 from position 3 on */
  plant(&b, TL_QWEN3_STAGE_ATTN_OUT, 1, 3);
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIVERGED);
  TL_EXPECT(t, d.stage == TL_QWEN3_STAGE_ATTN_OUT && d.layer == 1 && d.pos == 3);
  TL_EXPECT(t, d.index_a == find(&a, TL_QWEN3_STAGE_ATTN_OUT, 1, 3) && d.index_b == d.index_a);
  TL_EXPECT(t, d.probes >= 1);
  /* the same difference between documents of two profiles is named so */
  set(b.meta.profile, "scalar-f32/1");
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIFFERENT_PROFILE && d.stage == TL_QWEN3_STAGE_ATTN_OUT);
  set(b.meta.profile, "fast/4");

  /* the embedding before any layer */
  if (!TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &b, &f.scratch, &why))) return;
  plant(&b, TL_QWEN3_STAGE_EMBEDDING, -2, 2);
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIVERGED && d.stage == TL_QWEN3_STAGE_EMBEDDING &&
                   d.layer == -1 && d.pos == 2);

  /* a record missing from b is a difference at its place: here before a
   * changed one of the same stage, so the first position is the missing
   * record's although the changed one is met first */
  if (!TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &b, &f.scratch, &why))) return;
  b.records[find(&b, TL_QWEN3_STAGE_GATE, 0, 4)].variance += 1.0;
  i = find(&b, TL_QWEN3_STAGE_GATE, 0, 2);
  memmove(&b.records[i], &b.records[i + 1], (b.n_records - i - 1) * sizeof *b.records);
  b.n_records--;
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIVERGED && d.stage == TL_QWEN3_STAGE_GATE && d.layer == 0 &&
                   d.pos == 2 && d.index_b == SIZE_MAX && d.only_a == 1 && d.differing == 1);
  /* ... and a record twice is refused */
  b.records[b.n_records - 1] = b.records[0];
  TL_EXPECT_STATUS(t, tl_observe_compare(&a, &b, &cmp, &d, &why), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, why != NULL);

  /* another prompt or artifact is not compared */
  if (!TL_EXPECT_OK(t, tl_observe_read(doc_a, len, &b, &f.scratch, &why))) return;
  b.meta.n_ids--;
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIFFERENT_INPUT && strcmp(d.input, "prompt") == 0);
  b.meta.n_ids++;
  b.meta.artifact[5] ^= 1;
  TL_EXPECT_OK(t, tl_observe_compare(&a, &b, &cmp, &d, &why));
  TL_EXPECT(t, d.verdict == TL_OBSERVE_DIFFERENT_INPUT && strcmp(d.input, "artifact") == 0);
}

/* The bisection alone: no layer_out records means every layer is scanned;
 * a layer_out that differs narrows the scan to its layer. */
typedef struct states {
  int s[TL_QWEN3_STAGE_COUNT][5]; /* layer + 1 */
} states;
static int state_of(void *ctx, tl_qwen3_stage s, int32_t layer) {
  return ((states *)ctx)->s[s][layer + 1];
}

static void bisection_as_verify(tl_test_ctx *t) {
  states st;
  tl_qwen3_stage s;
  int32_t l;
  size_t probes;
  memset(&st, 0, sizeof st);
  TL_EXPECT(t, !tl_qwen3_first_divergence(4, state_of, &st, &s, &l, &probes));
  st.s[TL_QWEN3_STAGE_UP][3] = 2; /* layer 2, no layer_out anywhere */
  TL_EXPECT(t, tl_qwen3_first_divergence(4, state_of, &st, &s, &l, &probes));
  TL_EXPECT(t, s == TL_QWEN3_STAGE_UP && l == 2 && probes == 1);
  for (int i = 0; i < 4; i++) st.s[TL_QWEN3_STAGE_LAYER_OUT][i + 1] = i >= 2 ? 2 : 1;
  st.s[TL_QWEN3_STAGE_Q][1] = 2; /* layer 0's q differs but its output agrees: past */
  TL_EXPECT(t, tl_qwen3_first_divergence(4, state_of, &st, &s, &l, &probes));
  TL_EXPECT(t, s == TL_QWEN3_STAGE_UP && l == 2 && probes == 2);
  st.s[TL_QWEN3_STAGE_EMBEDDING][0] = 2;
  TL_EXPECT(t, tl_qwen3_first_divergence(4, state_of, &st, &s, &l, &probes));
  TL_EXPECT(t, s == TL_QWEN3_STAGE_EMBEDDING && l == -1 && probes == 0);
}

static const tl_test_case cases[] = {
    TL_CASE(row_summaries_by_hand),
    TL_CASE(empty_and_all_masked_rows),
    TL_CASE(digest_is_of_canonical_bytes),
    TL_CASE(record_equal_sees_every_field),
    TL_CASE(sink_records_every_capture_in_order),
    TL_CASE(sink_stops_at_its_capacity),
    TL_CASE(document_round_trip),
    TL_CASE(reader_refuses_bad_documents),
    TL_CASE(reader_bounds_what_a_document_declares),
    TL_CASE(compare_locates_a_planted_difference),
    TL_CASE(bisection_as_verify),
};
TL_SUITE(observe, cases);
