#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1 /* madvise */
#include "file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hash/sha256.h"

/* A stream (stdin, a pipe, a character device) has no size to check up
 * front: reading stops at TL_FILE_STREAM_MAX bytes. */
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
      uint8_t *bigger;
      if (cap > TL_FILE_STREAM_MAX) {
        free(buf);
        snprintf(err, err_cap,
                 "%s: more than %zu MiB from a stream (the limit for stdin, "
                 "pipes and devices)",
                 path, (size_t)TL_FILE_STREAM_MAX >> 20);
        return TL_ERR_BOUNDS;
      }
      /* One byte past the limit tells "exactly at" from "over". */
      bigger = realloc(buf, cap < TL_FILE_STREAM_MAX ? cap * 2 : cap + 1);
      if (bigger == NULL) {
        free(buf);
        snprintf(err, err_cap, "%s: out of memory", path);
        return TL_ERR_OUT_OF_MEMORY;
      }
      buf = bigger;
      cap = cap < TL_FILE_STREAM_MAX ? cap * 2 : cap + 1;
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

static const char *kind_of(mode_t m) {
  return S_ISFIFO(m)   ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

/* The view of fd (opened O_NONBLOCK), which it closes; path names it in
 * messages. */
static tl_status view_of(int fd, const char *path, bool regular_only,
                         tl_file_view *view, char *err, size_t err_cap) {
  struct stat st;
  tl_status status = TL_OK;
  if (fstat(fd, &st) != 0) {
    snprintf(err, err_cap, "%s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return TL_ERR_IO;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, err_cap, "%s: is a directory", path);
    status = TL_ERR_IO;
  } else if (!S_ISREG(st.st_mode) &&
             (regular_only || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))) {
    snprintf(err, err_cap, "%s: is %s, not a regular file", path,
             kind_of(st.st_mode));
    status = TL_ERR_IO;
  } else if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    /* Pipes, devices and empty regular files (mmap of length 0 fails;
     * /proc files report 0 and have content): read, blocking again. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      snprintf(err, err_cap, "%s: cannot read: %s", path, strerror(errno));
      status = TL_ERR_IO;
    } else {
      status = read_stream(fd, path, view, err, err_cap);
    }
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

static tl_status open_view(const char *path, bool regular_only,
                           tl_file_view *view, char *err, size_t err_cap) {
  int fd;
  memset(view, 0, sizeof *view);
  if (strcmp(path, "-") == 0) {
    if (!regular_only)
      return read_stream(STDIN_FILENO, "(stdin)", view, err, err_cap);
    snprintf(err, err_cap, "-: stdin is not accepted here (a regular file is)");
    return TL_ERR_IO;
  }
  /* O_NONBLOCK: opening a FIFO that has no writer must not hang. */
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
    return TL_ERR_IO;
  }
  return view_of(fd, path, regular_only, view, err, err_cap);
}

tl_status tl_file_open_regular_at(int dirfd, const char *name, const char *shown,
                                  tl_file_view *view, char *err, size_t err_cap) {
  int fd;
  memset(view, 0, sizeof *view);
  fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    snprintf(err, err_cap, "%s: cannot open: %s", shown,
             errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno));
    return errno == ENOENT ? TL_ERR_NOT_FOUND : TL_ERR_IO;
  }
  return view_of(fd, shown, true, view, err, err_cap);
}

tl_status tl_file_open_view(const char *path, tl_file_view *view, char *err,
                            size_t err_cap) {
  return open_view(path, false, view, err, err_cap);
}

tl_status tl_file_open_regular(const char *path, tl_file_view *view, char *err,
                               size_t err_cap) {
  return open_view(path, true, view, err, err_cap);
}

void tl_file_close_view(tl_file_view *view) {
  if (view->mapping != NULL) munmap(view->mapping, view->len);
  free(view->buffer);
  memset(view, 0, sizeof *view);
}

