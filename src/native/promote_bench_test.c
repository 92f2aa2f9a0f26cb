/* tinylm promote's benchmark step (promote_bench.h, docs/promotion.md
 * §Benchmark): plan init's default lengths for a model's context and lane;
 * a point's figures taken from tinylm bench's JSON (a document written
 * here is the oracle); the step run on a stand-in bench (a shell script
 * printing known figures) puts one object of the documented shape into
 * the store, and a point whose bench fails fails the step naming it. */
#define _POSIX_C_SOURCE 200809L
#include "promote_bench.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tl_test.h"

static void lengths_are(tl_test_ctx *t, const json_t *b, const char *want) {
  char *got = json_dumps(json_object_get(b, "prompt_tokens"), JSON_COMPACT);
  if (!TL_EXPECT(t, got != NULL && strcmp(got, want) == 0))
    fprintf(stderr, "  got %s, want %s\n", got ? got : "(null)", want);
  free(got);
}

static void plan_init_lengths_fit_the_context(tl_test_ctx *t) {
  json_t *b = tl_bench_plan_default("fast", 40960);
  lengths_are(t, b, "[16,64,256,1024,4096]");
  TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(b, "decode_tokens")), 16);
  TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(b, "repetitions")), 1);
  json_decref(b);
  /* the strict lane stops at 1024 */
  lengths_are(t, b = tl_bench_plan_default("scalar", 40960), "[16,64,256,1024]");
  json_decref(b);
  /* 4096 positions hold 4096 - 16 - 1 prompt tokens: the longest takes
   * the place of what was dropped */
  lengths_are(t, b = tl_bench_plan_default("fast", 4096), "[16,64,256,1024,4079]");
  json_decref(b);
  lengths_are(t, b = tl_bench_plan_default("fast", 4113), "[16,64,256,1024,4096]");
  json_decref(b);
  lengths_are(t, b = tl_bench_plan_default("scalar", 300), "[16,64,256,283]");
  json_decref(b);
  lengths_are(t, b = tl_bench_plan_default("fast", 20), "[3]");
  json_decref(b);
  /* not one prompt token beside 16 decoded ones */
  TL_EXPECT(t, tl_bench_plan_default("fast", 17) == NULL);
}

/* What tinylm bench --json prints (the fields a point takes). */
static json_t *bench_json(void) {
  return json_pack("{s:i,s:i,s:f,s:f,s:f,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:i,s:i,s:i}",
                   "prompt_tokens", 64, "context", 81, "prefill_tokens_per_s", 1000.0,
                   "decode_tokens_per_s", 250.0, "first_token_seconds", 0.5, "memory_plan",
                   "weights", 1000, "tokenizer", 200, "kv_cache", 30, "scratch", 4, "logits", 5,
                   "sampler", 6, "total", 1245, "worker_stacks_rss_bytes", 8192,
                   "runtime_image_rss_bytes", 7000, "peak_rss_bytes", 9000);
}

static json_int_t mem(const json_t *point, const char *part) {
  return json_integer_value(json_object_get(json_object_get(point, "memory"), part));
}

