#include "promote_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hash/sha256.h"
#include "promote.h"
#include "receipt.h"
#include "utf8.h"

const char *tl_plan_kind_level(const char *kind) {
#define KIND_LEVEL(k, level) {#k, #level},
  static const struct {
    const char *kind, *level;
  } kinds[] = {TL_CLAIM_KINDS(KIND_LEVEL)};
#undef KIND_LEVEL
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].kind, kind) == 0) return kinds[i].level;
  return NULL;
}

char *tl_plan_canonical(const json_t *v) {
  return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

tl_status tl_case_id(const json_t *c, uint8_t id[32]) {
  char *text = tl_plan_canonical(c);
  tl_status st;
  if (text == NULL) return TL_ERR_OUT_OF_MEMORY;
  st = tl_sha256(text, strlen(text), id);
  free(text);
  return st;
}

json_t *tl_plan_case(json_t *c) {
  uint8_t id[32];
  char hex[65];
  if (c == NULL || tl_case_id(c, id) != TL_OK) {
    json_decref(c);
    return NULL;
  }
  tl_hex_encode(id, 32, hex);
  return json_pack("{s:s, s:o}", "id", hex, "case", c);
}

bool tl_hex32_parse(const char *s, uint8_t out[32]) {
  if (s == NULL || strlen(s) != 64) return false;
  for (size_t i = 0; i < 64; i++) {
    char ch = s[i];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return false;
    if (i % 2 == 0) out[i / 2] = (uint8_t)(d << 4);
    else out[i / 2] |= (uint8_t)d;
  }
  return true;
}

/* ------------------------------------------------------------------------ */

typedef struct checker {
  char *err;
  size_t cap;
} checker;

static tl_status bad(checker *c, const char *path, const char *what) {
  snprintf(c->err, c->cap, "plan: %s: %s", path, what);
  return TL_ERR_INVALID_ARGUMENT;
}

/* Only these keys; the first n_required of them required. */
static tl_status only_keys(checker *c, const json_t *o, const char *path,
                           const char *const *keys, size_t n, size_t n_required) {
  const char *k;
  json_t *v;
  if (!json_is_object(o)) return bad(c, path, "not an object");
  json_object_foreach((json_t *)o, k, v) {
    size_t i = 0;
    while (i < n && strcmp(keys[i], k) != 0) i++;
    if (i == n) {
      char what[160];
      snprintf(what, sizeof what, "unknown field '%.100s'", k);
      return bad(c, path, what);
    }
  }
  for (size_t i = 0; i < n_required; i++)
    if (json_object_get(o, keys[i]) == NULL) {
      char what[160];
      snprintf(what, sizeof what, "missing field '%s'", keys[i]);
      return bad(c, path, what);
    }
  return TL_OK;
}

/* Text that is valid UTF-8 without U+0000 (jansson allows both). */
static bool is_text(const json_t *v) {
  return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
         tl_utf8_validate((const uint8_t *)json_string_value(v), json_string_length(v), NULL) ==
             TL_OK;
}

static tl_status text_field(checker *c, const json_t *o, const char *key, const char *path,
                            bool nullable, const char **out) {
  const json_t *v = json_object_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s.%s", path, key);
  if (nullable && json_is_null(v)) {
    *out = NULL;
    return TL_OK;
  }
  if (!is_text(v) || json_string_length(v) == 0)
    return bad(c, where, nullable ? "not text or null" : "not non-empty text");
  *out = json_string_value(v);
  return TL_OK;
}

/* No floating-point number anywhere in a case (ids are over exact JSON)
 * and no text that is not UTF-8 or holds U+0000. */
static tl_status exact_value(checker *c, const json_t *v, const char *path, int depth) {
  if (depth > 64) return bad(c, path, "nested deeper than 64");
  if (json_is_real(v)) return bad(c, path, "a floating-point number (write it as text or bits)");
  if (json_is_string(v) && !is_text(v))
    return bad(c, path, "text that is not UTF-8 or holds U+0000");
  if (json_is_array(v)) {
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
      char where[256];
      snprintf(where, sizeof where, "%.200s[%zu]", path, i);
      tl_status st = exact_value(c, e, where, depth + 1);
      if (st != TL_OK) return st;
    }
  } else if (json_is_object(v)) {
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e) {
      char where[256];
      snprintf(where, sizeof where, "%.150s.%.80s", path, k);
      tl_status st = exact_value(c, e, where, depth + 1);
      if (st != TL_OK) return st;
    }
  }
  return TL_OK;
}

