/* libFuzzer target for receipt verification and display
 * (src/lib/receipt.c, receipt_show.c: tl_receipt_check and tl_receipt_show, the whole
 * of `tinylm receipt show` after the file is read). Two passes:
 *
 * 1. The input as a receipt file: the check returns a typed status
 *    (invalid_cbor, invalid_argument, hash_mismatch) with a message, or
 *    TL_OK; the display (text or JSON, as the last byte says) returns
 *    exactly the check's status, prints nothing when it fails and
 *    something when it passes.
 *
 * 2. The input (one in eight) as the facts of a run (seed, turn, position, ids,
 * raw bytes, stop strings, token limit, sampler values, section digests,
 *    timings): the receipt tl_run_receipt writes must verify, with its
 *    root, as a run receipt, and display.
 *
 * 3. The same inputs as the facts of a claim and of a promotion
 *    (tinylm promote, promote_receipt.c): each receipt is written and
 *    verifies with its root and displays, or the facts are ones the
 *    format cannot hold (a failed claim without a stop rule, a kind at
 *    another level, ...) and the writer says invalid_argument, writing
 *    nothing. The promotion's decision is the conjunction of its claims. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/promote_receipt.c"
#include "../../src/lib/receipt.c"
#include "../../src/native/receipt_show.c"
#include "../../src/host/cbor_alloc.c"
#include "../../src/tools/cbor_doc.c"
#include "../../src/tools/tool_msg.c"

/* A build id as promote writes it (the checker refuses any other form). */
#define FUZZ_BUILD "sha256:" "f0220f0220f0220f0220f0220f0220f0220f0220f0220f0220f0220f0220f022"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static FILE *sink(void) {
  static FILE *f;
  if (f == NULL) f = tmpfile();
  CHECK(f != NULL);
  rewind(f);
  return f;
}

static void show(const uint8_t *data, size_t size, bool json, tl_status want) {
  FILE *f = sink();
  char err[512] = "";
  long printed;
  tl_status st = tl_receipt_show(data, size, json, f, err, sizeof err);
  CHECK(st == want);
  printed = ftell(f);
  CHECK(st == TL_OK ? printed > 0 : printed == 0 && err[0] != '\0');
}

static void file_pass(const uint8_t *data, size_t size) {
  tl_receipt_kind kind;
  uint8_t root[32];
  char err[512] = "";
  tl_status st = tl_receipt_check(data, size, &kind, root, err, sizeof err);
  CHECK(st == TL_OK || st == TL_ERR_INVALID_CBOR ||
        st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_HASH_MISMATCH);
  CHECK(st == TL_OK || err[0] != '\0');
  show(data, size, size > 0 && data[size - 1] & 1, st); /* text or JSON */
}

typedef struct prog {
  const uint8_t *p;
  size_t n, i;
} prog;

static uint8_t take(prog *g) { return g->i < g->n ? g->p[g->i++] : 0; }

static uint64_t take_u64(prog *g) {
  unsigned w = take(g) % 9; /* small and boundary values likely */
  uint64_t v = 0;
  for (unsigned k = 0; k < w; k++) v = v << 8 | take(g);
  return w == 8 && (v & 1) ? UINT64_MAX - (v >> 1) % 4 : v;
}

