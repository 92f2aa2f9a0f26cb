/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#define _POSIX_C_SOURCE 200809L
#include "turn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/lane_mutant.h"
#include "receipt.h"

#ifndef TL_BUILD_ID
#define TL_BUILD_ID "unknown"
#endif

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The sampler as the generation loop's choose callback. */
typedef struct chooser {
  tl_session *s;
  const tl_turn_params *p;
  const tl_sampler_profile *profile;
  uint32_t *history; /* prompt, then generated */
  size_t n_prompt;
  uint64_t prefill_done_us; /* when the last prompt chunk completed */
  tl_constraint *con; /* NULL: free text */
  const char *why;    /* why the constraint failed a step */
} chooser;

#ifdef TL_LANE_MUTANTS
/* Test builds only (model/lane_mutant.h): the fast lane's sampler defects,
 * planted in a copy of the profile; the penalty's second application in a
 * copy of the logits (S-4's rule: positive / p, negative x p). */
static const float *planted_sampler(const chooser *c, const float *logits, size_t vocab,
                                    size_t n, tl_sampler_profile *p, float **owned) {
  *p = *c->profile;
  *owned = NULL;
  if (!c->s->lane.fast) return logits;
  if (TL_LANE_MUT(TL_LANE_MUT_TEMP_1_05)) p->temperature *= 1.05;
  if (TL_LANE_MUT(TL_LANE_MUT_TEMP_0_95)) p->temperature *= 0.95;
  if (TL_LANE_MUT(TL_LANE_MUT_TOP_P_0_95) && p->top_p == 1.0) p->top_p = 0.95;
  if (TL_LANE_MUT(TL_LANE_MUT_TOP_K_PLUS_1) && p->top_k > 0) p->top_k++;
  if (TL_LANE_MUT(TL_LANE_MUT_MIN_P_0_05) && p->min_p == 0.0) p->min_p = 0.05;
  if (TL_LANE_MUT(TL_LANE_MUT_PENALTY_TWICE) && p->repeat_window > 0 &&
      (*owned = malloc(vocab * sizeof **owned)) != NULL) {
    size_t from = n > p->repeat_window ? n - p->repeat_window : 0;
    memcpy(*owned, logits, vocab * sizeof **owned);
    for (size_t i = from; i < n; i++) {
      float *x = &(*owned)[c->history[i] < vocab ? c->history[i] : 0];
      *x = *x > 0 ? (float)(*x / p->repeat_penalty) : (float)(*x * p->repeat_penalty);
    }
    return *owned;
  }
  return logits;
}
#endif

static tl_status choose(void *ctx, const float *logits, size_t vocab,
                        const uint32_t *generated, size_t step, uint32_t *id) {
  chooser *c = ctx;
  tl_sample_input in;
  tl_sample_result res;
  tl_status st;

  memcpy(c->history + c->n_prompt, generated, step * sizeof *generated);
  in.logits = logits;
  in.n = vocab;
  in.history = c->history;
  in.n_history = c->n_prompt + step;
  in.n_generated = (uint32_t)step;
  in.pos.seed = c->p->gen->seed;
  in.pos.draw = 0;
  in.pos.token = (uint32_t)step;
  in.pos.turn = c->p->gen->turn;
  in.pos.stream = 0;
  in.allow = NULL;
  if (c->con != NULL) {
    st = tl_constraint_mask(c->con);
    if (st != TL_OK) {
      c->why = "the grammar's matcher ran out of its memory";
      return st;
    }
    in.allow = c->con->allow;
  }
#ifdef TL_LANE_MUTANTS
  tl_sampler_profile planted;
  float *owned;
  in.logits = planted_sampler(c, logits, vocab, in.n_history, &planted, &owned);
  st = tl_sample(&planted, &in, &c->s->sampler_scratch, NULL, &res);
  free(owned);
#else
  st = tl_sample(c->profile, &in, &c->s->sampler_scratch, NULL, &res);
#endif
  if (st != TL_OK) {
    if (c->con != NULL && res.fault == TL_SAMPLE_FAULT_ALL_MASKED)
      c->why = "no token can continue the grammar here: every id is masked";
    return st;
  }
  *id = res.id;
  if (c->con != NULL && (st = tl_constraint_advance(c->con, *id)) != TL_OK) {
    c->why = "the grammar's matcher refused a token its mask allowed";
    return st;
  }
  if (c->p->gen->on_choice != NULL) c->p->gen->on_choice(c->p->gen->ctx, logits, vocab, *id);
  return TL_OK;
}

