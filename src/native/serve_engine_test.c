/* tinylm serve's engine on the tiny golden artifacts (read from the
 * repository root, where the unit tests run): a job's tokens, visible
 * bytes and receipt id are those of the public API's generation (what
 * `tinylm run` runs) on the same prompt and settings, whether the job ran
 * alone, beside other jobs (batched decode steps), as a prefix-cache hit,
 * in another slot or at another thread count, on the fast lane (q8) and
 * the strict one; choices differ by seed; a queued job cancelled ends at
 * once; a full queue refuses; a prompt past the context is refused with
 * its counts; clients on threads of their own get the same. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_engine.h"
#include "tinylm.h"
#include "tl_test.h"

#define TINY_Q8 "tests/golden/slm/tiny-q8.slm"
#define TINY_F32 "tests/golden/slm/tiny-f32.slm"
#define CONTEXT 160
#define MAX_NEW 24

typedef struct outcome {
  uint32_t ids[CONTEXT];
  size_t n_ids;
  uint8_t text[4096];
  size_t len;
  char receipt[65];
  char finish[16];
  uint32_t cached, slot;
} outcome;

static const char *const prompts[] = {
    "The quick brown fox jumps over the lazy dog, and then",
    "Once upon a time",
    "1 2 3 4 5 6 7",
    "Hello, world! How are you today?",
};

static const char conversation[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Say something about foxes.\"}]}";

static tl_srv_request request(uint64_t seed) {
  tl_srv_request q;
  memset(&q, 0, sizeof q);
  q.kind = TL_SRV_COMPLETION;
  q.given = TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K;
  q.temperature = 0.8;
  q.top_k = 20;
  q.has_seed = true;
  q.seed = seed;
  q.max_tokens = MAX_NEW;
  q.n = 1;
  return q;
}

/* The public API's generation (tinylm run's path) on a fresh session. */
static bool reference(tl_test_ctx *t, const char *path, uint32_t lane, const char *text,
                      bool chat, uint64_t seed, outcome *o) {
  tl_model_handle m;
  tl_session_handle s;
  tl_generation_handle g;
  tl_generation_params p;
  tl_generation_result r;
  tl_session_options so = {lane, 1, CONTEXT, 0, 0};
  bool ok;
  memset(o, 0, sizeof *o);
  memset(&p, 0, sizeof p);
  if (chat) {
    p.messages_json = conversation;
    p.messages_len = strlen(conversation);
  } else {
    p.text = text;
    p.text_len = strlen(text);
  }
  p.given = TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K;
  p.temperature = 0.8;
  p.top_k = 20;
  p.seed = seed;
  p.max_tokens = MAX_NEW;
  if (!TL_EXPECT_OK(t, tl_api_init(TL_ABI_VERSION)) ||
      !TL_EXPECT_OK(t, tl_model_open_file(path, &m)))
    return false;
  ok = TL_EXPECT_OK(t, tl_session_new(m, &so, &s));
  if (ok) {
    ok = TL_EXPECT_OK(t, tl_generation_new(s, &g));
    if (ok) {
      ok = TL_EXPECT_OK(t, tl_generation_run(g, &p)) &&
           TL_EXPECT_OK(t, tl_generation_result_get(g, &r)) &&
           TL_EXPECT(t, r.n_ids <= CONTEXT && r.text_len <= sizeof o->text);
      if (ok) {
        memcpy(o->ids, r.ids, r.n_ids * sizeof *r.ids);
        o->n_ids = r.n_ids;
        memcpy(o->text, r.text, r.text_len);
        o->len = r.text_len;
        snprintf(o->receipt, sizeof o->receipt, "%s", r.receipt_id);
        snprintf(o->finish, sizeof o->finish, "%s", r.stop);
      }
      tl_generation_free(g);
    }
    tl_session_free(s);
  }
  tl_model_close(m);
  return ok;
}