static void a_point_from_bench_json(tl_test_ctx *t) {
  json_t *b = bench_json(), *p;
  char err[256] = "";
  p = tl_bench_point(b, 64, err, sizeof err);
  if (!TL_EXPECT(t, p != NULL)) {
    fprintf(stderr, "  %s\n", err);
    json_decref(b);
    return;
  }
  TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(p, "prompt_tokens")), 64);
  TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(p, "context")), 81);
  TL_EXPECT(t, json_real_value(json_object_get(p, "prefill_tokens_per_s")) == 1000.0);
  TL_EXPECT(t, json_real_value(json_object_get(p, "decode_tokens_per_s")) == 250.0);
  TL_EXPECT(t, json_real_value(json_object_get(p, "decode_ms_per_token")) == 4.0);
  TL_EXPECT(t, json_real_value(json_object_get(p, "first_token_seconds")) == 0.5);
  TL_EXPECT_EQ_U64(t, mem(p, "weights"), 1000);
  TL_EXPECT_EQ_U64(t, mem(p, "tokenizer_template"), 200);
  TL_EXPECT_EQ_U64(t, mem(p, "kv_cache"), 30);
  TL_EXPECT_EQ_U64(t, mem(p, "activations"), 4 + 5 + 6);
  TL_EXPECT_EQ_U64(t, mem(p, "worker_stacks"), 8192);
  TL_EXPECT_EQ_U64(t, mem(p, "runtime_image"), 7000);
  TL_EXPECT_EQ_U64(t, mem(p, "peak_rss"), 9000);
  TL_EXPECT_EQ_U64(t, json_object_size(json_object_get(p, "memory")), 7);
  TL_EXPECT_EQ_U64(t, json_object_size(p), 7);
  json_decref(p);
  /* another prompt length than asked for, a figure missing or not
   * positive, a byte count missing: no point */
  TL_EXPECT(t, tl_bench_point(b, 16, err, sizeof err) == NULL);
  json_object_set_new(b, "decode_tokens_per_s", json_real(0.0));
  TL_EXPECT(t, tl_bench_point(b, 64, err, sizeof err) == NULL);
  TL_EXPECT(t, strstr(err, "decode_tokens_per_s") != NULL);
  json_decref(b);
  b = bench_json();
  json_object_del(json_object_get(b, "memory_plan"), "sampler");
  TL_EXPECT(t, tl_bench_point(b, 64, err, sizeof err) == NULL);
  TL_EXPECT(t, strstr(err, "memory_plan.sampler") != NULL);
  json_decref(b);
  b = bench_json();
  json_object_set_new(b, "peak_rss_bytes", json_integer(-1));
  TL_EXPECT(t, tl_bench_point(b, 64, err, sizeof err) == NULL);
  TL_EXPECT(t, strstr(err, "peak_rss_bytes") != NULL);
  json_decref(b);
}

/* A stand-in for tinylm bench: its arguments are bench's ($4 the prompt
 * length, $6 the decode tokens, ${12} the lane); the KV cache 10 bytes a
 * token of context; prompts over 100 tokens fail as bench does. */
static const char fake_bench[] =
    "#!/bin/sh\n"
    "[ \"$1\" = bench ] && [ \"$3\" = -p ] && [ \"$7\" = -d ] && [ \"$4\" = \"$8\" ] || exit 9\n"
    "if [ \"$4\" -gt 100 ]; then\n"
    "  echo '{\"error\": \"context_exceeded\", \"detail\": \"context too long\"}'; exit 1\n"
    "fi\n"
    "c=$(($4 + $6 + 1))\n"
    "echo \"{\\\"lane\\\": \\\"${12}\\\", \\\"profile\\\": \\\"fast/4\\\", \\\"isa\\\": "
    "\\\"avx2\\\", \\\"threads\\\": 2, \\\"prompt_tokens\\\": $4, \\\"context\\\": $c, "
    "\\\"prefill_tokens_per_s\\\": 100.5, \\\"decode_tokens_per_s\\\": 20, "
    "\\\"first_token_seconds\\\": 0.25, \\\"memory_plan\\\": {\\\"weights\\\": 1000, "
    "\\\"tokenizer\\\": 200, \\\"kv_cache\\\": $((c * 10)), \\\"scratch\\\": 4, \\\"logits\\\": "
    "5, \\\"sampler\\\": 6, \\\"total\\\": 0}, \\\"worker_stacks_rss_bytes\\\": 4096, "
    "\\\"runtime_image_rss_bytes\\\": 7000, \\\"peak_rss_bytes\\\": 9000}\"\n";

