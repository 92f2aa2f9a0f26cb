/* The public API (include/tinylm.h, docs/api.md) on the native host:
 * handle tables (src/core/api/handle.h) behind one mutex, objects that
 * live while a handle or a user holds them, and the glue to the session,
 * rendering, encoding and the generation turn that the CLI uses too.
 * The wasm32 API modules build this file too (docs/web.md, Modules): use
 * only the C library web/wasm/hosted provides (no jansson, files or
 * threads beyond the one mutex).
 *
 * Lifetimes: each object counts its references (its handle, the objects
 * built on it, the calls in flight). Closing ends the handle at once, so a
 * later use is TL_ERR_STALE_HANDLE; the object goes when the last
 * reference does. The mutex guards the tables, the counts, the error
 * records and the busy flags, never a long computation. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handle.h"
#include "bytes.h"
#include "chat_render.h"
#include "encoder.h"
#include "gen/think.h"
#include "grammar/grammar.h"
#include "json/json.h"
#include "kernels/parallel.h"
#include "model.h"
#include "model/observe.h"
#include "session.h"
#include "tinylm.h"
#include "turn.h"
#include "utf8.h"

/* Objects of every kind start with this. */
typedef struct api_obj {
  uint32_t refs;
  tl_error err;
  void (*destroy)(struct api_obj *o);
} api_obj;

typedef struct api_model {
  api_obj o;
  tl_native_model m;
  char name[4096]; /* the path, or "model" for bytes: errors name it */
} api_model;

typedef struct api_session {
  api_obj o;
  api_model *model; /* a reference */
  tl_session s;
  bool busy; /* a generation runs on it */
  uint32_t *cached; /* the ids whose K/V the cache holds: [0, s.cache.len) */
  /* The observation document a size query computed, kept for the call
   * that fetches it (tl_session_observe), with the prompt it is of. */
  uint8_t *observed;
  size_t observed_len;
  uint32_t *observed_ids;
  size_t observed_n;
} api_session;

typedef struct api_gen {
  api_obj o;
  api_session *session; /* a reference */
  atomic_int cancel;
  int state;  /* 0 new, 1 running or refused, 2 ran (under g_lock) */
  bool ran;   /* the turn ran (run_turn's thread) */
  tl_turn t;
  size_t n_prompt;
  char receipt_hex[65];
} api_gen;

typedef struct api_grammar {
  api_obj o;
  void *mem; /* the arena the grammar lives in */
  const tl_grammar *g;
} api_grammar;

#define MAX_MODELS 64
#define MAX_SESSIONS 256
#define MAX_GENERATIONS 1024
#define MAX_GRAMMARS 256

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool g_init;
static bool g_tables_ready;
static tl_handle_slot g_model_slots[MAX_MODELS], g_session_slots[MAX_SESSIONS],
    g_gen_slots[MAX_GENERATIONS], g_grammar_slots[MAX_GRAMMARS];
static tl_handle_table g_tables[4]; /* indexed by kind */
static _Thread_local tl_error t_last;

uint32_t tl_abi_version(void) { return TL_ABI_VERSION; }

/* An error record with nothing but its defaults. */
static tl_error no_detail(void) {
  tl_error e;
  memset(&e, 0, sizeof e);
  e.layer = -1;
  return e;
}

static tl_error index_detail(uint64_t index) {
  tl_error e = no_detail();
  e.index = index;
  return e;
}

/* Records a failure (detail's fields, status st, the message) on o (may
 * be NULL) and as this thread's last. */
static tl_status fail_at(api_obj *o, tl_status st, tl_error e, const char *fmt, ...) {
  va_list ap;
  e.status = st;
  va_start(ap, fmt);
  vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  t_last = e;
  if (o != NULL) {
    pthread_mutex_lock(&g_lock);
    o->err = e;
    pthread_mutex_unlock(&g_lock);
  }
  return st;
}

#define FAIL(o, st, ...) fail_at((o), (st), no_detail(), __VA_ARGS__)

static tl_status handle_fail(tl_status st, uint32_t h) {
  return FAIL(NULL, st, "handle 0x%08x %s", (unsigned)h,
              st == TL_ERR_STALE_HANDLE ? "was closed (or its slot reused)"
                                        : "was never issued (or is of another kind)");
}

tl_status tl_api_init(uint32_t abi) {
  if (abi != TL_ABI_VERSION)
    return FAIL(NULL, TL_ERR_UNSUPPORTED_ABI,
                "the caller was built for ABI %u; this library (%s) has ABI %u",
                (unsigned)abi, TL_VERSION_STRING, (unsigned)TL_ABI_VERSION);
  pthread_mutex_lock(&g_lock);
  if (!g_tables_ready) {
    tl_handle_table_init(&g_tables[TL_HANDLE_MODEL], TL_HANDLE_MODEL, g_model_slots, MAX_MODELS);
    tl_handle_table_init(&g_tables[TL_HANDLE_SESSION], TL_HANDLE_SESSION, g_session_slots,
                         MAX_SESSIONS);
    tl_handle_table_init(&g_tables[TL_HANDLE_GENERATION], TL_HANDLE_GENERATION, g_gen_slots,
                         MAX_GENERATIONS);
    tl_handle_table_init(&g_tables[TL_HANDLE_GRAMMAR], TL_HANDLE_GRAMMAR, g_grammar_slots,
                         MAX_GRAMMARS);
    g_tables_ready = true;
  }
  pthread_mutex_unlock(&g_lock);
  atomic_store(&g_init, true);
  return TL_OK;
}

static tl_status check_init(void) {
  if (atomic_load(&g_init)) return TL_OK;
  return FAIL(NULL, TL_ERR_UNSUPPORTED_ABI,
              "tl_api_init(TL_ABI_VERSION) has not succeeded: no ABI agreed");
}

/* A reference to the live object behind h (of kind), or the typed error. */
static tl_status acquire(uint32_t kind, uint32_t h, void **out) {
  void *obj = NULL;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  pthread_mutex_lock(&g_lock);
  st = tl_handle_get(&g_tables[kind], h, &obj);
  if (st == TL_OK) ((api_obj *)obj)->refs++;
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) return handle_fail(st, h);
  *out = obj;
  return TL_OK;
}

static void drop(api_obj *o) {
  bool last;
  if (o == NULL) return;
  pthread_mutex_lock(&g_lock);
  last = --o->refs == 0;
  pthread_mutex_unlock(&g_lock);
  if (last) o->destroy(o);
}

/* Gives o (holding one reference, for the handle) a handle. */
static tl_status issue(uint32_t kind, api_obj *o, uint32_t *out) {
  tl_status st;
  pthread_mutex_lock(&g_lock);
  st = tl_handle_issue(&g_tables[kind], o, out);
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) {
    o->destroy(o);
    return FAIL(NULL, st, "too many open handles of this kind");
  }
  return TL_OK;
}