static tl_srv_engine_options options(const char *path, bool fast, uint32_t threads,
                                     uint32_t parallel, uint32_t queue) {
  tl_srv_engine_options o;
  memset(&o, 0, sizeof o);
  o.model_path = path;
  o.lane = tl_lane_defaults();
  o.lane.fast = fast;
  o.lane.threads = threads;
  o.parallel = parallel;
  o.queue = queue;
  o.context = CONTEXT;
  /* a decode step waits up to 1 s for the other decoding slots, so the
   * batching the counters show does not depend on the machine's load
   * (3 ms, the server's default, can pass before a loaded slot asks) */
  o.gather_us = 1000000;
  return o;
}

static tl_srv_engine *engine(tl_test_ctx *t, const char *path, bool fast, uint32_t threads,
                             uint32_t parallel, uint32_t queue) {
  tl_srv_engine_options o = options(path, fast, threads, parallel, queue);
  tl_srv_engine *e = NULL;
  char err[1024];
  if (!TL_EXPECT_OK(t, tl_srv_engine_open(&o, &e, err, sizeof err))) {
    tl_test_print(t, err);
    tl_test_print(t, "\n");
  }
  return e;
}

/* A job of q's choice on text (or the conversation), under grammar g
 * (NULL: none), in cache partition part. */
static tl_srv_job *submit_with(tl_test_ctx *t, tl_srv_engine *e, const char *text, bool chat,
                               const tl_srv_request *q, uint32_t choice, tl_srv_grammar *g,
                               uint32_t part) {
  tl_srv_prompt p;
  tl_srv_error err;
  tl_srv_job_params jp;
  tl_srv_job *j = NULL;
  tl_status st = chat ? tl_srv_prompt_chat(e, conversation, strlen(conversation), &p, &err)
                      : tl_srv_prompt_text(e, text, strlen(text), &p, &err);
  if (!TL_EXPECT_OK(t, st)) return NULL;
  jp.req = q;
  jp.prompt = &p;
  jp.choice = choice;
  jp.grammar = g;
  jp.partition = part;
  if (!TL_EXPECT_OK(t, tl_srv_submit(e, &jp, &j, &err))) {
    tl_test_print(t, err.message);
    tl_test_print(t, "\n");
  }
  tl_srv_prompt_free(&p);
  return j;
}

static tl_srv_job *submit(tl_test_ctx *t, tl_srv_engine *e, const char *text, bool chat,
                          const tl_srv_request *q, uint32_t choice) {
  return submit_with(t, e, text, chat, q, choice, NULL, 0);
}

/* Follows j to its end as a streaming client does (text and tokens as
 * they come), then releases it; TL_OK, or the first failure. Touches no
 * test context: client threads call it too. */
static tl_status follow(tl_srv_job *j, outcome *o) {
  tl_srv_state seen = TL_SRV_QUEUED;
  tl_status st = TL_OK;
  memset(o, 0, sizeof *o);
  while (st == TL_OK && seen != TL_SRV_DONE) {
    tl_srv_update u;
    st = tl_srv_job_wait(j, 200, o->len, o->n_ids, seen, &u);
    if (st != TL_OK) break;
    if (u.text_len > sizeof o->text || u.n_tokens > CONTEXT) {
      st = TL_ERR_BOUNDS;
    } else {
      memcpy(o->text + u.text_from, u.text, u.text_len - u.text_from);
      for (size_t i = u.tokens_from; i < u.n_tokens; i++)
        o->ids[i] = u.tokens[i - u.tokens_from].id;
      o->len = u.text_len;
      o->n_ids = u.n_tokens;
      seen = u.state;
      if (seen == TL_SRV_DONE) {
        snprintf(o->receipt, sizeof o->receipt, "%s", u.result.receipt_id);
        snprintf(o->finish, sizeof o->finish, "%s", u.result.finish);
        o->cached = u.result.cached_tokens;
        o->slot = u.result.slot;
      }
    }
    tl_srv_update_free(&u);
  }
  tl_srv_job_release(j);
  return st;
}

static bool collect(tl_test_ctx *t, tl_srv_job *j, outcome *o) {
  return TL_EXPECT_OK(t, follow(j, o)) && TL_EXPECT(t, o->finish[0] != '\0');
}

