/* tinylm promote (docs/promotion.md): what the plan reader, the claim
 * kinds, the evidence store and the receipts share. Each claim kind has
 * two halves: its runner OBSERVES (runs one claim of the plan on the
 * artifact and lane and puts the raw outputs into the store as one
 * observation object), its judge JUDGES (from the plan's claim and the
 * stored observation alone: the verdict, the stop rule and each case's
 * pass). promote judges right after observing, and every reader (promote
 * show, report, promote status) judges again, with the same function;
 * cmd_promote turns a verdict into the claim's comparison receipt and all
 * claims into the promotion receipt. */
#ifndef TL_NATIVE_PROMOTE_H
#define TL_NATIVE_PROMOTE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "promote_stats.h"
#include "promote_store.h"
#include "receipt.h"
#include "sampler_replay.h"
#include "session.h"
#include "tinylm.h"

/* Stop rules, by the names receipts carry (docs/promotion.md §Stop rules). */
#define TL_RULE_SOURCE_CONFLICT "unresolved_source_conflict"
#define TL_RULE_UNKNOWN_FIELD "unknown_behaviour_field"
#define TL_RULE_UNCONSUMED_TENSOR "unconsumed_tensor"
#define TL_RULE_PACK_MISMATCH "pack_mismatch"
#define TL_RULE_NON_FINITE "non_finite_value"
#define TL_RULE_TOLERANCE "tolerance_breach"
#define TL_RULE_MECHANICAL "mechanical_mismatch"
#define TL_RULE_SAMPLER_TIE "unstable_sampler_tie"
#define TL_RULE_MISSING_OUTPUT "missing_raw_output"
#define TL_RULE_READER "independent_reader_failed"
#define TL_RULE_STOCHASTIC "stochastic_difference"
#define TL_RULE_REPLAY "sampler_replay_mismatch"
#define TL_RULE_DEGENERATE "degenerate_design"
#define TL_RULE_FORGED "forged_evidence"
#define TL_RULE_REQUANT "requantization_mismatch"

/* One case's outcome: what the comparison receipt and the public view
 * show of it. */
typedef struct tl_case_outcome {
  uint8_t id[32];        /* the case's content id (from the plan) */
  const char *invariant; /* static text: "ids", "rendered_bytes", ... */
  bool pass;
  uint8_t output[32]; /* SHA-256 of the case's raw output bytes */
} tl_case_outcome;

/* A claim's verdict. Runners fill it; tl_claim_result_free releases it. */
typedef struct tl_claim_result {
  bool pass;
  const char *stop_rule;       /* one of TL_RULE_*, NULL when it passed */
  char first_divergence[1024]; /* "" when it passed; may hold case text */
  char summary[512];           /* one line, no case text: "815 of 815 cases" */
  tl_case_outcome *cases;      /* malloc'd, n_cases */
  size_t n_cases;
  uint8_t observation[32]; /* the store object holding the raw outputs */
  bool has_observation;
  /* Other store objects the observation names (captures, goldens, logits),
   * listed after it in the comparison receipt so that everything the
   * verdict rests on is checked for presence (malloc'd, n_support). */
  uint8_t (*support)[32];
  size_t n_support;
} tl_claim_result;

/* What a runner or judge gets. For a runner the session is open on the
 * plan's artifact and lane; a runner that needs a second lane or a fresh
 * cache opens its own from `slm_path`. A reader's judge gets no session:
 * slm_path is the stored plan's artifact path, and a judge that reads the
 * artifact's weights (replay) opens it there and refuses a file whose
 * SHA-256 is not artifact_id (hash_mismatch; not_found when it is gone). */
typedef struct tl_claim_ctx {
  tl_store *store;
  tl_session *session;
  const char *slm_path;
  const char *lane;  /* "scalar" or "fast" */
  uint32_t threads;  /* fast lane */
  const json_t *claim; /* the plan's claim object (name, kind, cases, ...) */
  const char *plan_dir; /* relative paths in cases are relative to it */
  char *err;            /* infrastructure errors (a non-TL_OK return) */
  size_t err_cap;
  /* A reader's judge: the objects a judge derives (the numerical claims'
   * judgements) are named by their SHA-256, never written. */
  bool reading;
  const uint8_t *artifact_id; /* 32 bytes: the plan's artifact.id */
  bool progress; /* case n of N and an ETA on stderr (a terminal, or --progress) */
} tl_claim_ctx;