/* Ends handle h of kind and drops the handle's reference. */
static tl_status close_handle(uint32_t kind, uint32_t h) {
  void *obj = NULL;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  pthread_mutex_lock(&g_lock);
  st = tl_handle_release(&g_tables[kind], h, &obj);
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) return handle_fail(st, h);
  drop(obj);
  return TL_OK;
}

tl_status tl_error_detail(uint32_t handle, tl_error *out) {
  uint32_t kind = handle >> TL_HANDLE_KIND_SHIFT;
  void *obj = NULL;
  tl_status st;
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (handle == TL_NO_HANDLE) {
    *out = t_last;
    return TL_OK;
  }
  if (!atomic_load(&g_init)) {
    st = TL_ERR_INVALID_HANDLE;
  } else {
    pthread_mutex_lock(&g_lock);
    st = tl_handle_get(&g_tables[kind], handle, &obj);
    if (st == TL_OK) *out = ((api_obj *)obj)->err;
    pthread_mutex_unlock(&g_lock);
  }
  if (st != TL_OK) {
    memset(out, 0, sizeof *out);
    out->status = st;
    out->layer = -1;
    snprintf(out->message, sizeof out->message, "handle 0x%08x %s", (unsigned)handle,
             st == TL_ERR_STALE_HANDLE ? "was closed (or its slot reused)"
                                       : "was never issued (or is of another kind)");
  }
  return st;
}

/* ---- models ---- */

/* TL_ERR_IO, recorded on o, when the file m was opened from has changed
 * since (model.h): nothing computed from it is reported. */
static tl_status model_unchanged(api_obj *o, const api_model *m) {
  if (!tl_native_model_changed(&m->m)) return TL_OK;
  return FAIL(o, TL_ERR_IO, "%s changed while in use", m->name);
}

static void model_destroy(api_obj *o) {
  api_model *m = (api_model *)o;
  tl_native_model_close(&m->m);
  free(m);
}

/* Opens the file at path, or else bytes (taken: malloc'd, freed by the
 * model), as a model handle. */
static tl_status model_open(const char *path, const uint8_t *data, size_t len, bool take,
                            tl_model_handle *out) {
  api_model *m = calloc(1, sizeof *m);
  char err[4200];
  tl_status st;
  if (m == NULL) {
    if (take) free((void *)data);
    return FAIL(NULL, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  m->o.refs = 1;
  m->o.destroy = model_destroy;
  snprintf(m->name, sizeof m->name, "%s", path ? path : "model");
  st = path ? tl_native_model_open(path, &m->m, err, sizeof err)
            : tl_native_model_open_bytes(data, len, take, m->name, &m->m, err, sizeof err);
  if (st == TL_OK && !m->m.has_tensors) {
    tl_native_model_close(&m->m);
    snprintf(err, sizeof err, "%s: a tokenizer-only artifact has no weights", m->name);
    st = TL_ERR_INVALID_MODEL;
  }
  if (st != TL_OK) {
    free(m);
    return FAIL(NULL, st, "%s", err);
  }
  return issue(TL_HANDLE_MODEL, &m->o, out);
}

tl_status tl_model_open_bytes(const void *data, size_t len, uint32_t flags,
                              tl_model_handle *out) {
  uint8_t *copy;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (out == NULL || (data == NULL && len != 0) || (flags & ~TL_OPEN_BORROW) != 0)
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "tl_model_open_bytes: NULL out or data, or "
                "unknown flags 0x%x", (unsigned)flags);
  *out = TL_NO_HANDLE;
  if (flags & TL_OPEN_BORROW) return model_open(NULL, data, len, false, out);
  copy = malloc(len ? len : 1);
  if (copy == NULL)
    return FAIL(NULL, TL_ERR_OUT_OF_MEMORY, "out of memory for a %zu-byte copy", len);
  if (len) memcpy(copy, data, len);
  return model_open(NULL, copy, len, true, out);
}

tl_status tl_model_open_file(const char *path, tl_model_handle *out) {
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (path == NULL || out == NULL)
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "tl_model_open_file: NULL path or out");
  *out = TL_NO_HANDLE;
  return model_open(path, NULL, 0, false, out);
}

tl_status tl_model_open_reader(tl_read_fn read, void *ctx, tl_model_handle *out) {
  uint8_t header[TL_SLM_HEADER_LEN], *buf;
  uint64_t declared;
  size_t got = 0;
  int64_t n;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (read == NULL || out == NULL)
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "tl_model_open_reader: NULL read or out");
  *out = TL_NO_HANDLE;
  /* The header says how long the artifact is. */
  while (got < sizeof header && (n = read(ctx, got, header + got, sizeof header - got)) != 0) {
    if (n < 0 || (uint64_t)n > sizeof header - got)
      return FAIL(NULL, TL_ERR_IO, "the reader failed at byte %zu", got);
    got += (size_t)n;
  }
  if (tl_slm_declared_len(header, got, &declared) != TL_OK || declared < got)
    declared = got; /* not an artifact: the open says why */
  if (declared > SIZE_MAX)
    return FAIL(NULL, TL_ERR_INTEGER_OVERFLOW, "the header declares %llu bytes, more than "
                "this address space holds", (unsigned long long)declared);
  buf = malloc(declared ? (size_t)declared : 1);
  if (buf == NULL)
    return FAIL(NULL, TL_ERR_OUT_OF_MEMORY, "out of memory for %llu bytes",
                (unsigned long long)declared);
  memcpy(buf, header, got);
  while (got < declared && (n = read(ctx, got, buf + got, (size_t)declared - got)) != 0) {
    if (n < 0 || (uint64_t)n > declared - got) {
      free(buf);
      return FAIL(NULL, TL_ERR_IO, "the reader failed at byte %zu", got);
    }
    got += (size_t)n;
  }
  /* A short read is a truncated artifact: the open names it so. */
  return model_open(NULL, buf, got, true, out);
}

tl_status tl_model_close(tl_model_handle model) { return close_handle(TL_HANDLE_MODEL, model); }

bool tl_api_model_changed(uint32_t model) {
  api_model *m;
  bool changed;
  if (acquire(TL_HANDLE_MODEL, model, (void **)&m) != TL_OK) return false;
  changed = tl_native_model_changed(&m->m);
  drop(&m->o);
  return changed;
}

tl_status tl_model_artifact_id(tl_model_handle model, uint8_t id[32]) {
  api_model *m;
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  st = id == NULL ? FAIL(&m->o, TL_ERR_INVALID_ARGUMENT, "NULL id") : model_unchanged(&m->o, m);
  if (st == TL_OK) {
    /* on a shallow copy: the shared model is never written after its open
     * (sessions cache the id in their own copies) */
    tl_native_model copy = m->m;
    st = tl_native_model_artifact_id(&copy, id);
    if (st != TL_OK) st = FAIL(&m->o, st, "%s: cannot hash it, or it changed while in use",
                               m->name);
  }
  if (st == TL_OK) st = model_unchanged(&m->o, m);
  drop(&m->o);
  return st;
}

