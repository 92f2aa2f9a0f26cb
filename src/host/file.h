/* Files for the native host. Inputs: read-only views of whole files, mmap
 * for regular files, a bounded streamed read for pipes and stdin ("-"); the
 * core only ever sees (const uint8_t *, size_t). Outputs: atomic writes
 * (temporary file + rename) that never replace an input, replace an
 * existing file only when asked, keep its permissions, and leave no
 * temporary file behind on an error or on SIGINT/SIGTERM/SIGHUP. */
#ifndef TL_NATIVE_FILE_H
#define TL_NATIVE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_file_view {
  const uint8_t *data;
  size_t len;
  void *mapping;   /* non-NULL when data is an mmap */
  uint8_t *buffer; /* non-NULL when data was read into memory */
} tl_file_view;

/* Most bytes read from a stream (stdin, a pipe, a character device), which
 * has no size to check before reading: 1 GiB. */
#define TL_FILE_STREAM_MAX ((size_t)1 << 30)

/* A regular file (mapped), or "-" (stdin), a pipe or a character device
 * (read, at most TL_FILE_STREAM_MAX bytes, else TL_ERR_BOUNDS). Opening
 * never blocks on a FIFO without a writer. Directories, sockets and block
 * devices are refused. On failure returns TL_ERR_IO (or
 * TL_ERR_OUT_OF_MEMORY, TL_ERR_BOUNDS) and writes a readable reason,
 * naming the path, to err. */
tl_status tl_file_open_view(const char *path, tl_file_view *view, char *err,
                            size_t err_cap);
/* The same for inputs whose size must be known before reading (checkpoint
 * shards and index, converter inputs): anything but a regular file
 * (symlinks followed), stdin included, is TL_ERR_IO. */
tl_status tl_file_open_regular(const char *path, tl_file_view *view, char *err,
                               size_t err_cap);
/* The regular file `name` in the directory open as dirfd, never through a
 * symbolic link (O_NOFOLLOW); shown names it in messages. TL_ERR_NOT_FOUND
 * when it does not exist, else as tl_file_open_regular. */
tl_status tl_file_open_regular_at(int dirfd, const char *name, const char *shown,
                                  tl_file_view *view, char *err, size_t err_cap);
void tl_file_close_view(tl_file_view *view);

/* Whether a command may write path (call it before doing the work).
 * Refused (TL_ERR_INVALID_ARGUMENT, with the reason in err):
 *   - path names the same file as an input (device and inode after
 *     following links, so a symlink or hard link to an input counts; for
 *     names that do not exist yet, the same resolved path), even with
 *     force; an input that is a directory stands for every entry in it;
 *   - path exists and is a directory or not a regular file (or a link);
 *   - path exists, this process did not write it, and force is false
 *     (force_hint names the option in the message; NULL: "--force");
 *   - "-" (standard output is never a file name here; see
 *     tl_cli_output_name).
 * A path that does not exist yet must be creatable: its directory exists
 * and this process may write it (else TL_ERR_IO, found before any work).
 * Inputs that are NULL or "-" are skipped. TL_ERR_IO when path cannot be
 * examined. */
tl_status tl_file_output_check(const char *path, const char *const *inputs,
                               size_t n_inputs, bool force,
                               const char *force_hint, char *err,
                               size_t err_cap);

/* Writes data to path atomically: a temporary file in the same directory,
 * fsync, then rename over path. Only where tl_file_output_check was given
 * force for path, or path is a file this process wrote, is an existing
 * file replaced; otherwise the file is published without replacing
 * (renameat2 RENAME_NOREPLACE, else link + unlink): when path appeared
 * meanwhile (two writers racing to one new name), the later one fails
 * with TL_ERR_INVALID_ARGUMENT, "exists", and the first one's file stays. On failure nothing is left behind and path
 * is untouched (TL_ERR_IO with a reason in err). A replaced file keeps its
 * permission bits; a new one gets 0666 less the umask. The temporary file
 * is removed if the process dies of SIGINT, SIGTERM or SIGHUP while it
 * exists (when the program has not installed its own handler for that
 * signal); the exit status still reports the signal. */
tl_status tl_file_write_atomic(const char *path, const void *data, size_t len,
                               char *err, size_t err_cap);

/* The same, for a file written piece by piece: begin creates the temporary
 * file, pwrite writes at any offset (unwritten gaps read as zeros), commit
 * fsyncs and renames into place, abort removes the temporary file. Every
 * failure of pwrite/commit leaves the caller to call abort (commit aborts
 * by itself). */
typedef struct tl_file_atomic {
  const char *path; /* destination (the caller's string) */
  char *tmp;        /* temporary path (malloc), relative to dirfd */
  int fd, dirfd;    /* dirfd: AT_FDCWD, or begin_at's directory */
} tl_file_atomic;

tl_status tl_file_atomic_begin(tl_file_atomic *f, const char *path, char *err,
                               size_t err_cap);
tl_status tl_file_atomic_pwrite(tl_file_atomic *f, uint64_t offset,
                                const void *data, size_t len, char *err,
                                size_t err_cap);
tl_status tl_file_atomic_commit(tl_file_atomic *f, char *err, size_t err_cap);
void tl_file_atomic_abort(tl_file_atomic *f);
/* A temporary file NAME.tmp.XXXXXXXXXXXX in the directory open as dirfd
 * (created O_EXCL | O_NOFOLLOW, removed by abort or a fatal signal as
 * above; shown names it in messages), for a caller that publishes it
 * itself (linkat) and then calls abort: commit takes begin's files only. */
tl_status tl_file_atomic_begin_at(tl_file_atomic *f, int dirfd, const char *name,
                                  const char *shown, char *err, size_t err_cap);

/* Whether the directory open as fd (O_DIRECTORY | O_NOFOLLOW: not a link)
 * is one only this user can change: a directory owned by the effective
 * user that neither group nor others may write. NULL when it is, else why
 * not (a constant, or why[] filled in). sb gets its fstat. */
struct stat;
const char *tl_file_private_dir(int fd, struct stat *sb, char *why, size_t why_cap);

/* Drops the pages under data[0..len) of a mapped view from the resident
 * set once a pass over them is done (no-op for a buffered view). */
void tl_file_release(const tl_file_view *view, const void *data, size_t len);

/* SHA-256 of a view's bytes, releasing each slice after hashing it. */
tl_status tl_file_sha256(const tl_file_view *view, uint8_t digest[32]);

#endif