static void writer_pass(const uint8_t *data, size_t size) {
  prog g = {data, size, 0};
  uint8_t artifact[32], raw[64], stop_bytes[4][8];
  const uint8_t *stops[4];
  size_t stop_lens[4], n_raw, n_stops;
  uint32_t prompt_ids[16], ids[16], eos[2] = {3, 7}, bias_ids[2] = {2, 5};
  double bias[2];
  size_t n_prompt = take(&g) % 17, n_ids = take(&g) % 17;
  tl_slm slm;
  tl_sampler_profile profile = tl_sampler_profile_default(1 + take(&g));
  tl_run_facts f;
  uint8_t *doc = NULL, root[32], checked[32];
  size_t len = 0;
  tl_receipt_kind kind;
  char err[512];
  memset(&slm, 0, sizeof slm);
  slm.n_sections = take(&g) % 3; /* a missing section is recorded as null */
  for (size_t i = 0; i < slm.n_sections; i++) {
    slm.sections[i].kind = i == 0 ? TL_SLM_TOKENIZER : TL_SLM_TEMPLATE;
    memset(slm.sections[i].digest, take(&g), 32);
  }
  memset(artifact, take(&g), sizeof artifact);
  for (size_t i = 0; i < n_prompt; i++) prompt_ids[i] = (uint32_t)take_u64(&g);
  for (size_t i = 0; i < n_ids; i++) ids[i] = (uint32_t)take_u64(&g);
  n_raw = take(&g) % sizeof raw;
  for (size_t i = 0; i < n_raw; i++) raw[i] = take(&g);
  n_stops = take(&g) % 5;
  for (size_t i = 0; i < n_stops; i++) {
    stop_lens[i] = 1 + take(&g) % 8;
    for (size_t k = 0; k < stop_lens[i]; k++) stop_bytes[i][k] = take(&g);
    stops[i] = stop_bytes[i];
  }
  profile.temperature = take(&g) / 16.0;
  profile.top_k = take(&g);
  profile.top_p = take(&g) / 255.0;
  profile.min_p = take(&g) / 255.0;
  profile.repeat_penalty = 1.0 + take(&g) / 64.0;
  profile.repeat_window = take(&g);
  profile.eos = eos;
  profile.n_eos = take(&g) % 3;
  /* the later fields, on or off: in [-2, 2) and [-100, 100) */
  profile.frequency_penalty = ((int)take(&g) - 128) / 64.0;
  profile.presence_penalty = ((int)take(&g) - 128) / 64.0;
  bias[0] = ((int)take(&g) - 128) / 1.28;
  bias[1] = -100;
  profile.bias_ids = bias_ids;
  profile.bias = bias;
  profile.n_bias = take(&g) % 3;
  /* Designated fields: a field added to tl_run_facts starts as zero/NULL
   * (NULL lane names mean the scalar lane) instead of breaking the build. */
  f = (tl_run_facts){.artifact_id = artifact,
                     .slm = &slm,
                     .build_id = "fuzz",
                     .prompt_mode = take(&g) & 1 ? "text" : "messages",
                     .add_generation_prompt = take(&g) & 1,
                     .prompt_bytes = raw,
                     .prompt_len = n_raw,
                     .prompt_ids = prompt_ids,
                     .n_prompt = n_prompt,
                     .position = (uint32_t)take_u64(&g),
                     .profile = &profile,
                     .seed = take_u64(&g),
                     .turn = (uint32_t)take_u64(&g),
                     .ids = ids,
                     .n_ids = n_ids,
                     .raw = raw,
                     .raw_len = n_raw,
                     .stop = "max_tokens",
                     .error = take(&g) & 1 ? NULL : "cancelled",
                     .max_new = (uint32_t)take_u64(&g),
                     .stops = stops,
                     .stop_lens = stop_lens,
                     .n_stops = n_stops,
                     .prefill_us = take_u64(&g),
                     .decode_us = take_u64(&g)};
  if (take(&g) & 1) {
    f.backend = "fast";
    f.numerical_profile = "fast/4";
    f.isa = "avx2";
    f.threads = (uint32_t)take_u64(&g);
  }
  CHECK(tl_run_receipt(&f, &doc, &len, root) == TL_OK);
  CHECK(tl_receipt_check(doc, len, &kind, checked, err, sizeof err) == TL_OK);
  CHECK(kind == TL_RECEIPT_RUN && memcmp(root, checked, 32) == 0);
  show(doc, len, take(&g) & 1, TL_OK);
  free(doc);
}

/* A few of each field's values, valid and not. */
static const char *pick(prog *g, const char *const *from, size_t n) {
  return from[take(g) % n];
}

#define PICK(g, arr) pick(g, arr, sizeof arr / sizeof arr[0])

static void expect_written(tl_status st, uint8_t *doc, size_t len, const uint8_t root[32],
                           tl_receipt_kind want, prog *g) {
  tl_receipt_kind kind;
  uint8_t checked[32];
  char err[512];
  CHECK(st == TL_OK || st == TL_ERR_INVALID_ARGUMENT);
  CHECK((st == TL_OK) == (doc != NULL));
  if (st != TL_OK) return;
  CHECK(tl_receipt_check(doc, len, &kind, checked, err, sizeof err) == TL_OK);
  CHECK(kind == want && memcmp(root, checked, 32) == 0);
  show(doc, len, take(g) & 1, TL_OK);
  free(doc);
}