/* A callback's nonzero return asks the turn to stop. */
static void stop_if(const chooser *c, int asked) {
  if (asked != 0) atomic_store(c->p->cancel, 1);
}

/* The prefill's end is timed here; the caller's callback sees it too. */
static void on_prefill(void *ctx, size_t done, size_t total) {
  chooser *c = ctx;
  if (done == total) c->prefill_done_us = now_us();
  if (c->p->gen->on_prefill != NULL) stop_if(c, c->p->gen->on_prefill(c->p->gen->ctx, done, total));
}

static void on_visible(void *ctx, const uint8_t *bytes, size_t n) {
  chooser *c = ctx;
  if (c->p->gen->on_text != NULL) stop_if(c, c->p->gen->on_text(c->p->gen->ctx, bytes, n));
}

static void on_token(void *ctx, uint32_t id) {
  chooser *c = ctx;
  if (c->p->gen->on_token != NULL) stop_if(c, c->p->gen->on_token(c->p->gen->ctx, id));
}

static bool cancelled(void *ctx) {
  chooser *c = ctx;
  return atomic_load(c->p->cancel) != 0;
}

/* The profile: given values, else the artifact's generation defaults (the
 * publisher's generation_config.json; do_sample false means greedy), else
 * greedy (temperature 0, top-k 0, top-p 1, min-p 0, repeat penalty 1), as
 * `tinylm run` documents. */
static tl_status resolve_profile(const tl_session *s, const tl_turn_params *tp,
                                 tl_sampler_profile *profile, tl_sampler_field *field) {
  const tl_gen_defaults *g = &s->gen;
  const tl_generation_params *p = tp->gen;
  *profile = tl_sampler_profile_default(s->defined_ids);
  if (p->given & TL_GIVEN_TEMPERATURE) profile->temperature = p->temperature;
  else if (g->has_do_sample && !g->do_sample) profile->temperature = 0.0;
  else profile->temperature = g->has_temperature ? g->temperature : 0.0;
  profile->top_k = p->given & TL_GIVEN_TOP_K ? p->top_k : g->has_top_k ? g->top_k : 0;
  profile->top_p = p->given & TL_GIVEN_TOP_P ? p->top_p : g->has_top_p ? g->top_p : 1.0;
  profile->min_p = p->given & TL_GIVEN_MIN_P ? p->min_p : g->has_min_p ? g->min_p : 0.0;
  profile->repeat_penalty = p->given & TL_GIVEN_REPEAT_PENALTY ? p->repeat_penalty
                            : g->has_repeat_penalty            ? g->repeat_penalty
                                                               : 1.0;
  profile->repeat_window = p->repeat_window;
  if (p->flags & TL_GENERATE_PENALTIES) {
    profile->frequency_penalty = p->frequency_penalty;
    profile->presence_penalty = p->presence_penalty;
    profile->bias_ids = p->bias_ids;
    profile->bias = p->bias;
    profile->n_bias = p->n_bias;
  }
  profile->eos = s->eos;
  profile->n_eos = s->n_eos;
  profile->ban = tp->ban;
  profile->n_ban = tp->n_ban;
  if (tl_sampler_profile_check(profile, field) == TL_OK) return TL_OK;
  /* What the caller gave is the caller's mistake; the rest the artifact's. */
  switch (*field) {
  case TL_SAMPLER_FIELD_TEMPERATURE:
    return p->given & TL_GIVEN_TEMPERATURE ? TL_ERR_INVALID_ARGUMENT : TL_ERR_INVALID_MODEL;
  case TL_SAMPLER_FIELD_TOP_K:
    return p->given & TL_GIVEN_TOP_K ? TL_ERR_INVALID_ARGUMENT : TL_ERR_INVALID_MODEL;
  case TL_SAMPLER_FIELD_TOP_P:
    return p->given & TL_GIVEN_TOP_P ? TL_ERR_INVALID_ARGUMENT : TL_ERR_INVALID_MODEL;
  case TL_SAMPLER_FIELD_MIN_P:
    return p->given & TL_GIVEN_MIN_P ? TL_ERR_INVALID_ARGUMENT : TL_ERR_INVALID_MODEL;
  case TL_SAMPLER_FIELD_REPEAT_PENALTY:
    return p->given & TL_GIVEN_REPEAT_PENALTY ? TL_ERR_INVALID_ARGUMENT
                                                  : TL_ERR_INVALID_MODEL;
  case TL_SAMPLER_FIELD_REPEAT_WINDOW:
  case TL_SAMPLER_FIELD_BAN:
  case TL_SAMPLER_FIELD_FREQUENCY_PENALTY:
  case TL_SAMPLER_FIELD_PRESENCE_PENALTY:
  case TL_SAMPLER_FIELD_BIAS:
    return TL_ERR_INVALID_ARGUMENT;
  default:
    return TL_ERR_INVALID_MODEL;
  }
}

