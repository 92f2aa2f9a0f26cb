/* libFuzzer target for receipt verification and display
 * (src/native/receipt.c, receipt_show.c: tl_receipt_check and tl_receipt_show, the whole
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
 *    root, as a run receipt, and display. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/receipt.c"
#include "../../src/native/receipt_show.c"
#include "../../src/tools/cbor_alloc.c"
#include "../../src/tools/cbor_doc.c"

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
  uint32_t prompt_ids[16], ids[16], eos[2] = {3, 7};
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  file_pass(data, size);
  /* A whole receipt written and verified costs ten times a typical file
   * pass: one input in eight keeps the executions per second up. */
  if (size > 0 && data[0] % 8 == 0) writer_pass(data + 1, size - 1);
  return 0;
}