/* ---- sessions ---- */

static void forget_observed(api_session *s) {
  free(s->observed);
  free(s->observed_ids);
  s->observed = NULL;
  s->observed_ids = NULL;
  s->observed_len = s->observed_n = 0;
}

static void session_destroy(api_obj *o) {
  api_session *s = (api_session *)o;
  free(s->cached);
  forget_observed(s);
  tl_session_close(&s->s);
  drop(&s->model->o);
  free(s);
}

/* The session on its lane with its plan, nothing large allocated. */
static tl_status session_prepare(api_model *m, const tl_session_options *opts,
                                 tl_session *s) {
  tl_session_options o = {0};
  tl_lane_options lane = tl_lane_defaults();
  char err[512];
  tl_status st;
  if (opts != NULL) o = *opts;
  if (o.lane > TL_LANE_FAST || o.threads > TL_PAR_MAX_TASKS ||
      (o.flags & ~TL_SESSION_NO_COPY) != 0)
    return FAIL(&m->o, TL_ERR_INVALID_ARGUMENT,
                "session options: lane %u (0..2), threads %u (0..%u), flags 0x%x",
                (unsigned)o.lane, (unsigned)o.threads, (unsigned)TL_PAR_MAX_TASKS,
                (unsigned)o.flags);
  lane.fast = o.lane != TL_LANE_SCALAR;
  lane.threads = o.threads;
  lane.mmap = (o.flags & TL_SESSION_NO_COPY) != 0;
  st = tl_session_open_shared(s, &m->m, m->name, err, sizeof err);
  if (st != TL_OK) return FAIL(&m->o, st, "%s", err);
  st = tl_session_lane(s, &lane, err, sizeof err);
  if (st == TL_OK) st = tl_session_plan(s, o.context, 0, err, sizeof err);
  if (st != TL_OK) {
    tl_session_close(s);
    return FAIL(&m->o, st, "%s", err);
  }
  return TL_OK;
}

tl_status tl_model_preflight(tl_model_handle model, const tl_session_options *opts,
                             tl_preflight_plan *out) {
  api_model *m;
  tl_session *s;
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  s = malloc(sizeof *s);
  if (out == NULL || s == NULL) {
    st = FAIL(&m->o, out ? TL_ERR_OUT_OF_MEMORY : TL_ERR_INVALID_ARGUMENT,
              out ? "out of memory" : "NULL out");
  } else if ((st = session_prepare(m, opts, s)) == TL_OK) {
    out->context = s->context;
    out->weights = s->plan.weights;
    out->tokenizer = s->plan.tokenizer;
    out->kv_cache = s->plan.kv_cache;
    out->scratch = s->plan.scratch;
    out->logits = s->plan.logits;
    out->sampler = s->plan.sampler;
    out->total = s->plan.total;
    tl_session_close(s);
  }
  free(s);
  drop(&m->o);
  return st;
}

tl_status tl_api_model_max_context(uint32_t model, uint32_t *out) {
  api_model *m;
  tl_session *s;
  tl_session_options o = {0};
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  o.lane = TL_LANE_SCALAR; /* no thread pool for a number */
  s = malloc(sizeof *s);
  if (s == NULL) {
    st = FAIL(&m->o, TL_ERR_OUT_OF_MEMORY, "out of memory");
  } else if ((st = session_prepare(m, &o, s)) == TL_OK) {
    *out = s->qwen.cfg.max_positions;
    tl_session_close(s);
  }
  free(s);
  drop(&m->o);
  return st;
}

tl_status tl_session_new(tl_model_handle model, const tl_session_options *opts,
                         tl_session_handle *out) {
  api_model *m;
  api_session *s;
  char err[1024];
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  if (out == NULL) {
    st = FAIL(&m->o, TL_ERR_INVALID_ARGUMENT, "NULL out");
    drop(&m->o);
    return st;
  }
  *out = TL_NO_HANDLE;
  s = calloc(1, sizeof *s);
  if (s == NULL) {
    st = FAIL(&m->o, TL_ERR_OUT_OF_MEMORY, "out of memory");
    drop(&m->o);
    return st;
  }
  st = session_prepare(m, opts, &s->s);
  if (st == TL_OK) {
    st = tl_session_allocate(&s->s, opts ? opts->mem_budget : 0, err, sizeof err);
    if (st == TL_OK && (s->cached = malloc(s->s.context * sizeof *s->cached)) == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, sizeof err, "out of memory");
    }
    if (st != TL_OK) {
      tl_session_close(&s->s);
      FAIL(&m->o, st, "%s", err);
    }
  }
  if (st != TL_OK) {
    free(s);
    drop(&m->o);
    return st;
  }
  s->o.refs = 1;
  s->o.destroy = session_destroy;
  s->model = m; /* the acquired reference stays with the session */
  return issue(TL_HANDLE_SESSION, &s->o, out);
}

tl_status tl_session_free(tl_session_handle session) {
  return close_handle(TL_HANDLE_SESSION, session);
}

/* Resets and/or reads the position of a session no generation is using. */
static tl_status with_idle_session(tl_session_handle h, uint32_t *position, bool reset) {
  api_session *s;
  tl_status st = acquire(TL_HANDLE_SESSION, h, (void **)&s);
  if (st != TL_OK) return st;
  pthread_mutex_lock(&g_lock);
  if (!s->busy) {
    if (reset) s->s.cache.len = 0;
    if (position != NULL) *position = s->s.cache.len;
  }
  st = s->busy ? TL_ERR_INVALID_ARGUMENT : TL_OK;
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) FAIL(&s->o, st, "a generation is running on this session");
  drop(&s->o);
  return st;
}

tl_status tl_session_reset(tl_session_handle session) {
  return with_idle_session(session, NULL, true);
}

tl_status tl_session_position(tl_session_handle session, uint32_t *position) {
  if (position == NULL) return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "NULL position");
  return with_idle_session(session, position, false);
}

/* The leading tokens of ids[0..n) the cache holds, at most n - 1 (the
 * last prompt token is always fed: its logits choose the first reply
 * token). */
static uint32_t reusable(const api_session *s, const uint32_t *ids, size_t n) {
  uint32_t k = 0;
  while (k < s->s.cache.len && k < n && s->cached[k] == ids[k]) k++;
  return k == n && k > 0 ? k - 1 : k;
}

tl_status tl_session_reuse(tl_session_handle session, const uint32_t *ids, size_t n,
                           uint32_t *reused) {
  api_session *s;
  tl_status st = acquire(TL_HANDLE_SESSION, session, (void **)&s);
  if (st != TL_OK) return st;
  if (reused == NULL || (ids == NULL && n != 0)) {
    st = FAIL(&s->o, TL_ERR_INVALID_ARGUMENT, "NULL ids or reused");
  } else {
    pthread_mutex_lock(&g_lock);
    if (!s->busy) *reused = reusable(s, ids, n);
    st = s->busy ? TL_ERR_INVALID_ARGUMENT : TL_OK;
    pthread_mutex_unlock(&g_lock);
    if (st != TL_OK) FAIL(&s->o, st, "a generation is running on this session");
  }
  drop(&s->o);
  return st;
}