static tl_status check_claim(checker *c, json_t *o, size_t ci, tl_plan_claim *cl) {
  static const char *const keys[] = {"name", "kind", "level", "oracle", "tolerance", "design",
                                     "cases"};
  char path[64];
  const char *level;
  const json_t *design, *cases;
  tl_status st;
  snprintf(path, sizeof path, "claims[%zu]", ci);
  if ((st = only_keys(c, o, path, keys, 7, 7)) != TL_OK) return st;
  if ((st = text_field(c, o, "name", path, false, &cl->name)) != TL_OK ||
      (st = text_field(c, o, "kind", path, false, &cl->kind)) != TL_OK ||
      (st = text_field(c, o, "level", path, false, &cl->level)) != TL_OK ||
      (st = text_field(c, o, "oracle", path, false, &cl->oracle)) != TL_OK ||
      (st = text_field(c, o, "tolerance", path, true, &cl->tolerance)) != TL_OK)
    return st;
  for (const char *p = cl->name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
      return bad(c, path, "name: only a-z, 0-9, '_' and '-'");
  level = tl_plan_kind_level(cl->kind);
  if (level == NULL) return bad(c, path, "kind: not one of docs/promotion.md's claim kinds");
  if (strcmp(level, cl->level) != 0) {
    char what[128];
    snprintf(what, sizeof what, "level: the kind %s is %s", cl->kind, level);
    return bad(c, path, what);
  }
  if (cl->tolerance != NULL && strcmp(level, "numerical") != 0)
    return bad(c, path, "tolerance: only numerical claims have one");
  design = json_object_get(o, "design");
  if (strcmp(cl->kind, "stochastic") == 0) {
    char where[96];
    snprintf(where, sizeof where, "%s.design", path);
    if (!json_is_object(design)) return bad(c, where, "a stochastic claim needs its design object");
    cl->design = design;
    /* the design may hold reals (a confidence level): hashed as written */
    char *text = tl_plan_canonical(design);
    if (text == NULL) return TL_ERR_OUT_OF_MEMORY;
    st = tl_sha256(text, strlen(text), cl->design_sha256);
    free(text);
    if (st != TL_OK) return st;
  } else if (!json_is_null(design)) {
    return bad(c, path, "design: only a stochastic claim has one (null)");
  }
  cases = json_object_get(o, "cases");
  if (!json_is_array(cases) || json_array_size(cases) == 0)
    return bad(c, path, "cases: not a non-empty array");
  cl->json = o;
  cl->cases = cases;
  cl->n_cases = json_array_size(cases);
  cl->case_ids = calloc(cl->n_cases, 32);
  if (cl->case_ids == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < cl->n_cases; i++) {
    static const char *const case_keys[] = {"id", "case"};
    const json_t *e = json_array_get(cases, i), *body;
    char where[128];
    uint8_t want[32];
    snprintf(where, sizeof where, "%s.cases[%zu]", path, i);
    if ((st = only_keys(c, e, where, case_keys, 2, 2)) != TL_OK) return st;
    if (!tl_hex32_parse(json_string_value(json_object_get(e, "id")), cl->case_ids[i]))
      return bad(c, where, "id: not 64 lower-case hex digits");
    body = json_object_get(e, "case");
    if (!json_is_object(body)) return bad(c, where, "case: not an object");
    snprintf(where, sizeof where, "%s.cases[%zu].case", path, i);
    if ((st = exact_value(c, body, where, 0)) != TL_OK) return st;
    if ((st = tl_case_id(body, want)) != TL_OK) return st;
    if (memcmp(want, cl->case_ids[i], 32) != 0) {
      snprintf(c->err, c->cap,
               "plan: %s.cases[%zu]: the case's content does not hash to its id "
               "(the case or its id was changed after the plan was written)",
               path, i);
      return TL_ERR_HASH_MISMATCH;
    }
    for (size_t j = 0; j < i; j++)
      if (memcmp(cl->case_ids[j], cl->case_ids[i], 32) == 0)
        return bad(c, where, "the same case twice in one claim");
  }
  return TL_OK;
}

/* An integer in [lo, hi]. */
static tl_status int_field(checker *c, const json_t *v, const char *path, uint32_t lo,
                           uint32_t hi, uint32_t *out) {
  char what[96];
  if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
    *out = (uint32_t)json_integer_value(v);
    return TL_OK;
  }
  snprintf(what, sizeof what, "not an integer in [%u, %u]", lo, hi);
  return bad(c, path, what);
}

/* The benchmark step (docs/promotion.md §Benchmark): absent or null is
 * none. The ranges are tinylm bench's (-p, -n, -r). */