static bool same(tl_test_ctx *t, const outcome *got, const outcome *want, const char *what) {
  bool ok = TL_EXPECT_EQ_U64(t, got->n_ids, want->n_ids) &&
            TL_EXPECT_MEM(t, got->ids, want->ids, want->n_ids * sizeof *want->ids) &&
            TL_EXPECT_EQ_U64(t, got->len, want->len) &&
            TL_EXPECT_MEM(t, got->text, want->text, want->len) &&
            TL_EXPECT_STR(t, got->receipt, want->receipt) &&
            TL_EXPECT_STR(t, got->finish, want->finish);
  if (!ok) {
    tl_test_print(t, "  in ");
    tl_test_print(t, what);
    tl_test_print(t, "\n");
  }
  return ok;
}

/* The target job (prompts[0], seed 7) alone, beside three others, again
 * (a cache hit), and the chat conversation, against the references. */
static void scenario(tl_test_ctx *t, const char *path, bool fast, uint32_t threads) {
  tl_srv_request q = request(7);
  outcome want, want_chat, got;
  tl_srv_engine *e;
  tl_srv_job *j[4];
  if (!reference(t, path, fast ? TL_LANE_FAST : TL_LANE_SCALAR, prompts[0], false, 7, &want) ||
      !reference(t, path, fast ? TL_LANE_FAST : TL_LANE_SCALAR, NULL, true, 7, &want_chat))
    return;
  TL_EXPECT(t, want.n_ids > 4); /* a reply long enough to compare */
  e = engine(t, path, fast, threads, 3, 8);
  if (e == NULL) return;
  if ((j[0] = submit(t, e, prompts[0], false, &q, 0)) != NULL && collect(t, j[0], &got))
    same(t, &got, &want, "alone");
  /* beside others, submitted before and after it: their decode steps
   * share passes with its steps */
  for (int round = 0; round < 2; round++) {
    tl_srv_request other[3];
    outcome side;
    for (int k = 0; k < 3; k++) other[k] = request(100 + (uint64_t)k);
    if (round == 0) j[0] = submit(t, e, prompts[0], false, &q, 0);
    for (int k = 0; k < 3; k++) j[k + 1] = submit(t, e, prompts[k + 1], false, &other[k], 0);
    if (round == 1) j[0] = submit(t, e, prompts[0], false, &q, 0);
    if (j[0] == NULL || j[1] == NULL || j[2] == NULL || j[3] == NULL) break;
    if (collect(t, j[0], &got)) same(t, &got, &want, round ? "submitted last" : "submitted first");
    for (int k = 1; k < 4; k++) collect(t, j[k], &side);
  }
  {
    /* the decode steps of concurrent jobs shared passes */
    tl_srv_stats st;
    tl_srv_engine_stats(e, &st);
    TL_EXPECT(t, st.batched_tokens > st.forward_batches);
    TL_EXPECT(t, st.decode_step_seconds > 0); /* the passes were timed */
    TL_EXPECT(t, st.prefill_chunk_seconds > 0);
  }
  /* a cache hit: the prompt again once every slot has run something */
  if ((j[0] = submit(t, e, prompts[0], false, &q, 0)) != NULL && collect(t, j[0], &got)) {
    TL_EXPECT(t, got.cached > 0);
    same(t, &got, &want, "cache hit");
  }
  if ((j[0] = submit(t, e, NULL, true, &q, 0)) != NULL && collect(t, j[0], &got))
    same(t, &got, &want_chat, "chat");
  /* choice 1 draws with seed 8 */
  if ((j[0] = submit(t, e, prompts[0], false, &q, 1)) != NULL && collect(t, j[0], &got)) {
    outcome seed8;
    TL_EXPECT(t, strcmp(got.receipt, want.receipt) != 0);
    if (reference(t, path, fast ? TL_LANE_FAST : TL_LANE_SCALAR, prompts[0], false, 8, &seed8))
      same(t, &got, &seed8, "choice 1");
  }
  tl_srv_engine_close(e);
}

