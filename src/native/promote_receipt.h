/* tinylm promote's receipts (docs/promotion.md §Comparison receipts,
 * §Promotion receipts; docs/promotion-receipts.md): the writers of
 * tinylm.comparison/1 (one claim's verdict over its evidence) and
 * tinylm.promotion/1 (the decision over every claim), and the commands
 * `tinylm promote show` and `tinylm promote status` (promote_show.c).
 * receipt.c checks both formats wherever a receipt is read. */
#ifndef TL_NATIVE_PROMOTE_RECEIPT_H
#define TL_NATIVE_PROMOTE_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "promote.h"
#include "tinylm.h"

/* The runtime both receipts name: the same artifact and runtime nodes as
 * a run receipt of the same binary on the same lane (docs/receipts.md). */
typedef struct tl_promote_runtime {
  const uint8_t *artifact_id; /* 32 bytes: SHA-256 of the .slm */
  const char *build_id;       /* the executable's digest (tl_promote_build_id) */
  const char *backend;        /* the lane: "scalar" or "fast" */
  const char *numerical_profile; /* "scalar-f32/1" or "fast/4" */
} tl_promote_runtime;

/* One comparison receipt's facts. */
typedef struct tl_comparison_facts {
  tl_promote_runtime rt;
  const uint8_t *plan_id; /* 32 bytes: SHA-256 of the plan file */
  const char *claim;      /* the claim's name in the plan */
  const char *kind, *level, *oracle;
  const char *tolerance;        /* numerical: the profile's name; else NULL */
  const uint8_t *design_sha256; /* stochastic: the design's; else NULL */
  const tl_claim_result *result;
  uint32_t attempt; /* 1, or 2 after an infrastructure failure */
} tl_comparison_facts;

/* A claim as the promotion names it. */
typedef struct tl_promotion_claim {
  const char *claim;
  const uint8_t *receipt_id; /* its comparison receipt; NULL: it did not run */
  bool pass;                 /* the comparison's verdict */
  const char *stop_rule;     /* the comparison's; NULL when it passed */
} tl_promotion_claim;

typedef struct tl_promotion_facts {
  tl_promote_runtime rt;
  const uint8_t *plan_id;
  const char *lane;                 /* the plan's lane */
  const tl_promotion_claim *claims; /* every claim of the plan, in its order */
  size_t n_claims;
  const uint8_t *run_record; /* 32 bytes: the run record object */
} tl_promotion_facts;

/* The receipt file (deterministic CBOR, malloc'd) and its root id. The
 * writer computes nothing it is not given except the promotion's
 * decision (promoted exactly when every claim ran and passed), its
 * failing claims and its stop rules. Every receipt written is checked as
 * a reader checks it (tl_graph_receipt_check) before it is handed back:
 * facts the format cannot hold (a failed claim without a stop rule, a
 * tolerance on a mechanical claim, a kind outside the table, ...) are
 * TL_ERR_INVALID_ARGUMENT with err naming the field. */
tl_status tl_comparison_receipt(const tl_comparison_facts *f, uint8_t **doc, size_t *len,
                                uint8_t root[32], char *err, size_t err_cap);
tl_status tl_promotion_receipt(const tl_promotion_facts *f, uint8_t **doc, size_t *len,
                               uint8_t root[32], char *err, size_t err_cap);

/* A key's signature over a promotion (tinylm.signature/1, promote_sign.c
 * makes the signature): one node, its id the root. */
typedef struct tl_signature_facts {
  const uint8_t *signed_root; /* 32 bytes: the promotion receipt's root */
  const uint8_t *public_key;  /* 32 bytes: Ed25519 */
  const uint8_t *signature;   /* 64 bytes */
} tl_signature_facts;
tl_status tl_signature_receipt(const tl_signature_facts *f, uint8_t **doc, size_t *len,
                               uint8_t root[32], char *err, size_t err_cap);

/* tinylm promote show RECEIPT [--store DIR] [--public] [--json] */
int tl_promote_show_main(int argc, char **argv);
/* What `promote show` verifies, for show and for `tinylm report`: the
 * receipt at path (a promotion or a comparison; its store is store_dir, or
 * the one it sits in) and the evidence it names. 0 with *view (show's
 * --json object, the caller's) and *store (open, the caller's); else the
 * refusal was printed as show prints it and its exit code is returned.
 * trust (32 bytes, or NULL): a promotion must also carry a signature by
 * that public key that verifies (promote_sign.h). */
int tl_promote_verified_view(const char *path, const char *store_dir, bool json,
                             bool public_view, const uint8_t *trust, struct json_t **view,
                             tl_store **store);
/* --trust KEY.pub read into pub (0; nothing when path is NULL), else the
 * usage refusal printed and its exit code. */
int tl_promote_trust_key(bool json, const char *path, uint8_t pub[32]);

/* tinylm promote status --store DIR [--plan PLAN] [--artifact MODEL.slm] [--json] */
int tl_promote_status_main(int argc, char **argv);

#endif
