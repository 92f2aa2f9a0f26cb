/* tinylm convert: a Hugging Face directory to a .slm artifact (the work is
 * src/tools/convert.c; this file is the command line). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acquire.h"
#include "cbor_doc.h"
#include "cli.h"
#include "convert.h"
#include "file.h"

#ifndef TL_BUILD_ID
#define TL_BUILD_ID "unknown"
#endif

static const char usage_text[] =
    "usage: tinylm convert HF_DIR -o OUT.slm [--quant source|f32|f16|bf16|q8|q4]\n"
    "                      [--layout stored|packed] [--profile NAME] [--receipt FILE] [--tokenizer-only]\n"
    "                      [--force] [--progress] [--json]\n"
    "  HF_DIR holds config.json, generation_config.json (optional),\n"
    "  tokenizer.json, tokenizer_config.json and model.safetensors or\n"
    "  model.safetensors.index.json with its shards.\n"
    "  --quant     type of the 2-D weights (default source: each tensor's\n"
    "              own dtype, lossless); 1-D norm weights are always f32\n"
    "  --layout    q8/q4 weights packed (default): the fast lane's layout,\n"
    "              computed on in the file mapping with no copy and no\n"
    "              packing at start (docs/slm.md SLM-11a); or stored: the\n"
    "              blocks of docs/quant.md, which the fast lane packs at start\n"
    "  --profile   apply a family profile's declared resolutions\n"
    "              (qwen3-0.6b-publisher: the published EOS disagreement)\n"
    "  --receipt   where the provenance receipt goes (default OUT.slm.receipt.cbor)\n"
    "  --force     replace OUT.slm and the receipt if they exist (a file of\n"
    "              HF_DIR is never replaced)\n"
    "  --tokenizer-only  tokenizer and chat template only (no config, no weights)\n"
    "  --progress  tensors written, MB/s and ETA on stderr even when it is not\n"
    "              a terminal (on a terminal they are always shown)\n";

static void on_tensor(void *ctx, size_t done, size_t total, uint64_t bytes,
                      uint64_t bytes_total) {
  tl_cli_progress_update(ctx, "tensors", done, total, bytes, bytes_total);
}

/* The steps before the first tensor is written (seconds on a 0.6B
 * checkpoint): each said as it starts; the check of every source tensor
 * (BLAKE3, finite) as MB read with MB/s and ETA. */
static void on_step(void *ctx, const char *step, uint64_t bytes, uint64_t bytes_total) {
  tl_cli_progress *p = ctx;
  const char *what = strcmp(step, "tokenizer") == 0 ? "convert: reading the tokenizer and chat template"
                     : strcmp(step, "hashing") == 0 ? "convert: hashing the safetensors (SHA-256)"
                     : strcmp(step, "checking") == 0 ? "convert: checking the weights (BLAKE3, finite)"
                                                      : "convert";
  bool started = strcmp(p->what, what) != 0;
  tl_cli_progress_step(p, what);
  if (strcmp(step, "checking") == 0) {
    /* in whole MB, all of them only once every byte is read */
    uint64_t total = (bytes_total + 999999) / 1000000;
    uint64_t done = bytes >= bytes_total ? total : bytes / 1000000;
    if (bytes < bytes_total && done >= total) done = total - 1;
    tl_cli_progress_update(p, "MB", done, total, bytes, bytes_total);
  } else if (started) {
    fprintf(stderr, "%s[%s …]%s", p->tty ? "\r" : "",
            strcmp(step, "writing") == 0 ? "convert: converting and writing the tensors" : what,
            p->tty ? "\033[K" : "\n");
    fflush(stderr);
  }
}

static int report_conflict(bool json, const tl_convert_report *r,
                           const char *err) {
  json_t *extra = NULL;
  if (r->conflict != NULL) {
    json_t *record;
    char why[128];
    if (tl_cbor_to_json(r->conflict, r->conflict_len, &record, why,
                        sizeof why) == TL_OK) {
      extra = json_object();
      json_object_set_new(extra, "conflict", record);
    }
  }
  return tl_cli_fail_with(json, TL_ERR_CONFLICT, extra, "%s", err);
}

static const json_t *acquired_file(const void *ctx, const char *name) {
  return tl_acq_receipt_file(ctx, name);
}

/* HF_DIR's acquisition receipt, when tinylm pull wrote the directory: read
 * and verified here, bound to the inputs by the converter. 0 with *a set
 * (a->path NULL: there is none), else the failure was reported. */
static tl_status read_acquisition(const char *hf_dir, tl_acq_receipt *r,
                                  tl_convert_acquisition *a, char *path, size_t path_cap,
                                  char *err, size_t cap) {
  struct stat sb;
  tl_status st;
  memset(a, 0, sizeof *a);
  snprintf(path, path_cap, "%s/" TL_ACQ_RECEIPT_NAME, hf_dir);
  if (stat(path, &sb) != 0) return TL_OK;
  if ((st = tl_acq_receipt_read(path, r, err, cap)) != TL_OK) return st;
  memcpy(a->receipt_id, r->id, 32);
  a->source = r->source;
  a->file = acquired_file;
  a->ctx = r;
  a->path = path;
  return TL_OK;
}

