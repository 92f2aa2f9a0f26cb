/* libFuzzer target for conformance plans (src/native/promote_plan.c), what
 * `tinylm promote PLAN` reads before anything runs. Any bytes give TL_OK
 * or a typed refusal with a message, never a crash or a leak. An accepted
 * plan has at least one claim, unique names, every claim's kind at its
 * own level with at least one case whose id recomputes from its content,
 * a design exactly on stochastic claims; written back (compact, sorted)
 * it reads again as the same claims and case ids under another plan id
 * only when the bytes differ. */
#define _POSIX_C_SOURCE 200809L /* cli.c: clock_gettime */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/cli.c"
#include "../../src/native/promote_plan.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static void check_accepted(const tl_plan *p) {
  CHECK(p->n_claims >= 1);
  CHECK(strcmp(p->lane, "scalar") == 0 || strcmp(p->lane, "fast") == 0);
  for (size_t i = 0; i < p->n_claims; i++) {
    const tl_plan_claim *c = &p->claims[i];
    const char *level = tl_plan_kind_level(c->kind);
    CHECK(level != NULL && strcmp(level, c->level) == 0);
    CHECK((c->design != NULL) == (strcmp(c->kind, "stochastic") == 0));
    CHECK(c->tolerance == NULL || strcmp(level, "numerical") == 0);
    CHECK(c->n_cases >= 1 && c->n_cases == json_array_size(c->cases));
    for (size_t j = 0; j < c->n_cases; j++) {
      uint8_t id[32];
      CHECK(tl_case_id(json_object_get(json_array_get(c->cases, j), "case"), id) == TL_OK);
      CHECK(memcmp(id, c->case_ids[j], 32) == 0);
    }
    for (size_t j = 0; j < i; j++) CHECK(strcmp(p->claims[j].name, c->name) != 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_plan p, q;
  char err[512] = "";
  tl_status st = tl_plan_parse(data, size, &p, err, sizeof err);
  if (st != TL_OK) {
    CHECK(st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_HASH_MISMATCH ||
          st == TL_ERR_OUT_OF_MEMORY);
    CHECK(err[0] != '\0');
    return 0;
  }
  check_accepted(&p);
  {
    char *text = json_dumps(p.root, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(text != NULL);
    CHECK(tl_plan_parse((const uint8_t *)text, strlen(text), &q, err, sizeof err) == TL_OK);
    CHECK(q.n_claims == p.n_claims);
    for (size_t i = 0; i < p.n_claims; i++) {
      CHECK(strcmp(q.claims[i].name, p.claims[i].name) == 0);
      CHECK(q.claims[i].n_cases == p.claims[i].n_cases);
      CHECK(memcmp(q.claims[i].case_ids, p.claims[i].case_ids, 32 * p.claims[i].n_cases) == 0);
    }
    CHECK((memcmp(q.id, p.id, 32) == 0) == (size == strlen(text) && memcmp(data, text, size) == 0));
    tl_plan_free(&q);
    free(text);
  }
  tl_plan_free(&p);
  return 0;
}
