#include "sample/sampler_selftest.h"

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "bytes.h"
#include "sample/sampler.h"

/* The generator's cases stay far below these. */
#define SV_MAX_N 64
#define SV_MAX_SURVIVORS 16

static bool one(const tl_sampler_vector *v) {
  _Alignas(16) uint8_t scratch[2048];
  float logits[SV_MAX_N];
  uint32_t ids[SV_MAX_SURVIVORS];
  double probs[SV_MAX_SURVIVORS], bounds[SV_MAX_SURVIVORS];
  tl_sampler_profile p;
  tl_sample_input in;
  tl_sample_trace tr = {0};
  tl_sample_result res;
  tl_arena a;
  if (v->n > SV_MAX_N || v->n_survivors > SV_MAX_SURVIVORS ||
      tl_sampler_scratch_bytes(v->n) > sizeof scratch ||
      tl_arena_init(&a, scratch, sizeof scratch) != TL_OK)
    return false;
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
  tr.ids = ids;
  tr.probs = probs;
  tr.bounds = bounds;
  tr.cap = SV_MAX_SURVIVORS;
  if (tl_sample(&p, &in, &a, &tr, &res) != TL_OK || res.id != v->id || tr.chosen != v->id ||
      res.draw_word != v->draw_word || tr.draw_word != v->draw_word ||
      res.draws_used != 1 || res.n_candidates != v->n_candidates ||
      res.n_survivors != v->n_survivors ||
      tr.count != v->n_survivors || tr.truncated)
    return false;
  for (size_t j = 0; j < v->n_survivors; j++)
    if (ids[j] != v->survivors[j] || tl_f64_to_bits(probs[j]) != v->q[j] ||
        tl_f64_to_bits(bounds[j]) != v->bounds[j])
      return false;
  return true;
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
