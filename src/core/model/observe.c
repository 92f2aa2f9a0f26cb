/* Observation records and the tinylm.observe/1 document (observe.h,
 * docs/observe.md). */
#include "model/observe.h"

#include <string.h>

#include "bytes.h"
#include "cbor/cbor.h"
#include "hash/blake3.h"

/* ---- one row --------------------------------------------------------- */

void tl_observe_row(const float *data, size_t n, tl_observe_record *r) {
  uint8_t buf[256];
  size_t fill = 0, k = 0;
  double lo = 0.0, hi = 0.0, sum = 0.0, sq = 0.0, var = 0.0, mean = 0.0;
  tl_blake3_hasher h;
  tl_blake3_hasher_init(&h);
  for (size_t i = 0; i < n; i++) {
    float x = data[i];
    /* canonical bytes: little-endian, every NaN the quiet NaN 0x7fc00000 */
    tl_store_le32(buf + fill, x != x ? 0x7fc00000u : tl_f32_to_bits(x));
    fill += 4;
    if (fill == sizeof buf) {
      tl_blake3_hasher_update(&h, buf, fill);
      fill = 0;
    }
    if (x - x != 0.0f) continue; /* not finite: counted, not summarised */
    if (k == 0 || x < lo) lo = x;
    if (k == 0 || x > hi) hi = x;
    sum += (double)x;
    sq += (double)x * (double)x;
    k++;
  }
  tl_blake3_hasher_update(&h, buf, fill);
  tl_blake3_hasher_finalize(&h, r->blake3, sizeof r->blake3);
  if (k > 0) {
    mean = sum / (double)k;
    for (size_t i = 0; i < n; i++) {
      double x = (double)data[i], d;
      if (data[i] - data[i] != 0.0f) continue;
      d = x - mean;
      var += d * d;
    }
    var /= (double)k;
  }
  r->count = n;
  r->nonfinite = n - k;
  r->min = lo;
  r->max = hi;
  r->l2 = __builtin_sqrt(sq);
  r->mean = mean;
  r->variance = var;
}

/* ---- the sink ---------------------------------------------------------- */

void tl_observer_init(tl_observer *o, tl_observe_record *records, size_t cap) {
  o->records = records;
  o->cap = cap;
  o->n = 0;
  o->status = TL_OK;
}

static bool observe_wants(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos) {
  (void)ctx;
  (void)stage;
  (void)layer;
  (void)pos;
  return true;
}

static void observe_row(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
                        const float *data, size_t n) {
  tl_observer *o = ctx;
  tl_observe_record *r;
  if (o->n == o->cap) {
    o->status = TL_ERR_BOUNDS;
    return;
  }
  r = &o->records[o->n++];
  r->stage = stage;
  r->layer = layer;
  r->pos = pos;
  tl_observe_row(data, n, r);
}

tl_qwen3_capture tl_observer_capture(tl_observer *o) {
  tl_qwen3_capture c = {observe_wants, observe_row, o};
  return c;
}

size_t tl_observe_records_max(const tl_qwen3_config *c, size_t n) {
  /* embedding, final_norm, logits, and each layer's stages, per token */
  size_t per = (size_t)c->layers;
  if (per > (SIZE_MAX - 3) / TL_OBSERVE_LAYER_STAGES) return SIZE_MAX;
  per = per * TL_OBSERVE_LAYER_STAGES + 3;
  return n > SIZE_MAX / per ? SIZE_MAX : n * per;
}

/* ---- writing ----------------------------------------------------------- */

/* Per record: the map's keys (69 bytes), stage text (<= 14), layer and
 * position (<= 5 each), count and nonfinite (<= 9 each), the digest (34)
 * and five f64 bit patterns (<= 9 each): under 200. */
#define RECORD_BOUND 256u

size_t tl_observe_doc_bound(const tl_observe_meta *meta, size_t n) {
  size_t fixed = 1024, ids;
  if (meta->n_ids > (SIZE_MAX - fixed) / 5) return SIZE_MAX;
  ids = fixed + 5 * meta->n_ids;
  if (n > (SIZE_MAX - ids) / RECORD_BOUND) return SIZE_MAX;
  return ids + n * RECORD_BOUND;
}

static tl_status put_key(tl_cbor_writer *w, const char *key) {
  return tl_cbor_put_text(w, key, strlen(key));
}