/* ---- text ---- */

/* Copies n bytes to a caller's buffer of cap bytes; *len gets n. */
static tl_status give_bytes(api_obj *o, const void *src, size_t n, void *out, size_t cap,
                            size_t *len) {
  *len = n;
  if (n > cap || (out == NULL && n != 0))
    return FAIL(o, TL_ERR_BOUNDS, "%zu bytes do not fit in %zu", n, cap);
  if (n) memcpy(out, src, n);
  return TL_OK;
}

/* Renders a conversation (JSON) for a reply; a failure recorded with the
 * renderer's message and where (tl_error's kind, line, column, index). */
static tl_status render(api_model *m, const uint8_t *json, size_t len, tl_render_out *r) {
  tl_render_error re;
  tl_status st = tl_native_render(&m->m, json, len, TL_RENDER_FOR_REPLY, r, &re);
  tl_error e = no_detail();
  if (st == TL_OK) return TL_OK;
  snprintf(e.kind, sizeof e.kind, "%s", re.kind);
  if (strcmp(re.kind, "json") == 0) {
    e.line = re.line <= UINT32_MAX ? (uint32_t)re.line : UINT32_MAX;
    e.column = re.column <= UINT32_MAX ? (uint32_t)re.column : UINT32_MAX;
  } else if (strcmp(re.kind, "input") == 0) {
    e.index = re.bad_message == SIZE_MAX ? UINT64_MAX : re.bad_message;
  }
  return fail_at(&m->o, st, e, "%s", re.message);
}

tl_status tl_model_render(tl_model_handle model, const void *json, size_t json_len,
                          void *out, size_t cap, size_t *len, int *add_gen) {
  api_model *m;
  tl_render_out r = {0};
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  if (len == NULL || (json == NULL && json_len != 0))
    st = FAIL(&m->o, TL_ERR_INVALID_ARGUMENT, "NULL json or len");
  else if ((st = render(m, json, json_len, &r)) == TL_OK) {
    if (add_gen != NULL) *add_gen = r.own.add_generation_prompt;
    st = give_bytes(&m->o, r.text, r.len, out, cap, len);
  }
  tl_render_out_free(&r);
  drop(&m->o);
  return st;
}

tl_status tl_model_render_messages(tl_model_handle model, const tl_message *messages,
                                   size_t n, void *out, size_t cap, size_t *len,
                                   int *add_gen) {
  /* {"messages": [{"role": ..., "content": ...}, ...]} as JSON text, made
   * by the core's formatter (no jansson: the wasm32 modules build this). */
  tl_json_value doc, list, *items = NULL;
  tl_json_member top, *fields = NULL;
  tl_json_out o = tl_json_out_make(NULL, 0);
  uint8_t *text = NULL;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (messages == NULL && n != 0)
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "NULL messages");
  if (n > SIZE_MAX / (2 * sizeof *fields))
    return FAIL(NULL, TL_ERR_INTEGER_OVERFLOW, "too many messages");
  for (size_t i = 0; i < n; i++) {
    size_t bad = 0;
    if (messages[i].role == NULL || messages[i].content == NULL)
      return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "message %zu: NULL role or content", i);
    if (tl_utf8_validate((const uint8_t *)messages[i].role, strlen(messages[i].role), &bad) !=
            TL_OK ||
        tl_utf8_validate((const uint8_t *)messages[i].content, messages[i].content_len,
                         &bad) != TL_OK)
      return FAIL(NULL, TL_ERR_INVALID_UTF8, "message %zu: role or content is not UTF-8", i);
  }
  items = calloc(n ? n : 1, sizeof *items);
  fields = calloc(n ? 2 * n : 1, sizeof *fields);
  if (items == NULL || fields == NULL) {
    free(items);
    free(fields);
    return FAIL(NULL, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    tl_json_member *f = &fields[2 * i];
    f[0].key = "role";
    f[0].key_len = 4;
    f[0].value.type = TL_JSON_STRING;
    f[0].value.u.str.ptr = messages[i].role;
    f[0].value.u.str.len = strlen(messages[i].role);
    f[1].key = "content";
    f[1].key_len = 7;
    f[1].value.type = TL_JSON_STRING;
    f[1].value.u.str.ptr = messages[i].content;
    f[1].value.u.str.len = messages[i].content_len;
    items[i].type = TL_JSON_OBJECT;
    items[i].u.obj.members = f;
    items[i].u.obj.n = 2;
  }
  list.type = TL_JSON_ARRAY;
  list.u.arr.items = items;
  list.u.arr.n = n;
  top.key = "messages";
  top.key_len = 8;
  top.value = list;
  doc.type = TL_JSON_OBJECT;
  doc.u.obj.members = &top;
  doc.u.obj.n = 1;
  tl_py_json_dumps(&doc, &o); /* measures */
  if (o.status == TL_OK) text = malloc(o.len);
  if (text != NULL) {
    o = tl_json_out_make(text, o.len);
    tl_py_json_dumps(&doc, &o);
  }
  st = text == NULL ? FAIL(NULL, o.status == TL_OK ? TL_ERR_OUT_OF_MEMORY : o.status,
                           "cannot write the conversation")
                    : tl_model_render(model, text, o.len, out, cap, len, add_gen);
  free(text);
  free(items);
  free(fields);
  return st;
}

tl_status tl_model_encode(tl_model_handle model, const void *text, size_t len, uint32_t *ids,
                          size_t cap, size_t *n) {
  api_model *m;
  tl_encoder enc = {0};
  size_t bad = 0, count = 0;
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  enc.tok = m->m.tok;
  if (n == NULL || (text == NULL && len != 0)) {
    st = FAIL(&m->o, TL_ERR_INVALID_ARGUMENT, "NULL text or n");
  } else if ((st = tl_encoder_run(&enc, text, len, &count, &bad)) != TL_OK) {
    st = st == TL_ERR_INVALID_UTF8
             ? fail_at(&m->o, st, index_detail(bad), "the text is not valid UTF-8 at byte %zu",
                       bad)
             : FAIL(&m->o, st, "encoding failed");
  } else {
    *n = count;
    if (count > cap || (ids == NULL && count != 0))
      st = FAIL(&m->o, TL_ERR_BOUNDS, "%zu ids do not fit in %zu", count, cap);
    else if (count)
      memcpy(ids, enc.ids, count * sizeof *ids);
  }
  tl_encoder_free(&enc);
  drop(&m->o);
  return st;
}

