#include "sample/sampler_selftest.h"

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "bytes.h"
#include "sample/sampler.h"

/* The generator's cases stay far below this. */
#define SV_MAX_N 64

tl_status tl_sampler_vector_draw(const tl_sampler_vector *v,
                                 tl_sampler_draw *out) {
  _Alignas(16) uint8_t scratch[4096];
  float logits[SV_MAX_N];
  tl_sampler_profile p;
  tl_sample_input in;
  tl_sample_trace tr = {0};
  tl_sample_result res;
  tl_arena a;
  tl_status st;
  *out = (tl_sampler_draw){0};
  if (v->n > SV_MAX_N || tl_sampler_scratch_bytes(v->n) > sizeof scratch ||
      tl_arena_init(&a, scratch, sizeof scratch) != TL_OK)
    return TL_ERR_BOUNDS;
  for (size_t i = 0; i < v->n; i++) logits[i] = tl_bits_to_f32(v->logits[i]);
  p = tl_sampler_profile_default(v->defined_ids);
  p.temperature = tl_bits_to_f64(v->temperature);
  p.top_k = v->top_k;
  p.top_p = tl_bits_to_f64(v->top_p);
  p.min_p = tl_bits_to_f64(v->min_p);
  p.repeat_penalty = tl_bits_to_f64(v->repeat_penalty);
  p.repeat_window = v->repeat_window;
  p.min_new = v->min_new;
  p.eos = v->eos;
  p.n_eos = v->n_eos;
  p.ban = v->ban;
  p.n_ban = v->n_ban;
  in.logits = logits;
  in.n = v->n;
  in.history = v->history;
  in.n_history = v->n_history;
  in.n_generated = v->n_generated;
  in.pos.seed = v->seed;
  in.pos.draw = v->draw;
  in.pos.token = v->token;
  in.pos.turn = v->turn;
  in.pos.stream = v->stream;
  in.allow = NULL;
  tr.ids = out->survivors;
  tr.probs = out->q;
  tr.bounds = out->bounds;
  tr.cap = TL_SAMPLER_SELFTEST_MAX_SURVIVORS;
  st = tl_sample(&p, &in, &a, &tr, &res);
  if (st != TL_OK) return st;
  out->draw_word = res.draw_word;
  out->id = res.id;
  out->draws_used = res.draws_used;
  out->n_candidates = res.n_candidates;
  out->n_survivors = res.n_survivors;
  out->truncated = tr.truncated;
  /* The trace must tell the same story as the result. */
  if (tr.chosen != res.id || tr.draw_word != res.draw_word ||
      tr.count != res.n_survivors)
    return TL_ERR_INTERNAL_INVARIANT;
  return TL_OK;
}

bool tl_sampler_vector_matches(const tl_sampler_vector *v,
                               const tl_sampler_draw *d) {
  if (d->id != v->id || d->draw_word != v->draw_word || d->draws_used != 1 ||
      d->n_candidates != v->n_candidates || d->n_survivors != v->n_survivors ||
      d->truncated || v->n_survivors > TL_SAMPLER_SELFTEST_MAX_SURVIVORS)
    return false;
  for (size_t j = 0; j < v->n_survivors; j++)
    if (d->survivors[j] != v->survivors[j] ||
        tl_f64_to_bits(d->q[j]) != v->q[j] ||
        tl_f64_to_bits(d->bounds[j]) != v->bounds[j])
      return false;
  return true;
}

static bool one(const tl_sampler_vector *v) {
  tl_sampler_draw d;
  return tl_sampler_vector_draw(v, &d) == TL_OK &&
         tl_sampler_vector_matches(v, &d);
}

tl_status tl_sampler_selftest(const tl_sampler_vector *v, size_t count,
                              size_t *failed) {
  for (size_t i = 0; i < count; i++)
    if (!one(&v[i])) {
      if (failed != NULL) *failed = i;
      return TL_ERR_SELF_TEST_FAILED;
    }
  if (count == 0 && failed != NULL) *failed = 0;
  return count > 0 ? TL_OK : TL_ERR_SELF_TEST_FAILED;
}
