/* A claim's result (promote.h): begun from the plan's claim with one
 * outcome per case, objects added as the runner stores them, freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promote.h"
#include "promote_plan.h"
#include "verify.h"

tl_status tl_claim_result_begin(tl_claim_ctx *c, tl_claim_result *out, const json_t **cases) {
  const char *name = json_string_value(json_object_get(c->claim, "name"));
  memset(out, 0, sizeof *out);
  *cases = json_object_get(c->claim, "cases");
  out->n_cases = json_array_size(*cases);
  if (out->n_cases == 0) {
    snprintf(c->err, c->err_cap, "claim %s: no cases", name ? name : "?");
    return TL_ERR_INVALID_ARGUMENT;
  }
  out->cases = calloc(out->n_cases, sizeof *out->cases);
  if (out->cases == NULL) {
    snprintf(c->err, c->err_cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  out->pass = true;
  for (size_t i = 0; i < out->n_cases; i++)
    if (!tl_hex32_parse(json_string_value(json_object_get(json_array_get(*cases, i), "id")),
                        out->cases[i].id)) {
      snprintf(c->err, c->err_cap, "claim %s: cases[%zu].id is not 64 hex digits",
               name ? name : "?", i);
      tl_claim_result_free(out);
      return TL_ERR_INVALID_ARGUMENT;
    }
  return TL_OK;
}

tl_status tl_claim_result_support(tl_claim_result *r, const uint8_t id[32]) {
  uint8_t(*grown)[32];
  for (size_t i = 0; i < r->n_support; i++)
    if (memcmp(r->support[i], id, 32) == 0) return TL_OK;
  grown = realloc(r->support, (r->n_support + 1) * sizeof *grown);
  if (grown == NULL) return TL_ERR_OUT_OF_MEMORY;
  r->support = grown;
  memcpy(r->support[r->n_support++], id, 32);
  return TL_OK;
}

void tl_claim_result_free(tl_claim_result *r) {
  free(r->cases);
  free(r->support);
  memset(r, 0, sizeof *r);
}

tl_status tl_claim_api_fail(tl_claim_ctx *c, uint32_t handle, tl_status st, const char *what) {
  tl_error e;
  tl_error_detail(handle, &e);
  snprintf(c->err, c->err_cap, "%s: %s (%.300s)", what, tl_status_name(st), e.message);
  return st;
}

tl_status tl_claim_open_model(tl_claim_ctx *c, tl_model_handle *m) {
  tl_status st = tl_api_init(TL_ABI_VERSION);
  if (st == TL_OK) st = tl_model_open_file(c->slm_path, m);
  return st == TL_OK ? TL_OK : tl_claim_api_fail(c, TL_NO_HANDLE, st, c->slm_path);
}

const char *tl_claim_profile(const char *kind, const char *level, const char *tolerance,
                             const char *lane) {
  if (strcmp(level, "numerical") != 0) return NULL;
  if (tolerance != NULL) return tolerance;
  if (strcmp(kind, "replay") == 0) return TL_REPLAY_PROFILE;
  return tl_verify_lane_profile(strcmp(lane, "fast") == 0);
}

tl_status tl_claim_open_session(tl_claim_ctx *c, tl_model_handle m, const char *lane,
                                uint32_t context, tl_session_handle *s) {
  tl_session_options o = {0};
  tl_status st;
  o.lane = strcmp(lane, "fast") == 0 ? TL_LANE_FAST : TL_LANE_SCALAR;
  o.threads = c->threads;
  o.context = context;
  st = tl_session_new(m, &o, s);
  return st == TL_OK ? TL_OK : tl_claim_api_fail(c, m, st, "a session");
}