static tl_status put_text_field(tl_cbor_writer *w, const char *key, const char *value) {
  put_key(w, key);
  return tl_cbor_put_text(w, value, strlen(value));
}

static tl_status put_double(tl_cbor_writer *w, const char *key, double v) {
  put_key(w, key);
  return tl_cbor_put_uint(w, tl_f64_to_bits(v));
}

/* Every map's keys are put in the deterministic order (by length, then
 * bytes), so that closing a map never copies its body (the records array
 * is most of the document). */
static void put_record(tl_cbor_writer *w, const tl_observe_record *r) {
  tl_cbor_begin_map(w, 11);
  put_double(w, "l2", r->l2);
  put_double(w, "max", r->max);
  put_double(w, "min", r->min);
  put_double(w, "mean", r->mean);
  put_key(w, "count");
  tl_cbor_put_uint(w, r->count);
  put_key(w, "layer");
  if (r->layer < 0) tl_cbor_put_null(w);
  else tl_cbor_put_uint(w, (uint64_t)r->layer);
  put_text_field(w, "stage", tl_qwen3_stage_name(r->stage));
  put_key(w, "blake3");
  tl_cbor_put_bytes(w, r->blake3, sizeof r->blake3);
  put_key(w, "position");
  tl_cbor_put_uint(w, r->pos);
  put_double(w, "variance", r->variance);
  put_key(w, "nonfinite");
  tl_cbor_put_uint(w, r->nonfinite);
  tl_cbor_end_map(w);
}

tl_status tl_observe_write(const tl_observe_meta *meta, const tl_observe_record *records,
                           size_t n, uint8_t *buf, size_t cap, size_t *len, tl_arena *scratch) {
  tl_cbor_writer w;
  tl_arena_mark mark;
  tl_status st;
  if (meta == NULL || (records == NULL && n != 0) || len == NULL || scratch == NULL ||
      (meta->ids == NULL && meta->n_ids != 0))
    return TL_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i++)
    if ((unsigned)records[i].stage >= TL_QWEN3_STAGE_COUNT) return TL_ERR_INVALID_ARGUMENT;
  mark = tl_arena_mark_now(scratch);
  st = tl_cbor_writer_init(&w, buf, cap, scratch);
  if (st != TL_OK) return st;
  tl_cbor_begin_map(&w, 6);
  put_key(&w, "model");
  tl_cbor_begin_map(&w, 2);
  put_key(&w, "layers");
  tl_cbor_put_uint(&w, meta->layers);
  put_key(&w, "artifact");
  tl_cbor_put_bytes(&w, meta->artifact, sizeof meta->artifact);
  tl_cbor_end_map(&w);
  put_text_field(&w, "format", TL_OBSERVE_FORMAT);
  put_key(&w, "prompt");
  tl_cbor_begin_map(&w, 1);
  put_key(&w, "ids");
  tl_cbor_begin_array(&w, meta->n_ids);
  for (size_t i = 0; i < meta->n_ids; i++) tl_cbor_put_uint(&w, meta->ids[i]);
  tl_cbor_end_array(&w);
  tl_cbor_end_map(&w);
  put_key(&w, "records");
  tl_cbor_begin_array(&w, n);
  for (size_t i = 0; i < n; i++) put_record(&w, &records[i]);
  tl_cbor_end_array(&w);
  put_key(&w, "producer");
  tl_cbor_begin_map(&w, 4);
  put_text_field(&w, "lane", meta->lane);
  put_text_field(&w, "name", "tinylm");
  put_text_field(&w, "profile", meta->profile);
  put_text_field(&w, "version", meta->version);
  tl_cbor_end_map(&w);
  put_key(&w, "execution");
  tl_cbor_begin_map(&w, 3);
  put_text_field(&w, "isa", meta->isa);
  put_text_field(&w, "host", meta->host);
  put_key(&w, "threads");
  tl_cbor_put_uint(&w, meta->threads);
  tl_cbor_end_map(&w);
  tl_cbor_end_map(&w);
  st = tl_cbor_writer_finish(&w, len);
  tl_arena_rewind(scratch, mark);
  return st == TL_ERR_INVALID_UTF8 ? TL_ERR_INVALID_ARGUMENT : st;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct reader {
  tl_cbor_reader r;
  const char *why;
} reader;

static tl_status bad(reader *rd, const char *why) {
  if (rd->why == NULL) rd->why = why;
  return TL_ERR_INVALID_ARGUMENT;
}

