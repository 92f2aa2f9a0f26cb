/* tinylm bench --grammar: the grammar engine's speed (docs/structured.md).
 * For each grammar (GBNF for .gbnf, JSON Schema for .json): its compile
 * time over repetitions, then the token mask over the tokenizer's whole
 * vocabulary at every position of a valid instance (NAME.instance.json
 * beside NAME.json, NAME.instance.txt beside NAME.gbnf), tokenized by the
 * same tokenizer and walked token by token: tl_gmatcher_mask timed apart
 * from tl_gmatcher_accept, one thread. The walk runs twice on one
 * matcher: cold (fresh caches: what a new request pays) and warm (after
 * tl_gmatcher_reset, which keeps the caches: what a repeated schema
 * pays). Figures per grammar and pooled over all of them: mean, p50, p99
 * and worst, in microseconds. bench/grammar.sh runs llama.cpp's grammar
 * sampler at the same positions (the ids are in the --json output). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "constrain.h"
#include "encoder.h"
#include "file.h"
#include "grammar/grammar.h"
#include "model.h"

static const char usage_text[] =
    "usage: tinylm bench --grammar FILE... --tokenizer ARTIFACT.slm [-r N]\n"
    "                    [--matcher-mb N] [--trace] [--json]\n"
    "  --grammar FILE...  grammars: .gbnf (GBNF) or .json (JSON Schema); a valid\n"
    "                     instance beside each (NAME.instance.txt, NAME.instance.json)\n"
    "                     gives the mask figures, else only the compile time\n"
    "  --tokenizer F      the artifact whose vocabulary the masks cover\n"
    "  -r N               compile repetitions (default 20)\n"
    "  --matcher-mb N     the matcher's memory, MiB (default 64; at least its minimum)\n"
    "  --trace            per token of the first (cold) pass, on stderr: the mask's\n"
    "                     time, trie nodes visited, states made, the token taken\n"
    "  --json             one JSON object (with each instance's token ids)\n";

/* Memory for one compiled grammar. */
#define GRAMMAR_ARENA (64u << 20)

typedef struct stats {
  double mean, p50, p99, worst;
  size_t n;
} stats;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentiles of v[0..n) (sorted in place), microseconds. */
static stats summarize(double *v, size_t n) {
  stats s = {0, 0, 0, 0, n};
  if (n == 0) return s;
  qsort(v, n, sizeof *v, cmp_double);
  for (size_t i = 0; i < n; i++) s.mean += v[i];
  s.mean /= (double)n;
  s.p50 = v[(n + 1) / 2 - 1];
  s.p99 = v[(99 * n + 99) / 100 - 1];
  s.worst = v[n - 1];
  return s;
}

static json_t *stats_json(stats s) {
  return json_pack("{s:I,s:f,s:f,s:f,s:f}", "n", (json_int_t)s.n, "mean_us", s.mean, "p50_us",
                   s.p50, "p99_us", s.p99, "worst_us", s.worst);
}

static void stats_print(const char *what, stats s) {
  printf("  %-8s mean %8.2f  p50 %8.2f  p99 %9.2f  worst %9.2f us  (%zu)\n", what, s.mean, s.p50,
         s.p99, s.worst, s.n);
}

/* A growing list of samples. */
typedef struct samples {
  double *v;
  size_t n, cap;
} samples;

static bool add(samples *s, double x) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    double *v = realloc(s->v, cap * sizeof *v);
    if (v == NULL) return false;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return true;
}

/* One grammar's figures. */
typedef struct result {
  const char *path;
  tl_status st;
  char error[1024];
  uint32_t rules, elems;
  stats compile;
  double compile_min;
  size_t tokens;
  uint32_t *ids;
  long rejected_at; /* the instance's first token outside the mask, or -1 */
  bool eos_allowed;
  stats cold, warm, accept;
  tl_gmatcher_stats mstats;
} result;

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static tl_status compile(const char *path, const tl_file_view *text, tl_arena *a,
                         const tl_grammar **g, tl_gerror *e) {
  tl_arena_reset(a);
  if (ends_with(path, ".gbnf")) return tl_grammar_from_gbnf(a, text->data, text->len, g, e);
  return tl_grammar_from_json_schema(a, text->data, text->len, g, e);
}

