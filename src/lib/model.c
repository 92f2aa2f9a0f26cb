#define _DEFAULT_SOURCE 1 /* sigaction, MAP_ANONYMOUS, st_mtim */
/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef __wasm__
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash/sha256.h"
#endif

/* Room beyond the tokenizer's own bound, for the chat-template program. */
#define TEMPLATE_ARENA_EXTRA (4u << 20)

/* A safetensors file: a little-endian u64 header length, a JSON header
 * within the file. */
static bool safetensors_header_fits(const uint8_t *file, size_t len) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | file[i];
  return n <= len - 8;
}

void tl_native_open_hint(const char *path, char *err, size_t err_cap) {
#ifndef __wasm__
  char cfg[4096];
  struct stat sd;
  snprintf(cfg, sizeof cfg, "%s/config.json", path);
  if (stat(path, &sd) == 0 && S_ISDIR(sd.st_mode) && access(cfg, F_OK) == 0)
    snprintf(err, err_cap, "%s: is a directory: a Hugging Face checkpoint, not a .slm "
             "artifact; convert it first: tinylm convert %s -o model.slm (docs/convert.md)",
             path, path);
#else
  (void)path;
  (void)err;
  (void)err_cap;
#endif
}

void tl_native_slm_error(const char *path, const uint8_t *file, size_t len,
                         tl_status st, size_t at, char *err, size_t err_cap) {
  uint64_t declared;
  if (tl_slm_declared_len(file, len, &declared) == TL_OK && declared > len)
    snprintf(err, err_cap, "%s: truncated: %zu of %llu bytes", path, len,
             (unsigned long long)declared);
  else if (len > 0 && len < TL_SLM_HEADER_LEN &&
           memcmp(file, TL_SLM_MAGIC, len < 8 ? len : 8) == 0)
    snprintf(err, err_cap, "%s: truncated: %zu bytes, inside the %d-byte header",
             path, len, TL_SLM_HEADER_LEN);
  else if (len >= 4 && memcmp(file, "GGUF", 4) == 0)
    /* Where llama.cpp users come from: say why, and what to do instead. */
    snprintf(err, err_cap, "%s: a GGUF file, not a .slm artifact: tinylm does not read GGUF (its "
             "tokenizer and template are a re-encoding of the publisher's, which tinylm "
             "checks byte for byte); convert the Hugging Face checkpoint instead: tinylm "
             "convert HF_DIR -o model.slm (docs/convert.md)",
             path);
  else if (len >= 9 && file[8] == '{' && safetensors_header_fits(file, len))
    snprintf(err, err_cap, "%s: a safetensors file, not a .slm artifact: convert the "
             "checkpoint directory it belongs to first: tinylm convert HF_DIR -o model.slm "
             "(docs/convert.md)",
             path);
  else
    snprintf(err, err_cap, "%s: not a valid .slm artifact (%s at byte %zu)",
             path, tl_status_name(st), at);
}


#ifndef __wasm__
/* --- the SIGBUS guard ------------------------------------------------------
 * A page of a file mapping whose file was truncated under it faults with
 * SIGBUS when touched, in whichever thread touches it (the fast lane's
 * workers included). The handler replaces the page by a page of zeros,
 * marks the model's slot changed and returns: the access completes, the
 * computation goes on over zeros, and the next tl_native_model_changed
 * check refuses what it gave. A fault outside every registered mapping
 * goes to the disposition that was there before (by default, death). */
#define GUARD_SLOTS 64
typedef struct guard_slot {
  _Atomic uintptr_t start, end; /* [start, end): 0, 0 when free */
  atomic_bool changed;
} guard_slot;
static guard_slot g_guard[GUARD_SLOTS];
static struct sigaction g_old_bus;
static atomic_bool g_bus_installed;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
  uintptr_t a = (uintptr_t)info->si_addr, page = (uintptr_t)sysconf(_SC_PAGESIZE);
  (void)uctx;
  for (int i = 0; i < GUARD_SLOTS; i++) {
    uintptr_t s = atomic_load(&g_guard[i].start), e = atomic_load(&g_guard[i].end);
    if (s != 0 && a >= s && a < e) {
      void *p = (void *)(a & ~(page - 1));
      if (mmap(p, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p) {
        atomic_store(&g_guard[i].changed, true);
        return;
      }
      break;
    }
  }
  /* not ours (or no page to put there): what was there before */
  sigaction(sig, &g_old_bus, NULL);
}