/* A CBOR fault is the reader's; a wrong type is the schema's. */
static tl_status schema(reader *rd, tl_status st, const char *field) {
  if (st == TL_ERR_INVALID_CBOR && rd->r.fault.kind == TL_CBOR_FAULT_TYPE) return bad(rd, field);
  if (st == TL_ERR_INVALID_CBOR && rd->why == NULL) rd->why = tl_cbor_fault_name(rd->r.fault.kind);
  if (st != TL_OK && rd->why == NULL) rd->why = field;
  return st;
}

/* Reads a map's head; *n its pairs. */
static tl_status read_map(reader *rd, size_t *n, const char *field) {
  return schema(rd, tl_cbor_expect_map(&rd->r, n), field);
}

static tl_status read_key(reader *rd, const char **k, size_t *n) {
  return schema(rd, tl_cbor_expect_text(&rd->r, k, n), "a map key");
}

#define KEY_IS(k, n, z) tl_cbor_text_is((k), (n), (z))

/* One field of a map: its key, how its value reads, where it goes (cap:
 * a text's bytes), and the name a refusal gives. */
typedef enum { F_TEXT, F_U32, F_U64, F_F64, F_DIGEST, F_STAGE, F_LAYER } field_kind;
typedef struct field {
  const char *key;
  field_kind kind;
  void *out;
  size_t cap;
  const char *name;
} field;

static tl_status read_value(reader *rd, const field *f) {
  const char *s;
  const uint8_t *p;
  size_t n;
  uint64_t v = 0;
  tl_cbor_item it;
  tl_status st;
  switch (f->kind) {
    case F_TEXT:
      st = schema(rd, tl_cbor_expect_text(&rd->r, &s, &n), f->name);
      if (st != TL_OK) return st;
      if (n >= f->cap || memchr(s, 0, n) != NULL) return bad(rd, f->name);
      memcpy(f->out, s, n);
      ((char *)f->out)[n] = 0;
      return TL_OK;
    case F_DIGEST:
      st = schema(rd, tl_cbor_expect_bytes(&rd->r, &p, &n), f->name);
      if (st == TL_OK && n != 32) st = bad(rd, f->name);
      if (st == TL_OK) memcpy(f->out, p, 32);
      return st;
    case F_STAGE:
      st = schema(rd, tl_cbor_expect_text(&rd->r, &s, &n), f->name);
      if (st == TL_OK) *(tl_qwen3_stage *)f->out = tl_qwen3_stage_find(s, n);
      if (st == TL_OK && *(tl_qwen3_stage *)f->out == TL_QWEN3_STAGE_COUNT) st = bad(rd, f->name);
      return st;
    case F_LAYER: /* null outside the layers */
      st = schema(rd, tl_cbor_peek(&rd->r, &it), f->name);
      if (st == TL_OK && it.type == TL_CBOR_NULL) {
        *(int32_t *)f->out = -1;
        return schema(rd, tl_cbor_expect_null(&rd->r), f->name);
      }
      break;
    default:
      break;
  }
  st = schema(rd, tl_cbor_expect_uint(&rd->r, &v), f->name);
  if (st != TL_OK) return st;
  if (f->kind == F_U64) *(uint64_t *)f->out = v;
  else if (f->kind == F_F64) memcpy(f->out, &v, sizeof v);
  else if (v > (f->kind == F_LAYER ? (uint64_t)INT32_MAX : UINT32_MAX)) return bad(rd, f->name);
  else if (f->kind == F_LAYER) *(int32_t *)f->out = (int32_t)v;
  else *(uint32_t *)f->out = (uint32_t)v;
  return TL_OK;
}

/* A map of the n fields f, each required once (a key twice is the CBOR
 * reader's duplicate_key); other keys are skipped when unknown is NULL,
 * else refused with it. */
static tl_status read_fields(reader *rd, const char *what, const char *missing,
                             const char *unknown, const field *f, size_t n) {
  size_t pairs = 0;
  uint32_t seen = 0;
  tl_status st = read_map(rd, &pairs, what);
  for (size_t i = 0; i < pairs && st == TL_OK; i++) {
    const char *k;
    size_t kn, j = 0;
    if ((st = read_key(rd, &k, &kn)) != TL_OK) break;
    while (j < n && !KEY_IS(k, kn, f[j].key)) j++;
    if (j < n) {
      st = read_value(rd, &f[j]);
      seen |= 1u << j;
    } else if (unknown == NULL) {
      st = schema(rd, tl_cbor_skip(&rd->r), what);
    } else {
      st = bad(rd, unknown);
    }
  }
  return st == TL_OK && seen != (1u << n) - 1 ? bad(rd, missing) : st;
}