tl_status tl_model_decode(tl_model_handle model, const uint32_t *ids, size_t n, uint32_t mode,
                          void *out, size_t cap, size_t *len) {
  static const tl_tok_decode_mode modes[] = {TL_TOK_DECODE_RAW, TL_TOK_DECODE_VISIBLE,
                                             TL_TOK_DECODE_DIAGNOSTIC};
  api_model *m;
  size_t bad = 0;
  tl_status st = acquire(TL_HANDLE_MODEL, model, (void **)&m);
  if (st != TL_OK) return st;
  if (len == NULL || (ids == NULL && n != 0) || (out == NULL && cap != 0) || mode > 2) {
    st = FAIL(&m->o, TL_ERR_INVALID_ARGUMENT, "NULL ids, out or len, or mode %u (0..2)",
              (unsigned)mode);
  } else {
    st = tl_tok_decode(m->m.tok, ids, n, modes[mode], out, cap, len, &bad);
    if (st == TL_ERR_INVALID_ARGUMENT)
      fail_at(&m->o, st, index_detail(bad), "id %u (at %zu) is not in the vocabulary",
              (unsigned)ids[bad], bad);
    else if (st == TL_ERR_BOUNDS)
      FAIL(&m->o, st, "%zu bytes do not fit in %zu", *len, cap);
    else if (st != TL_OK)
      FAIL(&m->o, st, "decoding failed");
  }
  drop(&m->o);
  return st;
}

/* ---- grammars ---- */

/* The grammar's arena starts at this size and doubles while a reader asks
 * for more, up to the last. */
#define GRAMMAR_ARENA_FIRST ((size_t)1 << 20)
#define GRAMMAR_ARENA_MAX ((size_t)1 << 28)

static void grammar_destroy(api_obj *o) {
  api_grammar *g = (api_grammar *)o;
  free(g->mem);
  free(g);
}

/* The reader of kind over text into g (an arena of cap bytes). */
static tl_status grammar_read(uint32_t kind, const uint8_t *text, size_t len, api_grammar *g,
                              size_t cap, tl_gerror *err) {
  tl_arena a;
  tl_arena_init(&a, g->mem, cap);
  switch (kind) {
  case TL_GRAMMAR_JSON_OBJECT:
    return tl_grammar_json_object(&a, &g->g, err);
  case TL_GRAMMAR_JSON_SCHEMA:
    return tl_grammar_from_json_schema(&a, text, len, &g->g, err);
  case TL_GRAMMAR_GBNF:
    return tl_grammar_from_gbnf(&a, text, len, &g->g, err);
  default:
    return tl_grammar_from_regex(&a, text, len, &g->g, err);
  }
}

tl_status tl_grammar_compile(uint32_t kind, const void *text, size_t len,
                             tl_grammar_handle *out) {
  static const char *const readers[] = {"", "json_object", "json_schema", "gbnf", "regex"};
  api_grammar *g;
  tl_gerror gerr;
  tl_error e = no_detail();
  size_t cap = GRAMMAR_ARENA_FIRST;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (out == NULL || kind < TL_GRAMMAR_JSON_OBJECT || kind > TL_GRAMMAR_REGEX ||
      (text == NULL && len != 0))
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT,
                "tl_grammar_compile: NULL out or text, or kind %u (1..4)", (unsigned)kind);
  *out = TL_NO_HANDLE;
  g = calloc(1, sizeof *g);
  if (g == NULL) return FAIL(NULL, TL_ERR_OUT_OF_MEMORY, "out of memory");
  g->o.refs = 1;
  g->o.destroy = grammar_destroy;
  for (;; cap *= 2) {
    memset(&gerr, 0, sizeof gerr);
    free(g->mem);
    g->mem = malloc(cap);
    st = g->mem ? grammar_read(kind, text, len, g, cap, &gerr) : TL_ERR_OUT_OF_MEMORY;
    if (st != TL_ERR_OUT_OF_MEMORY || g->mem == NULL || cap >= GRAMMAR_ARENA_MAX) break;
  }
  if (st != TL_OK) {
    snprintf(e.kind, sizeof e.kind, "%s", readers[kind]);
    e.index = gerr.offset;
    grammar_destroy(&g->o);
    /* the reader's message names itself; kind names it for programs */
    return fail_at(NULL, st, e, "%s", gerr.message[0] ? gerr.message : tl_status_name(st));
  }
  return issue(TL_HANDLE_GRAMMAR, &g->o, out);
}

tl_status tl_grammar_free(tl_grammar_handle grammar) {
  return close_handle(TL_HANDLE_GRAMMAR, grammar);
}

tl_status tl_grammar_get_digest(tl_grammar_handle grammar, uint8_t digest[32]) {
  api_grammar *g;
  tl_status st = acquire(TL_HANDLE_GRAMMAR, grammar, (void **)&g);
  if (st != TL_OK) return st;
  if (digest == NULL)
    st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT, "NULL digest");
  else
    tl_grammar_digest(g->g, digest);
  drop(&g->o);
  return st;
}

/* ---- generations ---- */

static void gen_destroy(api_obj *o) {
  api_gen *g = (api_gen *)o;
  tl_turn_free(&g->t);
  drop(&g->session->o);
  free(g);
}

tl_status tl_generation_new(tl_session_handle session, tl_generation_handle *out) {
  api_session *s;
  api_gen *g;
  tl_status st = acquire(TL_HANDLE_SESSION, session, (void **)&s);
  if (st != TL_OK) return st;
  g = out != NULL ? calloc(1, sizeof *g) : NULL;
  if (g == NULL) {
    st = FAIL(&s->o, out ? TL_ERR_OUT_OF_MEMORY : TL_ERR_INVALID_ARGUMENT,
              out ? "out of memory" : "NULL out");
    drop(&s->o);
    return st;
  }
  *out = TL_NO_HANDLE;
  g->o.refs = 1;
  g->o.destroy = gen_destroy;
  g->session = s; /* the acquired reference stays with the generation */
  atomic_init(&g->cancel, 0);
  return issue(TL_HANDLE_GENERATION, &g->o, out);
}

/* The prompt's ids into enc, its bytes and mode into tp (rendered holds
 * a rendering, decoded the bytes of given ids). */
