#define _POSIX_C_SOURCE 200809L
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

tl_status tl_file_write_atomic(const char *path, const void *data, size_t len,
                               char *err, size_t err_cap) {
  const uint8_t *p = data;
  size_t path_len = strlen(path), done = 0;
  char *tmp = malloc(path_len + sizeof ".tmp.XXXXXX");
  int fd;
  if (tmp == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(tmp, path, path_len);
  memcpy(tmp + path_len, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  fd = mkstemp(tmp);
  if (fd < 0) {
    snprintf(err, err_cap, "%s: cannot create a temporary file: %s", path,
             strerror(errno));
    free(tmp);
    return TL_ERR_IO;
  }
  while (done < len) {
    ssize_t n = write(fd, p + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += (size_t)n;
  }
  if (done != len || fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
    snprintf(err, err_cap, "%s: write failed: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    return TL_ERR_IO;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    snprintf(err, err_cap, "%s: cannot move the temporary file into place: %s",
             path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return TL_ERR_IO;
  }
  free(tmp);
  return TL_OK;
}