static tl_status read_record(reader *rd, uint32_t layers, size_t n_ids, tl_observe_record *r) {
  const field f[] = {
      {"stage", F_STAGE, &r->stage, 0, "record stage: not a stage's name"},
      {"layer", F_LAYER, &r->layer, 0, "record layer"},
      {"position", F_U32, &r->pos, 0, "record position"},
      {"count", F_U64, &r->count, 0, "record count"},
      {"nonfinite", F_U64, &r->nonfinite, 0, "record nonfinite"},
      {"blake3", F_DIGEST, r->blake3, 0, "record blake3"},
      {"min", F_F64, &r->min, 0, "record min"},
      {"max", F_F64, &r->max, 0, "record max"},
      {"l2", F_F64, &r->l2, 0, "record l2"},
      {"mean", F_F64, &r->mean, 0, "record mean"},
      {"variance", F_F64, &r->variance, 0, "record variance"}};
  tl_status st = read_fields(rd, "a record", "a record: a field is missing",
                             "a record: unknown field", f, sizeof f / sizeof f[0]);
  if (st != TL_OK) return st;
  if (r->layer >= 0 && (uint32_t)r->layer >= layers)
    return bad(rd, "record layer: past the model's layers");
  if (r->pos >= n_ids) return bad(rd, "record position: past the prompt");
  if (r->nonfinite > r->count) return bad(rd, "record nonfinite: more than count");
  /* stages inside a layer have one; the others none */
  if ((r->layer < 0) != (r->stage == TL_QWEN3_STAGE_EMBEDDING ||
                         r->stage == TL_QWEN3_STAGE_FINAL_NORM || r->stage == TL_QWEN3_STAGE_LOGITS))
    return bad(rd, "record layer: does not fit the stage");
  return TL_OK;
}

/* producer and execution: unknown fields are skipped, every known one
 * required; model: exactly its two. */
static tl_status read_producer(reader *rd, tl_observe_meta *m) {
  char name[16];
  const field f[] = {{"name", F_TEXT, name, sizeof name, "producer name"},
                     {"version", F_TEXT, m->version, sizeof m->version, "producer version"},
                     {"lane", F_TEXT, m->lane, sizeof m->lane, "producer lane"},
                     {"profile", F_TEXT, m->profile, sizeof m->profile, "producer profile"}};
  tl_status st = read_fields(rd, "producer", "producer: a field is missing", NULL, f, 4);
  return st == TL_OK && strcmp(name, "tinylm") != 0 ? bad(rd, "producer name: not tinylm") : st;
}

static tl_status read_execution(reader *rd, tl_observe_meta *m) {
  const field f[] = {{"host", F_TEXT, m->host, sizeof m->host, "execution host"},
                     {"isa", F_TEXT, m->isa, sizeof m->isa, "execution isa"},
                     {"threads", F_U32, &m->threads, 0, "execution threads"}};
  return read_fields(rd, "execution", "execution: a field is missing", NULL, f, 3);
}

static tl_status read_model(reader *rd, tl_observe_meta *m) {
  const field f[] = {{"artifact", F_DIGEST, m->artifact, 0, "model artifact"},
                     {"layers", F_U32, &m->layers, 0, "model layers"}};
  return read_fields(rd, "model", "model: a field is missing", "model: unknown field", f, 2);
}

static tl_status read_prompt(reader *rd, tl_observe_meta *m, tl_arena *arena) {
  size_t pairs = 0, n = 0;
  const char *k;
  size_t kn;
  uint32_t *ids;
  void *p;
  tl_status st = read_map(rd, &pairs, "prompt");
  if (st == TL_OK && pairs != 1) return bad(rd, "prompt: one field, ids");
  if (st == TL_OK) st = read_key(rd, &k, &kn);
  if (st == TL_OK && !KEY_IS(k, kn, "ids")) return bad(rd, "prompt: one field, ids");
  if (st == TL_OK) st = schema(rd, tl_cbor_expect_array(&rd->r, &n), "prompt ids");
  if (st != TL_OK) return st;
  /* each id takes at least one byte of the document */
  if (n > rd->r.len - rd->r.pos) return bad(rd, "prompt ids: longer than the document");
  st = tl_arena_alloc_array(arena, n ? n : 1, sizeof *ids, 4, &p);
  if (st != TL_OK) return st;
  ids = p;
  for (size_t i = 0; i < n && st == TL_OK; i++)
    st = read_value(rd, &(field){"ids", F_U32, &ids[i], 0, "prompt ids"});
  m->ids = ids;
  m->n_ids = n;
  return st;
}