/* One walk of the instance: mask before each token and after the last,
 * accept of each token. */
/* One --trace line: a mask's time, the trie nodes it visited and the
 * states it made (the matcher's counters now against *before, which then
 * takes them), and the token taken next. */
static void trace_line(FILE *f, const tl_gmatcher *m, tl_gmatcher_stats *before,
                       const tl_tokenizer *tok, const result *r, size_t pos, double us) {
  tl_gmatcher_stats now;
  const uint8_t *b = NULL;
  size_t len = 0;
  tl_gmatcher_get_stats(m, &now);
  fprintf(f, "%s %4zu %10.1f us %9llu nodes %6llu states  ", r->path, pos, us,
          (unsigned long long)(now.trie_nodes_visited - before->trie_nodes_visited),
          (unsigned long long)(now.states - before->states));
  *before = now;
  if (pos < r->tokens) tl_tok_token_bytes(tok, r->ids[pos], &b, &len);
  for (size_t i = 0; i < len; i++)
    fprintf(f, b[i] >= 0x20 && b[i] < 0x7F && b[i] != '\\' ? "%c" : "\\x%02x", b[i]);
  fputc('\n', f);
}

/* The instance's tokens through m: each mask timed (into mask_us), the
 * token checked against it and accepted (timed into accept_us unless
 * NULL). trace: a line per mask (trace_line), or NULL. */
static tl_status walk(tl_gmatcher *m, const tl_tokenizer *tok, result *r, uint64_t *allow,
                      samples *mask_us, samples *accept_us, FILE *trace) {
  tl_gmatcher_stats seen;
  tl_gmatcher_get_stats(m, &seen);
  for (size_t pos = 0; pos <= r->tokens; pos++) {
    bool eos;
    const uint8_t *b;
    size_t len;
    double t0 = tl_now_s();
    tl_status st = tl_gmatcher_mask(m, allow, &eos);
    if (st != TL_OK || !add(mask_us, (tl_now_s() - t0) * 1e6)) return st ? st : TL_ERR_OUT_OF_MEMORY;
    if (trace != NULL) trace_line(trace, m, &seen, tok, r, pos, mask_us->v[mask_us->n - 1]);
    if (pos == r->tokens) {
      r->eos_allowed = eos;
      break;
    }
    uint32_t id = r->ids[pos];
    if (!((allow[id / 64] >> (id % 64)) & 1)) {
      r->rejected_at = (long)pos;
      return TL_OK;
    }
    tl_tok_token_bytes(tok, id, &b, &len);
    t0 = tl_now_s();
    st = tl_gmatcher_accept(m, b, len);
    if (st != TL_OK || (accept_us && !add(accept_us, (tl_now_s() - t0) * 1e6)))
      return st ? st : TL_ERR_OUT_OF_MEMORY;
  }
  return TL_OK;
}

static void fail_result(result *r, tl_status st, const char *what) {
  r->st = st;
  snprintf(r->error, sizeof r->error, "%s", what);
}

