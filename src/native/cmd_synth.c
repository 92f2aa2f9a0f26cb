/* tinylm synth: a synthetic Qwen3 checkpoint directory with deterministic
 * weights (docs/synth.md). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "synth.h"

static const char usage_text[] =
    "usage: tinylm synth --config tiny|qwen3-0.6b|FILE.json --seed N -o DIR\n"
    "                    [--dtype bf16|f32] [--shards K] [--separate-lm-head]\n"
    "                    [--tokenizer-dir DIR] [--json]\n"
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
    "  --tokenizer-dir     source of tokenizer.json and "
    "tokenizer_config.json\n"
    "                      (default " TL_SYNTH_TOKENIZER_DIR ")\n";

static bool parse_u64(const char *s, uint64_t *out) {
  if (s[0] < '0' || s[0] > '9') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *out = (uint64_t)v;
  return true;
}

int tl_cmd_synth(int argc, char **argv) {
  bool json = false, have_seed = false;
  const char *config = NULL, *out = NULL;
  tl_synth_options o;
  memset(&o, 0, sizeof o);
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--json") == 0) json = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
    } else if (strcmp(a, "--separate-lm-head") == 0) {
      o.separate_lm_head = true;
    } else if (strcmp(a, "--config") == 0 && has_val) {
      config = argv[++i];
    } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) &&
               has_val) {
      out = argv[++i];
    } else if (strcmp(a, "--tokenizer-dir") == 0 && has_val) {
      o.tokenizer_dir = argv[++i];
    } else if (strcmp(a, "--seed") == 0 && has_val) {
      if (!parse_u64(argv[++i], &o.seed))
        return tl_cli_usage(json, "--seed must be 0..2^64-1, got '%s'",
                            argv[i]);
      have_seed = true;
    } else if (strcmp(a, "--shards") == 0 && has_val) {
      uint64_t k;
      if (!parse_u64(argv[++i], &k) || k == 0 || k > 1024)
        return tl_cli_usage(json, "--shards must be 1..1024, got '%s'",
                            argv[i]);
      o.shards = (unsigned)k;
    } else if (strcmp(a, "--dtype") == 0 && has_val) {
      const char *d = argv[++i];
      if (strcmp(d, "bf16") == 0)
        o.f32 = false;
      else if (strcmp(d, "f32") == 0)
        o.f32 = true;
      else
        return tl_cli_usage(json, "unknown --dtype '%s' (bf16 or f32)", d);
    } else {
      return tl_cli_usage(json, "unknown or incomplete option '%s'\n%s", a,
                          usage_text);
    }
  }
  if (config == NULL || !have_seed || out == NULL)
    return tl_cli_usage(json, "--config, --seed and -o are required\n%s",
                        usage_text);

  char err[512] = "";
  tl_status st = tl_synth_config_named(config, &o.config, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  tl_synth_report r;
  st = tl_synth_write(out, &o, &r, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  if (json) {
    json_t *doc = json_pack(
        "{s:s, s:s, s:I, s:s, s:i, s:b, s:I, s:I, s:I, s:I, s:I}", "dir", out,
        "config", config, "seed", (json_int_t)o.seed, "dtype",
        o.f32 ? "f32" : "bf16", "shards", o.shards == 0 ? 1 : (int)o.shards,
        "separate_lm_head", o.separate_lm_head, "tensors",
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