/* --- temporary files and signals ------------------------------------------
 * Every live temporary file is in this registry from its creation to its
 * rename or removal. While one is live, SIGINT, SIGTERM and SIGHUP, when
 * their disposition is the default (death), run a handler that unlinks
 * every live temporary file and dies of the same signal, so no
 * OUT.tmp.XXXXXX survives a Ctrl-C and the exit status still says
 * "killed by signal". A signal the program handles itself (run and chat
 * catch SIGINT to stop a reply) is left alone: the program then returns
 * through its error paths, which abort the file. The registry changes with
 * the signals blocked, so the handler never sees a half-made entry. */

#define MAX_LIVE 16
static char *volatile live[MAX_LIVE];
static volatile int live_dir[MAX_LIVE]; /* what live[i] is relative to */
static size_t n_live;
static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction saved[N_FATAL];
static bool took_over[N_FATAL];

static void on_fatal_signal(int sig) {
  int saved_errno = errno;
  struct sigaction dfl;
  for (size_t i = 0; i < MAX_LIVE; i++)
    if (live[i] != NULL) unlinkat(live_dir[i], live[i], 0);
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  /* Pending until the handler returns (sig is blocked inside it), then
   * delivered with the default disposition. */
  raise(sig);
  errno = saved_errno;
}

static void block_fatal(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < N_FATAL; i++) sigaddset(&set, fatal_signals[i]);
  pthread_sigmask(SIG_BLOCK, &set, old);
}