int tl_cmd_convert(int argc, char **argv) {
  /* packed by default: the layout a user's conversion gets is the one
   * that starts without a copy or a pack (docs/convert.md) */
  tl_convert_options o = {.build_id = TL_BUILD_ID, .packed = true};
  tl_convert_report r;
  bool json = false, force = false, progress_forced = false;
  tl_cli_progress progress;
  char err[2048], id_hex[65], *receipt = NULL;
  tl_status st;
  int rc;

  /* freed on every path, also when the acquisition receipt is refused
   * before tl_convert fills it */
  memset(&r, 0, sizeof r);
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--tokenizer-only") == 0) {
      o.tokenizer_only = true;
    } else if (strcmp(a, "--force") == 0) {
      force = true;
    } else if (strcmp(a, "--progress") == 0) {
      progress_forced = true;
    } else if (strcmp(a, "-o") == 0) {
      int u = tl_cli_output_value(json, argc, argv, &i, &o.out_path);
      if (u >= 0) return u;
    } else if (strcmp(a, "--quant") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &o.quant);
      if (u >= 0) return u;
    } else if (strcmp(a, "--layout") == 0) {
      const char *v = NULL;
      int u = tl_cli_value(json, argc, argv, &i, &v);
      if (u >= 0) return u;
      if (strcmp(v, "packed") != 0 && strcmp(v, "stored") != 0)
        return tl_cli_usage(json, "unknown --layout '%s' (stored, packed)\n%s", v, usage_text);
      o.packed = strcmp(v, "packed") == 0;
    } else if (strcmp(a, "--profile") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &o.profile);
      if (u >= 0) return u;
    } else if (strcmp(a, "--receipt") == 0) {
      int u = tl_cli_output_value(json, argc, argv, &i, &o.receipt_path);
      if (u >= 0) return u;
    } else if (a[0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    } else if (o.hf_dir == NULL) {
      o.hf_dir = a;
    } else {
      return tl_cli_usage(json, "one HF_DIR only\n%s", usage_text);
    }
  }
  if (o.hf_dir == NULL || o.out_path == NULL)
    return tl_cli_usage(json, "HF_DIR and -o OUT.slm are required\n%s",
                        usage_text);
  if (o.tokenizer_only && (o.quant != NULL || o.profile != NULL))
    return tl_cli_usage(json, "--tokenizer-only takes no --quant/--profile\n%s",
                        usage_text);

  /* Both outputs, before any work: never a file of HF_DIR, never each
   * other, an existing file only with --force. */
  if (o.receipt_path == NULL) {
    receipt = malloc(strlen(o.out_path) + sizeof ".receipt.cbor");
    if (receipt == NULL) return tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
    sprintf(receipt, "%s.receipt.cbor", o.out_path);
  }
  {
    const char *inputs[] = {o.hf_dir, o.out_path};
    st = tl_file_output_check(o.out_path, inputs, 1, force, NULL, err, sizeof err);
    if (st == TL_OK)
      st = tl_file_output_check(receipt ? receipt : o.receipt_path, inputs, 2,
                                force, NULL, err, sizeof err);
    free(receipt);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  }
  tl_cli_progress_begin(&progress, "convert", progress_forced);
  if (progress.on) {
    o.on_tensor = on_tensor;
    o.on_step = on_step;
    o.progress_ctx = &progress;
  }
  {
    tl_acq_receipt acq;
    tl_convert_acquisition bound = {{0}, NULL, NULL, NULL, NULL};
    char acq_path[4096];
    memset(&acq, 0, sizeof acq);
    st = o.tokenizer_only ? TL_OK
                          : read_acquisition(o.hf_dir, &acq, &bound, acq_path, sizeof acq_path,
                                             err, sizeof err);
    if (st == TL_OK) {
      o.acquisition = !o.tokenizer_only && bound.path != NULL ? &bound : NULL;
      st = tl_convert(&o, &r, err, sizeof err);
    }
    tl_acq_receipt_free(&acq);
  }
  tl_cli_progress_end(&progress);
  if (st == TL_ERR_CONFLICT) {
    rc = report_conflict(json, &r, err);
  } else if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
  } else {
    tl_hex_encode(r.artifact_id, 32, id_hex);
    if (json && o.tokenizer_only)
      printf("{\"artifact_id\":\"%s\",\"bytes\":%llu,\"tokens\":%u,"
             "\"merges\":%u,\"added_tokens\":%u}\n",
             id_hex, (unsigned long long)r.artifact_bytes, r.n_tokens,
             r.n_merges, r.n_added);
    else if (json)
      printf("{\"artifact_id\":\"%s\",\"bytes\":%llu,\"tensors\":%zu,"
             "\"ledger_entries\":%zu,\"aliases\":%zu,\"quant\":\"%s\"}\n",
             id_hex, (unsigned long long)r.artifact_bytes, r.n_tensors,
             r.n_ledger, r.n_aliases, o.quant ? o.quant : "source");
    else if (o.tokenizer_only)
      printf("wrote %s (tokenizer and chat template only: %u tokens, %u "
             "merges, %u added)\nartifact id (sha256) %s\n",
             o.out_path, r.n_tokens, r.n_merges, r.n_added, id_hex);
    else
      printf("wrote %s (%llu bytes: %zu tensors from %zu source tensors, %zu "
             "stored as aliases; quant %s)\nartifact id (sha256) %s\n",
             o.out_path, (unsigned long long)r.artifact_bytes, r.n_tensors,
             r.n_ledger, r.n_aliases, o.quant ? o.quant : "source", id_hex);
    rc = TL_EXIT_OK;
  }
  tl_convert_report_free(&r);
  return rc;
}