static tl_status prepare_prompt(api_gen *g, const tl_generation_params *p, tl_encoder *enc,
                                tl_render_out *rendered, uint8_t **decoded,
                                tl_turn_params *tp) {
  api_obj *o = &g->o;
  api_model *m = g->session->model;
  const tl_tokenizer *tok = m->m.tok;
  size_t bad = 0, n = 0;
  tl_status st;
  if ((p->text != NULL) + (p->messages_json != NULL) + (p->ids != NULL) != 1)
    return FAIL(o, TL_ERR_INVALID_ARGUMENT,
                "exactly one of text, messages_json and ids is the prompt");
  tp->mode = "text";
  if (p->messages_json != NULL) {
    st = render(m, p->messages_json, p->messages_len, rendered);
    if (st != TL_OK) {
      tl_error why = t_last; /* render's record, now also the generation's */
      return fail_at(o, st, why, "%s", why.message);
    }
    tp->mode = "messages";
    tp->add_generation_prompt = rendered->own.add_generation_prompt;
    tp->prompt_bytes = rendered->text;
    tp->prompt_len = rendered->len;
  } else if (p->text != NULL) {
    tp->prompt_bytes = p->text;
    tp->prompt_len = p->text_len;
  } else {
    /* The receipt names a prompt by its bytes: ids must be what those
     * bytes encode to. */
    size_t cap = p->n_ids * g->session->s.max_token_bytes + 1, len = 0;
    if (p->n_ids > SIZE_MAX / 2 / g->session->s.max_token_bytes)
      return FAIL(o, TL_ERR_INTEGER_OVERFLOW, "too many ids");
    *decoded = malloc(cap);
    if (*decoded == NULL) return FAIL(o, TL_ERR_OUT_OF_MEMORY, "out of memory");
    st = tl_tok_decode(tok, p->ids, p->n_ids, TL_TOK_DECODE_RAW, *decoded, cap, &len, &bad);
    if (st != TL_OK)
      return fail_at(o, st, index_detail(bad), "prompt id %zu is not in the vocabulary", bad);
    tp->prompt_bytes = *decoded;
    tp->prompt_len = len;
  }
  enc->tok = tok;
  st = tl_encoder_run(enc, tp->prompt_bytes, tp->prompt_len, &n, &bad);
  if (st != TL_OK)
    return fail_at(o, st, index_detail(bad), "the prompt is not valid UTF-8 at byte %zu", bad);
  if (n == 0) return FAIL(o, TL_ERR_INVALID_ARGUMENT, "the prompt is empty");
  if (p->ids != NULL &&
      (n != p->n_ids || memcmp(enc->ids, p->ids, n * sizeof *p->ids) != 0))
    return FAIL(o, TL_ERR_INVALID_ARGUMENT,
                "the prompt ids are not the tokenizer's encoding of their own bytes "
                "(give the text instead, so the receipt can name the prompt)");
  g->n_prompt = n;
  return TL_OK;
}

/* Records the ids of the cache rows a turn wrote from start: the prompt's
 * n, then the generated tokens that were fed. */
static void track(api_session *as, uint32_t start, const uint32_t *prompt, size_t n,
                  const tl_turn *t) {
  for (uint32_t pos = start; pos < as->s.cache.len && pos - start < n + t->r.n_ids; pos++) {
    size_t i = pos - start;
    as->cached[pos] = i < n ? prompt[i] : t->r.ids[i - n];
  }
}

/* One generation on g's session, which the caller has marked busy. */
static tl_status run_turn(api_gen *g, const tl_generation_params *p) {
  tl_session *s = &g->session->s;
  tl_turn_params tp;
  tl_encoder enc = {0};
  tl_render_out rendered = {0};
  uint8_t *decoded = NULL;
  const uint8_t **stops = NULL;
  size_t *stop_lens = NULL;
  tl_sampler_field field = TL_SAMPLER_FIELD_TEMPERATURE;
  uint32_t before = s->cache.len, start, skip = 0;
  bool reuse = (p->flags & TL_GENERATE_REUSE_PREFIX) != 0;
  api_grammar *grammar = NULL; /* a reference while the turn runs */
  char err[512];
  tl_status st;
  memset(&tp, 0, sizeof tp);
  if (p->n_stops != 0) {
    stops = calloc(p->n_stops, sizeof *stops);
    stop_lens = calloc(p->n_stops, sizeof *stop_lens);
    if (stops == NULL || stop_lens == NULL || p->stop_strings == NULL) {
      st = FAIL(&g->o, stops ? TL_ERR_INVALID_ARGUMENT : TL_ERR_OUT_OF_MEMORY,
                "n_stops %zu: no stop_strings, or out of memory", p->n_stops);
      goto done;
    }
    for (size_t i = 0; i < p->n_stops; i++) {
      stops[i] = (const uint8_t *)p->stop_strings[i];
      stop_lens[i] = stops[i] == NULL ? 0
                     : p->stop_lens ? p->stop_lens[i]
                                    : strlen(p->stop_strings[i]);
      if (stop_lens[i] == 0) {
        st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT, "stop string %zu is NULL or empty", i);
        goto done;
      }
    }
  }
  if ((p->flags & ~(uint32_t)(TL_GENERATE_CONTINUE | TL_GENERATE_REUSE_PREFIX |
                              TL_GENERATE_GRAMMAR | TL_GENERATE_PENALTIES)) != 0 ||
      ((p->flags & TL_GENERATE_CONTINUE) && reuse) ||
      (p->given & ~(uint32_t)(TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K | TL_GIVEN_TOP_P |
                              TL_GIVEN_MIN_P | TL_GIVEN_REPEAT_PENALTY)) != 0) {
    st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT, "unknown flags 0x%x or given bits 0x%x",
              (unsigned)p->flags, (unsigned)p->given);
    goto done;
  }
  /* The structured-output fields exist only when the flag says so. */
  if ((p->flags & TL_GENERATE_GRAMMAR) && p->grammar != TL_NO_HANDLE) {
    if ((st = acquire(TL_HANDLE_GRAMMAR, p->grammar, (void **)&grammar)) != TL_OK) {
      tl_error why = t_last;
      st = fail_at(&g->o, st, why, "grammar: %s", why.message);
      goto done;
    }
    tp.grammar = grammar->g;
    tp.think_budget = p->think_budget;
  } else if ((p->flags & TL_GENERATE_GRAMMAR) && p->think_budget != 0) {
    st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT,
              "think_budget %u without a grammar: the budget applies to a constrained reply",
              (unsigned)p->think_budget);
    goto done;
  }
  start = p->flags & TL_GENERATE_CONTINUE ? before : 0;
  st = prepare_prompt(g, p, &enc, &rendered, &decoded, &tp);
  if (st != TL_OK) goto done;
  if (reuse) { /* the cached prefix is not computed again */
    skip = reusable(g->session, enc.ids, g->n_prompt);
    start = skip;
    g->n_prompt -= skip;
  }
  if ((uint64_t)start + g->n_prompt > s->context) {
    st = FAIL(&g->o, TL_ERR_CONTEXT_EXCEEDED,
              "the prompt (%zu tokens at position %u) exceeds the context (%u tokens)",
              g->n_prompt, start, s->context);
    goto done;
  }
  if ((st = model_unchanged(&g->o, g->session->model)) != TL_OK) goto done;
  tp.gen = p;
  tp.stops = stops;
  tp.stop_lens = stop_lens;
  tp.n_stops = p->n_stops;
  tp.cancel = &g->cancel;
  s->cache.len = start;
  st = tl_turn_run(s, &tp, enc.ids + skip, g->n_prompt, &g->t, &field, err, sizeof err);
  if (st == TL_OK && (st = model_unchanged(&g->o, g->session->model)) != TL_OK) {
    s->cache.len = before; /* computed from a changed file: dropped */
    goto done;
  }
  if (st != TL_OK) s->cache.len = before; /* refused: nothing ran */
  if (st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_INVALID_MODEL) {
    tl_error e = no_detail();
    snprintf(e.kind, sizeof e.kind, "%s", tl_turn_field_name(field));
    st = fail_at(&g->o, st, e, "sampling value %s is out of range (%s)", e.kind,
                 st == TL_ERR_INVALID_ARGUMENT ? "given" : "the artifact's default");
    goto done;
  }
  if (st != TL_OK) {
    FAIL(&g->o, st, "%s", err);
    goto done;
  }
  g->ran = true;
  track(g->session, start, enc.ids + skip, g->n_prompt, &g->t);
  if (g->t.receipt_status == TL_OK)
    tl_hex_encode(g->t.receipt_id, 32, g->receipt_hex);
  st = g->t.status;
  /* The loop reports a cancellation as a stop reason; the API as a status. */
  if (st == TL_OK && g->t.r.stop == TL_STOP_CANCELLED) st = TL_ERR_CANCELLED;
  if (st != TL_OK) {
    /* A failed turn leaves the cache as it was when the turn started
     * (rows past start were overwritten, rows before it were not); a
     * cancelled one that reuses by tokens keeps what it computed, whose
     * ids the session knows. */
    if (!(reuse && st == TL_ERR_CANCELLED)) s->cache.len = start;
    if (st == TL_ERR_NUMERICAL_FAILURE) {
      const tl_qwen3_fault *f = &g->t.r.fault;
      tl_error e = no_detail();
      snprintf(e.stage, sizeof e.stage, "%s", tl_qwen3_stage_name(f->stage));
      e.layer = f->layer;
      e.position = f->pos;
      e.index = f->index;
      fail_at(&g->o, st, e, "non-finite value after %zu tokens", g->t.r.n_ids);
    } else {
      FAIL(&g->o, st, "the generation stopped after %zu tokens%s%s", g->t.r.n_ids,
           g->t.why ? ": " : "", g->t.why ? g->t.why : "");
    }
  }