/* promote_result.c. begin: *out zeroed and passing, one outcome per case
 * of the claim with its id, *cases the plan's case array (an infrastructure
 * error with c->err set when the claim has none or an id is not hex);
 * support: adds an object the observation names (once); free: releases. */
tl_status tl_claim_result_begin(tl_claim_ctx *c, tl_claim_result *out, const json_t **cases);
tl_status tl_claim_result_support(tl_claim_result *r, const uint8_t id[32]);
/* The claims that generate through the public API (promote_sequences.c,
 * promote_stochastic.c): api_fail puts what failed, its status and the
 * handle's error detail into c->err and returns st; open_model opens
 * c->slm_path as a model handle. */
tl_status tl_claim_api_fail(tl_claim_ctx *c, uint32_t handle, tl_status st, const char *what);
tl_status tl_claim_open_model(tl_claim_ctx *c, tl_model_handle *m);
/* A session of m on lane ("scalar"/"fast") with c's threads and context
 * tokens (0: the API's default). */
tl_status tl_claim_open_session(tl_claim_ctx *c, tl_model_handle m, const char *lane,
                                uint32_t context, tl_session_handle *s);
/* The tolerance profile a claim is judged by: none outside the numerical
 * level; else the plan's, or when it names none the replay's own
 * (TL_REPLAY_PROFILE) or the lane's (tl_verify_lane_profile). */
const char *tl_claim_profile(const char *kind, const char *level, const char *tolerance,
                             const char *lane);
void tl_claim_result_free(tl_claim_result *r);

/* A runner (OBSERVE): TL_OK with out->observation naming the stored raw
 * outputs (nothing else of *out is read; tl_claim_result_free releases
 * it), or an infrastructure failure (I/O, memory) that the caller retries
 * once. */
typedef tl_status (*tl_claim_runner)(tl_claim_ctx *c, tl_claim_result *out);

/* A judge (JUDGE): pure, from the plan's claim (c->claim, c->lane) and the
 * observation object (with the objects it names) in c->store: *out begun
 * from the claim's cases and filled (verdict, stop rule, first
 * divergence, summary, each case's invariant, pass and output hash, the
 * observation and the objects it rests on, in the order the comparison
 * receipt lists them). Never runs the model. A stored object that is gone
 * or damaged is the store's status (not_found, hash_mismatch); an
 * observation that does not fit the claim's cases is invalid_argument;
 * c->err says why. */
typedef tl_status (*tl_claim_judge)(tl_claim_ctx *c, const uint8_t observation[32],
                                    tl_claim_result *out);

/* One claim kind (promote_kinds.c, from TL_CLAIM_KINDS in receipt.h). */
typedef struct tl_claim_kind {
  const char *kind, *level;
  tl_claim_runner run;
  tl_claim_judge judge;
} tl_claim_kind;

/* The kind of that name, or NULL. */
const tl_claim_kind *tl_claim_kind_find(const char *kind);

/* The runners and judges: promote_mechanical.c, promote_numeric.c,
 * promote_sequences.c. */
#define TL_CLAIM_DECLARE(kind, level)                                          \
  tl_status tl_claim_##kind(tl_claim_ctx *c, tl_claim_result *out);            \
  tl_status tl_judge_##kind(tl_claim_ctx *c, const uint8_t observation[32],    \
                            tl_claim_result *out);
TL_CLAIM_KINDS(TL_CLAIM_DECLARE)
#undef TL_CLAIM_DECLARE

/* What promote does with a claim: k's runner, then k's judge on the
 * observation it stored (*out: the judge's; the runner's status when it
 * failed). */
tl_status tl_claim_observe_judge(const tl_claim_kind *k, tl_claim_ctx *c, tl_claim_result *out);

/* Judges a claim's comparison receipt again (promote show, report,
 * promote status): the judge of its kind on its first observation under
 * the plan stored in the store as plan_id, compared with what the receipt
 * says (verdict, stop rule, each case's id, pass and output, the objects
 * it names). TL_OK when they agree; else the status, with *rule
 * TL_RULE_FORGED (they differ, or the observation cannot be judged) or
 * TL_RULE_MISSING_OUTPUT (an object is gone or damaged) and err saying
 * why. cmp is the receipt as JSON (tl_cbor_to_json). */
