/* Acquisition (docs/acquisition.md): tinylm pull fetches a Hugging Face
 * model at an immutable commit into a new directory, verifying every
 * byte, and writes DIR/acquisition.receipt.cbor; tinylm drift re-resolves
 * the name later; tinylm convert binds the receipt into the artifact.
 *
 * The pull transaction, in order: the repository id and revision are
 * checked; the revision is resolved to a full commit (model info); the
 * tree at that commit is listed (all pages) and checked against the Qwen3
 * allowlist and the limits, refusing by name before any file is fetched;
 * each file streams to DIR.partial/NAME.part while it is hashed (SHA-256,
 * and the Git blob id for files not in LFS) and must match the tree and
 * the response headers; the license is decided; the converter's checks
 * that need no tensor data run; the revision is resolved again (drift is
 * recorded, the files stay); the receipt is written and DIR.partial is
 * renamed to DIR. DIR appears complete or not at all. */
#ifndef TL_NATIVE_ACQUIRE_H
#define TL_NATIVE_ACQUIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tinylm.h"

#define TL_ACQ_RECEIPT_NAME "acquisition.receipt.cbor"
#define TL_ACQ_DEFAULT_ENDPOINT "https://huggingface.co"
#define TL_ACQ_FORMAT "tinylm.acquisition/1"
#define TL_DRIFT_FORMAT "tinylm.drift/1"

typedef struct tl_acq_limits {
  uint64_t max_files;       /* entries in the tree (files and directories) */
  uint64_t max_file_bytes;  /* any one file */
  uint64_t max_total_bytes; /* all files */
} tl_acq_limits;

/* The Qwen3 layout is flat: a path with a '/' is nested too deep. */
#define TL_ACQ_MAX_DEPTH 1

/* How pull and drift reach the Hub, and who they are. */
typedef struct tl_acq_net {
  const char
      *endpoint;     /* no trailing '/' needed; NULL: the default. drift
                        never asks the receipt's endpoint: it must equal
                        this one */
  const char *token; /* NULL: anonymous; never printed or recorded */
  const char *build_id;
  long timeout_s;
  int max_redirects;
} tl_acq_net;

typedef struct tl_pull_options {
  tl_acq_net net;
  const char *repo_id;
  const char *revision; /* NULL: "main" */
  const char *out_dir;
  const char *profile; /* NULL, or a converter profile for its checks */
  tl_acq_limits limits;
  bool accept_missing_license;
  bool progress; /* a progress line even when stderr is not a terminal */
  /* DIR may hold an earlier pull of repo_id (its verified receipt and
   * nothing else): the new revision (default: the one that pull asked
   * for) is staged as always and swapped with DIR in one step; files both
   * revisions share are taken from DIR (verified again), not fetched. A
   * DIR that does not exist is a plain pull. */
  bool update;
} tl_pull_options;

typedef struct tl_pull_report {
  char commit[41];       /* the revision resolved before fetching */
  char final_commit[41]; /* resolved again at the end */
  bool drifted;
  uint8_t receipt_id[32];
  size_t n_files, n_reused; /* reused: verified files a rerun kept */
  uint64_t bytes_total, bytes_fetched;
  char license[72]; /* "" when none was declared */
  /* --update: the commit DIR held ("" when DIR did not exist); up_to_date:
   * the revision still resolves to it, and nothing was changed. */
  char previous_commit[41];
  char revision[256]; /* the revision pulled (asked, DIR's, or main) */
  bool up_to_date;
  /* --update: a note for the user when the replaced directory could not
   * be removed whole ("" otherwise). */
  char note[1100];
  /* A failure a rerun may get past (a dropped connection, a timeout, 429,
   * 5xx); kept_partial: and DIR.partial was kept (it existed by then), its
   * files to be re-verified on the rerun. */
  bool transient, kept_partial;
  /* On TL_ERR_CONFLICT: the record (conflict.h); free with
   * tl_pull_report_free. */
  uint8_t *conflict;
  size_t conflict_len;
} tl_pull_report;

void tl_acq_default_limits(tl_acq_limits *l);