/* Clients on their own threads, as the HTTP server's connections are:
 * each renders its prompt, submits and follows its job at the same time
 * as the others (TSan runs this suite). The test context is the main
 * thread's: a client only records what happened. */
typedef struct client {
  tl_srv_engine *e;
  bool chat;
  tl_srv_request q;
  outcome got;
  tl_status st;
} client;

static void *client_main(void *arg) {
  client *c = arg;
  tl_srv_prompt p;
  tl_srv_error err;
  tl_srv_job *j = NULL;
  memset(&c->got, 0, sizeof c->got);
  c->st = c->chat ? tl_srv_prompt_chat(c->e, conversation, strlen(conversation), &p, &err)
                  : tl_srv_prompt_text(c->e, prompts[0], strlen(prompts[0]), &p, &err);
  if (c->st != TL_OK) return NULL;
  {
    tl_srv_job_params jp = {&c->q, &p, 0, NULL, 0};
    c->st = tl_srv_submit(c->e, &jp, &j, &err);
  }
  tl_srv_prompt_free(&p);
  if (c->st == TL_OK) c->st = follow(j, &c->got);
  return NULL;
}

static void clients_on_threads(tl_test_ctx *t) {
  client cs[4];
  pthread_t th[4];
  outcome want[2];
  tl_srv_engine *e;
  if (!reference(t, TINY_Q8, TL_LANE_FAST, prompts[0], false, 7, &want[0]) ||
      !reference(t, TINY_Q8, TL_LANE_FAST, NULL, true, 7, &want[1]) ||
      (e = engine(t, TINY_Q8, true, 2, 3, 8)) == NULL)
    return;
  for (int i = 0; i < 4; i++) {
    cs[i].e = e;
    cs[i].chat = i % 2 == 1;
    cs[i].q = request(7);
    if (pthread_create(&th[i], NULL, client_main, &cs[i]) != 0) cs[i].e = NULL;
  }
  for (int i = 0; i < 4; i++)
    if (TL_EXPECT(t, cs[i].e != NULL)) {
      pthread_join(th[i], NULL);
      if (TL_EXPECT_OK(t, cs[i].st)) same(t, &cs[i].got, &want[i % 2], "a client thread");
    }
  tl_srv_engine_close(e);
}

static void fast_lane_one_thread(tl_test_ctx *t) { scenario(t, TINY_Q8, true, 1); }
static void fast_lane_three_threads(tl_test_ctx *t) { scenario(t, TINY_Q8, true, 3); }
static void strict_lane(tl_test_ctx *t) { scenario(t, TINY_F32, false, 1); }