tl_status tl_observe_read(const uint8_t *buf, size_t len, tl_observe_doc *doc, tl_arena *arena,
                          const char **why) {
  reader rd;
  size_t pairs = 0, n = 0;
  unsigned seen = 0;
  tl_status st;
  if (why != NULL) *why = NULL;
  if ((buf == NULL && len != 0) || doc == NULL || arena == NULL) return TL_ERR_INVALID_ARGUMENT;
  memset(doc, 0, sizeof *doc);
  memset(&rd, 0, sizeof rd);
  st = tl_cbor_reader_init(&rd.r, buf, len, NULL);
  if (st == TL_OK) st = read_map(&rd, &pairs, "the document is not a map");
  /* format first, records last: records need the model's layers and the
   * prompt's length (map keys sort by length, then bytes) */
  for (size_t i = 0; i < pairs && st == TL_OK; i++) {
    const char *k;
    size_t kn;
    if ((st = read_key(&rd, &k, &kn)) != TL_OK) break;
    if (KEY_IS(k, kn, "format")) {
      char f[32];
      st = read_value(&rd, &(field){"format", F_TEXT, f, sizeof f, "format"});
      if (st == TL_OK && strcmp(f, TL_OBSERVE_FORMAT) != 0) st = bad(&rd, "format: not " TL_OBSERVE_FORMAT);
      seen |= 1;
    } else if (KEY_IS(k, kn, "producer")) {
      st = read_producer(&rd, &doc->meta);
      seen |= 2;
    } else if (KEY_IS(k, kn, "execution")) {
      st = read_execution(&rd, &doc->meta);
      seen |= 4;
    } else if (KEY_IS(k, kn, "model")) {
      st = read_model(&rd, &doc->meta);
      seen |= 8;
    } else if (KEY_IS(k, kn, "prompt")) {
      st = read_prompt(&rd, &doc->meta, arena);
      seen |= 16;
    } else if (KEY_IS(k, kn, "records")) {
      void *p;
      if ((seen & 24) != 24) {
        st = bad(&rd, "records: before model and prompt");
        break;
      }
      st = schema(&rd, tl_cbor_expect_array(&rd.r, &n), "records");
      if (st == TL_OK && n > (rd.r.len - rd.r.pos) / 64)
        st = bad(&rd, "records: more than the document holds");
      if (st == TL_OK)
        st = tl_arena_alloc_array(arena, n ? n : 1, sizeof *doc->records, 8, &p);
      if (st != TL_OK) break;
      doc->records = p;
      for (size_t j = 0; j < n && st == TL_OK; j++)
        st = read_record(&rd, doc->meta.layers, doc->meta.n_ids, &doc->records[j]);
      doc->n_records = n;
      seen |= 32;
    } else {
      st = bad(&rd, "the document: unknown field");
    }
  }
  if (st == TL_OK && seen != 63) st = bad(&rd, "the document: a field is missing");
  /* The model's layers and the prompt's positions size the comparison
   * (tl_observe_compare_bound): a document justifies them by its records.
   * A whole pass holds 3 + 20 per layer at each position; one holding
   * fewer than layers x positions (at least one position) is refused
   * before anything is sized by what it declares. */
  if (st == TL_OK && doc->meta.layers > doc->n_records / (doc->meta.n_ids ? doc->meta.n_ids : 1))
    st = bad(&rd, "model layers: more than the records hold (layers x positions > records)");
  if (st == TL_OK) st = schema(&rd, tl_cbor_reader_finish(&rd.r), "the document");
  if (st == TL_ERR_INVALID_CBOR && rd.why == NULL) rd.why = tl_cbor_fault_name(rd.r.fault.kind);
  if (why != NULL) *why = rd.why;
  return st;
}

/* ---- the first divergence ---------------------------------------------- */