const char *tl_turn_field_name(tl_sampler_field field) {
  static const char *const names[] = {"temperature", "top_k", "top_p",   "min_p",
                                      "repeat_penalty", "repeat_window", "min_new",
                                      "eos",         "ban",   "vocabulary",
                                      "frequency_penalty", "presence_penalty", "logit_bias"};
  return (size_t)field < sizeof names / sizeof names[0] ? names[field] : "sampler";
}

/* The turn's constraint from p->grammar in s's grammar memory. */
static tl_status start_constraint(tl_session *s, const tl_turn_params *p, tl_constraint *con,
                                  char *err, size_t err_cap) {
  tl_grammar_vocab v;
  bool thinking;
  tl_status st = tl_grammar_vocab_get(s->model.grammar_vocab, s->model.tok, &v);
  if (st == TL_OK) st = tl_session_grammar_memory(s, tl_constraint_region_bytes(p->grammar,
                                                                                v.trie));
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot prepare the grammar's vocabulary or memory (%s)",
             tl_status_name(st));
    return st == TL_ERR_OUT_OF_MEMORY ? st : TL_ERR_INTERNAL_INVARIANT;
  }
  thinking = tl_constraint_thinking_open(&v, p->mode, p->prompt_bytes, p->prompt_len);
  st = tl_constraint_start(con, p->grammar, &v, s->model.tok, s->grammar_mem, s->grammar_cap,
                           &s->grammar_matcher,
                           s->allow, s->qwen.cfg.vocab, s->eos, s->n_eos, thinking,
                           p->think_budget);
  if (st != TL_OK) {
    snprintf(err, err_cap, "cannot start the grammar's matcher (%s)", tl_status_name(st));
    return st == TL_ERR_OUT_OF_MEMORY || st == TL_ERR_BOUNDS ? st : TL_ERR_INTERNAL_INVARIANT;
  }
  return TL_OK;
}

