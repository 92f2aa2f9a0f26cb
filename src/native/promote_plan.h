/* Conformance plans (`tinylm.plan/1`, docs/promotion.md §The plan): the
 * strict reader every promote command uses, and the writer of plan init.
 * A plan is data: the reader refuses any field outside the schema, any
 * case whose content id does not recompute and any floating-point number
 * inside a case, so what a receipt names by id is exactly what ran. */
#ifndef TL_NATIVE_PROMOTE_PLAN_H
#define TL_NATIVE_PROMOTE_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_PLAN_FORMAT "tinylm.plan/1"

typedef struct tl_plan_claim {
  const char *name, *kind, *level, *oracle;
  const char *tolerance; /* NULL: the lane's own profile / not numerical */
  const json_t *design;  /* stochastic only, else NULL */
  const json_t *json;    /* the whole claim object */
  const json_t *cases;   /* array of {"id", "case"} */
  size_t n_cases;
  uint8_t (*case_ids)[32];
  uint8_t design_sha256[32]; /* of the design's canonical JSON (stochastic) */
} tl_plan_claim;

/* The benchmark step's points (docs/promotion.md §Benchmark): one tinylm
 * bench run per prompt length, ascending. */
#define TL_PLAN_BENCH_MAX_LENGTHS 12
#define TL_PLAN_BENCH_MAX_LENGTHS_TEXT "12"
typedef struct tl_plan_benchmark {
  uint32_t prompt_tokens[TL_PLAN_BENCH_MAX_LENGTHS];
  size_t n_prompts;
  uint32_t decode_tokens, repetitions;
} tl_plan_benchmark;

typedef struct tl_plan {
  json_t *root;
  uint8_t id[32]; /* SHA-256 of the plan's bytes */
  uint8_t artifact_id[32];
  const char *artifact_path;
  bool has_acquisition;
  uint8_t acquisition[32];
  const char *lane;
  tl_plan_claim *claims;
  size_t n_claims;
  bool has_benchmark; /* "benchmark" present and not null */
  tl_plan_benchmark benchmark;
  const uint8_t *bytes; /* the plan as read (malloc'd) */
  size_t len;
} tl_plan;

/* Reads and checks a plan: TL_ERR_INVALID_ARGUMENT (schema, err naming the
 * field: "claims[2].cases[5].case: a floating-point number"),
 * TL_ERR_HASH_MISMATCH (a case id); not JSON is TL_ERR_INVALID_ARGUMENT too. Copies bytes (the
 * plan keeps its own copy). */
tl_status tl_plan_parse(const uint8_t *bytes, size_t len, tl_plan *p, char *err,
                        size_t err_cap);
void tl_plan_free(tl_plan *p);

/* The canonical bytes ids are computed over (malloc'd text). */
char *tl_plan_canonical(const json_t *v);

/* Claim kinds, their level, and whether they run inference. */
const char *tl_plan_kind_level(const char *kind); /* NULL: unknown kind */

/* A case object {"id": HEX(case id), "case": c} (c is stolen); NULL when
 * out of memory. */
json_t *tl_plan_case(json_t *c);

/* 64 lower-case hex digits (exactly) into 32 bytes. */
bool tl_hex32_parse(const char *s, uint8_t out[32]);

#endif