bool tl_qwen3_first_divergence(uint32_t layers, tl_qwen3_capture_state state, void *ctx,
                               tl_qwen3_stage *stage, int32_t *layer, size_t *probes) {
  long lo = 0, hi = (long)layers;
  *probes = 0;
  if (state(ctx, TL_QWEN3_STAGE_EMBEDDING, -1) == 2) {
    *stage = TL_QWEN3_STAGE_EMBEDDING;
    *layer = -1;
    return true;
  }
  while (lo < hi) { /* the smallest layer whose layer_out differs */
    long mid = (lo + hi) / 2;
    int s = state(ctx, TL_QWEN3_STAGE_LAYER_OUT, (int32_t)mid);
    (*probes)++;
    if (s == 0) break; /* no residual checkpoints: scan below */
    if (s == 2) hi = mid;
    else lo = mid + 1;
  }
  for (long l = (lo < (long)layers ? lo : 0); l <= (long)layers; l++) {
    int32_t li = l < (long)layers ? (int32_t)l : -1;
    for (int s = 0; s < TL_QWEN3_STAGE_COUNT; s++)
      if (state(ctx, (tl_qwen3_stage)s, li) == 2) {
        *stage = (tl_qwen3_stage)s;
        *layer = li;
        return true;
      }
  }
  return false;
}

/* ---- comparing --------------------------------------------------------- */

/* Per (stage, layer): 0 no record, 1 all equal, 2 some differ; and the
 * first differing position's records. */
typedef struct group {
  uint8_t state;
  uint32_t pos;
  size_t ia, ib;
} group;

typedef struct compare_ctx {
  group *groups;
  uint32_t layers;
} compare_ctx;

static size_t group_of(uint32_t layers, tl_qwen3_stage s, int32_t layer) {
  return (size_t)s * ((size_t)layers + 1) + (size_t)(layer + 1);
}

static int group_state(void *p, tl_qwen3_stage s, int32_t layer) {
  const compare_ctx *c = p;
  return c->groups[group_of(c->layers, s, layer)].state;
}

bool tl_observe_record_equal(const tl_observe_record *a, const tl_observe_record *b) {
  return a->stage == b->stage && a->layer == b->layer && a->pos == b->pos &&
         a->count == b->count && a->nonfinite == b->nonfinite &&
         memcmp(a->blake3, b->blake3, sizeof a->blake3) == 0 &&
         tl_f64_to_bits(a->min) == tl_f64_to_bits(b->min) &&
         tl_f64_to_bits(a->max) == tl_f64_to_bits(b->max) &&
         tl_f64_to_bits(a->l2) == tl_f64_to_bits(b->l2) &&
         tl_f64_to_bits(a->mean) == tl_f64_to_bits(b->mean) &&
         tl_f64_to_bits(a->variance) == tl_f64_to_bits(b->variance);
}

/* Marks (stage, layer, pos) as differing with records ia and ib. */
static void differs(group *g, uint32_t pos, size_t ia, size_t ib) {
  if (g->state == 2 && g->pos <= pos) return;
  g->state = 2;
  g->pos = pos;
  g->ia = ia;
  g->ib = ib;
}

/* The index's dimensions: groups (stage, layer) and keys (group, position). */
static bool compare_dims(const tl_observe_meta *m, size_t *n_groups, size_t *n_keys) {
  *n_groups = (size_t)TL_QWEN3_STAGE_COUNT * ((size_t)m->layers + 1);
  if (m->n_ids != 0 && *n_groups > SIZE_MAX / m->n_ids) return false;
  *n_keys = *n_groups * m->n_ids;
  return true;
}

size_t tl_observe_compare_bound(const tl_observe_doc *a) {
  size_t n_groups, n_keys, total = 256; /* alignment */
  if (!compare_dims(&a->meta, &n_groups, &n_keys) || n_groups > SIZE_MAX / 64 / sizeof(group) ||
      n_keys > SIZE_MAX / 4 / sizeof(uint32_t) || a->n_records > SIZE_MAX / 4)
    return SIZE_MAX;
  total += n_groups * sizeof(group) + n_keys * sizeof(uint32_t) + a->n_records;
  return total;
}