tl_status tl_turn_run(tl_session *s, const tl_turn_params *p, const uint32_t *ids,
                      size_t n, tl_turn *t, tl_sampler_field *field, char *err,
                      size_t err_cap) {
  tl_gen_params gp;
  tl_constraint con;
  chooser ch;
  size_t raw_cap;
  uint64_t t0, t1, t2;
  tl_status st;
  memset(t, 0, sizeof *t);
  if (s->embedding) {
    snprintf(err, err_cap,
             "%s is an embedding model: it has no language-model head to generate "
             "text from (use /v1/embeddings or tinylm embed)",
             s->path);
    return TL_ERR_UNSUPPORTED_FEATURE;
  }
  if (p->reused != 0 && (p->reused >= n || p->reused > s->cache.len)) {
    snprintf(err, err_cap, "%zu reused prompt tokens of %zu with %u cached", p->reused, n,
             s->cache.len);
    return TL_ERR_INVALID_ARGUMENT;
  }
  t->position = s->cache.len - (uint32_t)p->reused;
  t->max_new = p->gen->max_tokens;
  st = resolve_profile(s, p, &t->profile, field);
  if (st != TL_OK) {
    snprintf(err, err_cap, "sampler profile field %d out of range", (int)*field);
    return st;
  }
  if (t->max_new == 0) { /* no cap: until the context is full */
    uint64_t room;
    if ((uint64_t)t->position + n > s->context) {
      snprintf(err, err_cap,
               "the prompt (%zu tokens at position %u) exceeds the context (%u tokens)",
               n, t->position, s->context);
      return TL_ERR_CONTEXT_EXCEEDED;
    }
    room = (uint64_t)s->context - t->position - n;
    /* The last token is sampled without being fed: room + 1 can be
     * generated; one more lets the context stop, not the limit, end the
     * reply. */
    t->max_new = room + 2 < UINT32_MAX ? (uint32_t)(room + 2) : UINT32_MAX;
  }
  memset(&ch, 0, sizeof ch);
  if (p->grammar != NULL) {
    st = start_constraint(s, p, &con, err, err_cap);
    if (st != TL_OK) return st;
    ch.con = &con;
    t->constrained = true;
    t->think_budget = con.budget;
    tl_grammar_digest(p->grammar, t->grammar_digest);
  }
  raw_cap = s->max_token_bytes * (size_t)t->max_new + 256;
  ch.s = s;
  ch.p = p;
  ch.profile = &t->profile;
  ch.n_prompt = n;
  ch.history = malloc((n + t->max_new) * sizeof *ch.history);
  t->r.ids = malloc(t->max_new * sizeof *t->r.ids);
  t->r.ids_cap = t->max_new;
  t->r.raw = malloc(raw_cap);
  t->r.raw_cap = raw_cap;
  t->r.visible = malloc(raw_cap);
  t->r.visible_cap = raw_cap;
  if (ch.history == NULL || t->r.ids == NULL || t->r.raw == NULL || t->r.visible == NULL) {
    free(ch.history);
    tl_turn_free(t);
    snprintf(err, err_cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(ch.history, ids, n * sizeof *ids);
  memset(&gp, 0, sizeof gp);
  gp.max_new = t->max_new;
  gp.eos = s->eos;
  gp.n_eos = s->n_eos;
  gp.stops = p->stops;
  gp.stop_lens = p->stop_lens;
  gp.n_stops = p->n_stops;
  gp.prefill_chunk = s->prefill_chunk;
  gp.choose = choose;
  gp.choose_ctx = &ch;
  gp.on_visible = on_visible;
  gp.on_token = on_token;
  gp.on_prefill = on_prefill;
  gp.cancelled = cancelled;
  gp.cb_ctx = &ch;
  gp.forward = p->forward;
  gp.forward_ctx = p->forward_ctx;
  t0 = now_us();
  t->status = tl_generate(&s->qwen, &s->cache, s->model.tok, ids + p->reused, n - p->reused,
                          &gp, &s->arena, s->logits, &t->r);
  t2 = now_us();
  free(ch.history);
  t->why = ch.why;
  t->grammar_complete = ch.con != NULL && tl_constraint_complete(ch.con);
  /* Prefill ends when the last prompt chunk's forward pass completed. */
  t1 = ch.prefill_done_us ? ch.prefill_done_us : t2;
  t->prefill_us = t1 - t0;
  t->decode_us = t2 - t1;
  {
    const uint8_t *artifact_id = NULL;
    tl_status ids_st = tl_session_artifact_id(s, &artifact_id);
    tl_run_facts f = {.artifact_id = artifact_id,
                      .slm = &s->model.slm,
                      .build_id = TL_BUILD_ID,
                      .prompt_mode = p->mode,
                      .add_generation_prompt = p->add_generation_prompt,
                      .prompt_bytes = p->prompt_bytes,
                      .prompt_len = p->prompt_len,
                      .prompt_ids = ids,
                      .n_prompt = n,
                      .position = t->position,
                      .profile = &t->profile,
                      .seed = p->gen->seed,
                      .turn = p->gen->turn,
                      .grammar_digest = t->constrained ? t->grammar_digest : NULL,
                      .think_budget = t->think_budget,
                      .ids = t->r.ids,
                      .n_ids = t->r.n_ids,
                      .raw = t->r.raw,
                      .raw_len = t->r.raw_len,
                      .stop = tl_stop_reason_name(t->r.stop),
                      .error = t->status == TL_OK ? NULL : tl_status_name(t->status),
                      .max_new = gp.max_new,
                      .stops = gp.stops,
                      .stop_lens = gp.stop_lens,
                      .n_stops = gp.n_stops,
                      .prefill_us = t->prefill_us,
                      .decode_us = t->decode_us,
                      .isa = tl_native_lane_isa(&s->lane),
                      .threads = tl_native_lane_threads(&s->lane),
                      .verify = s->model.stamped ? "stamp" : "full",
                      .backend = s->lane.fast ? "fast" : "scalar",
                      .numerical_profile = tl_native_lane_profile(&s->lane)};
    t->receipt_status = ids_st != TL_OK ? ids_st
                        : tl_run_receipt(&f, &t->receipt, &t->receipt_len, t->receipt_id);
  }
  return TL_OK;
}

void tl_turn_free(tl_turn *t) {
  free(t->r.ids);
  free(t->r.raw);
  free(t->r.visible);
  free(t->receipt);
  memset(t, 0, sizeof *t);
}
