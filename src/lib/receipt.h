/* Run receipts (docs/receipts.md): the node graph of one generation and
 * the file that carries it, and the check `tinylm receipt show` makes
 * (of run receipts and of the converter's). */
#ifndef TL_NATIVE_RECEIPT_H
#define TL_NATIVE_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cbor/cbor.h"
#include "sample/sampler.h"
#include "slm/slm.h"
#include "tinylm.h"

typedef struct tl_run_facts {
  const uint8_t *artifact_id; /* 32 bytes */
  const tl_slm *slm;          /* tokenizer/template section digests */
  const char *build_id;
  const char *prompt_mode; /* "text" or "messages" */
  /* messages: whether the template was asked for the generation prompt
   * (run and chat default to yes, the conversation file may say no);
   * text: false, nothing is added to a plain prompt. */
  bool add_generation_prompt;
  const uint8_t *prompt_bytes; /* the exact bytes tokenized */
  size_t prompt_len;
  const uint32_t *prompt_ids;
  size_t n_prompt;
  uint32_t position; /* where the prompt's first token sits in the cache */
  const tl_sampler_profile *profile;
  uint64_t seed;
  uint32_t turn;
  /* A constrained generation (docs/structured.md): the grammar's digest
   * (tl_grammar_digest, 32 bytes) and the think budget that applied, in the
   * sampler node; NULL: free text, neither field (the node as before). */
  const uint8_t *grammar_digest;
  uint32_t think_budget;
  const uint32_t *ids; /* generated */
  size_t n_ids;
  const uint8_t *raw; /* their raw bytes */
  size_t raw_len;
  const char *stop;  /* tl_stop_reason_name */
  const char *error; /* NULL when the run succeeded */
  /* The stopping policy (part of the identity even when it did not fire). */
  uint32_t max_new;
  const uint8_t *const *stops; /* stop strings (bytes) */
  const size_t *stop_lens;
  size_t n_stops;
  /* Not part of the identity. */
  uint64_t prefill_us, decode_us;
  /* The kernel variant and thread count that ran ("execution" in the file,
   * outside the identity: they cannot change a bit, docs/fast-profile.md
   * F-10); isa NULL: the file has no "execution". */
  const char *isa;
  uint32_t threads;
  /* How the model's digests were checked at its open, "full" or "stamp"
   * (a verified stamp: docs/architecture.md), in the same record; NULL:
   * not written. */
  const char *verify;
  /* The lane (part of the identity): NULL gives "scalar" /
   * "scalar-f32/1". */
  const char *backend, *numerical_profile;
} tl_run_facts;

/* The artifact and runtime nodes' metadata, shared by every receipt that
 * names them (run, comparison, promotion), so one artifact on one build
 * and lane has one node id everywhere. */
void tl_receipt_put_artifact(tl_cbor_writer *w, const uint8_t artifact_id[32]);
void tl_receipt_put_runtime(tl_cbor_writer *w, const char *backend, const char *build_id,
                            const char *numerical_profile);

/* The receipt file (deterministic CBOR, malloc'd) and its root id. */
tl_status tl_run_receipt(const tl_run_facts *f, uint8_t **doc, size_t *len,
                         uint8_t root[32]);

/* tinylm promote's receipts (docs/promotion.md; written by
 * promote_receipt.c, checked here). */
#define TL_COMPARISON_FORMAT "tinylm.comparison/1"
#define TL_PROMOTION_FORMAT "tinylm.promotion/1"
/* A signature over a promotion's root (tinylm promote --sign). */
#define TL_SIGNATURE_FORMAT "tinylm.signature/1"

/* The claim kinds of docs/promotion.md and the level each belongs to: the
 * one list the receipt check (here), the plan reader and the table of
 * runners and judges (src/native/promote_kinds.c) expand, X(kind, level).
 * A new kind is one line here and its runner tl_claim_KIND and judge
 * tl_judge_KIND in src/native. */
#define TL_CLAIM_KINDS(X)                                                        \
  X(artifact, mechanical)                                                        \
  X(source_binding, mechanical)                                                  \
  X(independent_reader, mechanical)                                              \
  X(tokenizer, mechanical)                                                       \
  X(template, mechanical)                                                        \
  X(eos, mechanical)                                                             \
  X(sampler, mechanical)                                                         \
  X(forward, numerical)                                                          \
  X(greedy, numerical)                                                           \
  X(replay, numerical)                                                           \
  X(multiturn, multiturn)                                                        \
  X(stochastic, stochastic)