/* TL_ERR_INVALID_ARGUMENT: a bad repository id, revision, endpoint or an
 * existing non-empty DIR (with update: a DIR holding another repository or
 * files its receipt does not name; TL_ERR_NOT_FOUND: no receipt in it); TL_ERR_IO: HTTP and transport failures (HTTP
 * status, timeout, dropped connection, redirect loop, a non-JSON answer);
 * TL_ERR_INVALID_MODEL: the tree or a file is refused (allowlist, symlink,
 * unsafe path, LFS pointer as content, missing license);
 * TL_ERR_BOUNDS: a limit; TL_ERR_HASH_MISMATCH: a file's bytes differ from
 * the tree; TL_ERR_CONFLICT: the repository changed during the transaction
 * (a header disagrees with the tree) or a converter conflict stop, with the
 * record in report->conflict. */
tl_status tl_pull(const tl_pull_options *o, tl_pull_report *report, char *err,
                  size_t cap);
void tl_pull_report_free(tl_pull_report *r);

/* An acquisition receipt read back and verified (every node id
 * recomputes; the root is an "acquisition" node). */
typedef struct tl_acq_receipt {
  uint8_t id[32];
  json_t *doc;    /* the file as JSON (byte strings as hex) */
  json_t *source; /* the source node's metadata: endpoint, repo_id,
                     requested_revision, resolved_commit */
  json_t *files;  /* [{path, size, sha256, git_oid, lfs_oid}] */
} tl_acq_receipt;

/* Verifies a receipt file of the given format (TL_ACQ_FORMAT or
 * TL_DRIFT_FORMAT) with the strict check of run receipts
 * (tl_graph_receipt_check: every field of the format present and typed,
 * nothing else, every id recomputes, the graph exactly as the writer
 * writes it). *out gets the document as JSON, every field the format
 * defines there with its type. TL_ERR_INVALID_CBOR, TL_ERR_INVALID_ARGUMENT
 * (a field unknown, missing, mistyped or out of place; not that format),
 * TL_ERR_HASH_MISMATCH (a node does not hash to its id). */
tl_status tl_acq_graph_verify(const uint8_t *doc, size_t len,
                              const char *format, uint8_t root[32],
                              json_t **out, char *err, size_t cap);

/* tinylm receipt show for TL_ACQ_FORMAT and TL_DRIFT_FORMAT documents:
 * *shown is false (and nothing happens) for any other document; otherwise
 * the document is verified (tl_acq_graph_verify) and printed to out as
 * JSON (with "verified": true) or as text. */
tl_status tl_acq_show(const uint8_t *doc, size_t len, bool json, FILE *out,
                      bool *shown, char *err, size_t cap);

tl_status tl_acq_receipt_read(const char *path, tl_acq_receipt *r, char *err,
                              size_t cap);
/* The entry for path, or NULL. */
const json_t *tl_acq_receipt_file(const tl_acq_receipt *r, const char *path);
void tl_acq_receipt_free(tl_acq_receipt *r);

typedef struct tl_drift_options {
  tl_acq_net net;
  const char *dir;
  const char *out_path; /* the observation receipt */
} tl_drift_options;

typedef struct tl_drift_report {
  char commit[41], now[41];
  bool moved;
  json_t *changed, *added, *removed; /* arrays of paths */
  uint8_t receipt_id[32];
} tl_drift_report;

/* Re-resolves the acquisition's requested revision; when it moved, lists
 * the tree at the new commit and compares it with the receipt. Writes the
 * observation receipt to out_path; DIR is only read. */
tl_status tl_drift(const tl_drift_options *o, tl_drift_report *report,
                   char *err, size_t cap);
void tl_drift_report_free(tl_drift_report *r);

/* Checks used by pull and its tests. */
bool tl_acq_valid_repo_id(const char *s);
bool tl_acq_valid_revision(const char *s);
/* NULL when path is a safe relative path of at most TL_ACQ_MAX_DEPTH
 * components, else why not. */
const char *tl_acq_path_problem(const char *path);
/* NULL when the Qwen3 allowlist admits path, else why not. */
const char *tl_acq_allowlist_problem(const char *path);

#endif