static void queue_cancel_and_refusals(tl_test_ctx *t) {
  tl_srv_request endless = request(1), q = request(2);
  tl_srv_engine *e = engine(t, TINY_Q8, true, 1, 1, 1);
  tl_srv_job *a, *b, *c = NULL;
  tl_srv_error err;
  outcome got;
  if (e == NULL) return;
  endless.max_tokens = 0; /* until the context is full */
  a = submit(t, e, prompts[1], false, &endless, 0);
  b = submit(t, e, prompts[2], false, &q, 0);
  {
    /* the slot and the queue's one place are taken: refused */
    tl_srv_prompt p;
    tl_srv_job_params jp = {&q, &p, 0, NULL, 0};
    if (TL_EXPECT_OK(t, tl_srv_prompt_text(e, prompts[3], strlen(prompts[3]), &p, &err))) {
      tl_status st = tl_srv_submit(e, &jp, &c, &err);
      /* the first job may in principle have ended already; then the
       * second holds the slot and the third waits */
      if (st != TL_OK) {
        TL_EXPECT_EQ_U64(t, err.status, 503);
        TL_EXPECT_STR(t, err.code, "queue_full");
      } else {
        tl_test_skip(t, "the first job ended before the third was submitted: queue_full "
                        "not reached (the serve suite checks it over HTTP)");
      }
      tl_srv_prompt_free(&p);
    }
  }
  if (b != NULL) {
    tl_srv_update u;
    tl_srv_job_cancel(b);
    if (TL_EXPECT_OK(t, tl_srv_job_wait(b, 5000, 0, 0, TL_SRV_QUEUED, &u))) {
      TL_EXPECT(t, u.state == TL_SRV_DONE);
      tl_srv_update_free(&u);
    }
    collect(t, b, &got);
    TL_EXPECT(t, strcmp(got.finish, "cancelled") == 0 || got.n_ids > 0);
  }
  if (a != NULL) {
    tl_srv_job_cancel(a);
    collect(t, a, &got);
    TL_EXPECT(t, strcmp(got.finish, "cancelled") == 0 || strcmp(got.finish, "context_full") == 0);
  }
  if (c != NULL) collect(t, c, &got);
  {
    /* a prompt plus max_tokens past the context: both counts named */
    tl_srv_request big = request(3);
    tl_srv_prompt p;
    tl_srv_job_params jp = {&big, &p, 0, NULL, 0};
    tl_srv_job *d = NULL;
    big.max_tokens = CONTEXT;
    if (TL_EXPECT_OK(t, tl_srv_prompt_text(e, prompts[0], strlen(prompts[0]), &p, &err))) {
      TL_EXPECT_STATUS(t, tl_srv_submit(e, &jp, &d, &err), TL_ERR_CONTEXT_EXCEEDED);
      TL_EXPECT_EQ_U64(t, err.status, 400);
      TL_EXPECT_STR(t, err.code, "context_length_exceeded");
      TL_EXPECT(t, strstr(err.message, "160") != NULL);
      TL_EXPECT(t, d == NULL);
      tl_srv_prompt_free(&p);
    }
  }
  /* the engine still answers as before */
  {
    outcome want;
    tl_srv_job *j = submit(t, e, prompts[0], false, &q, 0);
    if (j != NULL && collect(t, j, &got) &&
        reference(t, TINY_Q8, TL_LANE_FAST, prompts[0], false, 2, &want))
      same(t, &got, &want, "after cancellations");
  }
  tl_srv_engine_close(e);
}

/* --receipt-dir: created when missing; a path under a missing directory
 * or a file is refused when the engine opens, not at the first receipt. */
static void receipt_dir_checked_at_open(tl_test_ctx *t) {
  tl_srv_engine_options o = options(TINY_F32, false, 1, 1, 0);
  tl_srv_engine *e = NULL;
  char err[1024];
  o.receipt_dir = "tests/golden/slm/no-such-dir/receipts";
  TL_EXPECT_STATUS(t, tl_srv_engine_open(&o, &e, err, sizeof err), TL_ERR_IO);
  TL_EXPECT(t, e == NULL && strstr(err, "no-such-dir") != NULL);
  o.receipt_dir = TINY_F32; /* a file */
  TL_EXPECT_STATUS(t, tl_srv_engine_open(&o, &e, err, sizeof err), TL_ERR_IO);
  TL_EXPECT(t, strstr(err, "not a directory") != NULL);
}

/* --receipt-dir holds prompts: made 0700; a directory others may write
 * in, or a symbolic link to one, is refused (a directory of another user
 * too: the shared check, tl_file_private_dir, which promote and pull use
 * and whose test covers the owner). */
