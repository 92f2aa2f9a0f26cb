/* Opening a .slm artifact on the native host: map the file, validate the
 * container and the tensor directory (every section and tensor digest,
 * unless a verified stamp says this unchanged file passed them: stamp.h),
 * load the sections the command needs into one arena. */
#ifndef TL_NATIVE_MODEL_H
#define TL_NATIVE_MODEL_H

#include "arena.h"
#include "constrain.h"
#include "file.h"
#include "slm/slm.h"
#include "slm/tensors.h"
#include "stamp.h"
#include "tmpl/tmpl_section.h"
#include "tok/tokenizer.h"

typedef struct tl_native_model {
  tl_file_view view;
  tl_slm slm;
  tl_slm_artifact_kind kind;
  void *arena_mem;
  tl_arena arena;
  const tl_tokenizer *tok;
  bool has_template;
  tl_tmpl_section tmpl;
  bool has_tensors; /* a model artifact (not tokenizer-only) */
  tl_slm_tensors tensors;
  /* A mapped file (tl_native_model_open of a regular file): kept open,
   * with what fstat said at the open, so tl_native_model_changed can tell
   * a file truncated or rewritten in place; guard: its slot in the SIGBUS
   * registry (-1: none). */
  int fd;
  int guard;
  /* The vocabulary trie of its grammars (constrain.h): made at the open,
   * built on first use, shared by every shallow copy (sessions, slots). */
  tl_grammar_vocab_cell *grammar_vocab;
  bool has_artifact_id; /* the file's SHA-256, once computed (or stamped) */
  uint8_t artifact_id[32];
  tl_stamp_key key; /* fstat of fd at the open */
  /* A verified stamp (stamp.h) matched at the open: the digests were not
   * hashed again; false: every digest was checked. */
  bool stamped;
  /* With stamped: a codes stamp says this file's q8/q4 codes passed Q-17
   * (tl_native_model_codes_valid), so the lane need not check them again. */
  bool codes_valid;
} tl_native_model;

/* Why tl_slm_open refused file (status st at byte at), for err: "PATH:
 * truncated: N of M bytes" when the header declares more bytes than the
 * file has (or the file ends inside the header), else "PATH: not a valid
 * .slm artifact (STATUS at byte AT)". */
void tl_native_slm_error(const char *path, const uint8_t *file, size_t len,
                         tl_status st, size_t at, char *err, size_t err_cap);

/* When path, which did not open as a file, is a Hugging Face checkpoint
 * directory (it holds config.json): err says to convert it first. */
void tl_native_open_hint(const char *path, char *err, size_t err_cap);

/* Opens path and loads its tokenizer and (when present) chat template. On
 * failure everything is released and err names the path and the reason.
 * A regular file is mapped: every page but those of the tensor data
 * section is made private to the process (copied) once the open has
 * verified it, so the tokenizer, template, metadata and tensor directory
 * never depend on the file again; the tensor data is copied by the lane
 * (tl_native_lane_copy) unless --mmap computes on the mapping, which
 * tl_native_model_changed watches. A file that changes while it is being
 * opened is refused (TL_ERR_IO). */
tl_status tl_native_model_open(const char *path, tl_native_model *m, char *err,
                               size_t err_cap);
/* The same over bytes already in memory (the public API's models): name
 * stands for the path in err. take: data is malloc'd and the model frees
 * it on close (also when the open fails); otherwise the caller keeps the
 * bytes unchanged until after tl_native_model_close. */
tl_status tl_native_model_open_bytes(const uint8_t *data, size_t len, bool take,
                                     const char *name, tl_native_model *m,
                                     char *err, size_t err_cap);
void tl_native_model_close(tl_native_model *m);

/* Whether the file of a mapped model changed since it was opened: a page
 * of the mapping faulted because the file was truncated (SIGBUS: the page
 * reads as zeros from then on and the model stays changed), or fstat
 * gives another size, mtime or ctime (a rewrite in place). Always false
 * for a model read into memory. Callers check it before and after every
 * use of the model and refuse with TL_ERR_IO, "PATH changed while in
 * use": what was computed from a changed mapping is never reported. */
bool tl_native_model_changed(const tl_native_model *m);

/* Records that m's q8/q4 codes passed Q-17 (the lane validated every one)
 * in a codes stamp beside its verified stamp, when m is a file unchanged
 * since the open; nothing otherwise (best effort, stamp.h). */
void tl_native_model_codes_valid(const tl_native_model *m);
/* The artifact id: the SHA-256 of the file's bytes (of the bytes for a
 * model opened from memory), computed once; TL_ERR_IO when the file
 * changed meanwhile (tl_native_model_changed). */
tl_status tl_native_model_artifact_id(tl_native_model *m, uint8_t id[32]);
/* The same for the model behind a public API handle (api.c; false for a
 * handle that is not a live model): chat stops when it is true. */
bool tl_api_model_changed(uint32_t model);
/* The longest context a session of the model behind a public API handle
 * may plan (max_position_embeddings); the error is recorded on the handle
 * (tl_error_detail) as for tl_model_preflight. */
tl_status tl_api_model_max_context(uint32_t model, uint32_t *out);

#endif