static void the_step_on_a_stand_in_bench(tl_test_ctx *t) {
  char tmpl[] = "/tmp/tl_bench_XXXXXX", exe[256], store_dir[256], err[1024] = "", cmd[300];
  char *dir = mkdtemp(tmpl);
  const char *plan_text =
      "{\"format\": \"tinylm.plan/1\", \"artifact\": {\"id\": "
      "\"0000000000000000000000000000000000000000000000000000000000000000\", \"path\": "
      "\"m.slm\", \"acquisition_receipt\": null}, \"lane\": \"fast\", \"claims\": [{\"name\": "
      "\"a\", \"kind\": \"eos\", \"level\": \"mechanical\", \"oracle\": \"o\", \"tolerance\": "
      "null, \"design\": null, \"cases\": [{\"id\": "
      "\"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\", \"case\": {}}]}], "
      "\"benchmark\": {\"prompt_tokens\": [16, 64], \"decode_tokens\": 4, \"repetitions\": 1}}";
  uint8_t artifact[32] = {0xab}, id[32];
  tl_plan plan;
  tl_store *store = NULL;
  FILE *f;
  if (!TL_EXPECT(t, dir != NULL)) return;
  snprintf(exe, sizeof exe, "%s/bench.sh", dir);
  snprintf(store_dir, sizeof store_dir, "%s/store", dir);
  f = fopen(exe, "w");
  if (f != NULL) {
    fputs(fake_bench, f);
    fclose(f);
  }
  chmod(exe, 0755);
  if (!TL_EXPECT_OK(t, tl_plan_parse((const uint8_t *)plan_text, strlen(plan_text), &plan, err,
                                     sizeof err))) {
    fprintf(stderr, "  %s\n", err);
    return;
  }
  TL_EXPECT_OK(t, tl_store_open(store_dir, true, &store, err, sizeof err));
  {
    tl_bench_step b = {&plan, "m.slm", artifact, "build-x", 2, exe};
    uint8_t *bytes = NULL;
    size_t len = 0;
    json_t *o = NULL, *pts;
    char hex[65];
    if (!TL_EXPECT_OK(t, tl_promote_benchmark(&b, store, id, err, sizeof err)))
      fprintf(stderr, "  %s\n", err);
    else if (TL_EXPECT_OK(t, tl_store_get(store, id, &bytes, &len, err, sizeof err)))
      o = json_loadb((const char *)bytes, len, 0, NULL);
    free(bytes);
    tl_hex_encode(artifact, 32, hex);
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "format")), TL_BENCHMARK_FORMAT);
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "artifact")), hex);
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "build_id")), "build-x");
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "lane")), "fast");
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "profile")), "fast/4");
    TL_EXPECT_STR(t, json_string_value(json_object_get(o, "isa")), "avx2");
    TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(o, "threads")), 2);
    TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(o, "decode_tokens")), 4);
    TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(o, "repetitions")), 1);
    TL_EXPECT(t, json_is_string(json_object_get(o, "cpu")));
    TL_EXPECT_EQ_U64(t, json_object_size(o), 11);
    pts = json_object_get(o, "points");
    TL_EXPECT_EQ_U64(t, json_array_size(pts), 2);
    for (size_t i = 0; i < json_array_size(pts) && i < 2; i++) {
      const json_t *p = json_array_get(pts, i);
      json_int_t prompt = i == 0 ? 16 : 64;
      TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(p, "prompt_tokens")), prompt);
      TL_EXPECT_EQ_U64(t, json_integer_value(json_object_get(p, "context")), prompt + 4 + 1);
      TL_EXPECT_EQ_U64(t, mem(p, "kv_cache"), (prompt + 4 + 1) * 10);
      TL_EXPECT_EQ_U64(t, mem(p, "activations"), 15);
      TL_EXPECT(t, json_real_value(json_object_get(p, "decode_ms_per_token")) == 50.0);
    }
    json_decref(o);
  }
  /* a point whose bench fails: the step fails naming it and bench's error */
  plan.benchmark.prompt_tokens[1] = 128;
  {
    tl_bench_step b = {&plan, "m.slm", artifact, "build-x", 0, exe};
    TL_EXPECT_STATUS(t, tl_promote_benchmark(&b, store, id, err, sizeof err),
                     TL_ERR_WORKER_FAILURE);
    TL_EXPECT(t, strstr(err, "128 prompt tokens") != NULL &&
                     strstr(err, "exited 1: context too long") != NULL);
  }
  /* a bench that cannot be run */
  {
    tl_bench_step b = {&plan, "m.slm", artifact, "build-x", 0, "/nonexistent/tinylm"};
    TL_EXPECT(t, tl_promote_benchmark(&b, store, id, err, sizeof err) != TL_OK);
    TL_EXPECT(t, strstr(err, "16 prompt tokens") != NULL);
  }
  tl_store_close(store);
  tl_plan_free(&plan);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void the_cpu_has_a_name(tl_test_ctx *t) {
  char cpu[256] = "";
  tl_bench_cpu_name(cpu, sizeof cpu);
  TL_EXPECT(t, cpu[0] != '\0' && strchr(cpu, '\n') == NULL);
}

static const tl_test_case cases[] = {TL_CASE(plan_init_lengths_fit_the_context),
                                     TL_CASE(a_point_from_bench_json),
                                     TL_CASE(the_step_on_a_stand_in_bench),
                                     TL_CASE(the_cpu_has_a_name)};
TL_SUITE(promote_bench, cases);
