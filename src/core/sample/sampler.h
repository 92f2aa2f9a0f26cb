/* The sampler: one token id from one logits vector, in the twelve steps of
 * docs/architecture.md §7. docs/sampler.md is the normative text; requirement ids
 * S-n below refer to it.
 *
 * Pure: the outcome is a function of (logits, profile, history, number
 * generated, draw position) only. The one random number is the Philox
 * draw at the caller's position (sample/philox.h); it is taken on every
 * successful step, also when the outcome is forced (greedy, one survivor),
 * so the draw sequence never depends on the outcome. Memory: a scratch
 * arena from the caller, rewound before return; nothing else. */
#ifndef TL_CORE_SAMPLE_SAMPLER_H
#define TL_CORE_SAMPLE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "cbor/cbor.h"
#include "sample/philox.h"
#include "tinylm.h"

/* The profile: everything that decides the outcome besides the step's own
 * input. Floats are binary64 and enter the profile identity as raw bits.
 * Id lists are strictly ascending (so the identity is canonical). */
typedef struct tl_sampler_profile {
  double temperature;     /* 0 (greedy), or in [2^-128, DBL_MAX] (S-5) */
  uint32_t top_k;         /* 0: off (S-6) */
  double top_p;           /* [0, 1]; 1: off (S-8) */
  double min_p;           /* [0, 1]; 0: off (S-9) */
  double repeat_penalty;  /* [2^-64, 2^64]; 1: off (S-4) */
  uint32_t repeat_window; /* the last W ids of the history; 0: off (S-4) */
  uint32_t min_new;       /* EOS masked while fewer were generated (S-3) */
  const uint32_t *eos;    /* EOS token set (S-3), strictly ascending */
  size_t n_eos;
  const uint32_t *ban;    /* permanently banned ids (S-2), strictly ascending */
  size_t n_ban;
  /* The tokenizer's defined id count: ids >= defined_ids (rows that only
   * pad the embedding, e.g. Qwen3's 151669..151935) are banned (S-2, the
   * padded-vocabulary policy; a declared deviation from the reference). */
  uint32_t defined_ids;
  /* OpenAI's penalties (S-4b): z -= c*frequency + (c > 0)*presence, c the
   * id's count among the turn's generated tokens. [-2, 2]; 0: off. */
  double frequency_penalty;
  double presence_penalty;
  /* Logit biases (S-4a): bias[i] added to id bias_ids[i]'s logit; exactly
   * -100 bans the id (S-2). Ids strictly ascending, values in [-100, 100]. */
  const uint32_t *bias_ids;
  const double *bias;
  size_t n_bias;
} tl_sampler_profile;

/* A profile with every filter off: temperature 1, top_k 0, top_p 1,
 * min_p 0, penalty 1, window 0, min_new 0, no EOS, no bans, penalties 0,
 * no biases. */
tl_sampler_profile tl_sampler_profile_default(uint32_t defined_ids);

/* Why a step (or a profile) was rejected; with the status, it says which
 * input was wrong. fault_index is the position named below. */
#define TL_SAMPLE_FAULT_LIST(X)                                              \
  X(TL_SAMPLE_FAULT_NONE, "none")                                            \
  X(TL_SAMPLE_FAULT_PROFILE, "profile")       /* index: tl_sampler_field */  \
  X(TL_SAMPLE_FAULT_VOCAB, "vocab")           /* n or defined_ids */         \
  X(TL_SAMPLE_FAULT_HISTORY, "history")       /* index into the history */   \
  X(TL_SAMPLE_FAULT_NON_FINITE, "non_finite") /* index of the logit */       \
  X(TL_SAMPLE_FAULT_ALL_MASKED, "all_masked")                                \
  X(TL_SAMPLE_FAULT_SCRATCH, "scratch")

typedef enum tl_sample_fault {
#define TL_SAMPLE_FAULT_ENUM_(name, text) name,
  TL_SAMPLE_FAULT_LIST(TL_SAMPLE_FAULT_ENUM_)
#undef TL_SAMPLE_FAULT_ENUM_
} tl_sample_fault;

const char *tl_sample_fault_name(tl_sample_fault fault);

/* The profile's fields, in identity order; a PROFILE fault's index. */
typedef enum tl_sampler_field {
  TL_SAMPLER_FIELD_TEMPERATURE,
  TL_SAMPLER_FIELD_TOP_K,
  TL_SAMPLER_FIELD_TOP_P,
  TL_SAMPLER_FIELD_MIN_P,
  TL_SAMPLER_FIELD_REPEAT_PENALTY,
  TL_SAMPLER_FIELD_REPEAT_WINDOW,
  TL_SAMPLER_FIELD_MIN_NEW,
  TL_SAMPLER_FIELD_EOS,
  TL_SAMPLER_FIELD_BAN,
  TL_SAMPLER_FIELD_DEFINED_IDS,
  /* Added later: after the first ten, so their indices stay put. */
  TL_SAMPLER_FIELD_FREQUENCY_PENALTY,
  TL_SAMPLER_FIELD_PRESENCE_PENALTY,
  TL_SAMPLER_FIELD_BIAS
} tl_sampler_field;