static void receipt_dir_private(tl_test_ctx *t) {
  tl_srv_engine_options o = options(TINY_F32, false, 1, 1, 0);
  tl_srv_engine *e = NULL;
  char base[] = "/tmp/tl-receipts-XXXXXX", dir[64], open_dir[64], link_[64], err[1024];
  struct stat sb;
  if (!TL_EXPECT(t, mkdtemp(base) != NULL)) return;
  snprintf(dir, sizeof dir, "%s/new", base);
  o.receipt_dir = dir;
  if (TL_EXPECT_OK(t, tl_srv_engine_open(&o, &e, err, sizeof err))) tl_srv_engine_close(e);
  TL_EXPECT(t, stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
  snprintf(open_dir, sizeof open_dir, "%s/open", base);
  TL_EXPECT(t, mkdir(open_dir, 0700) == 0 && chmod(open_dir, 0777) == 0);
  o.receipt_dir = open_dir;
  TL_EXPECT_STATUS(t, tl_srv_engine_open(&o, &e, err, sizeof err), TL_ERR_IO);
  TL_EXPECT(t, strstr(err, "group or others may write") != NULL);
  snprintf(link_, sizeof link_, "%s/link", base);
  TL_EXPECT(t, symlink(dir, link_) == 0); /* to a private directory: still refused */
  o.receipt_dir = link_;
  TL_EXPECT_STATUS(t, tl_srv_engine_open(&o, &e, err, sizeof err), TL_ERR_IO);
  TL_EXPECT(t, strstr(err, "symbolic link") != NULL);
  (void)unlink(link_);
  (void)rmdir(open_dir);
  (void)rmdir(dir);
  (void)rmdir(base);
}

/* A cached prefix is reused only by a job of the partition that left it
 * (the server's: its API key), and by none with no_shared_cache; the
 * bytes are the same either way. */
static void cache_partitions(tl_test_ctx *t) {
  tl_srv_request q = request(5);
  outcome first, got;
  tl_srv_job *j;
  tl_srv_engine_options o = options(TINY_Q8, true, 1, 1, 2);
  tl_srv_engine *e = engine(t, TINY_Q8, true, 1, 1, 2);
  char err[1024];
  if (e == NULL) return;
  if ((j = submit_with(t, e, prompts[0], false, &q, 0, NULL, 1)) == NULL || !collect(t, j, &first))
    goto done;
  TL_EXPECT_EQ_U64(t, first.cached, 0);
  if ((j = submit_with(t, e, prompts[0], false, &q, 0, NULL, 2)) != NULL && collect(t, j, &got)) {
    TL_EXPECT_EQ_U64(t, got.cached, 0); /* another key's prompt: nothing reused */
    same(t, &got, &first, "another partition");
  }
  if ((j = submit_with(t, e, prompts[0], false, &q, 0, NULL, 2)) != NULL && collect(t, j, &got))
    TL_EXPECT(t, got.cached > 0); /* its own: reused */
done:
  tl_srv_engine_close(e);
  o.no_shared_cache = true;
  e = NULL;
  if (!TL_EXPECT_OK(t, tl_srv_engine_open(&o, &e, err, sizeof err))) return;
  for (int k = 0; k < 2; k++)
    if ((j = submit(t, e, prompts[0], false, &q, 0)) != NULL && collect(t, j, &got)) {
      TL_EXPECT_EQ_U64(t, got.cached, 0);
      same(t, &got, &first, "no_shared_cache");
    }
  tl_srv_engine_close(e);
}

/* Requests that can never succeed are 400: n choices that slots and queue
 * can never hold at once (not the 503 queue_full a client would retry
 * forever), a logit_bias that bans every token. */
static void impossible_requests_are_400(tl_test_ctx *t) {
  tl_srv_engine *e = engine(t, TINY_F32, false, 1, 2, 1);
  tl_srv_request q = request(1);
  tl_srv_prompt p;
  tl_srv_error err;
  tl_srv_job *j = NULL;
  if (e == NULL) return;
  q.n = 4;
  if (TL_EXPECT_OK(t, tl_srv_prompt_text(e, prompts[0], strlen(prompts[0]), &p, &err))) {
    tl_srv_job_params jp = {&q, &p, 0, NULL, 0};
    TL_EXPECT_STATUS(t, tl_srv_submit(e, &jp, &j, &err), TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT(t, j == NULL && err.status == 400 && strcmp(err.param, "n") == 0 &&
                     strstr(err.message, "at most 3") != NULL);
    /* every token banned: the sampler could never draw (it was a 500) */
    {
      tl_srv_facts f;
      uint32_t *all;
      tl_srv_engine_facts(e, &f);
      q.n = 1;
      if (TL_EXPECT(t, (all = malloc(f.vocab * sizeof *all)) != NULL)) {
        for (uint32_t i = 0; i < f.vocab; i++) all[i] = i;
        q.ban = all;
        q.n_ban = f.vocab;
        TL_EXPECT_STATUS(t, tl_srv_submit(e, &jp, &j, &err), TL_ERR_INVALID_ARGUMENT);
        TL_EXPECT(t, j == NULL && err.status == 400 && strcmp(err.param, "logit_bias") == 0);
        q.n_ban = f.vocab - 1; /* one left: it runs */
        if (TL_EXPECT_OK(t, tl_srv_submit(e, &jp, &j, &err))) {
          outcome o;
          if (collect(t, j, &o)) TL_EXPECT(t, o.n_ids > 0 && o.ids[0] == f.vocab - 1);
        }
        free(all);
      }
    }
    tl_srv_prompt_free(&p);
  }
  tl_srv_engine_close(e);
}

/* text[0, len) matches the grammar [a-z]{1,6} "!" (digits: [0-9]{1,3}). */
static bool matches(const outcome *o, bool digits) {
  size_t n = o->len - (digits ? 0 : 1);
  if (o->len < (digits ? 1u : 2u) || n > (digits ? 3u : 6u) || (!digits && o->text[n] != '!'))
    return false;
  for (size_t i = 0; i < n; i++)
    if (digits ? o->text[i] < '0' || o->text[i] > '9' : o->text[i] < 'a' || o->text[i] > 'z')
      return false;
  return true;
}

/* Constrained jobs in one slot, each grammar's request gone (its reference
 * dropped) while its job runs, as when a client leaves: the session's kept
 * matcher refers to the last grammar when the next turn starts (the same
 * lowered form restarts it, another replaces it); ASan (unit-asan) sees
 * any read of a freed grammar. Each reply keeps to its grammar. */
static void grammars_outlive_their_requests(tl_test_ctx *t) {
  static const char *const texts[] = {"root ::= [a-z]{1,6} \"!\"", "root ::= [a-z]{1,6} \"!\"",
                                      "root ::= [0-9]{1,3}"};
  tl_srv_engine *e = engine(t, TINY_F32, false, 1, 1, 4);
  if (e == NULL) return;
  for (size_t i = 0; i < 3; i++) {
    tl_srv_request q = request(40 + i);
    tl_srv_grammar *g = NULL;
    tl_srv_error err;
    tl_srv_job *j;
    outcome o;
    q.format = TL_SRV_FORMAT_GRAMMAR;
    q.format_text = (char *)(uintptr_t)texts[i];
    q.format_len = strlen(texts[i]);
    snprintf(q.format_param, sizeof q.format_param, "grammar");
    if (!TL_EXPECT_OK(t, tl_srv_grammar_compile(&q, &g, &err))) break;
    j = submit_with(t, e, prompts[i], false, &q, 0, g, 0);
    tl_srv_grammar_unref(g);
    if (j == NULL || !collect(t, j, &o)) break;
    TL_EXPECT_STR(t, o.finish, "eos");
    TL_EXPECT(t, matches(&o, i == 2));
  }
  tl_srv_engine_close(e);
}

/* tinylm_kv_cache_usage_ratio's figures: the rows held by jobs in slots
 * over every slot's rows. A running job holds at least its prompt and the
 * tokens fed back so far (all but the last one drawn); an idle slot's
 * cached prefix counts as free (the next job may overwrite it), even
 * though the next job can reuse it. */
/* The gather's rule (serve_engine.h): a share of the last step for each
 * decoding slot, never less than the configured floor. */
static void gather_waits_a_share_of_the_step(tl_test_ctx *t) {
  const long ms = 1000000L;
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(3 * ms, 100 * ms, 4), 25 * ms);
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(3 * ms, 100 * ms, 2), 50 * ms);
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(3 * ms, 8 * ms, 4), 3 * ms);  /* the floor */
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(3 * ms, 0, 4), 3 * ms);      /* no step yet */
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(3 * ms, 100 * ms, 0), 3 * ms); /* none decoding */
  TL_EXPECT_EQ_U64(t, (uint64_t)tl_srv_gather_ns(1000 * ms, 100 * ms, 4), 1000 * ms);
}