typedef enum tl_receipt_kind {
  TL_RECEIPT_RUN,        /* tinylm.receipt/1: a hash graph under root */
  TL_RECEIPT_CONVERT,    /* tinylm.convert/1: a record, nothing to verify */
  TL_RECEIPT_CAPABILITY, /* tinylm.capability-receipt/1 (the browser loader's):
                            one node, its id the root */
  TL_RECEIPT_COMPARISON, /* tinylm.comparison/1: one claim's verdict */
  TL_RECEIPT_PROMOTION,  /* tinylm.promotion/1: the decision over the claims */
  TL_RECEIPT_SIGNATURE   /* tinylm.signature/1: a key's signature over a promotion */
} tl_receipt_kind;

/* Checks a receipt file and says which kind it is. A run receipt is
 * verified: every node id recomputes from its type, metadata and children;
 * the nodes are exactly the graph under the root, each once, children
 * first; and every field of the file, of each node and of each node type's
 * metadata is one the format defines, with its type (text never holds
 * U+0000), so that nothing it shows lies outside the root id except
 * timings_us (strictly typed, its token counts equal to the prompt's and
 * the generation's ids) and the optional execution record (isa, threads;
 * strictly typed). root gets the root id. A capability receipt
 * (web/tinylm.js) is verified likewise: its one capability node's id
 * recomputes and is the root, its metadata exactly its schema. A converter
 * receipt is only checked against its schema (root is zeroed). Errors, with err
 * naming the field: TL_ERR_INVALID_CBOR (not deterministic CBOR),
 * TL_ERR_INVALID_ARGUMENT (a field unknown, missing, mistyped or out of
 * place), TL_ERR_HASH_MISMATCH (a node id does not recompute). */
tl_status tl_receipt_check(const uint8_t *doc, size_t len, tl_receipt_kind *kind,
                           uint8_t root[32], char *err, size_t err_cap);

/* The same strict check for the acquisition (tinylm.acquisition/1, tinylm
 * pull), drift observation (tinylm.drift/1, tinylm drift), comparison and
 * promotion (TL_COMPARISON_FORMAT, TL_PROMOTION_FORMAT: tinylm promote)
 * receipts, whose format the reader names: every field of the file, of
 * each node and of each node type's metadata is one the format defines,
 * with its type; every node id recomputes; the nodes are exactly the graph
 * under the root, each once, children first, the root of the format's
 * root type; timings_us (outside the identity; acquisition and drift
 * only) strictly typed. Comparison and promotion receipts must also say
 * what is consistent (docs/promotion-receipts.md): a verdict pass or fail
 * with a known stop rule exactly when it failed, a claim kind's own level,
 * and a promotion's decision, failing claims and stop rules exactly those
 * of its comparisons (invalid_argument naming the field otherwise). Same
 * errors as tl_receipt_check, which also takes comparison and promotion
 * receipts (by their format). */
tl_status tl_graph_receipt_check(const uint8_t *doc, size_t len,
                                 const char *format, uint8_t root[32],
                                 char *err, size_t err_cap);

/* A node of a graph receipt for tl_graph_receipt_encode. */
typedef struct tl_graph_node {
  const char *type;
  const uint8_t *meta; /* one deterministic CBOR item */
  size_t meta_len;
  size_t kids[8]; /* indexes of earlier nodes (children come first) */
  size_t n_kids;
  uint8_t id[32]; /* set by tl_graph_receipt_encode */
} tl_graph_node;

/* Seals nodes[0..n) in order (each id from its type, metadata and
 * children's ids) and encodes {"root", "nodes", "format"} and, when
 * timings_us is not NULL, "timings_us": that one CBOR item, outside the
 * nodes (deterministic CBOR, malloc'd), the last node the root. Every
 * graph receipt is written here (run receipts through tl_run_receipt).
 * The caller checks the document against its format
 * (tl_graph_receipt_check). TL_ERR_INVALID_ARGUMENT for a child that is
 * not an earlier node, or the encoder's status. */
tl_status tl_graph_receipt_encode(const char *format, tl_graph_node *nodes, size_t n,
                                  const uint8_t *timings_us, size_t timings_len,
                                  uint8_t **doc, size_t *len, uint8_t root[32]);

/* `tinylm receipt show`: checks doc (tl_receipt_check) and prints it to
 * out, as JSON (the document with "verified" and, for a run receipt,
 * "unverified": the fields outside the root id) or as text (sampler
 * parameters as decimals, the timings marked unverified). Any failure is
 * the check's or cbor_doc's typed status with err saying what; nothing is
 * printed then. */
tl_status tl_receipt_show(const uint8_t *doc, size_t len, bool json, FILE *out,
                          char *err, size_t err_cap);

#endif