static int guard_add(const void *data, size_t len) {
  bool expected = false;
  if (atomic_compare_exchange_strong(&g_bus_installed, &expected, true)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_old_bus);
  }
  for (int i = 0; i < GUARD_SLOTS; i++) {
    uintptr_t zero = 0;
    if (atomic_compare_exchange_strong(&g_guard[i].start, &zero, (uintptr_t)data)) {
      atomic_store(&g_guard[i].changed, false);
      atomic_store(&g_guard[i].end, (uintptr_t)data + len);
      return i;
    }
  }
  return -1; /* no slot: a truncation kills the process, as without the guard */
}

static void guard_remove(int i) {
  if (i < 0) return;
  atomic_store(&g_guard[i].end, 0);
  atomic_store(&g_guard[i].start, 0);
}

bool tl_native_model_changed(const tl_native_model *m) {
  tl_stamp_key now;
  if (m->fd < 0) return false;
  if (m->guard >= 0 && atomic_load(&g_guard[m->guard].changed)) return true;
  return !tl_stamp_key_of(m->fd, &now) || !tl_stamp_key_equal(&now, &m->key);
}

void tl_native_model_codes_valid(const tl_native_model *m) {
  if (m->fd >= 0 && !m->codes_valid && !tl_native_model_changed(m))
    tl_stamp_codes_record(&m->key, m->view.data + 32);
}

/* Moves every page of the mapping holding a byte outside [keep, keep +
 * keep_len) into anonymous memory at the same address (its bytes copied
 * out, an anonymous page mapped over it, the bytes copied back), so those
 * bytes no longer come from the file: a private copy-on-write page would
 * not do, truncation discards those too. */
static tl_status privatize_range(uintptr_t from, uintptr_t to) {
  uint8_t *save;
  if (to <= from) return TL_OK;
  save = malloc(to - from);
  if (save == NULL) return TL_ERR_OUT_OF_MEMORY;
  memcpy(save, (const void *)from, to - from);
  if (mmap((void *)from, to - from, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != (void *)from) {
    free(save);
    return TL_ERR_IO;
  }
  memcpy((void *)from, save, to - from);
  free(save);
  return mprotect((void *)from, to - from, PROT_READ) == 0 ? TL_OK : TL_ERR_IO;
}

static tl_status privatize(tl_native_model *m, const uint8_t *keep, size_t keep_len) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t base = (uintptr_t)m->view.data;
  uintptr_t end = (base + m->view.len + page - 1) & ~(page - 1);
  uintptr_t ks = ((uintptr_t)keep + page - 1) & ~(page - 1);
  uintptr_t ke = ((uintptr_t)keep + keep_len) & ~(page - 1);
  tl_status st;
  if (keep_len == 0 || ke <= ks) ks = ke = end;
  st = privatize_range(base, ks);
  return st == TL_OK ? privatize_range(ke, end) : st;
}

tl_status tl_native_model_artifact_id(tl_native_model *m, uint8_t id[32]) {
  enum { SLICE = 64 << 20 };
  const tl_slm_section *sec;
  const uint8_t *d0 = NULL, *d1 = NULL;
  tl_sha256_ctx ctx;
  tl_status st = TL_OK;
  if (m->has_artifact_id) {
    memcpy(id, m->artifact_id, 32);
    return TL_OK;
  }
  if (m->fd < 0) return tl_file_sha256(&m->view, id);
  /* Slice by slice, releasing what was read of the tensor data (file
   * pages; a truncated one reads as zeros and marks the model changed),
   * never the pages privatize made anonymous (dropping those would lose
   * them). */
  if (tl_slm_find(&m->slm, TL_SLM_TENSOR_DATA, &sec) == TL_OK) {
    d0 = sec->data;
    d1 = sec->data + sec->len;
  }
  tl_sha256_init(&ctx);
  for (size_t off = 0; st == TL_OK && off < m->view.len; off += SLICE) {
    const uint8_t *a = m->view.data + off;
    const uint8_t *b = a + (m->view.len - off < SLICE ? m->view.len - off : SLICE);
    st = tl_sha256_update(&ctx, a, (size_t)(b - a));
    if (a < d0) a = d0;
    if (b > d1) b = d1;
    if (a < b) tl_file_release(&m->view, a, (size_t)(b - a));
  }
  if (st == TL_OK) st = tl_sha256_final(&ctx, m->artifact_id);
  if (st == TL_OK && tl_native_model_changed(m)) st = TL_ERR_IO;
  if (st != TL_OK) return st;
  m->has_artifact_id = true;
  /* the next open of the same file needs neither the digests nor this */
  tl_stamp_record(&m->key, m->view.data + 32, m->artifact_id);
  memcpy(id, m->artifact_id, 32);
  return TL_OK;
}
#else
bool tl_native_model_changed(const tl_native_model *m) {
  (void)m;
  return false;
}

