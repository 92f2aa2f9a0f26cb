/* tinylm convert: a Hugging Face Qwen3 directory to one .slm artifact
 * (docs/slm.md §Model artifacts, docs/convert.md).
 *
 * Order of work, so that a refusal writes nothing: tokenizer and template
 * are compiled, the effective config is resolved (qwen3_config.h), the
 * checkpoint is opened and hashed (st_checkpoint.h), every source tensor is
 * bound to the tensor the config expects (conflict stops), every source
 * element is checked finite while its BLAKE3 is taken, and only then is the
 * artifact streamed to a temporary file, tensor by tensor, and renamed into
 * place; the provenance receipt follows it. */
#ifndef TL_TOOLS_CONVERT_H
#define TL_TOOLS_CONVERT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* The checkpoint directory's acquisition receipt (docs/acquisition.md), read
 * and verified by the host (tinylm convert reads HF_DIR's
 * acquisition.receipt.cbor when there is one): the converter binds every
 * input to its files, byte for byte, and records the source in the
 * artifact. The converter layer never reads receipts itself: the host is
 * above it (core <- tools <- native). */
typedef struct tl_convert_acquisition {
  uint8_t receipt_id[32];
  const json_t *source; /* endpoint, repo_id, requested_revision, resolved_commit */
  /* The receipt's entry for a file name ({"size", "sha256" as hex}), or NULL. */
  const json_t *(*file)(const void *ctx, const char *name);
  const void *ctx;
  const char *path; /* the receipt's file, for messages */
} tl_convert_acquisition;

typedef struct tl_convert_options {
  const char *hf_dir;
  const char *out_path;
  const char *receipt_path; /* NULL: out_path + ".receipt.cbor" */
  const char *quant;        /* "source" (NULL), "f32", "f16", "bf16", "q8", "q4" */
  /* q8/q4 weights in the fast lane's packed layout (SLM-11: dtype codes
   * q8p/q4p), which it computes on in the file mapping */
  bool packed;
  const char *profile;      /* NULL or a family profile with declared resolutions */
  const char *build_id;     /* goes into the receipt only */
  bool tokenizer_only;
  /* Only the checks that need no tensor data (config, tokenizer, template,
   * EOS sets, shapes from the safetensors headers, shards vs index): no
   * output, out_path may be NULL. tinylm pull runs these before it
   * declares a download complete. */
  bool check_only;
  /* Progress, when not NULL: called after each stored tensor is written,
   * with done of total tensors and bytes of the tensor data's bytes_total
   * (a CLI shows it; the bytes written do not depend on it). */
  void (*on_tensor)(void *ctx, size_t done, size_t total, uint64_t bytes,
                    uint64_t bytes_total);
  /* The steps before the first tensor is written (seconds on a 0.6B
   * checkpoint), when not NULL (not with check_only): each step once as
   * it starts, bytes 0 — "tokenizer" (the tokenizer's and chat template's
   * files read, hashed and compiled), "hashing" (the SHA-256 of the
   * safetensors files), "checking" (each source tensor's BLAKE3 and
   * finiteness: bytes_total the tensors' bytes, then after each tensor
   * with the bytes read so far), "writing" (on_tensor follows). */
  void (*on_step)(void *ctx, const char *step, uint64_t bytes, uint64_t bytes_total);
  void *progress_ctx;
  const tl_convert_acquisition *acquisition; /* NULL: the directory has none */
} tl_convert_options;

typedef struct tl_convert_report {
  uint8_t artifact_id[32];
  uint64_t artifact_bytes;
  uint32_t n_tokens, n_merges, n_added;
  size_t n_tensors;      /* stored */
  size_t n_ledger;       /* source tensors */
  size_t n_aliases;      /* source tensors stored as an alias */
  uint64_t source_bytes; /* of all safetensors files */
  /* On TL_ERR_CONFLICT: the record (deterministic CBOR {"conflict",
   * "field", "sources", "message"}); free with tl_convert_report_free. */
  uint8_t *conflict;
  size_t conflict_len;
} tl_convert_report;

/* Returns TL_OK with *report filled, or the typed failure with a readable
 * message in err: TL_ERR_IO, TL_ERR_INVALID_MODEL (malformed input),
 * TL_ERR_UNSUPPORTED_* (recognised but not implemented), TL_ERR_CONFLICT
 * (a conflict stop; report->conflict holds the record),
 * TL_ERR_NUMERICAL_FAILURE (a NaN/Inf weight or a cast that overflows),
 * TL_ERR_INVALID_ARGUMENT (options). No output file exists after a
 * failure. When hf_dir holds an acquisition receipt (tinylm pull), every
 * input must match it (TL_ERR_HASH_MISMATCH otherwise) and the artifact's
 * metadata names it (docs/acquisition.md §Binding). */
tl_status tl_convert(const tl_convert_options *opt, tl_convert_report *report,
                     char *err, size_t err_cap);
void tl_convert_report_free(tl_convert_report *report);

#endif