static tl_status check_benchmark(checker *c, const json_t *b, tl_plan *p) {
  static const char *const keys[] = {"prompt_tokens", "decode_tokens", "repetitions"};
  const json_t *lengths;
  tl_status st;
  if (b == NULL || json_is_null(b)) return TL_OK;
  if ((st = only_keys(c, b, "benchmark", keys, 3, 3)) != TL_OK) return st;
  lengths = json_object_get(b, "prompt_tokens");
  if (!json_is_array(lengths) || json_array_size(lengths) == 0 ||
      json_array_size(lengths) > TL_PLAN_BENCH_MAX_LENGTHS)
    return bad(c, "benchmark.prompt_tokens",
               "not an array of 1 to " TL_PLAN_BENCH_MAX_LENGTHS_TEXT " lengths");
  p->benchmark.n_prompts = json_array_size(lengths);
  for (size_t i = 0; i < p->benchmark.n_prompts; i++) {
    char where[64];
    uint32_t *len = &p->benchmark.prompt_tokens[i];
    snprintf(where, sizeof where, "benchmark.prompt_tokens[%zu]", i);
    if ((st = int_field(c, json_array_get(lengths, i), where, 1, 1u << 20, len)) != TL_OK)
      return st;
    if (i > 0 && *len <= len[-1]) return bad(c, where, "not greater than the length before it");
  }
  if ((st = int_field(c, json_object_get(b, "decode_tokens"), "benchmark.decode_tokens", 1,
                      4096, &p->benchmark.decode_tokens)) != TL_OK ||
      (st = int_field(c, json_object_get(b, "repetitions"), "benchmark.repetitions", 1, 15,
                      &p->benchmark.repetitions)) != TL_OK)
    return st;
  p->has_benchmark = true;
  return TL_OK;
}

static tl_status check_plan(checker *c, tl_plan *p) {
  static const char *const keys[] = {"format", "artifact", "lane", "claims", "benchmark"};
  static const char *const art_keys[] = {"id", "path", "acquisition_receipt"};
  const json_t *art, *claims, *v;
  tl_status st;
  if ((st = only_keys(c, p->root, "plan", keys, 5, 4)) != TL_OK) return st;
  v = json_object_get(p->root, "format");
  if (!json_is_string(v) || strcmp(json_string_value(v), TL_PLAN_FORMAT) != 0)
    return bad(c, "format", "not " TL_PLAN_FORMAT);
  art = json_object_get(p->root, "artifact");
  if ((st = only_keys(c, art, "artifact", art_keys, 3, 3)) != TL_OK) return st;
  if (!tl_hex32_parse(json_string_value(json_object_get(art, "id")), p->artifact_id))
    return bad(c, "artifact.id", "not 64 lower-case hex digits");
  if ((st = text_field(c, art, "path", "artifact", false, &p->artifact_path)) != TL_OK) return st;
  v = json_object_get(art, "acquisition_receipt");
  p->has_acquisition = !json_is_null(v);
  if (p->has_acquisition && !tl_hex32_parse(json_string_value(v), p->acquisition))
    return bad(c, "artifact.acquisition_receipt", "not 64 lower-case hex digits or null");
  if ((st = text_field(c, p->root, "lane", "plan", false, &p->lane)) != TL_OK) return st;
  if (strcmp(p->lane, "scalar") != 0 && strcmp(p->lane, "fast") != 0)
    return bad(c, "lane", "not 'scalar' or 'fast'");
  if ((st = check_benchmark(c, json_object_get(p->root, "benchmark"), p)) != TL_OK) return st;
  claims = json_object_get(p->root, "claims");
  if (!json_is_array(claims) || json_array_size(claims) == 0)
    return bad(c, "claims", "not a non-empty array");
  p->n_claims = json_array_size(claims);
  p->claims = calloc(p->n_claims, sizeof *p->claims);
  if (p->claims == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < p->n_claims; i++) {
    if ((st = check_claim(c, json_array_get(claims, i), i, &p->claims[i])) != TL_OK) return st;
    for (size_t j = 0; j < i; j++)
      if (strcmp(p->claims[j].name, p->claims[i].name) == 0) {
        char path[64];
        snprintf(path, sizeof path, "claims[%zu].name", i);
        return bad(c, path, "the same name as an earlier claim");
      }
  }
  return TL_OK;
}

tl_status tl_plan_parse(const uint8_t *bytes, size_t len, tl_plan *p, char *err,
                        size_t err_cap) {
  checker c = {err, err_cap};
  json_error_t je;
  uint8_t *copy;
  tl_status st;
  memset(p, 0, sizeof *p);
  copy = malloc(len ? len : 1);
  if (copy == NULL) return TL_ERR_OUT_OF_MEMORY;
  memcpy(copy, bytes, len);
  p->bytes = copy;
  p->len = len;
  if ((st = tl_sha256(bytes, len, p->id)) != TL_OK) {
    tl_plan_free(p);
    return st;
  }
  /* Duplicate keys would let two readers see two plans under one id. */
  p->root = json_loadb((const char *)bytes, len, JSON_REJECT_DUPLICATES, &je);
  if (p->root == NULL) {
    snprintf(err, err_cap, "plan: not JSON: %s (line %d, column %d)", je.text, je.line,
             je.column);
    tl_plan_free(p);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = check_plan(&c, p)) != TL_OK) tl_plan_free(p);
  return st;
}

void tl_plan_free(tl_plan *p) {
  for (size_t i = 0; p->claims != NULL && i < p->n_claims; i++) free(p->claims[i].case_ids);
  free(p->claims);
  json_decref(p->root);
  free((void *)p->bytes);
  memset(p, 0, sizeof *p);
}
