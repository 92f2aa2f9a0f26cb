/* Read-only access to whole files for the native host: mmap for regular
 * files, a streamed read for pipes and stdin ("-"). The core only ever sees
 * (const uint8_t *, size_t). */
#ifndef TL_NATIVE_FILE_H
#define TL_NATIVE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_file_view {
  const uint8_t *data;
  size_t len;
  void *mapping;   /* non-NULL when data is an mmap */
  uint8_t *buffer; /* non-NULL when data was read into memory */
} tl_file_view;

/* On failure returns TL_ERR_IO (or TL_ERR_OUT_OF_MEMORY) and writes a
 * readable reason, naming the path, to err. */
tl_status tl_file_open_view(const char *path, tl_file_view *view, char *err,
                            size_t err_cap);
void tl_file_close_view(tl_file_view *view);

/* Writes data to path atomically: a temporary file in the same directory,
 * fsync, then rename over path. On failure nothing is left behind and path
 * is untouched (TL_ERR_IO with a reason in err). */
tl_status tl_file_write_atomic(const char *path, const void *data, size_t len,
                               char *err, size_t err_cap);

/* The same, for a file written piece by piece: begin creates the temporary
 * file, pwrite writes at any offset (unwritten gaps read as zeros), commit
 * fsyncs and renames into place, abort removes the temporary file. Every
 * failure of pwrite/commit leaves the caller to call abort (commit aborts
 * by itself). */
typedef struct tl_file_atomic {
  const char *path; /* destination (the caller's string) */
  char *tmp;        /* temporary path (malloc) */
  int fd;
} tl_file_atomic;

tl_status tl_file_atomic_begin(tl_file_atomic *f, const char *path,
                               char *err, size_t err_cap);
tl_status tl_file_atomic_pwrite(tl_file_atomic *f, uint64_t offset,
                                const void *data, size_t len, char *err,
                                size_t err_cap);
tl_status tl_file_atomic_commit(tl_file_atomic *f, char *err, size_t err_cap);
void tl_file_atomic_abort(tl_file_atomic *f);

/* Drops the pages under data[0..len) of a mapped view from the resident
 * set once a pass over them is done (no-op for a buffered view). */
void tl_file_release(const tl_file_view *view, const void *data, size_t len);

/* SHA-256 of a view's bytes, releasing each slice after hashing it. */
tl_status tl_file_sha256(const tl_file_view *view, uint8_t digest[32]);

#endif