/* Everything about one grammar; pooled samples are added to all_*. */
static void bench_one(result *r, const tl_tokenizer *tok, const tl_gvocab *v, tl_encoder *enc,
                      uint32_t reps, size_t matcher_bytes, tl_arena *ga, void *mmem,
                      samples *all_cold, samples *all_warm, samples *all_accept, FILE *trace) {
  tl_file_view text = {0}, inst = {0};
  char err[1024], ipath[4096];
  const tl_grammar *g = NULL;
  tl_gerror ge;
  samples t = {0}, cold = {0}, warm = {0}, acc = {0};
  size_t n_ids = 0, bad;
  uint64_t *allow = NULL;
  tl_status st;
  r->rejected_at = -1;
  if (!ends_with(r->path, ".gbnf") && !ends_with(r->path, ".json")) {
    fail_result(r, TL_ERR_INVALID_ARGUMENT, "not a .gbnf or .json file");
    return;
  }
  if ((st = tl_file_open_view(r->path, &text, err, sizeof err)) != TL_OK) {
    fail_result(r, st, err);
    return;
  }
  for (uint32_t k = 0; k < reps; k++) {
    double t0 = tl_now_s();
    st = compile(r->path, &text, ga, &g, &ge);
    if (st != TL_OK) {
      fail_result(r, st, ge.message);
      goto done;
    }
    if (!add(&t, (tl_now_s() - t0) * 1e6)) {
      fail_result(r, TL_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  r->rules = tl_grammar_rules(g);
  r->elems = tl_grammar_elems(g);
  r->compile = summarize(t.v, t.n);
  r->compile_min = t.v[0];
  /* the instance: NAME.instance.json / NAME.instance.txt */
  snprintf(ipath, sizeof ipath, "%.*s.instance.%s", (int)strlen(r->path) - 5, r->path,
           ends_with(r->path, ".gbnf") ? "txt" : "json");
  if (tl_file_open_view(ipath, &inst, err, sizeof err) != TL_OK) goto done; /* compile only */
  {
    size_t len = inst.len;
    /* JSON's trailing blanks are no part of the value */
    if (ends_with(r->path, ".json"))
      while (len > 0 && strchr(" \t\r\n", inst.data[len - 1]) != NULL) len--;
    st = tl_encoder_run(enc, inst.data, len, &n_ids, &bad);
  }
  if (st != TL_OK) {
    fail_result(r, st, "the instance does not tokenize");
    goto done;
  }
  r->tokens = n_ids;
  r->ids = malloc((n_ids ? n_ids : 1) * sizeof *r->ids);
  allow = malloc(((tl_gvocab_tokens(v) + 63) / 64) * sizeof *allow);
  if (r->ids == NULL || allow == NULL) {
    fail_result(r, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  memcpy(r->ids, enc->ids, n_ids * sizeof *r->ids);
  {
    tl_arena ma;
    tl_gmatcher *m;
    size_t need = tl_gmatcher_min_bytes(g, v);
    if (need > matcher_bytes) {
      snprintf(r->error, sizeof r->error, "the matcher needs %zu bytes, more than --matcher-mb gives",
               need);
      r->st = TL_ERR_OUT_OF_MEMORY;
      goto done;
    }
    tl_arena_init(&ma, mmem, matcher_bytes);
    st = tl_gmatcher_new(&ma, g, v, 0, &m);
    if (st == TL_OK) st = walk(m, tok, r, allow, &cold, &acc, trace);
    if (st == TL_OK && r->rejected_at < 0) {
      tl_gmatcher_reset(m);
      st = walk(m, tok, r, allow, &warm, NULL, NULL);
    }
    if (st == TL_OK) tl_gmatcher_get_stats(m, &r->mstats);
    if (st != TL_OK) {
      fail_result(r, st, "the matcher failed");
      goto done;
    }
  }
  if (r->rejected_at >= 0) {
    snprintf(r->error, sizeof r->error, "the instance's token %ld (id %u) is outside the mask",
             r->rejected_at, r->ids[r->rejected_at]);
    r->st = TL_ERR_INVALID_ARGUMENT;
    goto done;
  }
  for (size_t i = 0; i < cold.n; i++) add(all_cold, cold.v[i]);
  for (size_t i = 0; i < warm.n; i++) add(all_warm, warm.v[i]);
  for (size_t i = 0; i < acc.n; i++) add(all_accept, acc.v[i]);
  r->cold = summarize(cold.v, cold.n);
  r->warm = summarize(warm.v, warm.n);
  r->accept = summarize(acc.v, acc.n);
done:
  free(allow);
  free(t.v);
  free(cold.v);
  free(warm.v);
  free(acc.v);
  if (inst.data != NULL) tl_file_close_view(&inst);
  tl_file_close_view(&text);
}

static json_t *result_json(const result *r) {
  json_t *o = json_pack("{s:s}", "file", r->path);
  if (r->st != TL_OK) {
    json_object_set_new(o, "error", json_string(tl_status_name(r->st)));
    json_object_set_new(o, "detail", json_string(r->error));
  }
  if (r->compile.n == 0) return o;
  json_object_set_new(o, "rules", json_integer(r->rules));
  json_object_set_new(o, "elems", json_integer(r->elems));
  json_object_set_new(o, "compile_min_us", json_real(r->compile_min));
  json_object_set_new(o, "compile_median_us", json_real(r->compile.p50));
  if (r->ids == NULL) return o;
  json_object_set_new(o, "ids", tl_cli_json_ids(r->ids, r->tokens));
  if (r->st != TL_OK) return o;
  json_object_set_new(o, "tokens", json_integer((json_int_t)r->tokens));
  json_object_set_new(o, "eos_allowed_at_end", json_boolean(r->eos_allowed));
  json_object_set_new(o, "mask_cold", stats_json(r->cold));
  json_object_set_new(o, "mask_warm", stats_json(r->warm));
  json_object_set_new(o, "accept", stats_json(r->accept));
  json_object_set_new(o, "matcher",
                      json_pack("{s:I,s:I,s:I,s:I,s:I}", "masks", (json_int_t)r->mstats.masks,
                                "mask_cache_hits", (json_int_t)r->mstats.mask_cache_hits,
                                "trie_nodes_visited", (json_int_t)r->mstats.trie_nodes_visited,
                                "states", (json_int_t)r->mstats.states, "flushes",
                                (json_int_t)r->mstats.flushes));
  return o;
}

static void result_print(const result *r) {
  printf("%s", r->path);
  if (r->compile.n > 0)
    printf(": %u rules, %u elements; compile min %.1f us, median %.1f us", r->rules, r->elems,
           r->compile_min, r->compile.p50);
  if (r->st != TL_OK) {
    printf("\n  %s: %s\n", tl_status_name(r->st), r->error);
    return;
  }
  if (r->ids == NULL) {
    printf("\n  (no instance beside it: compile time only)\n");
    return;
  }
  printf("; %zu tokens, EOS %s at the end\n", r->tokens,
         r->eos_allowed ? "allowed" : "NOT allowed");
  stats_print("cold", r->cold);
  stats_print("warm", r->warm);
  stats_print("accept", r->accept);
}

int tl_cmd_bench_grammar(int argc, char **argv) {
  const char *tok_path = NULL;
  const char **files = calloc((size_t)argc, sizeof *files);
  size_t n_files = 0;
  uint32_t reps = 20, matcher_mb = 64;
  bool json = tl_cli_wants_json(argc, argv), in_list = false, trace = false;
  int rc = TL_EXIT_OK;
  tl_native_model tm;
  tl_encoder enc = {0};
  char err[1024];
  void *gmem = NULL, *mmem = NULL;
  tl_grammar_vocab_cell *cell = NULL;
  tl_grammar_vocab gv;
  result *res = NULL;
  samples all_cold = {0}, all_warm = {0}, all_accept = {0}, all_compile = {0};
  const tl_gvocab *v;
  tl_arena ga;
  tl_status st;
  if (files == NULL) return tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage_text, stdout);
      free(files);
      return TL_EXIT_OK;
    }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int u = -1; /* a usage error's exit status, or -1 */
    if (strcmp(a, "--json") == 0) continue;
    if (strcmp(a, "--trace") == 0) {
      trace = true;
      in_list = false;
    } else if (strcmp(a, "--grammar") == 0) {
      in_list = true;
      if (i + 1 >= argc || argv[i + 1][0] == '-') u = tl_cli_usage(json, "'--grammar' needs a value");
    } else if (strcmp(a, "--tokenizer") == 0) {
      u = tl_cli_value(json, argc, argv, &i, &tok_path);
      in_list = false;
    } else if (strcmp(a, "-r") == 0 || strcmp(a, "--matcher-mb") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &val)) < 0)
        u = a[1] == 'r' ? tl_cli_flag_u32(json, a, val, 1, 1000, &reps)
                        : tl_cli_flag_u32(json, a, val, 1, 65536, &matcher_mb);
      in_list = false;
    } else if (a[0] == '-' && a[1] != '\0') {
      u = tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    } else if (in_list) {
      files[n_files++] = a;
    } else {
      u = tl_cli_usage(json, "'%s': grammars follow --grammar\n%s", a, usage_text);
    }
    if (u >= 0) {
      free(files);
      return u;
    }
  }
  if (n_files == 0 || tok_path == NULL) {
    free(files);
    return tl_cli_usage(json, "--grammar FILE... and --tokenizer ARTIFACT.slm\n%s", usage_text);
  }
  st = tl_native_model_open(tok_path, &tm, err, sizeof err);
  if (st != TL_OK) {
    free(files);
    return tl_cli_fail(json, st, "%s", err);
  }
  enc.tok = tm.tok;
  cell = tl_grammar_vocab_cell_new();
  gmem = malloc(GRAMMAR_ARENA);
  mmem = malloc((size_t)matcher_mb << 20);
  res = calloc(n_files, sizeof *res);
  if (cell == NULL || gmem == NULL || mmem == NULL || res == NULL) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  tl_arena_init(&ga, gmem, GRAMMAR_ARENA);
  /* the trie run and serve use: special tokens never in a mask */
  double t0 = tl_now_s();
  st = tl_grammar_vocab_get(cell, tm.tok, &gv);
  double t_vocab = tl_now_s() - t0;
  v = gv.trie;
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s: the vocabulary trie: %s", tok_path, tl_status_name(st));
    goto done;
  }
  for (size_t i = 0; i < n_files; i++) {
    res[i].path = files[i];
    bench_one(&res[i], tm.tok, v, &enc, reps, (size_t)matcher_mb << 20, &ga, mmem, &all_cold,
              &all_warm, &all_accept, trace ? stderr : NULL);
    if (res[i].compile.n > 0) add(&all_compile, res[i].compile.p50);
    if (!json) result_print(&res[i]);
  }
  {
    stats sc = summarize(all_cold.v, all_cold.n), sw = summarize(all_warm.v, all_warm.n),
          sa = summarize(all_accept.v, all_accept.n), sm = summarize(all_compile.v, all_compile.n);
    size_t ok = 0;
    for (size_t i = 0; i < n_files; i++) ok += res[i].st == TL_OK;
    if (json) {
      json_t *o = json_object(), *list = json_array();
      for (size_t i = 0; i < n_files; i++) json_array_append_new(list, result_json(&res[i]));
      json_object_set_new(o, "tokenizer", json_string(tok_path));
      json_object_set_new(o, "vocab_tokens", json_integer(tl_gvocab_tokens(v)));
      json_object_set_new(o, "vocab_build_seconds", json_real(t_vocab));
      json_object_set_new(o, "compile_repetitions", json_integer(reps));
      json_object_set_new(o, "grammars", list);
      json_object_set_new(o, "grammars_ok", json_integer((json_int_t)ok));
      json_object_set_new(o, "compile_median_us", stats_json(sm));
      json_object_set_new(o, "mask_cold", stats_json(sc));
      json_object_set_new(o, "mask_warm", stats_json(sw));
      json_object_set_new(o, "accept", stats_json(sa));
      json_dumpf(o, stdout, JSON_SORT_KEYS);
      fputc('\n', stdout);
      json_decref(o);
    } else {
      printf("over %zu of %zu grammars (vocabulary %u tokens, trie built in %.2f s):\n", ok,
             n_files, tl_gvocab_tokens(v), t_vocab);
      stats_print("compile", sm);
      stats_print("cold", sc);
      stats_print("warm", sw);
      stats_print("accept", sa);
    }
    if (ok < n_files) rc = TL_EXIT_FAILURE;
  }
done:
  for (size_t i = 0; res != NULL && i < n_files; i++) free(res[i].ids);
  free(res);
  free(all_cold.v);
  free(all_warm.v);
  free(all_accept.v);
  free(all_compile.v);
  tl_grammar_vocab_cell_free(cell);
  free(gmem);
  free(mmem);
  free(files);
  tl_encoder_free(&enc);
  tl_native_model_close(&tm);
  return rc;
}