tl_status tl_claim_rejudge(tl_store *store, const json_t *cmp, const char **rule, char *err,
                           size_t err_cap);

/* A stochastic claim's design (tinylm.stochastic/2, docs/promotion.md
 * §Stochastic comparison), checked by tl_stoch_design_parse
 * (promote_stochastic.c): lane a is the plan's, b the other native lane;
 * seed_i = base + i for i < count, sampled under every configuration. */
#define TL_STOCH_FORMAT "tinylm.stochastic/2"
#define TL_STOCH_MAX_CONFIGS 8
typedef struct tl_stoch_design {
  const char *a, *b;
  uint64_t base;
  uint32_t count, max_new;
  size_t n_configs;
  tl_replay_cfg configs[TL_STOCH_MAX_CONFIGS];
  const char *config_names[TL_STOCH_MAX_CONFIGS];
  uint32_t trajectories; /* per prompt, teacher-forced on lane b */
  double min_tvd;        /* the largest post-sampler TVD allowed per step */
  double mass;           /* a stored top view leaves out at most this mass */
  uint32_t min_varied;   /* non-degenerate prompts each configuration needs */
} tl_stoch_design;
tl_status tl_stoch_design_parse(const json_t *d, const char *lane, tl_stoch_design *o, char *err,
                                size_t err_cap);

/* plan init's stochastic claim (promote_stochastic.c): the prompts of the
 * shipped pool (tests/promote/stochastic_prompts.json under root) where
 * the artifact's next-token entropy is highest on the lane, and the
 * default design; note says what was chosen. */
tl_status tl_plan_stochastic_claim(const char *slm_path, const char *lane, const char *root,
                                   json_t *claims, char *note, size_t note_cap, char *err,
                                   size_t err_cap);

/* The replay claim's profile (docs/tolerance.md), the one its judge
 * applies; plan init names it in the claim. */
#define TL_REPLAY_PROFILE "replay-f32/1"

/* promote_replay.c: plan init's replay case: `tokens` ids of the
 * project's prose encoded by the artifact's tokenizer. */
tl_status tl_plan_replay_case(const tl_native_model *m, uint32_t tokens, json_t **out, char *err,
                              size_t err_cap);
/* The first `tokens` ids of the project's prose (natural text, so that
 * attention is as peaked as in use) by the artifact's tokenizer
 * (malloc'd). */
tl_status tl_plan_prose_ids(const tl_native_model *m, uint32_t tokens, uint32_t **out,
                            char *err, size_t err_cap);

/* promote_oracle.c: plan init's forward golden from the NumPy float64
 * oracle (tools/oracle/qwen3_ref.py, found under root) on the artifact's
 * own weights with source's config, written to out: a prompt of the
 * project's prose and its greedy continuation. *made false (note says
 * why) when the oracle cannot run here and it was not required. */
tl_status tl_plan_numpy_golden(const tl_native_model *m, const char *root, const char *source,
                               const char *slm_path, const char *out, bool required, bool *made,
                               char *note, size_t note_cap, char *err, size_t err_cap);

/* The build that runs, as promotion receipts, the run record and the
 * benchmark object name it: "sha256:" and the SHA-256 of the running
 * executable's bytes (/proc/self/exe), computed once per process; NULL
 * (err says why) when the executable cannot be read. */
const char *tl_promote_build_id(char *err, size_t err_cap);
/* The git description baked in at build time (git describe --dirty, as
 * run receipts name the build), kept beside it for people. */
const char *tl_promote_build_describe(void);

/* The content id of a case: SHA-256 of json_dumps(case, JSON_COMPACT |
 * JSON_SORT_KEYS | JSON_ENCODE_ANY). */
tl_status tl_case_id(const json_t *c, uint8_t id[32]);

/* plan init's case sets (promote_mechanical.c): append to `claims` the
 * claims of each kind the artifact qualifies for, each case with its
 * content id; `root` is the project's directory (shipped case files are
 * found from the executable's location). A kind the artifact does not
 * qualify for is left out and *why (static text) says why, for plan
 * init's report. */
tl_status tl_plan_mechanical_claims(const tl_native_model *m, const char *root,
                                    const char *reader_json, json_t *claims,
                                    char *err, size_t err_cap);

#endif