static void kv_usage_counts_running_jobs_only(tl_test_ctx *t) {
  tl_srv_request endless = request(1), q = request(2);
  tl_srv_engine *e = engine(t, TINY_Q8, true, 1, 2, 4);
  tl_srv_stats st;
  tl_srv_job *j;
  outcome got;
  if (e == NULL) return;
  tl_srv_engine_stats(e, &st);
  TL_EXPECT_EQ_U64(t, st.kv_capacity, 2 * CONTEXT);
  TL_EXPECT_EQ_U64(t, st.kv_used, 0);
  if ((j = submit(t, e, prompts[0], false, &q, 0)) != NULL && collect(t, j, &got)) {
    tl_srv_engine_stats(e, &st);
    TL_EXPECT_EQ_U64(t, st.kv_used, 0); /* done: its rows stay cached, unheld */
  }
  endless.max_tokens = 0; /* until the context is full */
  /* the tiny model fills its context in milliseconds: a waiter the
   * machine's load holds back can first see the job done; it tries again
   * (a few tries: the figures of a running job must be seen once) */
  for (int attempt = 0; attempt < 5; attempt++) {
    tl_srv_state seen = TL_SRV_QUEUED;
    size_t n_tokens = 0, prompt = 0;
    if ((j = submit(t, e, prompts[1], false, &endless, 0)) == NULL) break;
    while (seen != TL_SRV_DONE && n_tokens < 8) { /* a few tokens in */
      tl_srv_update u;
      if (!TL_EXPECT_OK(t, tl_srv_job_wait(j, 1000, 0, n_tokens, seen, &u))) break;
      seen = u.state;
      n_tokens = u.n_tokens;
      prompt = u.prompt_total;
      tl_srv_update_free(&u);
    }
    tl_srv_engine_stats(e, &st);
    tl_srv_job_cancel(j);
    collect(t, j, &got);
    if (seen == TL_SRV_DECODING && n_tokens >= 8) {
      TL_EXPECT(t, st.kv_used >= prompt + n_tokens - 1);
      TL_EXPECT(t, st.kv_used <= CONTEXT); /* one slot's rows at most */
      tl_srv_engine_stats(e, &st);
      TL_EXPECT_EQ_U64(t, st.kv_used, 0);
      break;
    }
    TL_EXPECT(t, attempt < 4); /* never seen running */
  }
  tl_srv_engine_close(e);
}

