/* Run receipts (docs/receipts.md): the node graph of one generation and
 * the file that carries it, and the check `tinylm receipt show` makes. */
#ifndef TL_NATIVE_RECEIPT_H
#define TL_NATIVE_RECEIPT_H

#include <stddef.h>
#include <stdint.h>

#include "sample/sampler.h"
#include "slm/slm.h"
#include "tinylm.h"

typedef struct tl_run_facts {
  const uint8_t *artifact_id; /* 32 bytes */
  const tl_slm *slm;          /* tokenizer/template section digests */
  const char *build_id;
  const char *prompt_mode; /* "text" or "messages" */
  const uint8_t *prompt_bytes; /* the exact bytes tokenized */
  size_t prompt_len;
  const uint32_t *prompt_ids;
  size_t n_prompt;
  uint32_t position; /* where the prompt's first token sits in the cache */
  const tl_sampler_profile *profile;
  uint64_t seed;
  uint32_t turn;
  const uint32_t *ids; /* generated */
  size_t n_ids;
  const uint8_t *raw; /* their raw bytes */
  size_t raw_len;
  const char *stop;  /* tl_stop_reason_name */
  const char *error; /* NULL when the run succeeded */
  /* Not part of the identity. */
  uint64_t prefill_us, decode_us;
} tl_run_facts;

/* The receipt file (deterministic CBOR, malloc'd) and its root id. */
tl_status tl_run_receipt(const tl_run_facts *f, uint8_t **doc, size_t *len,
                         uint8_t root[32]);

/* Checks a receipt file: every node id recomputes from its type, metadata
 * and children, every child is a node of the file, the root is one.
 * TL_ERR_INVALID_CBOR / TL_ERR_INVALID_MODEL (malformed),
 * TL_ERR_HASH_MISMATCH (a node id does not recompute) with err saying
 * which. */
tl_status tl_receipt_check(const uint8_t *doc, size_t len, uint8_t root[32],
                           char *err, size_t err_cap);

#endif
