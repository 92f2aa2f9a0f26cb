/* tinylm serve's engine (serve_engine.h): slots that each run a
 * generation turn on their own thread, and one forward thread that
 * computes for all of them. A slot's turn hands every forward call to the
 * forward thread (turn params' forward hook) and waits; the forward
 * thread gathers the one-token calls of every decoding slot into one
 * tl_qwen3_forward_rows pass and runs prefill chunks between such passes,
 * one at a time, so a long prompt never stalls the others for more than a
 * chunk. */
#define _GNU_SOURCE
#include "serve_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "bytes.h"
#include "chat_render.h"
#include "clock.h"
#include "embed.h"
#include "encoder.h"
#include "file.h"
#include "serve_escape.h"
#include "serve_models.h"
#include "session.h"
#include "turn.h"

#ifndef TL_BUILD_ID
#define TL_BUILD_ID "unknown"
#endif

#define MAX_SLOTS 64
#define MAX_QUEUE 4096
/* How long the forward thread waits at least, by default, for decoding
 * slots that have not yet asked for their next token before it runs the
 * step without them (tl_srv_engine_options.gather_us, tl_srv_gather_ns). */
#define DEFAULT_GATHER_US 3000u

typedef struct slot slot;

struct tl_srv_job {
  tl_srv_engine *e;
  int refs; /* the caller's and the engine's; under e->lock */
  tl_srv_job *next; /* the queue */
  /* what to run */
  uint32_t *ids;
  size_t n_ids;
  uint8_t *prompt_bytes;
  size_t prompt_len;
  bool messages, add_generation_prompt;
  tl_generation_params gen;
  uint8_t *stop_mem[TL_SRV_MAX_STOPS];
  const uint8_t *stops[TL_SRV_MAX_STOPS];
  size_t stop_lens[TL_SRV_MAX_STOPS];
  size_t n_stops;
  uint32_t *ban;
  size_t n_ban;
  uint32_t *bias_ids; /* j->gen's biases */
  double *bias;
  bool logprobs;
  uint32_t top_logprobs;
  tl_srv_grammar *grammar;
  atomic_int cancel;
  double submitted, started;
  size_t reused;
  uint32_t partition; /* whose cached prefixes it may reuse */
  bool no_reuse; /* cache_prompt false: no slot's cached prefix */
  /* what it produced so far, under e->lock */
  pthread_cond_t changed;
  tl_srv_state state;
  size_t prompt_done, prompt_total;
  uint8_t *text;
  size_t text_len, text_cap;
  tl_srv_token *tokens;
  size_t n_tokens, tokens_cap;
  size_t visible_total; /* visible bytes of the tokens so far (before the stop cut) */
  tl_srv_result result;
};

struct slot {
  tl_srv_engine *e;
  uint32_t index;
  tl_session s;
  bool is_master; /* s is a copy of the engine's master session (slot 0) */
  /* The grammar of the slot's last constrained turn: the session keeps
   * that turn's matcher, which refers to it, for the next one (lib's
   * constrain.h), so it lives until another replaces it. */
  tl_srv_grammar *grammar;
  pthread_t thread;
  bool started;
  pthread_cond_t wake; /* a job arrived, or the forward call is done */
  tl_srv_job *job;
  uint32_t *cached; /* the ids of the cache's rows [0, cached_len) */
  size_t cached_len;
  uint32_t partition; /* the partition of the job that left them */
  bool decoding; /* its turn is past the prompt */
  uint32_t kv_rows; /* cache rows its job holds (reused prefix, prompt, fed tokens) */
  /* the forward call it waits for */
  bool fwd_pending, fwd_done;
  tl_qwen3_cache *fwd_cache;
  const uint32_t *fwd_ids;
  size_t fwd_n;
  float *fwd_logits;
  tl_qwen3_fault *fwd_fault;
  tl_status fwd_st;
};

struct tl_srv_engine {
  pthread_mutex_t lock;
  /* An embedding model's engine runs no jobs (tl_srv_submit refuses
   * them): its embeddings use the master cache and the forward scratch,
   * one input at a time. */
  pthread_mutex_t embed_lock;
  pthread_cond_t work; /* a forward call is pending, or closing */
  bool closing;
  long gather_ns; /* a decode step's least wait for the slots still sampling */
  long step_ns;   /* the last decode step's time, on the forward thread */
  tl_session master;
  bool master_open;
  slot slots[MAX_SLOTS];
  uint32_t n_slots, queue_cap, n_queued;
  tl_srv_job *queue_head, *queue_tail;
  pthread_t forward_thread;
  bool forward_started;
  void *scratch_mem;
  tl_arena scratch;
  uint32_t prefill_turn; /* round robin over slots for prefill chunks */
  char *receipt_dir;
  bool no_shared_cache;
  bool escape_special;
  tl_srv_specials specials; /* with escape_special */
  char artifact_hex[65], model_name[128];
  uint64_t plan_bytes;
  tl_srv_stats stats;
};

/* ---- the forward thread ---- */

/* Whether a decoding slot has yet to ask for its next token. */
static bool decoder_missing(const tl_srv_engine *e) {
  for (uint32_t i = 0; i < e->n_slots; i++)
    if (e->slots[i].decoding && !e->slots[i].fwd_pending) return true;
  return false;
}

long tl_srv_gather_ns(long floor_ns, long step_ns, uint32_t decoding) {
  long share = decoding != 0 ? step_ns / (long)decoding : 0;
  return share > floor_ns ? share : floor_ns;
}

static void finish_call(slot *s, tl_status st) {
  s->kv_rows = s->fwd_cache->len; /* set by the pass, on this thread */
  s->fwd_st = st;
  s->fwd_pending = false;
  s->fwd_done = true;
  pthread_cond_signal(&s->wake);
}

/* The rows of one decode step (one-token calls), outside the lock; a
 * failed pass is run again row by row, so that each sequence gets its own
 * outcome (the same bits for the rows that succeed). */