void tl_native_model_codes_valid(const tl_native_model *m) { (void)m; }

tl_status tl_native_model_artifact_id(tl_native_model *m, uint8_t id[32]) {
  if (!m->has_artifact_id) {
    tl_status st = tl_file_sha256(&m->view, m->artifact_id);
    if (st != TL_OK) return st;
    m->has_artifact_id = true;
  }
  memcpy(id, m->artifact_id, 32);
  return TL_OK;
}
#endif

/* Validates and loads the bytes m->view holds (path names them in err);
 * on failure the caller closes m. */
static tl_status open_loaded(const char *path, tl_native_model *m, tl_slm_verify verify,
                             char *err, size_t err_cap) {
  const tl_slm_section *sec;
  size_t at = 0, arena_len;
  tl_status st;
  st = tl_slm_open(&m->slm, m->view.data, m->view.len, verify, &at);
  if (st != TL_OK) {
    tl_native_slm_error(path, m->view.data, m->view.len, st, at, err, err_cap);
    return st;
  }
  st = tl_slm_artifact(&m->slm, &m->kind);
  if (st != TL_OK) {
    snprintf(err, err_cap,
             "%s: the metadata does not describe a tinylm artifact (SLM-4a)",
             path);
    return st;
  }
  st = tl_slm_find(&m->slm, TL_SLM_TOKENIZER, &sec);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: has no tokenizer section", path);
    return st;
  }
  st = tl_tok_load_arena_bound(sec->data, sec->len, &arena_len);
  if (st == TL_OK && arena_len > SIZE_MAX - TEMPLATE_ARENA_EXTRA)
    st = TL_ERR_INTEGER_OVERFLOW;
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: invalid tokenizer section (%s)", path,
             tl_status_name(st));
    return st;
  }
  arena_len += TEMPLATE_ARENA_EXTRA;
  m->arena_mem = malloc(arena_len);
  m->grammar_vocab = tl_grammar_vocab_cell_new();
  if (m->arena_mem == NULL || m->grammar_vocab == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    snprintf(err, err_cap, "%s: out of memory", path);
    return st;
  }
  tl_arena_init(&m->arena, m->arena_mem, arena_len);
  st = tl_tok_load(sec->data, sec->len, &m->arena, &m->tok);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: invalid tokenizer section (%s)", path,
             tl_status_name(st));
    return st;
  }
  if (tl_slm_find(&m->slm, TL_SLM_TEMPLATE, &sec) == TL_OK) {
    st = tl_tmpl_section_load(sec->data, sec->len, &m->arena, &m->tmpl);
    if (st != TL_OK) {
      snprintf(err, err_cap, "%s: invalid chat-template section (%s)", path,
               tl_status_name(st));
      return st;
    }
    m->has_template = true;
  }
  if (m->kind == TL_SLM_ARTIFACT_MODEL) {
    st = tl_slm_tensors_open(&m->tensors, &m->slm, verify, &at);
    if (st != TL_OK) {
      snprintf(err, err_cap, "%s: invalid tensor directory or data (%s at "
               "byte %zu)", path, tl_status_name(st), at);
      return st;
    }
    m->has_tensors = true;
  }
  return TL_OK;
}

#ifndef __wasm__
/* The artifact id's SHA-256 of a file that is being verified in full,
 * hashed on a second thread while the open checks the BLAKE3 digests: the
 * stamp then holds it, and a cold run does not make a third pass later. */
typedef struct id_job {
  const uint8_t *data;
  size_t len;
  uint8_t id[32];
  tl_status st;
} id_job;

static void *id_thread(void *arg) {
  id_job *j = arg;
  j->st = tl_sha256(j->data, j->len, j->id);
  return NULL;
}
#endif

tl_status tl_native_model_open(const char *path, tl_native_model *m, char *err,
                               size_t err_cap) {
#ifndef __wasm__
  bool full, hashing = false;
  id_job job;
  pthread_t hasher;
#endif
  tl_status st;
  memset(m, 0, sizeof *m);
  m->fd = m->guard = -1;
#ifndef __wasm__
  /* The file, held open from before the mapping: its stamp now, and
   * again once the open is done, must agree with what was mapped. */
  if (strcmp(path, "-") != 0) {
    struct stat st0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 && fstat(fd, &st0) == 0 && S_ISREG(st0.st_mode) &&
        tl_stamp_key_of(fd, &m->key))
      m->fd = fd;
    else if (fd >= 0)
      close(fd);
  }