static void promote_pass(const uint8_t *data, size_t size) {
  static const char *const kinds[] = {"artifact", "tokenizer", "forward", "greedy",
                                      "multiturn", "stochastic", "vibes"};
  static const char *const levels[] = {"mechanical", "numerical", "multiturn",
                                       "stochastic", "other"};
  static const char *const rules[] = {TL_RULE_MECHANICAL, TL_RULE_TOLERANCE, TL_RULE_FORGED,
                                      "bad_luck"};
  static const char *const invariants[] = {"ids", "rendered_bytes", "logits"};
  prog g = {data, size, 0};
  uint8_t artifact[32], plan[32], design[32], run[32], ids[4][32], root[32];
  uint8_t *doc = NULL;
  size_t len = 0, n_claims;
  tl_case_outcome cases[4];
  tl_claim_result r;
  tl_comparison_facts cf;
  tl_promotion_claim claims[4];
  tl_promotion_facts pf;
  char err[512];
  bool all = true;
  memset(&r, 0, sizeof r);
  memset(artifact, take(&g), 32);
  memset(plan, take(&g), 32);
  memset(design, take(&g), 32);
  memset(run, take(&g), 32);
  r.n_cases = take(&g) % 5;
  for (size_t i = 0; i < r.n_cases; i++) {
    memset(cases[i].id, take(&g), 32);
    memset(cases[i].output, take(&g), 32);
    cases[i].invariant = PICK(&g, invariants);
    cases[i].pass = take(&g) % 4 != 0;
  }
  r.cases = cases;
  r.pass = take(&g) & 1;
  r.stop_rule = take(&g) % 3 == 0 ? NULL : PICK(&g, rules);
  if (take(&g) & 1) snprintf(r.first_divergence, sizeof r.first_divergence, "case %u", take(&g));
  snprintf(r.summary, sizeof r.summary, "%zu cases", r.n_cases);
  r.has_observation = take(&g) % 4 != 0;
  memset(r.observation, take(&g), 32);
  cf = (tl_comparison_facts){.rt = {artifact, FUZZ_BUILD, "scalar", "scalar-f32/1"},
                             .plan_id = plan,
                             .claim = "claim",
                             .kind = PICK(&g, kinds),
                             .level = PICK(&g, levels),
                             .oracle = "oracle",
                             .tolerance = take(&g) & 1 ? "scalar-f32/1" : NULL,
                             .design_sha256 = take(&g) & 1 ? design : NULL,
                             .result = &r,
                             .attempt = take(&g) % 4};
  expect_written(tl_comparison_receipt(&cf, &doc, &len, root, err, sizeof err), doc, len,
                 root, TL_RECEIPT_COMPARISON, &g);
  doc = NULL;
  /* A promotion over up to four claims, some not run. */
  n_claims = 1 + take(&g) % 4;
  for (size_t i = 0; i < n_claims; i++) {
    static const char *const names[] = {"a", "b", "c", "d"};
    memset(ids[i], take(&g), 32);
    claims[i] = (tl_promotion_claim){names[i], take(&g) % 5 ? ids[i] : NULL, take(&g) & 1,
                                     NULL};
    if (!claims[i].pass) claims[i].stop_rule = PICK(&g, rules);
    all = all && claims[i].receipt_id != NULL && claims[i].pass;
  }
  pf = (tl_promotion_facts){.rt = {artifact, FUZZ_BUILD, "fast", "fast/4"},
                            .plan_id = plan,
                            .lane = take(&g) % 8 ? "fast" : "scalar",
                            .claims = claims,
                            .n_claims = n_claims,
                            .run_record = run};
  {
    tl_status st = tl_promotion_receipt(&pf, &doc, &len, root, err, sizeof err);
    if (st == TL_OK) {
      json_t *j = NULL;
      CHECK(tl_cbor_to_json(doc, len, &j, err, sizeof err) == TL_OK);
      CHECK(strcmp(json_string_value(json_object_get(
                       json_object_get(json_array_get(json_object_get(j, "nodes"), 4),
                                       "metadata"),
                       "decision")),
                   all ? "promoted" : "not_promoted") == 0);
      json_decref(j);
    }
    expect_written(st, doc, len, root, TL_RECEIPT_PROMOTION, &g);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  file_pass(data, size);
  if (size > 0 && data[0] % 8 == 1) promote_pass(data + 1, size - 1);
  /* A whole receipt written and verified costs ten times a typical file
   * pass: one input in eight keeps the executions per second up. */
  if (size > 0 && data[0] % 8 == 0) writer_pass(data + 1, size - 1);
  return 0;
}