static void run_rows(tl_srv_engine *e, slot **rows, size_t n) {
  tl_qwen3_cache *caches[MAX_SLOTS];
  uint32_t ids[MAX_SLOTS];
  float *logits[MAX_SLOTS];
  tl_qwen3_fault fault;
  tl_status st;
  for (size_t i = 0; i < n; i++) {
    caches[i] = rows[i]->fwd_cache;
    ids[i] = rows[i]->fwd_ids[0];
    logits[i] = rows[i]->fwd_logits;
  }
  tl_status own[MAX_SLOTS];
  double t0 = tl_now_s();
  st = tl_qwen3_forward_rows(&e->master.qwen, caches, ids, n, logits, &e->scratch, &fault);
  double took = tl_now_s() - t0;
  e->step_ns = (long)(took * 1e9);
  for (size_t i = 0; i < n; i++)
    own[i] = st == TL_OK ? TL_OK
                         : tl_qwen3_forward(&e->master.qwen, rows[i]->fwd_cache,
                                            rows[i]->fwd_ids, 1, rows[i]->fwd_logits, NULL,
                                            &e->scratch, rows[i]->fwd_fault);
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < n; i++) finish_call(rows[i], own[i]);
  e->stats.forward_batches++;
  e->stats.batched_tokens += n;
  e->stats.decode_step_seconds += took;
  pthread_mutex_unlock(&e->lock);
}