/* A token is news only with its text (serve_engine.h): the stream's
 * thread waits through the moment between a token's choice and its
 * bytes instead of spinning on it. */
static void tokens_wait_for_their_text(tl_test_ctx *t) {
  tl_srv_token tok[4];
  const size_t ends[4] = {3, 3, 7, 12}; /* the second token has no visible bytes */
  memset(tok, 0, sizeof tok);
  for (size_t i = 0; i < 4; i++) tok[i].text_end = ends[i];
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 0, 0, false), 0);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 2, 0, false), 0);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 3, 0, false), 2);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 11, 0, false), 3);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 12, 0, false), 4);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 3, 12, 0, false), 3); /* only those chosen */
  /* what the caller has is never taken back: no news, not fewer */
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 7, 3, false), 3);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 5, 3, false), 3);
  /* done: every token, the stop cut having moved text back */
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 4, 5, 0, true), 4);
  TL_EXPECT_EQ_U64(t, tl_srv_tokens_ready(tok, 0, 0, 0, false), 0);
}

static const tl_test_case cases[] = {
    TL_CASE(receipt_dir_checked_at_open),
    TL_CASE(receipt_dir_private),
    TL_CASE(cache_partitions),
    TL_CASE(impossible_requests_are_400),
    TL_CASE(fast_lane_one_thread),
    TL_CASE(fast_lane_three_threads),
    TL_CASE(strict_lane),
    TL_CASE(queue_cancel_and_refusals),
    TL_CASE(clients_on_threads),
    TL_CASE(grammars_outlive_their_requests),
    TL_CASE(kv_usage_counts_running_jobs_only),
    TL_CASE(gather_waits_a_share_of_the_step),
    TL_CASE(tokens_wait_for_their_text),
};
TL_SUITE(serve_engine, cases);