/* TL_OK, or TL_ERR_INVALID_ARGUMENT with *field (may be NULL) the first
 * field out of its range (the ranges in tl_sampler_profile). */
tl_status tl_sampler_profile_check(const tl_sampler_profile *p,
                                   tl_sampler_field *field);

/* The profile's identity, canonical text (docs/sampler.md §Identity): one
 * "key=value\n" line per field after a version line (the penalties and
 * biases only when not off, so older profiles keep their bytes), floats as 16 hex
 * digits of their binary64 bits (zero of either sign as +0), id lists as
 * decimal, comma-separated. Equal profiles give equal bytes. Writes at
 * most cap bytes (no terminator); *len is the full length, so a call with
 * cap 0 sizes the buffer. TL_ERR_BOUNDS when it does not fit;
 * TL_ERR_INVALID_ARGUMENT for a profile that fails the check. */
tl_status tl_sampler_profile_text(const tl_sampler_profile *p, char *buf,
                                  size_t cap, size_t *len);

/* The same fields as one deterministic CBOR map (text keys; floats as the
 * uint of their binary64 bits, docs/architecture.md §8), put into w as one item. The
 * writer needs its scratch arena (a map of many pairs). */
tl_status tl_sampler_profile_cbor(const tl_sampler_profile *p,
                                  tl_cbor_writer *w);

/* One step's input besides the profile. */
typedef struct tl_sample_input {
  const float *logits; /* n values, one per vocabulary row */
  size_t n;            /* 1 <= n <= 2^32 - 1, defined_ids <= n */
  /* Token ids before this step, oldest first (prompt and generated, as the
   * caller declares); the penalty window is its last repeat_window ids.
   * Every id must be < n. May be NULL when n_history is 0. Its last
   * min(n_generated, n_history) ids are the turn's generated tokens, the
   * ones frequency and presence penalties count (S-4b). */
  const uint32_t *history;
  size_t n_history;
  uint32_t n_generated; /* tokens generated so far in this turn (S-3) */
  tl_draw_pos pos;      /* where the step's draw comes from (S-11) */
  /* The step's allow mask (S-2a): id is a candidate only if bit id % 64 of
   * allow[id / 64] is set (ceil(n / 64) words; bits past n are ignored).
   * A grammar's token mask, EOS included where the grammar accepts.
   * NULL: every id. Not part of the profile: it changes per step. */
  const uint64_t *allow;
} tl_sample_input;

/* An optional record of the filtering (S-13). The caller owns the buffers;
 * any may be NULL, and at most cap entries are written to each. */
typedef struct tl_sample_trace {
  uint32_t *ids;  /* survivors of steps 2..9, in candidate order */
  double *probs;  /* their final (renormalised) probabilities */
  double *bounds; /* their cumulative bounds (running sum of probs) */
  size_t cap;
  size_t count;   /* survivors (all of them, even past cap) */
  bool truncated; /* count > cap */
  uint32_t draw_word;
  double draw;
  uint32_t chosen;
} tl_sample_trace;

typedef struct tl_sample_result {
  uint32_t id;          /* the emitted token */
  uint32_t draw_word;   /* Philox output word 0 at input.pos */
  double draw;          /* draw_word * 2^-32 */
  uint32_t draws_used;  /* 1 on success, 0 on failure (S-12) */
  size_t n_candidates;  /* ids left after steps 2-3 */
  size_t n_survivors;   /* ids left after step 9 */
  tl_sample_fault fault;
  size_t fault_index;
} tl_sample_result;

/* Scratch bytes tl_sample needs for a vocabulary of n (an upper bound,
 * alignment included); SIZE_MAX when that overflows. */
size_t tl_sampler_scratch_bytes(size_t n);

/* One step (S-1..S-12). On TL_OK res->id is the token and the trace (if
 * any) is filled. Errors (res->fault says which input):
 *   TL_ERR_INVALID_ARGUMENT   a NULL pointer, a profile out of range
 *                             (PROFILE), n == 0, n >= 2^32 or
 *                             defined_ids > n (VOCAB), a history id >= n
 *                             (HISTORY), every id masked by bans, the
 *                             allow mask or min_new (ALL_MASKED)
 *   TL_ERR_NUMERICAL_FAILURE  a NaN or infinite logit (NON_FINITE, index
 *                             of the first)
 *   TL_ERR_OUT_OF_MEMORY      the scratch arena is too small (SCRATCH)
 * The scratch arena is rewound to where it was, also on failure. */
tl_status tl_sample(const tl_sampler_profile *p, const tl_sample_input *in,
                    tl_arena *scratch, tl_sample_trace *trace,
                    tl_sample_result *res);

/* tl_sample with the draw word given instead of computed from in->pos
 * (in->pos is ignored): for tests that derive outcomes by hand and for
 * replaying a recorded draw. */
tl_status tl_sample_with_draw(const tl_sampler_profile *p,
                              const tl_sample_input *in, uint32_t draw_word,
                              tl_arena *scratch, tl_sample_trace *trace,
                              tl_sample_result *res);

#endif