tl_status tl_observe_compare(const tl_observe_doc *a, const tl_observe_doc *b,
                             tl_arena *scratch, tl_observe_diff *d, const char **why) {
  const tl_observe_meta *ma, *mb;
  tl_arena_mark mark;
  compare_ctx c;
  uint32_t *index; /* a's record + 1 by (stage, layer, position); 0: none */
  bool *matched;
  size_t n_groups, n_keys;
  void *p;
  tl_status st;
  if (why != NULL) *why = NULL;
  if (a == NULL || b == NULL || scratch == NULL || d == NULL) return TL_ERR_INVALID_ARGUMENT;
  ma = &a->meta;
  mb = &b->meta;
  memset(d, 0, sizeof *d);
  d->index_a = d->index_b = SIZE_MAX;
  d->layer = -1;
  d->input = memcmp(ma->artifact, mb->artifact, 32) != 0 ? "artifact"
             : ma->layers != mb->layers                  ? "layers"
             : ma->n_ids != mb->n_ids ||
                     (ma->n_ids && memcmp(ma->ids, mb->ids, ma->n_ids * sizeof *ma->ids) != 0)
                 ? "prompt"
                 : NULL;
  if (d->input != NULL) {
    d->verdict = TL_OBSERVE_DIFFERENT_INPUT;
    return TL_OK;
  }
  if (a->n_records >= UINT32_MAX) return TL_ERR_INTEGER_OVERFLOW;
  if (!compare_dims(ma, &n_groups, &n_keys)) return TL_ERR_INTEGER_OVERFLOW;
  mark = tl_arena_mark_now(scratch);
  c.layers = ma->layers;
  st = tl_arena_alloc_array(scratch, n_groups, sizeof *c.groups, 8, &p);
  c.groups = p;
  if (st == TL_OK) st = tl_arena_alloc_array(scratch, n_keys ? n_keys : 1, sizeof *index, 4, &p);
  index = p;
  if (st == TL_OK)
    st = tl_arena_alloc_array(scratch, a->n_records ? a->n_records : 1, sizeof *matched, 1, &p);
  matched = p;
  if (st != TL_OK) goto done;
  memset(c.groups, 0, n_groups * sizeof *c.groups);
  memset(index, 0, n_keys * sizeof *index);
  memset(matched, 0, a->n_records * sizeof *matched);
  /* The reader checked every layer and position against the model and
   * prompt, which both documents share. */
  for (size_t i = 0; i < a->n_records; i++) {
    const tl_observe_record *r = &a->records[i];
    size_t g = group_of(ma->layers, r->stage, r->layer), k = g * ma->n_ids + r->pos;
    if (index[k] != 0) {
      if (why != NULL) *why = "the first document holds a record twice";
      st = TL_ERR_INVALID_ARGUMENT;
      goto done;
    }
    index[k] = (uint32_t)i + 1;
    if (c.groups[g].state == 0) c.groups[g].state = 1;
  }
  for (size_t i = 0; i < b->n_records; i++) {
    const tl_observe_record *r = &b->records[i];
    size_t g = group_of(ma->layers, r->stage, r->layer), k = g * ma->n_ids + r->pos;
    size_t ia = index[k] ? index[k] - 1 : SIZE_MAX;
    if (ia == SIZE_MAX) {
      d->only_b++;
      differs(&c.groups[g], r->pos, SIZE_MAX, i);
      continue;
    }
    if (matched[ia]) {
      if (why != NULL) *why = "the second document holds a record twice";
      st = TL_ERR_INVALID_ARGUMENT;
      goto done;
    }
    matched[ia] = true;
    d->compared++;
    if (!tl_observe_record_equal(&a->records[ia], r)) {
      d->differing++;
      differs(&c.groups[g], r->pos, ia, i);
    }
  }
  for (size_t i = 0; i < a->n_records; i++) {
    const tl_observe_record *r = &a->records[i];
    if (matched[i]) continue;
    d->only_a++;
    differs(&c.groups[group_of(ma->layers, r->stage, r->layer)], r->pos, i, SIZE_MAX);
  }
  if (tl_qwen3_first_divergence(ma->layers, group_state, &c, &d->stage, &d->layer, &d->probes)) {
    const group *g = &c.groups[group_of(ma->layers, d->stage, d->layer)];
    d->pos = g->pos;
    d->index_a = g->ia;
    d->index_b = g->ib;
    d->verdict = strcmp(ma->profile, mb->profile) != 0 ? TL_OBSERVE_DIFFERENT_PROFILE
                                                      : TL_OBSERVE_DIVERGED;
  }
done:
  tl_arena_rewind(scratch, mark);
  return st;
}
