/* tinylm synth: a synthetic Qwen3 checkpoint directory with deterministic
 * weights (docs/synth.md). */
#define _DEFAULT_SOURCE /* readlink, PATH_MAX */
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "synth.h"

/* Where an install keeps the tokenizer files, under its prefix. */
#define INSTALLED_TOKENIZER "share/tinylm/tokenizer-qwen3"

static const char usage_text[] =
    "usage: tinylm synth --config tiny|qwen3-0.6b|FILE.json --seed N -o DIR\n"
    "                    [--dtype bf16|f32] [--shards K] [--separate-lm-head]\n"
    "                    [--publisher-eos] [--embedding] [--tokenizer-dir DIR] [--json]\n"
    "  --config            a preset, or a JSON object overriding tiny's "
    "fields\n"
    "  --seed              0..2^64-1; the same seed and options give the "
    "same bytes\n"
    "  -o                  output directory (created; must be empty if it "
    "exists)\n"
    "  --dtype             tensor dtype, bf16 (default) or f32\n"
    "  --shards            K > 1 writes K shards and "
    "model.safetensors.index.json\n"
    "  --separate-lm-head  also store lm_head.weight (a byte copy of "
    "embed_tokens)\n"
    "  --publisher-eos     generation_config.json's EOS as the published "
    "Qwen3\n"
    "                      files have it ([<|im_end|>, <|endoftext|>] against\n"
    "                      config.json's <|im_end|>): tinylm convert then "
    "needs\n"
    "                      --profile qwen3-0.6b-publisher; default "
    "[<|im_end|>];\n"
    "                      with --embedding config.json's EOS is "
    "<|endoftext|>,\n"
    "                      as Qwen3-Embedding-0.6B's is\n"
    "  --embedding         a Qwen3-Embedding layout: no \"model.\" prefix, the\n"
    "                      tokenizer appends <|endoftext|>, modules.json and\n"
    "                      1_Pooling/config.json (last-token pooling)\n"
    "  --tokenizer-dir     source of tokenizer.json and "
    "tokenizer_config.json; default\n"
    "                      " TL_SYNTH_TOKENIZER_DIR " (installed by\n"
    "                      scripts/setup.sh) under the working directory, else\n"
    "                      under the repository the executable was built in\n"
    "                      (build/CFG/tinylm), else " INSTALLED_TOKENIZER "\n"
    "                      beside an installed bin/tinylm\n";

/* A directory holding tokenizer.json. */
static bool has_tokenizer(const char *dir) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  return access(path, R_OK) == 0;
}

/* The default tokenizer directory, so that synth works from any working
 * directory: relative to the working directory (the repository root),
 * then to the executable: ../../ from build/<cfg>/tinylm, or an install
 * prefix's share/tinylm. NULL (with err saying where it looked) when none
 * holds the files. */
