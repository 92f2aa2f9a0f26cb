/* The public API (include/tinylm.h) on the tiny golden artifact
 * tests/golden/slm/tiny-f32.slm (read from the repository root, where the
 * unit tests run): ABI check, handle lifecycle, verification, preflight,
 * streaming, cancellation, prompts, errors. That its ids and receipt ids
 * equal `tinylm run`'s is checked by tests/api/example_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "receipt.h"
#include "tinylm.h"
#include "tl_test.h"

#define TINY "tests/golden/slm/tiny-f32.slm"

static uint8_t *read_tiny(size_t *len) {
  FILE *f = fopen(TINY, "rb");
  uint8_t *buf = NULL;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n)) != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = buf ? (size_t)n : 0;
  return buf;
}

/* Opens the tiny model (the ABI agreed first). */
static bool open_tiny(tl_test_ctx *t, tl_model_handle *m) {
  size_t len = 0;
  uint8_t *bytes = read_tiny(&len);
  tl_status st;
  if (!TL_EXPECT(t, bytes != NULL)) return false; /* run from the repository root */
  if (!TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION))) return false;
  st = tl_model_open_bytes(bytes, len, 0, m); /* copied: freed below */
  free(bytes);
  return TL_EXPECT_OK(t, st);
}

static const tl_session_options scalar = {TL_LANE_SCALAR, 0, 64, 0, 0};

/* Must be the suite's first case: nothing has agreed an ABI yet. */
static void abi_mismatch_is_refused(tl_test_ctx *t) {
  tl_model_handle m = 7;
  tl_error e;
  TL_EXPECT_EQ_U64(t, tl_abi_version(), TL_ABI_VERSION);
  TL_EXPECT_STATUS(t, tl_model_open_bytes("x", 1, 0, &m), TL_ERR_UNSUPPORTED_ABI);
  TL_EXPECT_STATUS(t, tl_api_init(TL_ABI_VERSION + 1), TL_ERR_UNSUPPORTED_ABI);
  TL_EXPECT_OK(t, tl_error_detail(TL_NO_HANDLE, &e));
  TL_EXPECT_STATUS(t, e.status, TL_ERR_UNSUPPORTED_ABI);
  TL_EXPECT(t, strstr(e.message, "ABI 2") != NULL);
  /* a refused init agrees nothing */
  TL_EXPECT_STATUS(t, tl_model_open_bytes("x", 1, 0, &m), TL_ERR_UNSUPPORTED_ABI);
  TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION));
  TL_EXPECT_STATUS(t, tl_model_open_bytes("x", 1, 0, &m), TL_ERR_INVALID_MODEL);
  TL_EXPECT_EQ_U64(t, m, TL_NO_HANDLE);
}

static void closed_handles_are_stale(tl_test_ctx *t) {
  tl_model_handle m, m2;
  tl_session_handle s;
  tl_generation_handle g;
  tl_preflight_plan plan;
  tl_error e;
  uint32_t pos;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_STATUS(t, tl_generation_free(g), TL_ERR_STALE_HANDLE); /* double free */
  TL_EXPECT_STATUS(t, tl_generation_cancel(g), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_model_close(m));
  TL_EXPECT_STATUS(t, tl_model_close(m), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, tl_model_preflight(m, NULL, &plan), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, tl_error_detail(m, &e), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, e.status, TL_ERR_STALE_HANDLE);
  TL_EXPECT(t, strstr(e.message, "closed") != NULL);
  /* the session keeps its model alive */
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  {
    tl_generation_params p = {0};
    p.text = "Hello";
    p.text_len = 5;
    p.max_tokens = 2;
    TL_EXPECT_OK(t, tl_generation_run(g, &p));
    TL_EXPECT_STATUS(t, tl_generation_run(g, &p), TL_ERR_INVALID_ARGUMENT); /* once */
  }
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_STATUS(t, tl_session_reset(s), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_generation_free(g));
  /* a new model reuses the slot: the old handle stays stale */
  if (!open_tiny(t, &m2)) return;
  TL_EXPECT(t, m2 != m);
  TL_EXPECT_STATUS(t, tl_model_preflight(m, NULL, &plan), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_model_close(m2));
}

static void forged_handles_are_invalid(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_preflight_plan plan;
  uint32_t pos;
  tl_error e;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_STATUS(t, tl_model_preflight(0, NULL, &plan), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_model_preflight(0xFFFFFFFFu, NULL, &plan), TL_ERR_INVALID_HANDLE);
  /* a session's handle where a model's goes, and the other way round */
  TL_EXPECT_STATUS(t, tl_model_preflight(s, NULL, &plan), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_session_position(m, &pos), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_generation_cancel(s), TL_ERR_INVALID_HANDLE);
  /* a generation the slot never reached */
  TL_EXPECT_STATUS(t, tl_model_preflight(m + 1, NULL, &plan), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_error_detail(m + 1, &e), TL_ERR_INVALID_HANDLE);
  /* nothing above disturbed the real ones */
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

typedef struct mem_reader {
  const uint8_t *data;
  size_t len;
  int fail_at; /* -1: never */
  uint64_t calls;
} mem_reader;

static int64_t read_mem(void *ctx, uint64_t offset, void *buf, size_t len) {
  mem_reader *r = ctx;
  size_t n;
  if (r->fail_at >= 0 && r->calls++ == (uint64_t)r->fail_at) return -1;
  if (offset >= r->len) return 0;
  n = r->len - offset < len ? r->len - (size_t)offset : len;
  if (n > 4096) n = 4096; /* short reads are allowed */
  memcpy(buf, r->data + offset, n);
  return (int64_t)n;
}

static void changed_or_short_bytes_are_refused(tl_test_ctx *t) {
  size_t len = 0;
  uint8_t *bytes = read_tiny(&len);
  tl_model_handle m = TL_NO_HANDLE;
  mem_reader r;
  tl_error e;
  if (!TL_EXPECT(t, bytes != NULL) || !TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION))) return;
  /* through the reader, whole: fine */
  r = (mem_reader){bytes, len, -1, 0};
  TL_EXPECT_OK(t, tl_model_open_reader(read_mem, &r, &m));
  TL_EXPECT_OK(t, tl_model_close(m));
  /* a reader failure */
  r = (mem_reader){bytes, len, 3, 0};
  TL_EXPECT_STATUS(t, tl_model_open_reader(read_mem, &r, &m), TL_ERR_IO);
  /* truncated */
  r = (mem_reader){bytes, len - 100, -1, 0};
  TL_EXPECT_STATUS(t, tl_model_open_reader(read_mem, &r, &m), TL_ERR_INVALID_MODEL);
  TL_EXPECT_OK(t, tl_error_detail(TL_NO_HANDLE, &e));
  TL_EXPECT(t, strstr(e.message, "truncated") != NULL);
  /* one byte of the last tensor's data changed (the file ends in tensor
   * data): its digest no longer matches, by bytes and by reader */
  bytes[len - 1] ^= 0x01;
  TL_EXPECT_STATUS(t, tl_model_open_bytes(bytes, len, TL_OPEN_BORROW, &m),
                   TL_ERR_HASH_MISMATCH);
  r = (mem_reader){bytes, len, -1, 0};
  TL_EXPECT_STATUS(t, tl_model_open_reader(read_mem, &r, &m), TL_ERR_HASH_MISMATCH);
  TL_EXPECT_EQ_U64(t, m, TL_NO_HANDLE);
  free(bytes);
}