static void *forward_main(void *arg) {
  tl_srv_engine *e = arg;
  pthread_mutex_lock(&e->lock);
  for (;;) {
    slot *rows[MAX_SLOTS], *chunk = NULL;
    size_t n = 0;
    bool any = false;
    for (uint32_t i = 0; i < e->n_slots; i++) any |= e->slots[i].fwd_pending;
    if (!any && e->closing) break;
    if (!any) {
      pthread_cond_wait(&e->work, &e->lock);
      continue;
    }
    /* a decode step waits a moment for every decoding slot's token */
    if (decoder_missing(e)) {
      struct timespec until;
      bool decode_pending = false;
      uint32_t decoding = 0;
      long wait;
      for (uint32_t i = 0; i < e->n_slots; i++) {
        decode_pending |= e->slots[i].fwd_pending && e->slots[i].fwd_n == 1;
        decoding += e->slots[i].decoding;
      }
      wait = tl_srv_gather_ns(e->gather_ns, e->step_ns, decoding);
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += wait / 1000000000L;
      until.tv_nsec += wait % 1000000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      while (decode_pending && decoder_missing(e) && !e->closing &&
             pthread_cond_timedwait(&e->work, &e->lock, &until) != ETIMEDOUT) {
      }
    }
    for (uint32_t i = 0; i < e->n_slots; i++) {
      slot *s = &e->slots[i];
      if (s->fwd_pending && s->fwd_n == 1) rows[n++] = s;
    }
    for (uint32_t k = 0; k < e->n_slots && chunk == NULL; k++) {
      slot *s = &e->slots[(e->prefill_turn + k) % e->n_slots];
      if (s->fwd_pending && s->fwd_n > 1) {
        chunk = s;
        e->prefill_turn = (s->index + 1) % e->n_slots;
      }
    }
    pthread_mutex_unlock(&e->lock);
    if (n != 0) run_rows(e, rows, n);
    if (chunk != NULL) {
      double t0 = tl_now_s();
      tl_status st = tl_qwen3_forward(&e->master.qwen, chunk->fwd_cache, chunk->fwd_ids,
                                      chunk->fwd_n, chunk->fwd_logits, NULL, &e->scratch,
                                      chunk->fwd_fault);
      pthread_mutex_lock(&e->lock);
      e->stats.prefill_chunk_seconds += tl_now_s() - t0;
      finish_call(chunk, st);
      pthread_mutex_unlock(&e->lock);
    }
    pthread_mutex_lock(&e->lock);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

/* The turn's forward hook: hands the call to the forward thread and waits
 * for it (ctx: the slot). */
static tl_status slot_forward(void *ctx, tl_qwen3_cache *cache, const uint32_t *ids, size_t n,
                              float *logits, tl_qwen3_fault *fault) {
  slot *s = ctx;
  tl_srv_engine *e = s->e;
  tl_status st;
  pthread_mutex_lock(&e->lock);
  if (e->closing) {
    pthread_mutex_unlock(&e->lock);
    return TL_ERR_CANCELLED;
  }
  s->fwd_cache = cache;
  s->fwd_ids = ids;
  s->fwd_n = n;
  s->fwd_logits = logits;
  s->fwd_fault = fault;
  s->fwd_done = false;
  s->fwd_pending = true;
  pthread_cond_signal(&e->work);
  while (!s->fwd_done) pthread_cond_wait(&s->wake, &e->lock);
  st = s->fwd_st;
  pthread_mutex_unlock(&e->lock);
  return st;
}

/* ---- jobs ---- */

static void job_free(tl_srv_job *j) {
  free(j->ids);
  free(j->prompt_bytes);
  for (size_t i = 0; i < j->n_stops; i++) free(j->stop_mem[i]);
  free(j->ban);
  free(j->bias_ids);
  free(j->bias);
  free(j->text);
  free(j->tokens);
  tl_srv_grammar_unref(j->grammar);
  pthread_cond_destroy(&j->changed);
  free(j);
}

/* Drops one reference; under e->lock. */
static void job_unref(tl_srv_job *j) {
  if (--j->refs == 0) job_free(j);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  size_t c = *cap ? *cap : 64;
  void *q;
  if (need <= *cap) return true;
  while (c < need) c *= 2;
  q = realloc(*p, c * elem);
  if (q == NULL) return false;
  *p = q;
  *cap = c;
  return true;
}

/* Callbacks of the turn (ctx: the job), on its slot's thread. */
static int on_text(void *ctx, const uint8_t *bytes, size_t len) {
  tl_srv_job *j = ctx;
  int stop = 0;
  pthread_mutex_lock(&j->e->lock);
  if (grow((void **)&j->text, &j->text_cap, j->text_len + len, 1)) {
    memcpy(j->text + j->text_len, bytes, len);
    j->text_len += len;
    pthread_cond_broadcast(&j->changed);
  } else {
    stop = 1; /* out of memory: the turn ends as cancelled */
  }
  pthread_mutex_unlock(&j->e->lock);
  return stop;
}

/* Prefill progress; once the prompt is done the slot is decoding, and
 * the forward thread waits for its next token to batch it. */
static int on_prefill(void *ctx, size_t done, size_t total) {
  tl_srv_job *j = ctx;
  pthread_mutex_lock(&j->e->lock);
  j->prompt_done = j->reused + done;
  j->prompt_total = j->reused + total;
  if (done == total) {
    j->state = TL_SRV_DECODING;
    j->e->slots[j->result.slot].decoding = true;
  }
  pthread_cond_broadcast(&j->changed);
  pthread_mutex_unlock(&j->e->lock);
  return 0;
}

/* The token's log-probabilities from the raw logits (log-softmax in
 * double), its top alternatives by a partial insertion sort. */
static void logprobs_of(const float *logits, size_t vocab, uint32_t id, uint32_t top,
                        tl_srv_token *out) {
  double mx = -INFINITY, sum = 0.0, lse;
  for (size_t i = 0; i < vocab; i++)
    if (logits[i] > mx) mx = logits[i];
  for (size_t i = 0; i < vocab; i++) sum += exp((double)logits[i] - mx);
  lse = mx + log(sum);
  out->logprob = (float)((double)logits[id] - lse);
  out->n_top = 0;
  for (size_t i = 0; i < vocab && top != 0; i++) {
    uint32_t k = out->n_top;
    if (k == top && logits[i] <= logits[out->top_ids[k - 1]]) continue;
    if (k < top) out->n_top++;
    else k--;
    /* ties keep the lower id first: only a strictly larger logit moves up */
    while (k > 0 && logits[i] > logits[out->top_ids[k - 1]]) {
      out->top_ids[k] = out->top_ids[k - 1];
      k--;
    }
    out->top_ids[k] = (uint32_t)i;
  }
  for (uint32_t k = 0; k < out->n_top; k++)
    out->top_logprobs[k] = (float)((double)logits[out->top_ids[k]] - lse);
}

static void on_choice(void *ctx, const float *logits, size_t vocab, uint32_t id) {
  tl_srv_job *j = ctx;
  const tl_tokenizer *tok = j->e->master.model.tok;
  tl_srv_token t;
  size_t vl = 0, bad;
  memset(&t, 0, sizeof t);
  t.id = id;
  if (j->logprobs) logprobs_of(logits, vocab, id, j->top_logprobs, &t);
  (void)tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_VISIBLE, NULL, 0, &vl, &bad); /* length only */
  pthread_mutex_lock(&j->e->lock);
  j->visible_total += vl;
  t.text_end = j->visible_total;
  if (grow((void **)&j->tokens, &j->tokens_cap, j->n_tokens + 1, sizeof t)) {
    j->tokens[j->n_tokens++] = t;
    pthread_cond_broadcast(&j->changed);
  }
  pthread_mutex_unlock(&j->e->lock);
}

/* fmt has one %s: detail (cut to fit the result's message). */
static void set_error(tl_srv_job *j, tl_status st, const char *fmt, const char *detail) {
  char text[4608];
  j->result.finish = "error";
  j->result.status = st;
  snprintf(text, sizeof text, fmt, detail);
  snprintf(j->result.error, sizeof j->result.error, "%.255s", text);
}

static void keep_receipt(tl_srv_engine *e, const tl_turn *t, tl_srv_job *j) {
  char path[4096 + 80], err[256];
  if (e->receipt_dir == NULL || t->receipt_status != TL_OK) return;
  snprintf(path, sizeof path, "%s/%s.cbor", e->receipt_dir, j->result.receipt_id);
  /* the same receipt id is the same file: an existing one stays */
  if (access(path, F_OK) == 0) return;
  if (tl_file_write_atomic(path, t->receipt, t->receipt_len, err, sizeof err) != TL_OK) {
    if (access(path, F_OK) != 0) fprintf(stderr, "tinylm serve: receipt %s not kept: %s\n", path, err);
  } else {
    (void)chmod(path, 0600); /* the prompt's owner's alone, as its directory */
  }
}

/* Runs j in slot s (its reused prefix already chosen), outside the lock. */
static void run_job(slot *s, tl_srv_job *j) {
  tl_srv_engine *e = s->e;
  tl_turn_params tp;
  tl_turn t;
  tl_sampler_field field = TL_SAMPLER_FIELD_TEMPERATURE;
  char err[512];
  tl_status st;
  memset(&tp, 0, sizeof tp);
  memset(&t, 0, sizeof t);
  tp.gen = &j->gen;
  tp.stops = j->stops;
  tp.stop_lens = j->stop_lens;
  tp.n_stops = j->n_stops;
  tp.mode = j->messages ? "messages" : "text";
  tp.add_generation_prompt = j->add_generation_prompt;
  tp.prompt_bytes = j->prompt_bytes;
  tp.prompt_len = j->prompt_len;
  tp.cancel = &j->cancel;
  tp.reused = j->reused;
  tp.ban = j->ban;
  tp.n_ban = j->n_ban;
  tp.grammar = tl_srv_grammar_get(j->grammar);
  tp.forward = slot_forward;
  tp.forward_ctx = s;
  s->s.cache.len = (uint32_t)j->reused;
  if (tl_native_model_changed(&e->master.model)) {
    set_error(j, TL_ERR_IO, "%s changed while in use", e->master.path);
    return;
  }
  st = tl_turn_run(&s->s, &tp, j->ids, j->n_ids, &t, &field, err, sizeof err);
  if (j->grammar != NULL) { /* the turn is past its start: the old grammar may go */
    tl_srv_grammar_unref(s->grammar);
    s->grammar = tl_srv_grammar_ref(j->grammar);
  }
  if (st != TL_OK) {
    set_error(j, st, "%s", err);
    s->s.cache.len = (uint32_t)j->reused;
    return;
  }
  if (tl_native_model_changed(&e->master.model)) {
    set_error(j, TL_ERR_IO, "%s changed while in use", e->master.path);
    s->s.cache.len = 0;
    tl_turn_free(&t);
    return;
  }
  if (t.receipt_status == TL_OK)
    tl_hex_encode(t.receipt_id, 32, j->result.receipt_id);
  keep_receipt(e, &t, j);
  j->result.prompt_tokens = (uint32_t)j->n_ids;
  j->result.cached_tokens = (uint32_t)j->reused;
  j->result.completion_tokens = (uint32_t)t.r.n_ids;
  j->result.prefill_seconds = t.prefill_us / 1e6;
  j->result.decode_seconds = t.decode_us / 1e6;
  if (t.status != TL_OK) {
    if (t.status == TL_ERR_NUMERICAL_FAILURE) {
      snprintf(err, sizeof err, "non-finite value at %s, layer %d, position %u",
               tl_qwen3_stage_name(t.r.fault.stage), (int)t.r.fault.layer, t.r.fault.pos);
      set_error(j, t.status, "%s", err);
    } else {
      set_error(j, t.status, "the generation stopped: %s", tl_status_name(t.status));
    }
    /* rows past the prompt's computed part may hold the failed pass */
    s->s.cache.len = (uint32_t)j->reused;
  } else {
    j->result.finish = tl_stop_reason_name(t.r.stop);
  }
  /* the cache's rows: the prompt, then the generated tokens that were fed;
   * a turn cancelled in its prompt keeps only what it reused */
  if (s->s.cache.len < j->n_ids) s->s.cache.len = (uint32_t)j->reused;
  for (size_t i = 0; i < s->s.cache.len; i++)
    s->cached[i] = i < j->n_ids ? j->ids[i] : t.r.ids[i - j->n_ids];
  s->cached_len = s->s.cache.len;
  s->partition = j->partition;
  pthread_mutex_lock(&e->lock);
  /* the final text (the stop cut may end before bytes already counted) */
  if (t.status == TL_OK && t.r.visible_len >= j->text_len && t.r.visible_len != 0 &&
      grow((void **)&j->text, &j->text_cap, t.r.visible_len, 1)) {
    memcpy(j->text, t.r.visible, t.r.visible_len);
    j->text_len = t.r.visible_len;
  }
  for (size_t i = 0; i < j->n_tokens; i++)
    if (j->tokens[i].text_end > j->text_len) j->tokens[i].text_end = j->text_len;
  pthread_mutex_unlock(&e->lock);
  tl_turn_free(&t);
}

/* The longest prefix of j's prompt that s's cache holds, at most all but
 * its last token (its logits start the reply); none from another
 * partition's job, nor at all with no_shared_cache: whether a prefix was
 * reused shows in the reply (cached_tokens, its speed), so sharing one
 * would tell a client what another's prompt begins with. */
static size_t common_prefix(const tl_srv_engine *e, const slot *s, const tl_srv_job *j) {
  size_t k = 0;
  if (e->no_shared_cache || s->partition != j->partition) return 0;
  while (k + 1 < j->n_ids && k < s->cached_len && s->cached[k] == j->ids[k]) k++;
  return k;
}

/* Gives queued jobs to free slots, each to the free slot whose cache
 * holds the longest prefix of its prompt; under e->lock. */
static void dispatch(tl_srv_engine *e) {
  while (e->queue_head != NULL) {
    tl_srv_job *j = e->queue_head;
    slot *best = NULL;
    size_t best_len = 0;
    for (uint32_t i = 0; i < e->n_slots; i++) {
      slot *s = &e->slots[i];
      size_t k;
      if (s->job != NULL) continue;
      k = j->no_reuse ? 0 : common_prefix(e, s, j);
      if (best == NULL || k > best_len) {
        best = s;
        best_len = k;
      }
    }
    if (best == NULL) return;
    e->queue_head = j->next;
    if (e->queue_head == NULL) e->queue_tail = NULL;
    e->n_queued--;
    j->next = NULL;
    j->reused = best_len;
    j->state = TL_SRV_PREFILL;
    j->prompt_done = best_len;
    j->prompt_total = j->n_ids;
    j->started = tl_now_s();
    j->result.slot = best->index;
    best->kv_rows = (uint32_t)best_len;
    best->job = j;
    pthread_cond_broadcast(&j->changed);
    pthread_cond_signal(&best->wake);
  }
}

static void finish_job(tl_srv_engine *e, tl_srv_job *j) {
  tl_srv_stats *st = &e->stats;
  if (j->result.finish == NULL) j->result.finish = "cancelled";
  if (strcmp(j->result.finish, "cancelled") == 0) st->requests_cancelled++;
  else if (strcmp(j->result.finish, "error") == 0) st->requests_failed++;
  else st->requests_done++;
  st->prompt_tokens += j->result.prompt_tokens;
  st->cached_tokens += j->result.cached_tokens;
  st->generated_tokens += j->result.completion_tokens;
  st->prompt_seconds += j->result.prefill_seconds;
  st->decode_seconds += j->result.decode_seconds;
  j->state = TL_SRV_DONE;
  pthread_cond_broadcast(&j->changed);
  job_unref(j);
}

static void *slot_main(void *arg) {
  slot *s = arg;
  tl_srv_engine *e = s->e;
  pthread_mutex_lock(&e->lock);
  for (;;) {
    tl_srv_job *j;
    while (s->job == NULL && !e->closing) pthread_cond_wait(&s->wake, &e->lock);
    if (s->job == NULL) break;
    j = s->job;
    e->stats.slots_busy++;
    pthread_mutex_unlock(&e->lock);
    j->result.queue_seconds = j->started - j->submitted;
    if (atomic_load(&j->cancel) == 0) run_job(s, j);
    pthread_mutex_lock(&e->lock);
    s->decoding = false;
    s->job = NULL;
    e->stats.slots_busy--;
    finish_job(e, j);
    dispatch(e);
    pthread_cond_signal(&e->work); /* the forward thread may wait for this slot */
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

/* ---- the public side ---- */

static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  unsigned long long kb = 0;
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024u;
}

tl_status tl_srv_engine_open(const tl_srv_engine_options *o, tl_srv_engine **out, char *err,
                             size_t err_cap) {
  tl_srv_engine *e;
  tl_status st;
  const uint8_t *id;
  uint64_t scratch_bytes, total, budget;
  size_t chunk_bound, rows_bound;
  *out = NULL;
  if (o->parallel < 1 || o->parallel > MAX_SLOTS || o->queue > MAX_QUEUE) {
    snprintf(err, err_cap, "--parallel must be 1..%d and --queue 0..%d", MAX_SLOTS, MAX_QUEUE);
    return TL_ERR_INVALID_ARGUMENT;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) {
    snprintf(err, err_cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  pthread_mutex_init(&e->lock, NULL);
  pthread_mutex_init(&e->embed_lock, NULL);
  pthread_cond_init(&e->work, NULL);
  e->n_slots = o->parallel;
  e->queue_cap = o->queue;
  for (uint32_t i = 0; i < MAX_SLOTS; i++) pthread_cond_init(&e->slots[i].wake, NULL);
  tl_srv_model_name(o->model_path, e->model_name, sizeof e->model_name);
  e->no_shared_cache = o->no_shared_cache;
  e->gather_ns = (long)(o->gather_us != 0 ? o->gather_us : DEFAULT_GATHER_US) * 1000L;
  e->escape_special = o->escape_special;
  if (o->receipt_dir != NULL) {
    struct stat sb;
    /* receipts hold the prompts: a directory only this user can read and
     * change, refused now rather than per receipt */
    char why_buf[96];
    const char *why = NULL;
    int fd;
    if (mkdir(o->receipt_dir, 0700) != 0 && errno != EEXIST) why = strerror(errno);
    else if ((fd = open(o->receipt_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
      why = errno != ELOOP && errno != ENOTDIR ? strerror(errno)
            : lstat(o->receipt_dir, &sb) == 0 && S_ISLNK(sb.st_mode)
                ? "a symbolic link (refused: it could lead anywhere)"
                : "not a directory";
    else {
      why = tl_file_private_dir(fd, &sb, why_buf, sizeof why_buf);
      close(fd);
    }
    if (why != NULL) {
      st = TL_ERR_IO;
      snprintf(err, err_cap, "--receipt-dir %s: %s", o->receipt_dir, why);
      goto fail;
    }
    if ((e->receipt_dir = strdup(o->receipt_dir)) == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, err_cap, "out of memory");
      goto fail;
    }
  }
  st = tl_session_open(&e->master, o->model_path, err, err_cap);
  if (st != TL_OK) goto fail;
  e->master_open = true;
  if (e->escape_special && (st = tl_srv_specials_load(e->master.model.tok, &e->specials)) != TL_OK) {
    snprintf(err, err_cap, "out of memory");
    goto fail;
  }
  st = tl_session_lane(&e->master, &o->lane, err, err_cap);
  if (st == TL_OK) st = tl_session_plan(&e->master, o->context, 0, err, err_cap);
  if (st != TL_OK) goto fail;
  /* the forward thread's scratch: a prefill chunk, or one token of every slot */
  chunk_bound = tl_qwen3_scratch_bound(&e->master.qwen, e->master.prefill_chunk,
                                       e->master.context);
  rows_bound = tl_qwen3_rows_scratch_bound(&e->master.qwen, e->n_slots, e->master.context);
  if (chunk_bound == SIZE_MAX || rows_bound == SIZE_MAX) {
    st = TL_ERR_INTEGER_OVERFLOW;
    snprintf(err, err_cap, "the working memory of %u slots overflows", e->n_slots);
    goto fail;
  }
  scratch_bytes = chunk_bound > rows_bound ? chunk_bound : rows_bound;
  total = e->master.plan.total + (uint64_t)(e->n_slots - 1) * tl_session_slot_bytes(&e->master) +
          scratch_bytes;
  e->plan_bytes = total;
  budget = o->mem_budget != 0 ? o->mem_budget : mem_available();
  if (budget != 0 && total > budget) {
    char text[512];
    tl_memory_plan_text(&e->master.plan, text, sizeof text);
    snprintf(err, err_cap,
             "%u slots of %u tokens need %.1f MB, over the %.1f MB %s (one slot: %s; each further "
             "slot %.1f MB; forward scratch %.1f MB): lower --parallel or --ctx",
             e->n_slots, e->master.context, total / 1e6, budget / 1e6,
             o->mem_budget != 0 ? "budget" : "available memory", text,
             tl_session_slot_bytes(&e->master) / 1e6, scratch_bytes / 1e6);
    st = TL_ERR_OUT_OF_MEMORY;
    goto fail;
  }
  st = tl_session_allocate(&e->master, 0, err, err_cap);
  if (st == TL_OK) st = tl_session_artifact_id(&e->master, &id);
  if (st != TL_OK) {
    if (err[0] == '\0') snprintf(err, err_cap, "%s: %s", o->model_path, tl_status_name(st));
    goto fail;
  }
  tl_hex_encode(id, 32, e->artifact_hex);
  e->scratch_mem = malloc((size_t)scratch_bytes);
  if (e->scratch_mem == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    snprintf(err, err_cap, "out of memory for %.1f MB of forward scratch", scratch_bytes / 1e6);
    goto fail;
  }
  tl_arena_init(&e->scratch, e->scratch_mem, (size_t)scratch_bytes);
  for (uint32_t i = 0; i < e->n_slots; i++) {
    slot *s = &e->slots[i];
    s->e = e;
    s->index = i;
    s->cached = malloc((size_t)e->master.context * sizeof *s->cached);
    if (s->cached == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, err_cap, "out of memory");
      goto fail;
    }
    /* slot 0 computes in the master session's own cache */
    if (i == 0) {
      s->s = e->master;
      s->is_master = true;
    } else if ((st = tl_session_open_slot(&s->s, &e->master, err, err_cap)) != TL_OK) goto fail;
  }
  if (pthread_create(&e->forward_thread, NULL, forward_main, e) != 0) {
    st = TL_ERR_WORKER_FAILURE;
    snprintf(err, err_cap, "cannot start the forward thread");
    goto fail;
  }
  e->forward_started = true;
  for (uint32_t i = 0; i < e->n_slots; i++) {
    if (pthread_create(&e->slots[i].thread, NULL, slot_main, &e->slots[i]) != 0) {
      st = TL_ERR_WORKER_FAILURE;
      snprintf(err, err_cap, "cannot start slot thread %u", i);
      goto fail;
    }
    e->slots[i].started = true;
  }
  *out = e;
  return TL_OK;
fail:
  tl_srv_engine_close(e);
  return st;
}

void tl_srv_engine_close(tl_srv_engine *e) {
  if (e == NULL) return;
  pthread_mutex_lock(&e->lock);
  e->closing = true;
  while (e->queue_head != NULL) { /* queued jobs end as cancelled */
    tl_srv_job *j = e->queue_head;
    e->queue_head = j->next;
    e->n_queued--;
    finish_job(e, j);
  }
  e->queue_tail = NULL;
  for (uint32_t i = 0; i < e->n_slots; i++) {
    if (e->slots[i].job != NULL) atomic_store(&e->slots[i].job->cancel, 1);
    pthread_cond_signal(&e->slots[i].wake);
  }
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->lock);
  for (uint32_t i = 0; i < e->n_slots; i++)
    if (e->slots[i].started) pthread_join(e->slots[i].thread, NULL);
  if (e->forward_started) pthread_join(e->forward_thread, NULL);
  for (uint32_t i = 1; i < e->n_slots; i++)
    if (e->slots[i].s.slot) tl_session_close(&e->slots[i].s);
  for (uint32_t i = 0; i < MAX_SLOTS; i++) {
    tl_srv_grammar_unref(e->slots[i].grammar);
    free(e->slots[i].cached);
    pthread_cond_destroy(&e->slots[i].wake);
  }
  /* slot 0's turns ran in a copy of the master session: what they added to
   * it (a constrained turn's matcher memory) is released with the master */
  if (e->slots[0].is_master) e->master = e->slots[0].s;
  if (e->master_open) tl_session_close(&e->master);
  free(e->scratch_mem);
  free(e->receipt_dir);
  tl_srv_specials_free(&e->specials);
  pthread_cond_destroy(&e->work);
  pthread_mutex_destroy(&e->lock);
  pthread_mutex_destroy(&e->embed_lock);
  free(e);
}

void tl_srv_engine_facts(const tl_srv_engine *e, tl_srv_facts *out) {
  memset(out, 0, sizeof *out);
  out->vocab = e->master.defined_ids;
  out->context = e->master.context;
  out->parallel = e->n_slots;
  out->queue = e->queue_cap;
  out->artifact_id = e->artifact_hex;
  out->profile = tl_native_lane_profile(&e->master.lane);
  out->isa = tl_native_lane_isa(&e->master.lane);
  out->threads = tl_native_lane_threads(&e->master.lane);
  out->build_id = TL_BUILD_ID;
  out->model_name = e->model_name;
  out->plan_bytes = e->plan_bytes;
  out->gen = &e->master.gen;
  out->embedding = e->master.embedding;
  out->hidden = e->master.qwen.cfg.hidden;
}

tl_status tl_srv_embed(tl_srv_engine *e, const uint32_t *ids, size_t n, uint32_t dims,
                       float *out, tl_srv_error *err) {
  tl_qwen3_fault fault;
  tl_status st;
  double t0;
  if (n + 1 > e->master.context) {
    tl_srv_error_set(err, 400, NULL, "input", "context_length_exceeded",
                     "the context is %u tokens; the input has %zu tokens and the end-of-text "
                     "token appended to it",
                     e->master.context, n);
    return TL_ERR_CONTEXT_EXCEEDED;
  }
  pthread_mutex_lock(&e->embed_lock);
  t0 = tl_now_s();
  st = tl_embed(&e->master.qwen, &e->master.cache, &e->scratch, e->master.prefill_chunk, ids, n,
                e->master.embed_append, dims, out, &fault);
  pthread_mutex_unlock(&e->embed_lock);
  if (st == TL_OK) {
    /* prefilled like a prompt (the appended token too): /metrics counts
     * them in prompt_tokens_total and prompt_seconds_total, as vLLM counts
     * a pooling request's */
    double dt = tl_now_s() - t0;
    pthread_mutex_lock(&e->lock);
    e->stats.prompt_tokens += n + 1;
    e->stats.prompt_seconds += dt;
    pthread_mutex_unlock(&e->lock);
  } else {
    tl_srv_error_set(err, 500, "server_error", "", "embedding_failed", "%s",
                     tl_status_name(st));
  }
  return st;
}

/* ---- text ---- */

/* p's bytes to its ids, the special tokens starting in plain[0..n_plain)
 * as text. */
static tl_status encode(tl_srv_engine *e, tl_srv_prompt *p, const tl_tok_span *plain,
                        size_t n_plain, tl_srv_error *err) {
  tl_encoder enc = {0};
  size_t n = 0, bad = 0;
  tl_status st;
  enc.tok = e->master.model.tok;
  st = tl_encoder_run_plain(&enc, p->bytes, p->len, plain, n_plain, &n, &bad);
  if (st != TL_OK) {
    tl_encoder_free(&enc);
    if (st == TL_ERR_INVALID_UTF8) {
      tl_srv_error_set(err, 400, NULL, "", "invalid_utf8",
                       "the prompt is not valid UTF-8 at byte %zu", bad);
      return st;
    }
    tl_srv_error_set(err, 500, NULL, "", "internal", "tokenizing the prompt failed: %s",
                     tl_status_name(st));
    return st;
  }
  p->ids = malloc((n ? n : 1) * sizeof *p->ids);
  if (p->ids == NULL) {
    tl_encoder_free(&enc);
    tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(p->ids, enc.ids, n * sizeof *p->ids);
  p->n_ids = n;
  tl_encoder_free(&enc);
  return TL_OK;
}

tl_status tl_srv_prompt_chat(tl_srv_engine *e, const char *conversation, size_t len,
                             tl_srv_prompt *out, tl_srv_error *err) {
  tl_render_out r = {0};
  tl_render_error re;
  tl_status st;
  char *marked = NULL;
  tl_tok_span *plain = NULL;
  size_t n_plain = 0;
  memset(out, 0, sizeof *out);
  memset(&re, 0, sizeof re);
  if (e->escape_special) {
    st = tl_srv_escape_mark(&e->specials, conversation, len, &marked, &len);
    if (st != TL_OK) {
      if (st == TL_ERR_INVALID_ARGUMENT)
        tl_srv_error_set(err, 400, NULL, "messages", "invalid_value",
                         "the messages hold U+10FFFD, which --escape-special reserves");
      else tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory");
      return st;
    }
    conversation = marked;
  }
  st = tl_native_render(&e->master.model, (const uint8_t *)conversation, len, TL_RENDER_FOR_REPLY,
                        &r, &re);
  free(marked);
  if (st != TL_OK) {
    char param[32] = "messages";
    if (re.bad_message != SIZE_MAX && re.kind != NULL && strcmp(re.kind, "input") == 0)
      snprintf(param, sizeof param, "messages[%zu]", re.bad_message);
    tl_srv_error_set(err, 400, NULL, param, "invalid_value", "the chat template refused the "
                     "conversation (%s): %s", re.kind ? re.kind : "error", re.message);
    return TL_ERR_INVALID_ARGUMENT;
  }
  out->bytes = r.text;
  out->len = r.len;
  out->messages = true;
  out->add_generation_prompt = r.own.add_generation_prompt;
  if (e->escape_special) { /* the markers back to the text typed */
    uint8_t *text;
    st = tl_srv_escape_restore(&e->specials, r.text, r.len, &text, &out->len, &plain, &n_plain);
    if (st != TL_OK) {
      tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory");
      tl_srv_prompt_free(out);
      return st;
    }
    free(out->bytes);
    out->bytes = text;
  }
  st = encode(e, out, plain, n_plain, err);
  free(plain);
  if (st != TL_OK) tl_srv_prompt_free(out);
  return st;
}

tl_status tl_srv_prompt_text(tl_srv_engine *e, const char *text, size_t len, tl_srv_prompt *out,
                             tl_srv_error *err) {
  tl_status st;
  memset(out, 0, sizeof *out);
  out->bytes = malloc(len ? len : 1);
  if (out->bytes == NULL) {
    tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(out->bytes, text, len);
  out->len = len;
  st = encode(e, out, NULL, 0, err);
  if (st != TL_OK) tl_srv_prompt_free(out);
  return st;
}

void tl_srv_prompt_free(tl_srv_prompt *p) {
  free(p->ids);
  free(p->bytes);
  memset(p, 0, sizeof *p);
}

bool tl_srv_token_bytes(const tl_srv_engine *e, uint32_t id, const uint8_t **bytes,
                        size_t *len) {
  return id < e->master.defined_ids &&
         tl_tok_token_bytes(e->master.model.tok, id, bytes, len) == TL_OK;
}

tl_status tl_srv_decode(const tl_srv_engine *e, const uint32_t *ids, size_t n, uint32_t mode,
                        uint8_t **out, size_t *len) {
  size_t cap, bad = 0;
  tl_status st;
  *out = NULL;
  *len = 0;
  if (mode != TL_DECODE_RAW && mode != TL_DECODE_VISIBLE) return TL_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i++)
    if (ids[i] >= e->master.defined_ids) return TL_ERR_INVALID_ARGUMENT;
  if (n > (SIZE_MAX - 1) / (e->master.max_token_bytes + 1)) return TL_ERR_INTEGER_OVERFLOW;
  cap = n * e->master.max_token_bytes + 1;
  *out = malloc(cap);
  if (*out == NULL) return TL_ERR_OUT_OF_MEMORY;
  st = tl_tok_decode(e->master.model.tok, ids, n,
                     mode == TL_DECODE_RAW ? TL_TOK_DECODE_RAW : TL_TOK_DECODE_VISIBLE, *out, cap,
                     len, &bad);
  if (st != TL_OK) {
    free(*out);
    *out = NULL;
    *len = 0;
  }
  return st;
}

/* ---- jobs ---- */

static tl_srv_job *job_new(tl_srv_engine *e, const tl_srv_job_params *p, tl_srv_error *err) {
  const tl_srv_request *q = p->req;
  tl_srv_job *j = calloc(1, sizeof *j);
  bool ok = j != NULL;
  if (ok) {
    j->e = e;
    j->refs = 2;
    pthread_cond_init(&j->changed, NULL);
    atomic_init(&j->cancel, 0);
    j->ids = malloc(p->prompt->n_ids * sizeof *j->ids);
    j->prompt_bytes = malloc(p->prompt->len ? p->prompt->len : 1);
    j->ban = malloc((q->n_ban ? q->n_ban : 1) * sizeof *j->ban);
    j->bias_ids = malloc((q->n_bias ? q->n_bias : 1) * sizeof *j->bias_ids);
    j->bias = malloc((q->n_bias ? q->n_bias : 1) * sizeof *j->bias);
    ok = j->ids != NULL && j->prompt_bytes != NULL && j->ban != NULL && j->bias_ids != NULL &&
         j->bias != NULL;
  }
  for (size_t i = 0; ok && i < q->n_stops; i++) {
    j->stop_mem[i] = malloc(q->stop_lens[i] ? q->stop_lens[i] : 1);
    ok = j->stop_mem[i] != NULL;
    if (ok) {
      memcpy(j->stop_mem[i], q->stops[i], q->stop_lens[i]);
      j->stops[i] = j->stop_mem[i];
      j->stop_lens[i] = q->stop_lens[i];
      j->n_stops = i + 1;
    }
  }
  if (!ok) {
    if (j != NULL) job_free(j);
    tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory");
    return NULL;
  }
  memcpy(j->ids, p->prompt->ids, p->prompt->n_ids * sizeof *j->ids);
  j->n_ids = p->prompt->n_ids;
  memcpy(j->prompt_bytes, p->prompt->bytes, p->prompt->len);
  j->prompt_len = p->prompt->len;
  j->messages = p->prompt->messages;
  j->add_generation_prompt = p->prompt->add_generation_prompt;
  if (q->n_ban != 0) memcpy(j->ban, q->ban, q->n_ban * sizeof *j->ban);
  j->n_ban = q->n_ban;
  j->no_reuse = q->no_prompt_cache;
  j->logprobs = q->logprobs;
  j->top_logprobs = q->top_logprobs;
  j->grammar = tl_srv_grammar_ref(p->grammar);
  j->partition = p->partition;
  j->gen.given = q->given;
  j->gen.temperature = q->temperature;
  j->gen.top_k = q->top_k;
  j->gen.top_p = q->top_p;
  j->gen.min_p = q->min_p;
  j->gen.repeat_penalty = q->repeat_penalty;
  j->gen.repeat_window = q->repeat_window;
  j->gen.flags |= TL_GENERATE_PENALTIES;
  j->gen.frequency_penalty = q->frequency_penalty;
  j->gen.presence_penalty = q->presence_penalty;
  if (q->n_bias != 0) memcpy(j->bias_ids, q->bias_ids, q->n_bias * sizeof *j->bias_ids);
  if (q->n_bias != 0) memcpy(j->bias, q->bias, q->n_bias * sizeof *j->bias);
  j->gen.bias_ids = j->bias_ids;
  j->gen.bias = j->bias;
  j->gen.n_bias = q->n_bias;
  j->gen.seed = (q->has_seed ? q->seed : 0) + p->choice;
  j->gen.max_tokens = q->max_tokens;
  j->gen.on_text = on_text;
  j->gen.on_prefill = on_prefill;
  j->gen.on_choice = on_choice;
  j->gen.ctx = j;
  j->result.seed = j->gen.seed;
  j->prompt_total = j->n_ids;
  return j;
}

tl_status tl_srv_submit(tl_srv_engine *e, const tl_srv_job_params *p, tl_srv_job **out,
                        tl_srv_error *err) {
  uint32_t ctx = e->master.context;
  size_t n = p->prompt->n_ids;
  bool free_slot = false;
  tl_srv_job *j;
  *out = NULL;
  if (e->master.embedding) {
    tl_srv_error_set(err, 400, NULL, "model", "invalid_value",
                     "The model '%.120s' is an embedding model: it generates no text "
                     "(POST /v1/embeddings)",
                     e->model_name);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (n == 0) {
    tl_srv_error_set(err, 400, NULL, p->req->kind == TL_SRV_CHAT ? "messages" : "prompt",
                     "invalid_value", "the prompt is empty");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (p->req->n > e->n_slots + e->queue_cap) {
    tl_srv_error_set(err, 400, NULL, "n", "invalid_value",
                     "n is %u, but at most %u choices can be held at once (--parallel %u + "
                     "--queue %u)", p->req->n, e->n_slots + e->queue_cap, e->n_slots,
                     e->queue_cap);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (p->req->n_ban >= e->master.defined_ids) { /* the ids are distinct, each defined */
    tl_srv_error_set(err, 400, NULL, "logit_bias", "invalid_value",
                     "logit_bias bans every one of the %u tokens: none could ever be drawn",
                     e->master.defined_ids);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (n > ctx || (p->req->max_tokens != 0 && (uint64_t)n + p->req->max_tokens > (uint64_t)ctx + 1)) {
    tl_srv_error_set(err, 400, NULL, p->req->kind == TL_SRV_CHAT ? "messages" : "prompt",
                     "context_length_exceeded",
                     "the context of a slot is %u tokens; the request has %zu prompt tokens%s "
                     "and asks for %u more",
                     ctx, n, p->req->kind == TL_SRV_CHAT ? " (the rendered conversation)" : "",
                     p->req->max_tokens);
    return TL_ERR_CONTEXT_EXCEEDED;
  }
  j = job_new(e, p, err);
  if (j == NULL) return TL_ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&e->lock);
  for (uint32_t i = 0; i < e->n_slots; i++) free_slot |= e->slots[i].job == NULL;
  if (e->closing || (!free_slot && e->n_queued >= e->queue_cap)) {
    bool closing = e->closing;
    pthread_mutex_unlock(&e->lock);
    job_free(j);
    tl_srv_error_set(err, 503, NULL, "", closing ? "shutting_down" : "queue_full",
                     closing ? "the server is shutting down"
                             : "every slot is busy and the queue is full; retry later");
    return TL_ERR_BOUNDS;
  }
  j->submitted = tl_now_s();
  if (e->queue_tail != NULL) e->queue_tail->next = j;
  else e->queue_head = j;
  e->queue_tail = j;
  e->n_queued++;
  dispatch(e);
  pthread_mutex_unlock(&e->lock);
  *out = j;
  return TL_OK;
}

tl_status tl_srv_job_wait(tl_srv_job *j, int timeout_ms, size_t text_from, size_t tokens_from,
                          tl_srv_state state_seen, tl_srv_update *u) {
  tl_srv_engine *e = j->e;
  struct timespec until;
  memset(u, 0, sizeof *u);
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&e->lock);
  /* a token whose text is not in yet is no news: returning for it would
   * spin the stream's thread (and take e->lock from the slot that is
   * about to append that text) until the text came */
  while (j->state == state_seen && j->text_len <= text_from &&
         tl_srv_tokens_ready(j->tokens, j->n_tokens, j->text_len, tokens_from, false) <=
             tokens_from &&
         j->state != TL_SRV_DONE &&
         pthread_cond_timedwait(&j->changed, &e->lock, &until) != ETIMEDOUT) {
  }
  u->state = j->state;
  u->prompt_done = j->prompt_done;
  u->prompt_total = j->prompt_total;
  u->text_from = text_from < j->text_len ? text_from : j->text_len;
  u->text_len = j->text_len;
  u->tokens_from = tokens_from < j->n_tokens ? tokens_from : j->n_tokens;
  u->n_tokens = tl_srv_tokens_ready(j->tokens, j->n_tokens, j->text_len, u->tokens_from,
                                    j->state == TL_SRV_DONE);
  u->text = malloc(u->text_len - u->text_from + 1);
  u->tokens = malloc((u->n_tokens - u->tokens_from + 1) * sizeof *u->tokens);
  if (u->text == NULL || u->tokens == NULL) {
    pthread_mutex_unlock(&e->lock);
    tl_srv_update_free(u);
    return TL_ERR_OUT_OF_MEMORY;
  }
  if (u->text_len > u->text_from)
    memcpy(u->text, j->text + u->text_from, u->text_len - u->text_from);
  if (u->n_tokens > u->tokens_from)
    memcpy(u->tokens, j->tokens + u->tokens_from,
           (u->n_tokens - u->tokens_from) * sizeof *u->tokens);
  if (j->state == TL_SRV_DONE) u->result = j->result;
  pthread_mutex_unlock(&e->lock);
  return TL_OK;
}

size_t tl_srv_tokens_ready(const tl_srv_token *tokens, size_t n, size_t text_len,
                           size_t from, bool done) {
  if (!done)
    while (n > from && tokens[n - 1].text_end > text_len) n--;
  return n;
}

void tl_srv_update_free(tl_srv_update *u) {
  free(u->text);
  free(u->tokens);
  u->text = NULL;
  u->tokens = NULL;
}

void tl_srv_job_cancel(tl_srv_job *j) {
  tl_srv_engine *e = j->e;
  pthread_mutex_lock(&e->lock);
  atomic_store(&j->cancel, 1);
  if (j->state == TL_SRV_QUEUED) { /* not in a slot: leaves the queue now */
    tl_srv_job **at = &e->queue_head, *prev = NULL;
    while (*at != NULL && *at != j) {
      prev = *at;
      at = &(*at)->next;
    }
    if (*at == j) {
      *at = j->next;
      if (e->queue_tail == j) e->queue_tail = prev;
      e->n_queued--;
      finish_job(e, j);
    }
  }
  pthread_mutex_unlock(&e->lock);
}

void tl_srv_job_release(tl_srv_job *j) {
  tl_srv_engine *e = j->e;
  pthread_mutex_lock(&e->lock);
  job_unref(j);
  pthread_mutex_unlock(&e->lock);
}

void tl_srv_engine_stats(tl_srv_engine *e, tl_srv_stats *out) {
  pthread_mutex_lock(&e->lock);
  *out = e->stats;
  out->queued = e->n_queued;
  out->processing = e->stats.slots_busy;
  /* an idle slot's cached prefix is free room (the next job may overwrite
   * it), as vLLM's and SGLang's evictable prefix-cache blocks are */
  out->kv_used = 0;
  for (uint32_t i = 0; i < e->n_slots; i++)
    if (e->slots[i].job != NULL) out->kv_used += e->slots[i].kv_rows;
  out->kv_capacity = (uint64_t)e->n_slots * e->master.context;
  pthread_mutex_unlock(&e->lock);
}