done:
  if (grammar != NULL) drop(&grammar->o);
  free(stops);
  free(stop_lens);
  free(decoded);
  tl_encoder_free(&enc);
  tl_render_out_free(&rendered);
  return st;
}

tl_status tl_generation_run(tl_generation_handle gen, const tl_generation_params *params) {
  api_gen *g;
  const char *refusal;
  tl_status st = acquire(TL_HANDLE_GENERATION, gen, (void **)&g);
  if (st != TL_OK) return st;
  if (params == NULL) {
    st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT, "NULL params");
    drop(&g->o);
    return st;
  }
  /* Decided, and the reason chosen, under the lock: another thread's run
   * of g writes g->state. */
  pthread_mutex_lock(&g_lock);
  refusal = g->state != 0        ? "a generation runs once"
            : g->session->busy ? "another generation is running on this session"
                               : NULL;
  if (refusal == NULL) {
    g->state = 1;
    g->session->busy = true;
  }
  pthread_mutex_unlock(&g_lock);
  if (refusal != NULL) {
    st = FAIL(&g->o, TL_ERR_INVALID_ARGUMENT, "%s", refusal);
    drop(&g->o);
    return st;
  }
  st = run_turn(g, params);
  pthread_mutex_lock(&g_lock);
  g->session->busy = false;
  g->state = g->ran ? 2 : 1;
  pthread_mutex_unlock(&g_lock);
  drop(&g->o);
  return st;
}

tl_status tl_generation_cancel(tl_generation_handle gen) {
  api_gen *g;
  tl_status st = acquire(TL_HANDLE_GENERATION, gen, (void **)&g);
  if (st != TL_OK) return st;
  atomic_store(&g->cancel, 1);
  drop(&g->o);
  return TL_OK;
}

tl_status tl_reply_split(const void *text, size_t len, tl_reply_parts *out) {
  const uint8_t *s = text;
  tl_think th;
  tl_status st = check_init();
  if (st != TL_OK) return st;
  if (out == NULL || (s == NULL && len > 0))
    return FAIL(NULL, TL_ERR_INVALID_ARGUMENT, "tl_reply_split: NULL out, or NULL text of %zu bytes",
                len);
  tl_think_split(s, len, true, &th);
  out->reasoning = th.block ? s + th.reason_from : NULL;
  out->reasoning_len = th.reason_to - th.reason_from;
  out->answer = th.block ? s + th.answer_from : s;
  out->answer_len = len - th.answer_from;
  return TL_OK;
}

tl_status tl_generation_result_get(tl_generation_handle gen, tl_generation_result *out) {
  api_gen *g;
  tl_status st = acquire(TL_HANDLE_GENERATION, gen, (void **)&g);
  if (st != TL_OK) return st;
  pthread_mutex_lock(&g_lock);
  st = out == NULL || g->state != 2 ? TL_ERR_INVALID_ARGUMENT : TL_OK;
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) {
    st = FAIL(&g->o, st, out ? "the generation has not run" : "NULL out");
  } else {
    const tl_turn *t = &g->t;
    memset(out, 0, sizeof *out);
    out->ids = t->r.ids;
    out->n_ids = t->r.n_ids;
    out->text = t->r.visible;
    out->text_len = t->r.visible_len;
    out->raw = t->r.raw;
    out->raw_len = t->r.raw_len;
    out->stop = tl_stop_reason_name(t->r.stop);
    out->prompt_tokens = (uint32_t)g->n_prompt;
    out->position = t->position;
    out->prefill_us = t->prefill_us;
    out->decode_us = t->decode_us;
    out->receipt = t->receipt;
    out->receipt_len = t->receipt_len;
    memcpy(out->receipt_id, g->receipt_hex, sizeof out->receipt_id);
  }
  drop(&g->o);
  return st;
}

tl_status tl_generation_free(tl_generation_handle gen) {
  return close_handle(TL_HANDLE_GENERATION, gen);
}

/* ---- observation ---- */

/* The observation document of ids[0..n) on s (idle, marked busy by the
 * caller) into *doc (malloc). */