static bool register_tmp(int dirfd, char *tmp) {
  sigset_t old;
  bool ok = false;
  block_fatal(&old);
  for (size_t i = 0; i < MAX_LIVE && !ok; i++)
    if (live[i] == NULL) {
      live_dir[i] = dirfd;
      live[i] = tmp;
      ok = true;
    }
  if (ok && n_live++ == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
      sigaddset(&sa.sa_mask, fatal_signals[i]);
    for (size_t i = 0; i < N_FATAL; i++) {
      took_over[i] = sigaction(fatal_signals[i], NULL, &saved[i]) == 0 &&
                     !(saved[i].sa_flags & SA_SIGINFO) &&
                     saved[i].sa_handler == SIG_DFL &&
                     sigaction(fatal_signals[i], &sa, NULL) == 0;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ok;
}

static void unregister_tmp(const char *tmp) {
  sigset_t old;
  block_fatal(&old);
  for (size_t i = 0; i < MAX_LIVE; i++)
    if (live[i] == tmp) {
      live[i] = NULL;
      if (--n_live == 0)
        for (size_t k = 0; k < N_FATAL; k++)
          if (took_over[k]) sigaction(fatal_signals[k], &saved[k], NULL);
      break;
    }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Files this process wrote, so that a command may replace its own earlier
 * output (chat's second /save to one file) without --force: device and
 * inode, and size and modification time, which a file that later reuses
 * the inode number will not share. */
#define MAX_WRITTEN 64
static struct stat written[MAX_WRITTEN];
static size_t n_written;

static bool wrote(const struct stat *st) {
  size_t n = n_written < MAX_WRITTEN ? n_written : MAX_WRITTEN;
  for (size_t i = 0; i < n; i++) {
    const struct stat *w = &written[i];
    if (w->st_dev == st->st_dev && w->st_ino == st->st_ino &&
        w->st_size == st->st_size && w->st_mtim.tv_sec == st->st_mtim.tv_sec &&
        w->st_mtim.tv_nsec == st->st_mtim.tv_nsec)
      return true;
  }
  return false;
}

tl_status tl_file_atomic_begin(tl_file_atomic *f, const char *path, char *err,
                               size_t err_cap) {
  size_t path_len = strlen(path);
  sigset_t old;
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->dirfd = AT_FDCWD;
  f->tmp = malloc(path_len + sizeof ".tmp.XXXXXX");
  if (f->tmp == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(f->tmp, path, path_len);
  memcpy(f->tmp + path_len, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  /* Created and registered with the signals blocked: a signal in between
   * would leave a file no handler knows about. */
  block_fatal(&old);
  f->fd = mkstemp(f->tmp);
  if (f->fd >= 0 && !register_tmp(AT_FDCWD, f->tmp)) {
    close(f->fd);
    unlink(f->tmp);
    f->fd = -1;
    errno = EMFILE;
  }
  if (f->fd < 0) {
    snprintf(err, err_cap, "%s: cannot create a temporary file: %s", path,
             strerror(errno));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(f->tmp);
    f->tmp = NULL;
    return TL_ERR_IO;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  f->path = path;
  return TL_OK;
}

tl_status tl_file_atomic_begin_at(tl_file_atomic *f, int dirfd, const char *name,
                                  const char *shown, char *err, size_t err_cap) {
  static unsigned counter;
  size_t name_len = strlen(name);
  sigset_t old;
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->dirfd = dirfd;
  f->path = shown;
  f->tmp = malloc(name_len + sizeof ".tmp.XXXXXXXXXXXX");
  if (f->tmp == NULL) {
    snprintf(err, err_cap, "%s: out of memory", shown);
    return TL_ERR_OUT_OF_MEMORY;
  }
  block_fatal(&old);
  /* mkstemp has no *at form: a name unlikely to exist, created with
   * O_EXCL (never an existing file, never through a link), tried again
   * when taken. */
  for (int tries = 0; tries < 64 && f->fd < 0; tries++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(f->tmp, name_len + sizeof ".tmp.XXXXXXXXXXXX", "%s.tmp.%06x%06x", name,
             (unsigned)getpid() & 0xffffffu,
             ((unsigned)ts.tv_nsec ^ (++counter * 2654435761u)) & 0xffffffu);
    f->fd = openat(dirfd, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0 && errno != EEXIST) break;
  }
  if (f->fd >= 0 && !register_tmp(dirfd, f->tmp)) {
    close(f->fd);
    unlinkat(dirfd, f->tmp, 0);
    f->fd = -1;
    errno = EMFILE;
  }
  if (f->fd < 0) {
    snprintf(err, err_cap, "%s: cannot create a temporary file: %s", shown, strerror(errno));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(f->tmp);
    f->tmp = NULL;
    return TL_ERR_IO;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
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

/* The mode the file gets: a replaced file keeps its permission bits (not
 * set-id bits, which new content must not inherit); a new one gets what
 * open(0666) would give under the umask (mkstemp creates it 0600). */
static mode_t target_mode(const char *path) {
  struct stat st;
  mode_t mask;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 0777;
  mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

static char *resolved(const char *path);

/* Destinations --force (or /save!) allowed replacing, as resolved() names
 * them (the path as given when its directory cannot be resolved). */
#define MAX_REPLACEABLE 64
static char *replaceable[MAX_REPLACEABLE];
static size_t n_replaceable;

static char *destination_name(const char *path) {
  char *r = resolved(path);
  return r != NULL ? r : strdup(path);
}

static void allow_replace(const char *path) {
  char *name = destination_name(path);
  if (name == NULL) return; /* out of memory: publishing will not replace */
  free(replaceable[n_replaceable % MAX_REPLACEABLE]);
  replaceable[n_replaceable++ % MAX_REPLACEABLE] = name;
}

/* Whether committing to path may replace what is there: --force allowed
 * it, or it is a file this process wrote (chat's second /save). */
static bool may_replace(const char *path) {
  struct stat st;
  char *name;
  bool ok = false;
  if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && wrote(&st)) return true;
  name = destination_name(path);
  if (name == NULL) return false;
  for (size_t i = 0; i < n_replaceable && i < MAX_REPLACEABLE && !ok; i++)
    ok = strcmp(replaceable[i], name) == 0;
  free(name);
  return ok;
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1u << 0)
#endif

/* tmp moved to path only if path does not exist (EEXIST otherwise), in one
 * step: renameat2(RENAME_NOREPLACE); where the kernel or file system lacks
 * it, link + unlink; where hard links are not supported either, the name
 * is claimed with O_EXCL and then replaced by rename. */
static int publish_new(const char *tmp, const char *path) {
  int fd;
#ifdef SYS_renameat2
  if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
  if (errno != ENOSYS && errno != EINVAL && errno != ENOTSUP) return -1;
#endif
  if (link(tmp, path) == 0) {
    unlink(tmp);
    return 0;
  }
  if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP && errno != EMLINK &&
      errno != ENOSYS)
    return -1;
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  close(fd);
  return rename(tmp, path);
}

tl_status tl_file_atomic_commit(tl_file_atomic *f, char *err, size_t err_cap) {
  struct stat st;
  bool replace;
  if (fchmod(f->fd, target_mode(f->path)) != 0 || fsync(f->fd) != 0 ||
      fstat(f->fd, &st) != 0) {
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
  /* Without --force a new file never replaces one that appeared while
   * this command ran (another writer's output, published first). */
  replace = may_replace(f->path);
  if ((replace ? rename(f->tmp, f->path) : publish_new(f->tmp, f->path)) != 0) {
    tl_status code = errno == EEXIST ? TL_ERR_INVALID_ARGUMENT : TL_ERR_IO;
    if (errno == EEXIST)
      snprintf(err, err_cap,
               "%s: exists (another writer created it while this command "
               "ran); not replaced without --force", f->path);
    else
      snprintf(err, err_cap, "%s: cannot move the temporary file into place: %s",
               f->path, strerror(errno));
    tl_file_atomic_abort(f);
    return code;
  }
  written[n_written++ % MAX_WRITTEN] = st;
  unregister_tmp(f->tmp);
  free(f->tmp);
  f->tmp = NULL;
  return TL_OK;
}

void tl_file_atomic_abort(tl_file_atomic *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp != NULL) {
    unlinkat(f->dirfd, f->tmp, 0);
    unregister_tmp(f->tmp);
    free(f->tmp);
    f->tmp = NULL;
  }
}

/* --- directories only this user can change ------------------------------ */

const char *tl_file_private_dir(int fd, struct stat *sb, char *why, size_t why_cap) {
  if (fstat(fd, sb) != 0) return "it cannot be examined";
  if (!S_ISDIR(sb->st_mode)) return "it is not a directory";
  if (sb->st_uid != geteuid()) {
    snprintf(why, why_cap, "it belongs to uid %lu, not to you", (unsigned long)sb->st_uid);
    return why;
  }
  if ((sb->st_mode & (S_IWGRP | S_IWOTH)) != 0) return "group or others may write in it";
  return NULL;
}

/* --- where outputs may go ----------------------------------------------- */

/* realpath() of the directory part joined with the last component: the
 * same text for two spellings of one destination, whether or not it
 * exists yet (malloc; NULL when the directory cannot be resolved). */
static char *resolved(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash != NULL ? slash + 1 : path;
  char *dir, *real, *out;
  size_t dir_len = slash == NULL   ? 1
                   : slash == path ? 1
                                   : (size_t)(slash - path);
  dir = malloc(dir_len + 1);
  if (dir == NULL) return NULL;
  memcpy(dir, slash == NULL ? "." : path, dir_len);
  dir[dir_len] = '\0';
  real = realpath(dir, NULL);
  free(dir);
  if (real == NULL) return NULL;
  out = malloc(strlen(real) + strlen(base) + 2);
  if (out != NULL) sprintf(out, "%s/%s", real, base);
  free(real);
  return out;
}

static bool same_file(const char *a, const struct stat *sa, bool a_exists,
                      const char *b) {
  struct stat sb;
  char *ra, *rb;
  bool same;
  if (stat(b, &sb) == 0 && a_exists)
    return sa->st_dev == sb.st_dev && sa->st_ino == sb.st_ino;
  ra = resolved(a);
  rb = resolved(b);
  same = ra != NULL && rb != NULL && strcmp(ra, rb) == 0;
  free(ra);
  free(rb);
  return same;
}

/* An input directory stands for every entry in it. */
static tl_status check_against_dir(const char *out, const struct stat *so,
                                   bool exists, const char *dir, char *err,
                                   size_t err_cap) {
  DIR *d = opendir(dir);
  struct dirent *e;
  tl_status st = TL_OK;
  if (d == NULL || !exists) {
    if (d != NULL) closedir(d);
    return TL_OK; /* nothing there can be the output */
  }
  while (st == TL_OK && (e = readdir(d)) != NULL) {
    char *p;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    p = malloc(strlen(dir) + strlen(e->d_name) + 2);
    if (p == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, err_cap, "%s: out of memory", out);
      break;
    }
    sprintf(p, "%s/%s", dir, e->d_name);
    if (same_file(out, so, exists, p)) {
      snprintf(err, err_cap,
               "%s: the same file as %s, which this command "
               "reads (never replaced, even with --force)",
               out, p);
      st = TL_ERR_INVALID_ARGUMENT;
    }
    free(p);
  }
  closedir(d);
  return st;
}

/* Whether a new file can be created at path: its directory exists, is a
 * directory, and this process may write and search it (EROFS too). */
static tl_status check_dir_writable(const char *path, char *err, size_t err_cap) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
  char *dir = malloc(dir_len + 1);
  struct stat sd;
  tl_status st = TL_OK;
  if (dir == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    return TL_ERR_OUT_OF_MEMORY;
  }
  memcpy(dir, slash == NULL ? "." : path, dir_len);
  dir[dir_len] = '\0';
  if (stat(dir, &sd) != 0) {
    snprintf(err, err_cap, "%s: cannot create: directory %s: %s", path, dir, strerror(errno));
    st = TL_ERR_IO;
  } else if (!S_ISDIR(sd.st_mode)) {
    snprintf(err, err_cap, "%s: cannot create: %s is not a directory", path, dir);
    st = TL_ERR_IO;
  } else if (access(dir, W_OK | X_OK) != 0) {
    snprintf(err, err_cap, "%s: cannot create: directory %s: %s", path, dir, strerror(errno));
    st = TL_ERR_IO;
  }
  free(dir);
  return st;
}

tl_status tl_file_output_check(const char *path, const char *const *inputs,
                               size_t n_inputs, bool force,
                               const char *force_hint, char *err,
                               size_t err_cap) {
  struct stat lst, st;
  bool exists, link_ok;
  if (lstat(path, &lst) != 0) {
    if (errno != ENOENT) {
      snprintf(err, err_cap, "%s: cannot stat: %s", path, strerror(errno));
      return TL_ERR_IO;
    }
    exists = false;
  } else {
    exists = true;
  }
  /* A link's target is what an input would be; a dangling link is just
   * an existing name. */
  link_ok = exists && stat(path, &st) == 0;
  if (!link_ok) st = lst;
  for (size_t i = 0; i < n_inputs; i++) {
    struct stat si;
    const char *in = inputs[i];
    if (in == NULL || strcmp(in, "-") == 0) continue;
    if (stat(in, &si) == 0 && S_ISDIR(si.st_mode)) {
      tl_status s = check_against_dir(path, &st, link_ok, in, err, err_cap);
      if (s != TL_OK) return s;
    } else if (same_file(path, &st, link_ok, in)) {
      snprintf(err, err_cap,
               "%s: the same file as %s, which this command "
               "also uses (never replaced, even with --force)",
               path, in);
      return TL_ERR_INVALID_ARGUMENT;
    }
  }
  if (!exists) {
    /* A new file: its directory must take it, known now rather than after
     * the work (a whole generation, a conversion). */
    tl_status s = check_dir_writable(path, err, err_cap);
    if (s != TL_OK) return s;
    if (force) allow_replace(path);
    return TL_OK;
  }
  if (link_ok && S_ISDIR(st.st_mode)) {
    snprintf(err, err_cap, "%s: is a directory", path);
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (!S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode)) {
    snprintf(err, err_cap,
             "%s: exists and is %s; only regular files are "
             "replaced",
             path, kind_of(lst.st_mode));
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (!force && !(S_ISREG(lst.st_mode) && wrote(&lst))) {
    snprintf(err, err_cap, "%s: exists; not replaced without %s", path,
             force_hint != NULL ? force_hint : "--force");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if (force) allow_replace(path);
  return TL_OK;
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
   * Only whole pages inside the range: a page it shares with bytes
   * outside may be one the model made private (model.c), which dropping
   * would read from the file again. */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start, end;
  if (view->mapping == NULL || len == 0) return;
  start = ((uintptr_t)data + page - 1) & ~(page - 1);
  end = ((uintptr_t)data + len) & ~(page - 1);
  if (end > start) (void)madvise((void *)start, end - start, MADV_DONTNEED);
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