#endif
  st = tl_file_open_view(path, &m->view, err, err_cap);
  if (st != TL_OK) {
    tl_native_open_hint(path, err, err_cap);
    tl_native_model_close(m);
    return st;
  }
#ifndef __wasm__
  if (m->view.mapping == NULL && m->fd >= 0) { /* read into memory */
    close(m->fd);
    m->fd = -1;
  }
  if (m->fd >= 0) m->guard = guard_add(m->view.data, m->view.len);
  if (m->fd >= 0 && (int64_t)m->view.len != m->key.size) {
    snprintf(err, err_cap, "%s: changed while it was being opened", path);
    tl_native_model_close(m);
    return TL_ERR_IO;
  }
  if ((st = tl_stamp_full_wanted(&full, err, err_cap)) != TL_OK) {
    tl_native_model_close(m);
    return st;
  }
  /* the stamp's header digest is the one this file holds (bytes 32..63) */
  if (m->fd >= 0 && !full && m->view.len >= TL_SLM_HEADER_LEN) {
    m->stamped = tl_stamp_lookup(&m->key, m->view.data + 32, m->artifact_id,
                                 &m->has_artifact_id);
    m->codes_valid = m->stamped && tl_stamp_codes_lookup(&m->key, m->view.data + 32);
  }
  if (m->fd >= 0 && !m->stamped) {
    job.data = m->view.data;
    job.len = m->view.len;
    hashing = pthread_create(&hasher, NULL, id_thread, &job) == 0;
  }
#endif
  st = open_loaded(path, m, m->stamped ? TL_SLM_VERIFY_LAZY : TL_SLM_VERIFY_EAGER, err,
                   err_cap);
#ifndef __wasm__
  if (hashing) { /* before anything unmaps or privatizes what it reads */
    pthread_join(hasher, NULL);
    if (st == TL_OK && job.st == TL_OK) {
      memcpy(m->artifact_id, job.id, 32);
      m->has_artifact_id = true; /* if the file did not change: checked below */
    }
  }
  if (st != TL_OK) tl_native_model_close(m);
  if (st == TL_OK && m->fd >= 0) {
    const tl_slm_section *sec;
    bool data = tl_slm_find(&m->slm, TL_SLM_TENSOR_DATA, &sec) == TL_OK;
    st = privatize(m, data ? sec->data : NULL, data ? sec->len : 0);
    /* the verified tensor data leaves the resident set until a lane reads
     * it (a copy reads the file; --mmap faults the pages in again) */
    if (st == TL_OK && data) tl_file_release(&m->view, sec->data, sec->len);
    if (st != TL_OK)
      snprintf(err, err_cap, "%s: cannot copy the artifact's sections (%s)", path,
               tl_status_name(st));
    else if (tl_native_model_changed(m)) {
      st = TL_ERR_IO;
      snprintf(err, err_cap, "%s: changed while it was being opened", path);
    }
    if (st != TL_OK) tl_native_model_close(m);
    else if (!m->stamped)
      tl_stamp_record(&m->key, m->view.data + 32, m->has_artifact_id ? m->artifact_id : NULL);
  }
#else
  if (st != TL_OK) tl_native_model_close(m);
#endif
  return st;
}

tl_status tl_native_model_open_bytes(const uint8_t *data, size_t len, bool take,
                                     const char *name, tl_native_model *m,
                                     char *err, size_t err_cap) {
  tl_status st;
  memset(m, 0, sizeof *m);
  m->fd = m->guard = -1;
  m->view.data = data;
  m->view.len = len;
  /* A view with a buffer frees it on close; one without borrows. */
  if (take) m->view.buffer = (uint8_t *)data;
  st = open_loaded(name, m, TL_SLM_VERIFY_EAGER, err, err_cap);
  if (st != TL_OK) tl_native_model_close(m);
  return st;
}

void tl_native_model_close(tl_native_model *m) {
#ifndef __wasm__
  guard_remove(m->guard);
  if (m->fd >= 0) close(m->fd);
#endif
  tl_file_close_view(&m->view);
  free(m->arena_mem);
  tl_grammar_vocab_cell_free(m->grammar_vocab);
  memset(m, 0, sizeof *m);
  m->fd = m->guard = -1;
}