static const char *find_tokenizer(char *buf, size_t cap, char *err,
                                  size_t err_cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash;
  if (has_tokenizer(TL_SYNTH_TOKENIZER_DIR)) return TL_SYNTH_TOKENIZER_DIR;
  if (n <= 0) {
    snprintf(err, err_cap, "no %s under the working directory", TL_SYNTH_TOKENIZER_DIR);
    return NULL;
  }
  exe[n] = '\0';
  if ((slash = strrchr(exe, '/')) != NULL) *slash = '\0'; /* the bin directory */
  snprintf(buf, cap, "%s/../../%s", exe, TL_SYNTH_TOKENIZER_DIR);
  if (has_tokenizer(buf)) return buf;
  snprintf(buf, cap, "%s/../%s", exe, INSTALLED_TOKENIZER);
  if (has_tokenizer(buf)) return buf;
  snprintf(err, err_cap,
           "cannot find the Qwen3 tokenizer files (tokenizer.json, "
           "tokenizer_config.json): looked in %s under the working directory, "
           "%s/../../%s and %s; run scripts/setup.sh in the repository (it "
           "installs them), or pass --tokenizer-dir DIR",
           TL_SYNTH_TOKENIZER_DIR, exe, TL_SYNTH_TOKENIZER_DIR, buf);
  return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

int tl_cmd_synth(int argc, char **argv) {
  bool json = false, have_seed = false;
  const char *config = NULL, *out = NULL, *v, *stray = NULL;
  char err[PATH_MAX * 3 + 512] = "", tok_dir[PATH_MAX + 64];
  uint64_t shards = 0;
  int rc;
  tl_synth_options o;
  memset(&o, 0, sizeof o);
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    rc = -1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "--separate-lm-head") == 0) {
      o.separate_lm_head = true;
    } else if (strcmp(a, "--embedding") == 0) {
      o.embedding = true;
    } else if (strcmp(a, "--publisher-eos") == 0) {
      o.publisher_eos = true;
    } else if (strcmp(a, "--config") == 0) {
      rc = tl_cli_value(json, argc, argv, &i, &config);
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      rc = tl_cli_output_value(json, argc, argv, &i, &out);
    } else if (strcmp(a, "--tokenizer-dir") == 0) {
      rc = tl_cli_value(json, argc, argv, &i, &o.tokenizer_dir);
    } else if (strcmp(a, "--seed") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) < 0)
        rc = tl_cli_flag_u64(json, a, v, 0, UINT64_MAX, &o.seed);
      have_seed = true;
    } else if (strcmp(a, "--shards") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) < 0)
        rc = tl_cli_flag_u64(json, a, v, 1, 1024, &shards);
      o.shards = (unsigned)shards;
    } else if (strcmp(a, "--dtype") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) >= 0) return rc;
      if (strcmp(v, "bf16") == 0)
        o.f32 = false;
      else if (strcmp(v, "f32") == 0)
        o.f32 = true;
      else
        return tl_cli_usage(json, "unknown --dtype '%s' (bf16 or f32)", v);
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    } else if (stray == NULL) {
      stray = a; /* reported after the flags, so a bad flag is named first */
    }
    if (rc >= 0) return rc;
  }
  if (stray != NULL)
    return tl_cli_usage(json, "unexpected '%s'\n%s", stray, usage_text);
  if (config == NULL || !have_seed || out == NULL)
    return tl_cli_usage(json, "--config, --seed and -o are required\n%s",
                        usage_text);
  if (o.embedding && o.separate_lm_head)
    return tl_cli_usage(json, "--embedding has no lm_head: --separate-lm-head does not apply");
  if (strcmp(config, "tiny") != 0 && strcmp(config, "qwen3-0.6b") != 0 &&
      !ends_with(config, ".json") && access(config, F_OK) != 0)
    return tl_cli_usage(json, "unknown preset '%s' (tiny, qwen3-0.6b, or a .json file)",
                        config);
  if (o.tokenizer_dir == NULL &&
      (o.tokenizer_dir = find_tokenizer(tok_dir, sizeof tok_dir, err, sizeof err)) == NULL)
    return tl_cli_fail(json, TL_ERR_IO, "%s", err);

  tl_status st = tl_synth_config_named(config, &o.config, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  tl_synth_report r;
  /* SIGINT, SIGTERM or SIGHUP stops the write, which removes what it
   * wrote (a rerun is not blocked by a partial directory); the process
   * then ends by that signal. */
  {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    o.stop = &stop_signal;
    for (size_t i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);
    st = tl_synth_write(out, &o, &r, err, sizeof err);
    for (size_t i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
  }
  if (stop_signal != 0) {
    tl_cli_exit_by_signal(stop_signal);
    if (st == TL_OK) return TL_EXIT_FAILURE; /* finished as the signal came */
  }
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  if (json) {
    json_t *doc = json_pack(
        "{s:s, s:s, s:I, s:s, s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:I}", "dir", out,
        "config", config, "seed", (json_int_t)o.seed, "dtype",
        o.f32 ? "f32" : "bf16", "shards", o.shards == 0 ? 1 : (int)o.shards,
        "separate_lm_head", o.separate_lm_head, "embedding", o.embedding, "publisher_eos",
        o.publisher_eos, "tensors",
        (json_int_t)r.n_tensors, "parameters", (json_int_t)r.n_parameters,
        "tensor_bytes", (json_int_t)r.tensor_bytes, "files",
        (json_int_t)r.n_files, "file_bytes", (json_int_t)r.file_bytes);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(doc);
  } else {
    printf(
        "%s: %zu tensors, %llu parameters, %llu tensor bytes, %zu files, "
        "%llu bytes\n",
        out, r.n_tensors, (unsigned long long)r.n_parameters,
        (unsigned long long)r.tensor_bytes, r.n_files,
        (unsigned long long)r.file_bytes);
  }
  return TL_EXIT_OK;
}
