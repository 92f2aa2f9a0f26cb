#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash/sha256.h"

static tl_status read_stream(int fd, const char *path, tl_file_view *view,
                             char *err, size_t err_cap) {
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  if (buf == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (;;) {
    ssize_t n;
    if (len == cap) {
      uint8_t *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (bigger == NULL) {
        free(buf);
        snprintf(err, err_cap, "%s: out of memory", path);
        return TL_ERR_OUT_OF_MEMORY;
      }
      buf = bigger;
      cap *= 2;
    }
    n = read(fd, buf + len, cap - len);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      snprintf(err, err_cap, "%s: read failed: %s", path, strerror(errno));
      free(buf);
      return TL_ERR_IO;
    }
    len += (size_t)n;
  }
  view->data = buf;
  view->len = len;
  view->buffer = buf;
  return TL_OK;
}

tl_status tl_file_open_view(const char *path, tl_file_view *view, char *err,
                            size_t err_cap) {
  struct stat st;
  int fd;
  tl_status status = TL_OK;
  memset(view, 0, sizeof *view);
  if (strcmp(path, "-") == 0)
    return read_stream(STDIN_FILENO, "(stdin)", view, err, err_cap);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
    return TL_ERR_IO;
  }
  if (fstat(fd, &st) != 0) {
    snprintf(err, err_cap, "%s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return TL_ERR_IO;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, err_cap, "%s: is a directory", path);
    status = TL_ERR_IO;
  } else if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    /* Pipes, devices and empty files (mmap of length 0 fails). */
    status = read_stream(fd, path, view, err, err_cap);
  } else if ((uint64_t)st.st_size > SIZE_MAX) {
    snprintf(err, err_cap, "%s: too large for this address space", path);
    status = TL_ERR_INTEGER_OVERFLOW;
  } else {
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      snprintf(err, err_cap, "%s: mmap failed: %s", path, strerror(errno));
      status = TL_ERR_IO;
    } else {
      view->data = map;
      view->len = (size_t)st.st_size;
      view->mapping = map;
    }
  }
  close(fd);
  return status;
}

void tl_file_close_view(tl_file_view *view) {
  if (view->mapping != NULL) munmap(view->mapping, view->len);
  free(view->buffer);
  memset(view, 0, sizeof *view);
}

tl_status tl_file_atomic_begin(tl_file_atomic *f, const char *path,
                               char *err, size_t err_cap) {
  size_t path_len = strlen(path);
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->tmp = malloc(path_len + sizeof ".tmp.XXXXXX");
  if (f->tmp == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(f->tmp, path, path_len);
  memcpy(f->tmp + path_len, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  f->fd = mkstemp(f->tmp);
  if (f->fd < 0) {
    snprintf(err, err_cap, "%s: cannot create a temporary file: %s", path,
             strerror(errno));
    free(f->tmp);
    f->tmp = NULL;
    return TL_ERR_IO;
  }
  f->path = path;
  return TL_OK;
}

tl_status tl_file_atomic_pwrite(tl_file_atomic *f, uint64_t offset,
                                const void *data, size_t len, char *err,
                                size_t err_cap) {
  const uint8_t *p = data;
  size_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(f->fd, p + done, len - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      snprintf(err, err_cap, "%s: write failed: %s", f->path,
               n < 0 ? strerror(errno) : "no progress");
      return TL_ERR_IO;
    }
    done += (size_t)n;
  }
  return TL_OK;
}

tl_status tl_file_atomic_commit(tl_file_atomic *f, char *err, size_t err_cap) {
  if (fchmod(f->fd, 0644) != 0 || fsync(f->fd) != 0) {
    snprintf(err, err_cap, "%s: write failed: %s", f->path, strerror(errno));
    tl_file_atomic_abort(f);
    return TL_ERR_IO;
  }
  if (close(f->fd) != 0) {
    f->fd = -1;
    snprintf(err, err_cap, "%s: write failed: %s", f->path, strerror(errno));
    tl_file_atomic_abort(f);
    return TL_ERR_IO;
  }
  f->fd = -1;
  if (rename(f->tmp, f->path) != 0) {
    snprintf(err, err_cap, "%s: cannot move the temporary file into place: %s",
             f->path, strerror(errno));
    tl_file_atomic_abort(f);
    return TL_ERR_IO;
  }
  free(f->tmp);
  f->tmp = NULL;
  return TL_OK;
}

void tl_file_atomic_abort(tl_file_atomic *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp != NULL) {
    unlink(f->tmp);
    free(f->tmp);
    f->tmp = NULL;
  }
}

tl_status tl_file_write_atomic(const char *path, const void *data, size_t len,
                               char *err, size_t err_cap) {
  tl_file_atomic f;
  tl_status st = tl_file_atomic_begin(&f, path, err, err_cap);
  if (st != TL_OK) return st;
  st = tl_file_atomic_pwrite(&f, 0, data, len, err, err_cap);
  if (st != TL_OK) {
    tl_file_atomic_abort(&f);
    return st;
  }
  return tl_file_atomic_commit(&f, err, err_cap);
}

void tl_file_release(const tl_file_view *view, const void *data, size_t len) {
  /* The pages stay in the page cache; they only leave this process's
   * resident set, so a streamed pass over a large file keeps RSS flat.
   * Rounding outward is harmless: a dropped page of a read-only private
   * mapping is read again from the file when touched. */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start, end;
  if (view->mapping == NULL || len == 0) return;
  start = (uintptr_t)data & ~(page - 1);
  end = ((uintptr_t)data + len + page - 1) & ~(page - 1);
  (void)madvise((void *)start, end - start, MADV_DONTNEED);
}

tl_status tl_file_sha256(const tl_file_view *view, uint8_t digest[32]) {
  enum { SLICE = 64 << 20 };
  tl_sha256_ctx ctx;
  tl_sha256_init(&ctx);
  for (size_t off = 0; off < view->len; off += SLICE) {
    size_t n = view->len - off < SLICE ? view->len - off : SLICE;
    tl_status st = tl_sha256_update(&ctx, view->data + off, n);
    if (st != TL_OK) return st;
    tl_file_release(view, view->data + off, n);
  }
  return tl_sha256_final(&ctx, digest);
}
