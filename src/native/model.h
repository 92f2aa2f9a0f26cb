/* Opening a .slm artifact on the native host: map the file, validate the
 * container and the tensor directory (eager: every section and tensor
 * digest), load the sections the command needs into one arena. */
#ifndef TL_NATIVE_MODEL_H
#define TL_NATIVE_MODEL_H

#include "arena.h"
#include "file.h"
#include "slm/slm.h"
#include "slm/tensors.h"
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
} tl_native_model;

/* Why tl_slm_open refused file (status st at byte at), for err: "PATH:
 * truncated: N of M bytes" when the header declares more bytes than the
 * file has (or the file ends inside the header), else "PATH: not a valid
 * .slm artifact (STATUS at byte AT)". */
void tl_native_slm_error(const char *path, const uint8_t *file, size_t len,
                         tl_status st, size_t at, char *err, size_t err_cap);

/* Opens path and loads its tokenizer and (when present) chat template. On
 * failure everything is released and err names the path and the reason. */
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

#endif