static void preflight_gives_the_plan(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s = TL_NO_HANDLE;
  tl_preflight_plan p;
  tl_session_options o = scalar;
  tl_error e;
  char want[64];
  if (!open_tiny(t, &m)) return;
  o.context = 12;
  TL_EXPECT_OK(t, tl_model_preflight(m, &o, &p));
  TL_EXPECT_EQ_U64(t, p.context, 12);
  /* tests/golden/slm/tiny.json: 2 layers, 1 KV head, head_dim 16, vocab
   * 346; session.h: KV = 2 x layers x context x kv_heads x head_dim x 4 */
  TL_EXPECT_EQ_U64(t, p.kv_cache, 2u * 2 * 12 * 1 * 16 * 4);
  TL_EXPECT_EQ_U64(t, p.logits, 346u * 4);
  TL_EXPECT_EQ_U64(t, p.total,
                   p.weights + p.tokenizer + p.kv_cache + p.scratch + p.logits + p.sampler);
  o.context = 100000;
  TL_EXPECT_STATUS(t, tl_model_preflight(m, &o, &p), TL_ERR_CONTEXT_EXCEEDED);
  /* a budget one byte short of the plan is refused, naming the plan */
  o.context = 12;
  TL_EXPECT_OK(t, tl_model_preflight(m, &o, &p));
  o.mem_budget = p.total - 1;
  TL_EXPECT_STATUS(t, tl_session_new(m, &o, &s), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_EQ_U64(t, s, TL_NO_HANDLE);
  TL_EXPECT_OK(t, tl_error_detail(m, &e));
  TL_EXPECT_STATUS(t, e.status, TL_ERR_OUT_OF_MEMORY);
  snprintf(want, sizeof want, "%.1f MB", p.total / 1e6);
  TL_EXPECT(t, strstr(e.message, want) != NULL);
  o.mem_budget = p.total;
  TL_EXPECT_OK(t, tl_session_new(m, &o, &s));
  TL_EXPECT_OK(t, tl_session_free(s));
  o.lane = 9;
  TL_EXPECT_STATUS(t, tl_session_new(m, &o, &s), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* What the callbacks saw. */
typedef struct seen {
  uint32_t ids[64];
  size_t n_ids;
  uint8_t text[4096];
  size_t text_len;
  size_t cancel_after; /* on_token returns 1 at this many ids (0: never) */
  tl_generation_handle other; /* run from inside on_token (if set) */
  tl_status other_status;
  tl_session_handle session; /* asked tl_session_reuse from inside on_token (if set) */
  tl_status reuse_status;
  atomic_int *signal; /* cross-thread cancellation */
} seen;

static int on_token(void *ctx, uint32_t id) {
  seen *s = ctx;
  if (s->n_ids < 64) s->ids[s->n_ids] = id;
  s->n_ids++;
  if (s->session != TL_NO_HANDLE && s->n_ids == 1) {
    uint32_t k;
    s->reuse_status = tl_session_reuse(s->session, s->ids, 1, &k);
  }
  if (s->other != TL_NO_HANDLE && s->n_ids == 1) {
    tl_generation_params p = {0};
    p.text = "Hi";
    p.text_len = 2;
    s->other_status = tl_generation_run(s->other, &p);
  }
  if (s->signal != NULL && s->n_ids == 2) {
    /* Hand over to the canceller and wait until it has cancelled. */
    struct timespec start, now;
    atomic_store(s->signal, 1);
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      sched_yield();
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while (atomic_load(s->signal) != 2 && now.tv_sec - start.tv_sec < 10);
  }
  return s->cancel_after != 0 && s->n_ids == s->cancel_after;
}

static int on_text(void *ctx, const uint8_t *b, size_t n) {
  seen *s = ctx;
  if (s->text_len + n <= sizeof s->text) memcpy(s->text + s->text_len, b, n);
  s->text_len += n;
  return 0;
}

static tl_generation_params sampled(seen *s) {
  tl_generation_params p = {0};
  p.text = "Hello there";
  p.text_len = strlen("Hello there");
  p.given = TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K;
  p.temperature = 0.8;
  p.top_k = 20;
  p.seed = 11;
  p.max_tokens = 12;
  p.on_token = on_token;
  p.on_text = on_text;
  p.ctx = s;
  return p;
}

static void streaming_matches_the_result(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g, g2;
  tl_generation_result r, r2;
  seen a = {0}, b = {0};
  tl_generation_params p = sampled(&a);
  tl_receipt_kind kind;
  uint8_t root[32];
  char err[256], hex[65];
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_OK(t, tl_generation_run(g, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g, &r));
  TL_EXPECT(t, r.n_ids > 0);
  /* every id streamed, in order; the streamed text is the visible text */
  TL_EXPECT_EQ_U64(t, a.n_ids, r.n_ids);
  TL_EXPECT(t, a.n_ids <= 64 && memcmp(a.ids, r.ids, r.n_ids * sizeof *r.ids) == 0);
  TL_EXPECT_EQ_U64(t, a.text_len, r.text_len);
  TL_EXPECT(t, a.text_len <= sizeof a.text && memcmp(a.text, r.text, r.text_len) == 0);
  TL_EXPECT_EQ_U64(t, r.position, 0);
  /* the receipt verifies and its root is the id given */
  TL_EXPECT_OK(t, tl_receipt_check(r.receipt, r.receipt_len, &kind, root, err, sizeof err));
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", root[i]);
  TL_EXPECT_STR(t, r.receipt_id, hex);
  /* the same inputs again: the same ids and receipt id */
  p = sampled(&b);
  TL_EXPECT_OK(t, tl_generation_new(s, &g2));
  TL_EXPECT_OK(t, tl_generation_run(g2, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g2, &r2));
  TL_EXPECT_EQ_U64(t, r2.n_ids, r.n_ids);
  TL_EXPECT(t, memcmp(r2.ids, r.ids, r.n_ids * sizeof *r.ids) == 0);
  TL_EXPECT_STR(t, r2.receipt_id, r.receipt_id);
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_OK(t, tl_generation_free(g2));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* Runs sampled() on a new generation; the status, and the result into *r
 * (the generation stays for the caller to free). */
static tl_status run_sampled(tl_session_handle s, seen *sn, tl_generation_handle *g,
                             tl_generation_result *r) {
  tl_generation_params p = sampled(sn);
  tl_status st = tl_generation_new(s, g);
  if (st != TL_OK) return st;
  st = tl_generation_run(*g, &p);
  tl_generation_result_get(*g, r);
  return st;
}

/* tl_reply_split: Qwen3's think block apart from the answer, pointers into
 * the text; a generation's text without a block is all answer. */
static void reply_split_finds_the_think_block(tl_test_ctx *t) {
  static const struct {
    const char *text, *reasoning, *answer; /* reasoning NULL: no block */
  } cases[] = {
      {"<think>\nadd them\n</think>\n\n12 + 30 = 42.", "add them", "12 + 30 = 42."},
      {"<think>\n\n</think>\n\nHi", "", "Hi"},
      {"<think>\ncut short", "cut short", ""},
      {"Hi <think>x</think>", NULL, "Hi <think>x</think>"},
      {"", NULL, ""},
  };
  tl_reply_parts rp;
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_result r;
  seen a = {0};
  if (!TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION))) return;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *x = cases[i].text;
    if (!TL_EXPECT_OK(t, tl_reply_split(x, strlen(x), &rp))) continue;
    TL_EXPECT(t, (rp.reasoning == NULL) == (cases[i].reasoning == NULL));
    if (cases[i].reasoning != NULL)
      TL_EXPECT(t, rp.reasoning_len == strlen(cases[i].reasoning) &&
                       memcmp(rp.reasoning, cases[i].reasoning, rp.reasoning_len) == 0 &&
                       rp.reasoning >= (const uint8_t *)x && rp.reasoning <= (const uint8_t *)x + strlen(x));
    TL_EXPECT(t, rp.answer_len == strlen(cases[i].answer) &&
                     memcmp(rp.answer, cases[i].answer, rp.answer_len) == 0 &&
                     rp.answer + rp.answer_len == (const uint8_t *)x + strlen(x));
  }
  TL_EXPECT_STATUS(t, tl_reply_split("x", 1, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_reply_split(NULL, 1, &rp), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_reply_split(NULL, 0, &rp));
  /* a generation's result (the tiny model writes no block) */
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  if (TL_EXPECT_OK(t, run_sampled(s, &a, &g, &r))) {
    TL_EXPECT_OK(t, tl_reply_split(r.text, r.text_len, &rp));
    TL_EXPECT(t, rp.reasoning == NULL && rp.answer == r.text && rp.answer_len == r.text_len);
  }
  tl_generation_free(g);
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static void cancel_from_the_callback_keeps_the_session(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g0, g1, g2;
  tl_generation_result r0, r1 = {0}, r2;
  seen a = {0}, b = {0}, c = {0};
  tl_error e;
  uint32_t pos = 99;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, run_sampled(s, &a, &g0, &r0));
  TL_EXPECT(t, r0.n_ids > 3);
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT(t, pos > 0);
  /* a refused generation (two prompts) leaves the cache alone */
  {
    seen x = {0};
    tl_generation_handle gx;
    tl_generation_params p = sampled(&x);
    uint32_t after = 0;
    p.ids = &pos;
    p.n_ids = 1;
    TL_EXPECT_OK(t, tl_generation_new(s, &gx));
    TL_EXPECT_STATUS(t, tl_generation_run(gx, &p), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_OK(t, tl_session_position(s, &after));
    TL_EXPECT_EQ_U64(t, after, pos);
    tl_generation_free(gx);
  }
  /* continue after it, then cancel at the third token */
  b.cancel_after = 3;
  {
    tl_generation_params p = sampled(&b);
    p.flags = TL_GENERATE_CONTINUE;
    TL_EXPECT_OK(t, tl_generation_new(s, &g1));
    TL_EXPECT_STATUS(t, tl_generation_run(g1, &p), TL_ERR_CANCELLED);
    TL_EXPECT_OK(t, tl_generation_result_get(g1, &r1));
  }
  TL_EXPECT_EQ_U64(t, r1.n_ids, 3);
  TL_EXPECT_STR(t, r1.stop, "cancelled");
  TL_EXPECT(t, r1.receipt_id[0] != '\0');
  TL_EXPECT_OK(t, tl_error_detail(g1, &e));
  TL_EXPECT_STATUS(t, e.status, TL_ERR_CANCELLED);
  /* the cancelled turn left the cache as it was */
  {
    uint32_t after = 0;
    TL_EXPECT_OK(t, tl_session_position(s, &after));
    TL_EXPECT_EQ_U64(t, after, pos);
  }
  /* and the session still gives the first reply */
  TL_EXPECT_OK(t, run_sampled(s, &c, &g2, &r2));
  TL_EXPECT_EQ_U64(t, r2.n_ids, r0.n_ids);
  TL_EXPECT(t, memcmp(r2.ids, r0.ids, r0.n_ids * sizeof *r0.ids) == 0);
  TL_EXPECT_STR(t, r2.receipt_id, r0.receipt_id);
  tl_generation_free(g0);
  tl_generation_free(g1);
  tl_generation_free(g2);
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

typedef struct canceller {
  atomic_int signal;
  tl_generation_handle g;
  tl_status st;
} canceller;

static void *cancel_thread(void *arg) {
  canceller *c = arg;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (atomic_load(&c->signal) != 1) {
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 10) return NULL;
  }
  c->st = tl_generation_cancel(c->g);
  atomic_store(&c->signal, 2);
  return NULL;
}

static void cancel_from_another_thread(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_result r;
  seen a = {0};
  canceller c;
  pthread_t th;
  tl_generation_params p = sampled(&a);
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  atomic_init(&c.signal, 0);
  c.st = TL_ERR_INTERNAL_INVARIANT;
  TL_EXPECT_OK(t, tl_generation_new(s, &c.g));
  a.signal = &c.signal;
  if (!TL_EXPECT(t, pthread_create(&th, NULL, cancel_thread, &c) == 0)) return;
  TL_EXPECT_STATUS(t, tl_generation_run(c.g, &p), TL_ERR_CANCELLED);
  pthread_join(th, NULL);
  TL_EXPECT_OK(t, c.st);
  TL_EXPECT_OK(t, tl_generation_result_get(c.g, &r));
  TL_EXPECT_EQ_U64(t, r.n_ids, 2);
  TL_EXPECT_OK(t, tl_generation_free(c.g));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static void one_generation_at_a_time_per_session(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_result r;
  seen a = {0};
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, tl_generation_new(s, &a.other));
  a.other_status = TL_ERR_INTERNAL_INVARIANT;
  TL_EXPECT_OK(t, run_sampled(s, &a, &g, &r));
  TL_EXPECT_STATUS(t, a.other_status, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_generation_free(a.other));
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static void prompts_by_text_ids_and_messages(tl_test_ctx *t) {
  static const char conv[] = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}";
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g1, g2, g3, g4;
  tl_generation_result r1, r2, r3;
  tl_generation_params p = {0};
  tl_message msg = {"user", "Hello", 5};
  uint8_t rendered[1024], rendered2[1024];
  uint32_t ids[256], one[8], split[16];
  size_t len = 0, len2 = 0, n = 0, k = 0, n_split = 0;
  int add_gen = 0;
  tl_error e;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  /* rendering: JSON and role/content arrays agree; too small is bounds */
  TL_EXPECT_OK(t, tl_model_render(m, conv, strlen(conv), rendered, sizeof rendered, &len,
                                  &add_gen));
  TL_EXPECT(t, add_gen == 1);
  TL_EXPECT_OK(t, tl_model_render_messages(m, &msg, 1, rendered2, sizeof rendered2, &len2,
                                           NULL));
  TL_EXPECT_EQ_U64(t, len2, len);
  TL_EXPECT(t, memcmp(rendered, rendered2, len) == 0);
  {
    /* content that JSON must escape (quote, backslash, newline, U+0000,
     * U+001F) renders as the same conversation written as JSON does;
     * invalid UTF-8 is refused */
    static const char esc[] = "{\"messages\": [{\"role\": \"user\", \"content\": "
                              "\"a\\\"b\\\\c\\nd\\u0000e\\u001f\"}]}";
    tl_message odd = {"user", "a\"b\\c\nd\0e\x1f", 10}, bad = {"user", "ab\xff", 3};
    TL_EXPECT_OK(t, tl_model_render(m, esc, strlen(esc), rendered, sizeof rendered, &len, NULL));
    TL_EXPECT_OK(t, tl_model_render_messages(m, &odd, 1, rendered2, sizeof rendered2, &len2,
                                             NULL));
    TL_EXPECT_EQ_U64(t, len2, len);
    TL_EXPECT(t, memcmp(rendered, rendered2, len) == 0);
    TL_EXPECT_STATUS(t, tl_model_render_messages(m, &bad, 1, rendered2, sizeof rendered2,
                                                 &len2, NULL),
                     TL_ERR_INVALID_UTF8);
    TL_EXPECT_OK(t, tl_model_render(m, conv, strlen(conv), rendered, sizeof rendered, &len,
                                    NULL));
  }
  TL_EXPECT_STATUS(t, tl_model_render(m, conv, strlen(conv), rendered, 3, &len2, NULL),
                   TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, len2, len);
  TL_EXPECT_STATUS(t, tl_model_render(m, "{", 1, rendered, sizeof rendered, &len2, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_model_encode(m, rendered, len, ids, 256, &n));
  TL_EXPECT(t, n > 0);
  TL_EXPECT_STATUS(t, tl_model_encode(m, rendered, len, ids, 1, &k), TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, k, n);
  TL_EXPECT_STATUS(t, tl_model_encode(m, "ab\xff", 3, ids, 256, &k), TL_ERR_INVALID_UTF8);
  TL_EXPECT_OK(t, tl_error_detail(m, &e));
  TL_EXPECT_EQ_U64(t, e.index, 2);
  /* messages: the prompt is the rendering's ids */
  p.messages_json = conv;
  p.messages_len = strlen(conv);
  p.max_tokens = 4;
  TL_EXPECT_OK(t, tl_generation_new(s, &g1));
  TL_EXPECT_OK(t, tl_generation_run(g1, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g1, &r1));
  TL_EXPECT_EQ_U64(t, r1.prompt_tokens, n);
  /* text and the ids it encodes to: one receipt */
  memset(&p, 0, sizeof p);
  p.text = "Hello there";
  p.text_len = 11;
  p.max_tokens = 4;
  TL_EXPECT_OK(t, tl_generation_new(s, &g2));
  TL_EXPECT_OK(t, tl_generation_run(g2, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g2, &r2));
  TL_EXPECT_OK(t, tl_model_encode(m, "Hello there", 11, ids, 256, &n));
  p.text = NULL;
  p.ids = ids;
  p.n_ids = n;
  TL_EXPECT_OK(t, tl_generation_new(s, &g3));
  TL_EXPECT_OK(t, tl_generation_run(g3, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g3, &r3));
  TL_EXPECT_STR(t, r3.receipt_id, r2.receipt_id);
  /* ids that are not their bytes' encoding (each character of "Hello"
   * alone, which the tokenizer merges) are refused */
  for (size_t i = 0; i < 5; i++) {
    TL_EXPECT_OK(t, tl_model_encode(m, &"Hello"[i], 1, one, 8, &k));
    for (size_t j = 0; j < k && n_split < 16; j++) split[n_split++] = one[j];
  }
  TL_EXPECT_OK(t, tl_model_encode(m, "Hello", 5, ids, 256, &n));
  TL_EXPECT(t, n != n_split); /* the premise: "Hello" merges */
  p.ids = split;
  p.n_ids = n_split;
  TL_EXPECT_OK(t, tl_generation_new(s, &g4));
  TL_EXPECT_STATUS(t, tl_generation_run(g4, &p), TL_ERR_INVALID_ARGUMENT);
  tl_generation_free(g4);
  /* two prompts at once; an empty stop string */
  p.text = "x";
  p.text_len = 1;
  TL_EXPECT_OK(t, tl_generation_new(s, &g4));
  TL_EXPECT_STATUS(t, tl_generation_run(g4, &p), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_error_detail(g4, &e));
  TL_EXPECT(t, strstr(e.message, "exactly one") != NULL);
  tl_generation_free(g4);
  TL_EXPECT_OK(t, tl_generation_new(s, &g4));
  p.ids = NULL;
  {
    const char *stops[] = {""};
    p.stop_strings = stops;
    p.n_stops = 1;
    TL_EXPECT_STATUS(t, tl_generation_run(g4, &p), TL_ERR_INVALID_ARGUMENT);
  }
  tl_generation_free(g1);
  tl_generation_free(g2);
  tl_generation_free(g3);
  tl_generation_free(g4);
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

typedef struct counts {
  size_t prefill_calls, prefill_done, prefill_total, choices, tokens;
  uint32_t last_choice;
  bool order_ok; /* every on_token followed its on_choice */
  int cancel_in_prefill;
} counts;

static int count_prefill(void *ctx, size_t done, size_t total) {
  counts *c = ctx;
  c->prefill_calls++;
  c->prefill_done = done;
  c->prefill_total = total;
  return c->cancel_in_prefill;
}

static void count_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  counts *c = ctx;
  /* the id drawn is one the logits cover */
  c->order_ok &= logits != NULL && id < vocab && c->choices == c->tokens;
  c->choices++;
  c->last_choice = id;
}

static int count_token(void *ctx, uint32_t id) {
  counts *c = ctx;
  c->order_ok &= c->choices == c->tokens + 1 && id == c->last_choice;
  c->tokens++;
  return 0;
}

static void file_decode_errors_and_callbacks(tl_test_ctx *t) {
  static const char bad_json[] = "{\"messages\": [1, 2,]}";
  tl_model_handle m, bad;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_result r;
  tl_generation_params p = {0};
  counts c = {0};
  uint32_t ids[64];
  uint8_t out[256];
  size_t n = 0, len = 0;
  tl_error e;
  if (!TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION))) return;
  TL_EXPECT_STATUS(t, tl_model_open_file("tests/golden/slm/no-such.slm", &bad), TL_ERR_IO);
  TL_EXPECT_OK(t, tl_error_detail(TL_NO_HANDLE, &e));
  TL_EXPECT(t, strstr(e.message, "tests/golden/slm/no-such.slm") != NULL);
  if (!TL_EXPECT_OK(t, tl_model_open_file(TINY, &m))) return;
  /* decode: raw bytes of an encoding are the text; a bad id is named */
  TL_EXPECT_OK(t, tl_model_encode(m, "Hello there", 11, ids, 64, &n));
  TL_EXPECT_OK(t, tl_model_decode(m, ids, n, TL_DECODE_RAW, out, sizeof out, &len));
  TL_EXPECT_EQ_U64(t, len, 11);
  TL_EXPECT(t, memcmp(out, "Hello there", 11) == 0);
  TL_EXPECT_STATUS(t, tl_model_decode(m, ids, n, TL_DECODE_RAW, out, 3, &len), TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, len, 11);
  ids[1] = 1000000;
  TL_EXPECT_STATUS(t, tl_model_decode(m, ids, n, TL_DECODE_RAW, out, sizeof out, &len),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_error_detail(m, &e));
  TL_EXPECT_EQ_U64(t, e.index, 1);
  TL_EXPECT_STATUS(t, tl_model_decode(m, ids, 1, 7, out, sizeof out, &len),
                   TL_ERR_INVALID_ARGUMENT);
  /* a conversation's syntax error: kind, line and column */
  TL_EXPECT_STATUS(t, tl_model_render(m, bad_json, strlen(bad_json), out, sizeof out, &len, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_error_detail(m, &e));
  TL_EXPECT_STR(t, e.kind, "json");
  TL_EXPECT_EQ_U64(t, e.line, 1);
  TL_EXPECT_EQ_U64(t, e.column, 20);
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  /* a given sampling value out of range names its field */
  p.text = "Hello";
  p.text_len = 5;
  p.max_tokens = 3;
  p.given = TL_GIVEN_TOP_P;
  p.top_p = 2.0;
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_STATUS(t, tl_generation_run(g, &p), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_error_detail(g, &e));
  TL_EXPECT_STR(t, e.kind, "top_p");
  tl_generation_free(g);
  /* prefill progress, then each choice before its token */
  p.given = 0;
  c.order_ok = true;
  p.on_prefill = count_prefill;
  p.on_choice = count_choice;
  p.on_token = count_token;
  p.ctx = &c;
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_OK(t, tl_generation_run(g, &p));
  TL_EXPECT_OK(t, tl_generation_result_get(g, &r));
  TL_EXPECT(t, c.prefill_calls >= 1);
  TL_EXPECT_EQ_U64(t, c.prefill_done, r.prompt_tokens);
  TL_EXPECT_EQ_U64(t, c.prefill_total, r.prompt_tokens);
  TL_EXPECT_EQ_U64(t, c.choices, r.n_ids);
  TL_EXPECT_EQ_U64(t, c.tokens, r.n_ids);
  TL_EXPECT(t, c.order_ok);
  tl_generation_free(g);
  TL_EXPECT_OK(t, tl_session_free(s));
  /* a nonzero return from on_prefill cancels before the next forward
   * call: after the first of a long prompt's chunks, before any token */
  {
    tl_session_options o = scalar;
    char text[600];
    uint32_t many[256];
    size_t k = 0;
    o.context = 256;
    for (int i = 0; i < 280 && n <= 200; i++) {
      k += (size_t)snprintf(text + k, sizeof text - k, "%c ", 'a' + i % 26);
      TL_EXPECT_OK(t, tl_model_encode(m, text, k, many, 256, &n));
    }
    TL_EXPECT(t, n > 200 && n + p.max_tokens <= o.context);
    TL_EXPECT_OK(t, tl_session_new(m, &o, &s));
    memset(&c, 0, sizeof c);
    c.cancel_in_prefill = 1;
    p.text = text;
    p.text_len = k;
    TL_EXPECT_OK(t, tl_generation_new(s, &g));
    TL_EXPECT_STATUS(t, tl_generation_run(g, &p), TL_ERR_CANCELLED);
    TL_EXPECT_OK(t, tl_generation_result_get(g, &r));
    /* the premise: the prompt was more than one prefill chunk */
    TL_EXPECT(t, c.prefill_done > 0 && c.prefill_done < c.prefill_total);
    TL_EXPECT_EQ_U64(t, c.prefill_calls, 1);
    TL_EXPECT_EQ_U64(t, r.n_ids, 0);
    TL_EXPECT_EQ_U64(t, c.tokens, 0);
    tl_generation_free(g);
  }
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static void null_arguments_are_typed(tl_test_ctx *t) {
  tl_model_handle m, x;
  tl_session_handle s;
  tl_generation_handle g;
  size_t n;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_STATUS(t, tl_model_open_bytes(NULL, 5, 0, &x), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_open_bytes("x", 1, 0, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_open_bytes("x", 1, 0x80, &x), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_open_reader(NULL, NULL, &x), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_open_file(NULL, &x), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_preflight(m, NULL, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_artifact_id(m, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_encode(m, NULL, 3, NULL, 0, &n), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_encode(m, "ab", 2, NULL, 0, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_render(m, NULL, 4, NULL, 0, &n, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_model_render_messages(m, NULL, 1, NULL, 0, &n, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_session_new(m, &scalar, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_error_detail(m, NULL), TL_ERR_INVALID_ARGUMENT);
  if (!TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s))) return;
  TL_EXPECT_STATUS(t, tl_session_position(s, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_generation_new(s, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_STATUS(t, tl_generation_result_get(g, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_generation_run(g, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_generation_free(g));
  {
    tl_generation_params p = {0};
    p.text = "Hi";
    p.text_len = 2;
    p.given = 1u << 7;
    TL_EXPECT_OK(t, tl_generation_new(s, &g));
    TL_EXPECT_STATUS(t, tl_generation_run(g, &p), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_OK(t, tl_generation_free(g));
  }
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  {
    tl_generation_result r;
    TL_EXPECT_STATUS(t, tl_generation_result_get(g, &r), TL_ERR_INVALID_ARGUMENT); /* not run */
  }
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* Two threads, each with its own session on one model, at once: each
 * gets what one session alone gives. */
typedef struct worker {
  tl_model_handle m;
  tl_status st;
  size_t n_ids;
  uint32_t ids[64];
  char receipt[65];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_result r;
  seen sn = {0};
  w->st = tl_session_new(w->m, &scalar, &s);
  if (w->st != TL_OK) return NULL;
  for (int rep = 0; rep < 3 && w->st == TL_OK; rep++) {
    w->st = run_sampled(s, &sn, &g, &r);
    if (w->st == TL_OK) {
      w->n_ids = r.n_ids < 64 ? r.n_ids : 64;
      memcpy(w->ids, r.ids, w->n_ids * sizeof *r.ids);
      memcpy(w->receipt, r.receipt_id, sizeof w->receipt);
    }
    tl_generation_free(g);
    memset(&sn, 0, sizeof sn);
  }
  tl_session_free(s);
  return NULL;
}

static void sessions_run_in_parallel(tl_test_ctx *t) {
  tl_model_handle m;
  worker alone = {0}, w[2];
  pthread_t th[2];
  if (!open_tiny(t, &m)) return;
  alone.m = m;
  work(&alone);
  TL_EXPECT_OK(t, alone.st);
  for (int i = 0; i < 2; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].m = m;
    TL_EXPECT(t, pthread_create(&th[i], NULL, work, &w[i]) == 0);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    TL_EXPECT_OK(t, w[i].st);
    TL_EXPECT_EQ_U64(t, w[i].n_ids, alone.n_ids);
    TL_EXPECT(t, memcmp(w[i].ids, alone.ids, alone.n_ids * sizeof *alone.ids) == 0);
    TL_EXPECT_STR(t, w[i].receipt, alone.receipt);
  }
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* A greedy generation of text with flags on session s: its status, and
 * its result into *r (the generation into *g, for the caller to free). */
static tl_status run_greedy(tl_session_handle s, const char *text, uint32_t flags, seen *sn,
                            tl_generation_handle *g, tl_generation_result *r) {
  tl_generation_params p = {0};
  tl_status st = tl_generation_new(s, g);
  if (st != TL_OK) return st;
  p.text = text;
  p.text_len = strlen(text);
  p.given = TL_GIVEN_TEMPERATURE; /* 0: greedy */
  p.max_tokens = 6;
  p.flags = flags;
  p.on_token = on_token;
  p.ctx = sn;
  st = tl_generation_run(*g, &p);
  tl_generation_result_get(*g, r);
  return st;
}

/* TL_GENERATE_REUSE_PREFIX: the session knows which tokens its cache
 * holds; a longer prompt computes only what follows the shared prefix,
 * and replies as a fresh session computing all of it does. */
static void reuse_prefix_computes_only_the_rest(tl_test_ctx *t) {
  static const char p1[] = "Hello there", p2[] = "Hello there, and then what?";
  tl_model_handle m;
  tl_session_handle s, fresh;
  tl_generation_handle g1, g2, g3, g4;
  tl_generation_result r1, r2, r3, r4;
  seen a = {0}, b = {0}, c = {0}, d = {0};
  uint32_t ids1[64], ids2[64], held[128], k = 0, pos = 0, want = 0;
  size_t n1 = 0, n2 = 0, n_held;
  tl_receipt_kind kind;
  uint8_t root[32];
  char err[256];
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &fresh));
  TL_EXPECT_OK(t, tl_model_encode(m, p1, strlen(p1), ids1, 64, &n1));
  TL_EXPECT_OK(t, tl_model_encode(m, p2, strlen(p2), ids2, 64, &n2));
  /* an empty cache reuses nothing */
  TL_EXPECT_OK(t, tl_session_reuse(s, ids1, n1, &k));
  TL_EXPECT_EQ_U64(t, k, 0);
  TL_EXPECT_OK(t, run_greedy(s, p1, TL_GENERATE_REUSE_PREFIX, &a, &g1, &r1));
  TL_EXPECT_EQ_U64(t, r1.position, 0);
  TL_EXPECT_EQ_U64(t, r1.prompt_tokens, n1);
  /* the cache holds p1's ids, then the generated ones that were fed:
   * the prefix p2 shares with them, counted here */
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  n_held = pos;
  if (!TL_EXPECT(t, n_held >= n1 && n_held - n1 <= r1.n_ids && n_held <= 128)) return;
  memcpy(held, ids1, n1 * sizeof *ids1);
  memcpy(held + n1, r1.ids, (n_held - n1) * sizeof *held);
  while (want < n_held && want < n2 && held[want] == ids2[want]) want++;
  TL_EXPECT(t, want > 0 && want < n2);
  TL_EXPECT_OK(t, tl_session_reuse(s, ids2, n2, &k));
  TL_EXPECT_EQ_U64(t, k, want);
  TL_EXPECT_OK(t, run_greedy(s, p2, TL_GENERATE_REUSE_PREFIX, &b, &g2, &r2));
  TL_EXPECT_EQ_U64(t, r2.position, want);
  TL_EXPECT_EQ_U64(t, r2.prompt_tokens, n2 - want);
  TL_EXPECT_OK(t, tl_receipt_check(r2.receipt, r2.receipt_len, &kind, root, err, sizeof err));
  /* the reply a session computing all of p2 gives */
  TL_EXPECT_OK(t, run_greedy(fresh, p2, 0, &c, &g3, &r3));
  TL_EXPECT_EQ_U64(t, r3.position, 0);
  TL_EXPECT_EQ_U64(t, r2.n_ids, r3.n_ids);
  TL_EXPECT(t, r2.n_ids == r3.n_ids && memcmp(r2.ids, r3.ids, r3.n_ids * sizeof *r3.ids) == 0);
  /* the whole prompt held: all but its last token are reused */
  TL_EXPECT_OK(t, tl_session_reuse(s, ids2, n2, &k));
  TL_EXPECT_EQ_U64(t, k, n2 - 1);
  /* cancelled: what it computed stays (p1 now follows nothing it shares
   * past its first tokens, so the prompt is computed again) */
  d.cancel_after = 2;
  TL_EXPECT_STATUS(t, run_greedy(s, p1, TL_GENERATE_REUSE_PREFIX, &d, &g4, &r4),
                   TL_ERR_CANCELLED);
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT(t, pos >= n1);
  TL_EXPECT_OK(t, tl_session_reuse(s, ids1, n1, &k));
  TL_EXPECT_EQ_U64(t, k, n1 - 1);
  TL_EXPECT_OK(t, tl_generation_free(g1));
  TL_EXPECT_OK(t, tl_generation_free(g2));
  TL_EXPECT_OK(t, tl_generation_free(g3));
  TL_EXPECT_OK(t, tl_generation_free(g4));
  TL_EXPECT_OK(t, tl_session_free(fresh));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static void reuse_prefix_misuse_is_typed(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_result r;
  seen a = {0};
  uint32_t ids[4] = {1, 2, 3, 4}, k = 0, pos = 7;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_STATUS(t, tl_session_reuse(s, NULL, 1, &k), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_session_reuse(s, ids, 4, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_session_reuse(s, NULL, 0, &k));
  TL_EXPECT_EQ_U64(t, k, 0);
  TL_EXPECT_STATUS(t, tl_session_reuse(m, ids, 4, &k), TL_ERR_INVALID_HANDLE);
  /* not with TL_GENERATE_CONTINUE: refused, the cache untouched */
  TL_EXPECT_STATUS(t, run_greedy(s, "Hi", TL_GENERATE_REUSE_PREFIX | TL_GENERATE_CONTINUE, &a,
                                 &g, &r),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT_EQ_U64(t, pos, 0);
  TL_EXPECT_OK(t, tl_generation_free(g));
  /* asked while a generation runs on the session */
  a.session = s;
  TL_EXPECT_OK(t, run_greedy(s, "Hi", TL_GENERATE_REUSE_PREFIX, &a, &g, &r));
  TL_EXPECT_STATUS(t, a.reuse_status, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_STATUS(t, tl_session_reuse(s, ids, 4, &k), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* tl_session_observe during a generation on the same session. */
typedef struct observer_cb {
  tl_session_handle s;
  tl_status st;
} observer_cb;
static int observe_in_callback(void *ctx, uint32_t id) {
  observer_cb *o = ctx;
  size_t len = 0;
  (void)id;
  o->st = tl_session_observe(o->s, "Hi", 2, NULL, 0, NULL, 0, &len);
  return 1;
}

/* The observation document through the API (docs/observe.md): the size
 * query and the document, the same bytes by text and by its ids, and the
 * typed refusals. What the records hold is the core suite's (observe) and
 * web-observe's. */
static void observe_through_the_api(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_params p = {0};
  observer_cb cb = {0, TL_ERR_INTERNAL_INVARIANT};
  uint32_t ids[16], bad[2] = {1, 1u << 30}, pos = 7;
  size_t n_ids = 0, len = 0, len2 = 0, short_len = 0;
  uint8_t *doc = NULL, *doc2 = NULL, small[16];
  tl_error e;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_STATUS(t, tl_session_observe(s, "Hello", 5, NULL, 0, NULL, 0, &len), TL_ERR_BOUNDS);
  TL_EXPECT(t, len > 0);
  TL_EXPECT_STATUS(t, tl_session_observe(s, "Hello", 5, NULL, 0, small, sizeof small, &short_len),
                   TL_ERR_BOUNDS);
  TL_EXPECT_EQ_U64(t, short_len, len);
  doc = malloc(len);
  doc2 = malloc(len);
  if (!TL_EXPECT(t, doc != NULL && doc2 != NULL)) goto done;
  TL_EXPECT_OK(t, tl_session_observe(s, "Hello", 5, NULL, 0, doc, len, &len2));
  TL_EXPECT_EQ_U64(t, len2, len);
  TL_EXPECT_OK(t, tl_session_position(s, &pos));
  TL_EXPECT_EQ_U64(t, pos, 0); /* the cache is empty afterwards */
  TL_EXPECT_OK(t, tl_model_encode(m, "Hello", 5, ids, 16, &n_ids));
  TL_EXPECT_OK(t, tl_session_observe(s, NULL, 0, ids, n_ids, doc2, len, &len2));
  TL_EXPECT(t, len2 == len && memcmp(doc, doc2, len) == 0);
  /* the document a size query keeps is served only for its own prompt */
  {
    size_t hi_len = 0, a_len = 0, b_len = 0;
    uint8_t *a = NULL, *b = NULL;
    TL_EXPECT_STATUS(t, tl_session_observe(s, "Hi", 2, NULL, 0, NULL, 0, &hi_len), TL_ERR_BOUNDS);
    a = malloc(hi_len ? hi_len : 1);
    b = malloc(hi_len ? hi_len : 1);
    if (TL_EXPECT(t, a != NULL && b != NULL)) {
      TL_EXPECT_OK(t, tl_session_observe(s, "Hi", 2, NULL, 0, b, hi_len, &b_len));
      TL_EXPECT_STATUS(t, tl_session_observe(s, "Hello", 5, NULL, 0, NULL, 0, &len2),
                       TL_ERR_BOUNDS);
      TL_EXPECT_OK(t, tl_session_observe(s, "Hi", 2, NULL, 0, a, hi_len, &a_len));
      TL_EXPECT(t, a_len == b_len && memcmp(a, b, a_len) == 0);
      TL_EXPECT(t, a_len != len || memcmp(a, doc, len) != 0);
    }
    free(a);
    free(b);
  }
  /* refusals */
  TL_EXPECT_STATUS(t, tl_session_observe(s, "Hi", 2, ids, 1, doc, len, &len2),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_session_observe(s, NULL, 0, NULL, 0, doc, len, &len2),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_session_observe(s, "", 0, NULL, 0, doc, len, &len2),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_session_observe(s, NULL, 0, bad, 2, doc, len, &len2),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_error_detail(s, &e));
  TL_EXPECT_EQ_U64(t, e.index, 1);
  TL_EXPECT_STATUS(t, tl_session_observe(s, "a\xff", 2, NULL, 0, doc, len, &len2),
                   TL_ERR_INVALID_UTF8);
  TL_EXPECT_STATUS(t, tl_session_observe(s, "Hi", 2, NULL, 0, doc, len, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  /* a generation running on the session: refused, the generation goes on */
  cb.s = s;
  p.text = "Hello";
  p.text_len = 5;
  p.max_tokens = 4;
  p.on_token = observe_in_callback;
  p.ctx = &cb;
  TL_EXPECT_OK(t, tl_generation_new(s, &g));
  TL_EXPECT_STATUS(t, tl_generation_run(g, &p), TL_ERR_CANCELLED);
  TL_EXPECT_STATUS(t, cb.st, TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_generation_free(g));
  TL_EXPECT_OK(t, tl_session_observe(s, "Hello", 5, NULL, 0, doc2, len, &len2));
  TL_EXPECT(t, len2 == len && memcmp(doc, doc2, len) == 0);
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_STATUS(t, tl_session_observe(s, "Hello", 5, NULL, 0, doc2, len, &len2),
                   TL_ERR_STALE_HANDLE);
done:
  free(doc);
  free(doc2);
  TL_EXPECT_OK(t, tl_model_close(m));
}

typedef struct second_runner {
  tl_generation_handle g;
  atomic_int started, done; /* the first run has begun; it has returned */
  size_t tries, refused;
  char message[sizeof ((tl_error *)0)->message];
} second_runner;

static int signal_start(void *ctx, uint32_t id) {
  second_runner *r = ctx;
  (void)id;
  atomic_store(&r->started, 1);
  return 0;
}

/* Runs r->g again and again while the first run is under way and until it
 * has returned: every try is refused. */
static void *run_again(void *arg) {
  second_runner *r = arg;
  tl_generation_params p = {0};
  tl_error e;
  p.text = "Hi";
  p.text_len = 2;
  while (atomic_load(&r->started) == 0) sched_yield();
  for (int last = 0; !last;) {
    last = atomic_load(&r->done);
    r->tries++;
    if (tl_generation_run(r->g, &p) == TL_ERR_INVALID_ARGUMENT) r->refused++;
    if (tl_error_detail(r->g, &e) == TL_OK) memcpy(r->message, e.message, sizeof r->message);
  }
  return NULL;
}

/* One generation run from two threads at once: the second is refused with
 * a message that matches the state it saw (read under the lock: the
 * ThreadSanitizer build, tests/run.sh's unit-tsan, reports the read of the
 * generation's state after the lock was released that once was here). */
#ifndef REPS
#define REPS 64
#endif
static void a_generation_run_from_two_threads(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_result res;
  tl_generation_params p = {0};
  pthread_t th;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  for (int rep = 0; rep < REPS; rep++) {
    second_runner r;
    memset(&r, 0, sizeof r);
    atomic_init(&r.started, 0);
    atomic_init(&r.done, 0);
    p.text = "Hello there";
    p.text_len = strlen(p.text);
    p.max_tokens = 2;
    p.on_token = signal_start;
    p.ctx = &r;
    TL_EXPECT_OK(t, tl_generation_new(s, &r.g));
    if (!TL_EXPECT(t, pthread_create(&th, NULL, run_again, &r) == 0)) break;
    TL_EXPECT_OK(t, tl_generation_run(r.g, &p));
    atomic_store(&r.done, 1);
    pthread_join(th, NULL);
    TL_EXPECT(t, r.tries > 0);
    TL_EXPECT_EQ_U64(t, r.refused, r.tries);
    TL_EXPECT_STR(t, r.message, "a generation runs once");
    TL_EXPECT_OK(t, tl_generation_result_get(r.g, &res));
    TL_EXPECT(t, res.n_ids > 0);
    TL_EXPECT_OK(t, tl_generation_free(r.g));
  }
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* Grammar handles: compiled once (kind 0 of the handle table), their
 * digest, typed refusals naming what was refused, and the handle rules. */
static void grammar_handles(tl_test_ctx *t) {
  static const char schema[] = "{\"type\": \"object\", \"patternProperties\": {}}";
  tl_grammar_handle g, g2, bad = 7;
  tl_model_handle m;
  uint8_t d1[32], d2[32];
  tl_preflight_plan plan;
  tl_error e;
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_grammar_compile(TL_GRAMMAR_JSON_OBJECT, NULL, 0, &g));
  TL_EXPECT(t, g != TL_NO_HANDLE && (g >> 30) == 0);
  TL_EXPECT_OK(t, tl_grammar_compile(TL_GRAMMAR_REGEX, "[0-9]+", 6, &g2));
  TL_EXPECT_OK(t, tl_grammar_get_digest(g, d1));
  TL_EXPECT_OK(t, tl_grammar_get_digest(g2, d2));
  TL_EXPECT(t, memcmp(d1, d2, 32) != 0);
  TL_EXPECT_STATUS(t, tl_grammar_compile(TL_GRAMMAR_JSON_SCHEMA, schema, strlen(schema), &bad),
                   TL_ERR_UNSUPPORTED_FEATURE);
  TL_EXPECT_EQ_U64(t, bad, TL_NO_HANDLE);
  TL_EXPECT_OK(t, tl_error_detail(TL_NO_HANDLE, &e));
  TL_EXPECT_STR(t, e.kind, "json_schema");
  TL_EXPECT(t, strstr(e.message, "patternProperties") != NULL);
  TL_EXPECT_STATUS(t, tl_grammar_compile(9, "x", 1, &bad), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_grammar_compile(TL_GRAMMAR_REGEX, "x", 1, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  /* a grammar where a model goes, and the other way round */
  TL_EXPECT_STATUS(t, tl_model_preflight(g, NULL, &plan), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_grammar_get_digest(m, d1), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_OK(t, tl_grammar_free(g));
  TL_EXPECT_STATUS(t, tl_grammar_free(g), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, tl_grammar_get_digest(g, d1), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_grammar_free(g2));
  TL_EXPECT_OK(t, tl_model_close(m));
}

/* A generation with a grammar: the reply keeps to it (digits, then EOS
 * or the limit) and its receipt names the digest; the fields are read
 * only with TL_GENERATE_GRAMMAR; a think budget needs a grammar. */
static void generations_keep_to_a_grammar(tl_test_ctx *t) {
  tl_model_handle m;
  tl_session_handle s;
  tl_grammar_handle g;
  uint8_t digest[32];
  if (!open_tiny(t, &m)) return;
  TL_EXPECT_OK(t, tl_session_new(m, &scalar, &s));
  TL_EXPECT_OK(t, tl_grammar_compile(TL_GRAMMAR_REGEX, "[0-9]+", 6, &g));
  TL_EXPECT_OK(t, tl_grammar_get_digest(g, digest));
  for (uint64_t seed = 0; seed < 6; seed++) {
    tl_generation_handle gen;
    tl_generation_result r;
    tl_generation_params p = {0};
    size_t end;
    bool found = false;
    p.text = "Hello";
    p.text_len = 5;
    p.max_tokens = 8;
    p.given = TL_GIVEN_TEMPERATURE;
    p.temperature = 1.0;
    p.seed = seed;
    p.flags = TL_GENERATE_GRAMMAR;
    p.grammar = g;
    if (!TL_EXPECT_OK(t, tl_generation_new(s, &gen))) break;
    TL_EXPECT_OK(t, tl_generation_run(gen, &p));
    TL_EXPECT_OK(t, tl_generation_result_get(gen, &r));
    TL_EXPECT(t, strcmp(r.stop, "eos") == 0 || strcmp(r.stop, "max_tokens") == 0);
    end = r.text_len; /* visible: EOS is not in it */
    TL_EXPECT(t, end > 0);
    for (size_t i = 0; i < end; i++) TL_EXPECT(t, r.text[i] >= '0' && r.text[i] <= '9');
    for (size_t i = 0; i + 32 <= r.receipt_len && !found; i++)
      found = memcmp(r.receipt + i, digest, 32) == 0;
    TL_EXPECT(t, found);
    TL_EXPECT_OK(t, tl_generation_free(gen));
  }
  {
    tl_generation_handle gen;
    tl_generation_params p = {0};
    tl_error e;
    p.text = "Hello";
    p.text_len = 5;
    p.max_tokens = 2;
    p.grammar = 0xdeadbeefu; /* not read: no TL_GENERATE_GRAMMAR */
    p.think_budget = 5;
    TL_EXPECT_OK(t, tl_generation_new(s, &gen));
    TL_EXPECT_OK(t, tl_generation_run(gen, &p));
    TL_EXPECT_OK(t, tl_generation_free(gen));
    p.flags = TL_GENERATE_GRAMMAR;
    p.grammar = TL_NO_HANDLE;
    TL_EXPECT_OK(t, tl_generation_new(s, &gen));
    TL_EXPECT_STATUS(t, tl_generation_run(gen, &p), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_OK(t, tl_error_detail(gen, &e));
    TL_EXPECT(t, strstr(e.message, "think_budget") != NULL);
    TL_EXPECT_OK(t, tl_generation_free(gen));
  }
  TL_EXPECT_OK(t, tl_grammar_free(g));
  TL_EXPECT_OK(t, tl_session_free(s));
  TL_EXPECT_OK(t, tl_model_close(m));
}

static const tl_test_case cases[] = {
    TL_CASE(abi_mismatch_is_refused),
    TL_CASE(closed_handles_are_stale),
    TL_CASE(forged_handles_are_invalid),
    TL_CASE(changed_or_short_bytes_are_refused),
    TL_CASE(preflight_gives_the_plan),
    TL_CASE(streaming_matches_the_result),
    TL_CASE(reply_split_finds_the_think_block),
    TL_CASE(cancel_from_the_callback_keeps_the_session),
    TL_CASE(cancel_from_another_thread),
    TL_CASE(one_generation_at_a_time_per_session),
    TL_CASE(a_generation_run_from_two_threads),
    TL_CASE(prompts_by_text_ids_and_messages),
    TL_CASE(file_decode_errors_and_callbacks),
    TL_CASE(null_arguments_are_typed),
    TL_CASE(sessions_run_in_parallel),
    TL_CASE(reuse_prefix_computes_only_the_rest),
    TL_CASE(reuse_prefix_misuse_is_typed),
    TL_CASE(observe_through_the_api),
    TL_CASE(grammar_handles),
    TL_CASE(generations_keep_to_a_grammar),
};
TL_SUITE(api, cases);