static tl_status observe_run(api_session *as, const uint32_t *ids, size_t n, uint8_t **doc,
                             size_t *doc_len) {
  tl_session *s = &as->s;
  tl_observe_record *records = NULL;
  tl_observe_meta meta;
  tl_observer ob;
  tl_qwen3_capture cap;
  tl_qwen3_fault fault;
  tl_arena scratch;
  void *scratch_mem = NULL;
  const uint8_t *artifact;
  size_t max, bound, scratch_len;
  tl_status st;
  if (n > s->context)
    return FAIL(&as->o, TL_ERR_CONTEXT_EXCEEDED, "the prompt (%zu tokens) exceeds the context "
                "(%u tokens)", n, s->context);
  /* One call over the whole prompt, so every score row spans all its keys
   * (as verify's capture): scratch for that call, beside the session's. */
  max = tl_observe_records_max(&s->qwen.cfg, n);
  scratch_len = tl_qwen3_scratch_bound(&s->qwen, n, (uint32_t)n) + 4096;
  records = max < SIZE_MAX / sizeof *records ? malloc(max * sizeof *records) : NULL;
  scratch_mem = malloc(scratch_len);
  st = records && scratch_mem ? tl_arena_init(&scratch, scratch_mem, scratch_len)
                              : TL_ERR_OUT_OF_MEMORY;
  if (st != TL_OK) {
    st = FAIL(&as->o, st, "out of memory for %zu observation records", max);
    goto done;
  }
  tl_observer_init(&ob, records, max);
  cap = tl_observer_capture(&ob);
  s->cache.len = 0;
  if ((st = model_unchanged(&as->o, as->model)) != TL_OK) goto done;
  st = tl_qwen3_forward(&s->qwen, &s->cache, ids, n, NULL, &cap, &scratch, &fault);
  s->cache.len = 0; /* the cache's rows no longer match the ids it tracked */
  if (st == TL_OK && (st = model_unchanged(&as->o, as->model)) != TL_OK) goto done;
  if (st == TL_ERR_NUMERICAL_FAILURE) {
    tl_error e = no_detail();
    snprintf(e.stage, sizeof e.stage, "%s", tl_qwen3_stage_name(fault.stage));
    e.layer = fault.layer;
    e.position = fault.pos;
    e.index = fault.index;
    st = fail_at(&as->o, st, e, "non-finite value at stage %s, layer %d, position %u, index %zu",
                 e.stage, (int)fault.layer, fault.pos, fault.index);
    goto done;
  }
  if (st == TL_OK && ob.status != TL_OK) st = TL_ERR_INTERNAL_INVARIANT;
  if (st != TL_OK) {
    st = FAIL(&as->o, st, "the forward pass failed (%s)", tl_status_name(st));
    goto done;
  }
  st = tl_session_artifact_id(s, &artifact);
  if (st != TL_OK) {
    st = FAIL(&as->o, st, "cannot hash the artifact");
    goto done;
  }
  if ((st = model_unchanged(&as->o, as->model)) != TL_OK) goto done;
  memset(&meta, 0, sizeof meta);
  snprintf(meta.version, sizeof meta.version, "%s", TL_VERSION_STRING);
  snprintf(meta.lane, sizeof meta.lane, "%s", s->lane.fast ? "fast" : "scalar");
  snprintf(meta.profile, sizeof meta.profile, "%s", tl_native_lane_profile(&s->lane));
#ifdef __wasm__
  snprintf(meta.host, sizeof meta.host, "wasm32");
#else
  snprintf(meta.host, sizeof meta.host, "native");
#endif
  snprintf(meta.isa, sizeof meta.isa, "%s", tl_native_lane_isa(&s->lane));
  meta.threads = tl_native_lane_threads(&s->lane);
  memcpy(meta.artifact, artifact, sizeof meta.artifact);
  meta.layers = s->qwen.cfg.layers;
  meta.ids = ids;
  meta.n_ids = n;
  bound = tl_observe_doc_bound(&meta, ob.n);
  *doc = bound < SIZE_MAX ? malloc(bound) : NULL;
  tl_arena_reset(&scratch); /* the pass is done: its scratch serves the writer */
  st = *doc ? tl_observe_write(&meta, records, ob.n, *doc, bound, doc_len, &scratch)
            : TL_ERR_OUT_OF_MEMORY;
  if (st != TL_OK) st = FAIL(&as->o, st, "cannot write the observation document");
done:
  free(records);
  free(scratch_mem);
  return st;
}

tl_status tl_session_observe(tl_session_handle session, const void *text, size_t text_len,
                             const uint32_t *ids, size_t n_ids, void *out, size_t cap,
                             size_t *len) {
  api_session *as;
  tl_encoder enc = {0};
  uint8_t *doc = NULL;
  size_t doc_len = 0, n = n_ids, bad = 0;
  tl_status st = acquire(TL_HANDLE_SESSION, session, (void **)&as);
  if (st != TL_OK) return st;
  if (len == NULL || (text == NULL) == (ids == NULL) || (out == NULL && cap != 0)) {
    st = FAIL(&as->o, TL_ERR_INVALID_ARGUMENT,
              "NULL len, out with a capacity, or not exactly one of text and ids");
    drop(&as->o);
    return st;
  }
  pthread_mutex_lock(&g_lock);
  st = as->busy ? TL_ERR_INVALID_ARGUMENT : TL_OK;
  if (st == TL_OK) as->busy = true;
  pthread_mutex_unlock(&g_lock);
  if (st != TL_OK) {
    st = FAIL(&as->o, st, "a generation is running on this session");
    drop(&as->o);
    return st;
  }
  if (text != NULL) {
    enc.tok = as->model->m.tok;
    st = tl_encoder_run(&enc, text, text_len, &n, &bad);
    if (st == TL_ERR_INVALID_UTF8)
      fail_at(&as->o, st, index_detail(bad), "the prompt is not valid UTF-8 at byte %zu", bad);
    else if (st != TL_OK)
      FAIL(&as->o, st, "encoding failed");
    ids = enc.ids;
  }
  if (st == TL_OK && n == 0) st = FAIL(&as->o, TL_ERR_INVALID_ARGUMENT, "the prompt is empty");
  for (size_t i = 0; st == TL_OK && i < n; i++)
    if (ids[i] >= as->s.qwen.cfg.vocab)
      st = fail_at(&as->o, TL_ERR_INVALID_ARGUMENT, index_detail(i),
                   "prompt id %u (at %zu) is not in the vocabulary", (unsigned)ids[i], i);
  if (st == TL_OK && as->observed != NULL && as->observed_n == n &&
      memcmp(as->observed_ids, ids, n * sizeof *ids) == 0) {
    /* the document a size query computed for this prompt (the pass is
     * deterministic, so running it again would give the same bytes) */
    doc = as->observed;
    doc_len = as->observed_len;
    as->observed = NULL;
  } else if (st == TL_OK) {
    st = observe_run(as, ids, n, &doc, &doc_len);
  }
  forget_observed(as);
  if (st == TL_OK) st = give_bytes(&as->o, doc, doc_len, out, cap, len);
  if (st == TL_ERR_BOUNDS && (as->observed_ids = malloc(n * sizeof *ids)) != NULL) {
    /* a size query: keep the document for the call that fetches it */
    memcpy(as->observed_ids, ids, n * sizeof *ids);
    as->observed_n = n;
    as->observed = doc;
    as->observed_len = doc_len;
    doc = NULL;
  }
  pthread_mutex_lock(&g_lock);
  as->busy = false;
  pthread_mutex_unlock(&g_lock);
  free(doc);
  tl_encoder_free(&enc);
  drop(&as->o);
  return st;
}
