/* tinylm bench: prefill and decode speed of a model, modelled on
 * llama-bench. Prefill: one call of P prompt tokens into an empty cache;
 * decode: N single-token steps (greedy) from an empty cache, as llama-bench
 * measures tg. Each is repeated and the median reported, beside the read
 * bandwidth of this machine measured in the same run over the weights
 * themselves (so decode is also a fraction of the bandwidth bound: weight
 * bytes per token / bandwidth), the load time, the session's memory plan
 * and the memory measured beside it: the runtime image, the worker
 * threads' stacks and the peak RSS (tinylm promote's benchmark step,
 * docs/promotion.md §Benchmark, runs one bench per prompt length). With
 * --batch N the decode test steps N sequences in one forward pass per
 * token, as tinylm serve batches its slots (weights read once per step). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "cpu.h"
#include "lane.h"
#include "session.h"

static const char usage_text[] =
    "usage: tinylm bench MODEL.slm [-p N] [-n N] [-d N] [-r N] [--batch N]\n"
    "                    [--lane scalar|fast] [-t N] [--mmap] [--json]\n"
    "       tinylm bench --grammar FILE... --tokenizer ARTIFACT.slm (grammar masks:\n"
    "                    tinylm bench --grammar --help)\n"
    "  -p N          prompt tokens of the prefill test (default 512; 0: skip)\n"
    "  -n N          tokens of the decode test (default 128; 0: skip)\n"
    "  -d N          context the decode test starts from: N tokens prefilled\n"
    "                first, untimed (default 0; llama-bench's -d)\n"
    "  -r N          repetitions; the median is reported (default 3)\n"
    "  --batch N     the decode test steps N sequences together, one token of\n"
    "                each per forward pass, as tinylm serve batches its slots\n"
    "                (default 1; at most 64): tokens/s of all of them\n" TL_LANE_USAGE
    "  --json        one JSON object\n";


static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint32_t argmax(const float *x, size_t n) {
  uint32_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = (uint32_t)i;
  return best;
}

/* Bytes of weights one decoded token reads: every layer's tensors, the
 * final norm and the lm_head (the embedding row is negligible). */
static uint64_t weight_bytes_per_token(const tl_qwen3 *m) {
  uint64_t b = m->final_norm.len + m->lm_head.len;
  for (uint32_t l = 0; l < m->cfg.layers; l++) {
    const tl_qwen3_layer *L = &m->layers[l];
    b += L->attn_norm.len + L->q.len + L->k.len + L->v.len + L->o.len + L->q_norm.len +
         L->k_norm.len + L->mlp_norm.len + L->gate.len + L->up.len + L->down.len;
  }
  return b;
}

/* A read-only pass over bytes, split between the lane's threads. */
typedef struct read_job {
  const uint8_t *p;
  size_t len;
  bool avx2, avx512; /* read with 256- or 512-bit loads */
  uint64_t sums[TL_PAR_MAX_TASKS];
} read_job;

/* Words [b, e) of 64 bytes: the sum of their 8-byte words. */
static uint64_t read_plain(const uint8_t *p, size_t b, size_t e) {
  uint64_t acc[8] = {0};
  for (size_t i = b; i < e; i++)
    for (int k = 0; k < 8; k++) {
      uint64_t w;
      memcpy(&w, p + 64 * i + 8 * (size_t)k, 8);
      acc[k] += w;
    }
  return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

#if defined(__x86_64__)
#include <immintrin.h>
/* The same with 256- or 512-bit loads, four streams of additions: the
 * fastest read this machine does (the bound must not be a slow loop's, or
 * the fraction of it looks better than it is). */
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t b, size_t e) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  uint64_t out[4];
  for (size_t i = b; i + 2 <= e; i += 2) {
    const __m256i *q = (const __m256i *)(const void *)(p + 64 * i);
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(q));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(q + 1));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(q + 2));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(q + 3));
  }
  _mm256_storeu_si256((__m256i *)(void *)out,
                      _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return out[0] + out[1] + out[2] + out[3] + ((e - b) % 2 ? read_plain(p, e - 1, e) : 0);
}

__attribute__((target("avx512f"))) static uint64_t read_avx512(const uint8_t *p, size_t b,
                                                              size_t e) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = b;
  for (; i + 4 <= e; i += 4) {
    const uint8_t *q = p + 64 * i;
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(q));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(q + 64));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(q + 128));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(q + 192));
  }
  return (uint64_t)_mm512_reduce_add_epi64(
             _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))) +
         read_plain(p, i, e);
}
#endif

static void read_task(void *ctx, uint32_t task, uint32_t n_tasks) {
  read_job *j = ctx;
  size_t b, e;
  tl_par_range(j->len / 64, task, n_tasks, &b, &e);
#if defined(__x86_64__)
  if (j->avx512) {
    j->sums[task] = read_avx512(j->p, b, e);
    return;
  }
  if (j->avx2) {
    j->sums[task] = read_avx2(j->p, b, e);
    return;
  }
#endif
  j->sums[task] = read_plain(j->p, b, e);
}

/* Median bytes/s of reps passes over the weights. */
static double read_bandwidth(const tl_native_lane *l, const uint8_t *p, size_t len,
                             size_t reps) {
  static read_job j; /* large: not on the stack */
  double t[16];
  uint32_t n = l->pool != NULL ? l->par.threads : 1;
  j.p = p;
  j.len = len;
  j.avx2 = tl_native_cpu_features().avx2;
  j.avx512 = tl_native_cpu_features().avx512f;
  read_task(&j, 0, 1); /* warm: fault in, as the model's runs did */
  for (size_t r = 0; r < reps; r++) {
    double t0 = tl_now_s();
    tl_parallel_run(l->pool != NULL ? &l->par : NULL, read_task, &j, n);
    t[r] = tl_now_s() - t0;
  }
  return (double)(len / 64 * 64) / median(t, reps);
}

/* The prompt of the first forward pass after the load (time to first
 * token): a short chat turn's length. */
#define FIRST_PROMPT 16

/* ids[0, n) appended to s's cache in the session's prefill chunks, as run
 * and chat compute a prompt. */
static tl_status prefill(tl_session *s, const uint32_t *ids, uint32_t n) {
  tl_status st = TL_OK;
  for (uint32_t at = 0; st == TL_OK && at < n; at += (uint32_t)s->prefill_chunk) {
    uint32_t k = n - at < s->prefill_chunk ? n - at : (uint32_t)s->prefill_chunk;
    st = tl_qwen3_forward(&s->qwen, &s->cache, ids + at, k, s->logits, NULL, &s->arena, NULL);
  }
  return st;
}

/* Resident bytes of this process now (/proc/self/statm's second field,
 * in pages); 0 where there is no /proc. */
static uint64_t resident_now(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  long page = sysconf(_SC_PAGESIZE);
  if (f == NULL) return 0;
  if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return page > 0 ? resident * (uint64_t)page : 0;
}

/* The peak resident bytes of this process image: /proc/self/status's
 * VmHWM, the high-water mark of this image's own address space. Not
 * getrusage's ru_maxrss where VmHWM exists: Linux carries the parent's
 * peak into a spawned child's ru_maxrss across exec (tinylm promote's
 * benchmark step spawns bench from a process holding a model), so it
 * would not be this run's. */
static uint64_t peak_resident(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kb = 0;
  bool found = false;
  while (f != NULL && !found && fgets(line, sizeof line, f) != NULL)
    found = sscanf(line, "VmHWM: %llu kB", &kb) == 1;
  if (f != NULL) fclose(f);
  if (!found) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kb = (unsigned long long)ru.ru_maxrss;
  }
  return (uint64_t)kb * 1024;
}

static const char *type_name(tl_qtype q) {
  static const char *const names[] = {"f32", "f16", "bf16", "q8", "q4"};
  return (unsigned)q < 5 ? names[q] : "?";
}

/* The most sequences --batch steps together (tinylm serve's slots). */
#define MAX_BATCH 64

/* The decode test of --batch: each of the n sequences (slots[0] is the
 * session itself) prefilled with ids[0, depth), then `decode` steps of
 * one token of every sequence in one tl_qwen3_forward_rows pass, greedy;
 * the seconds of the steps in *t. */
static tl_status decode_rows(tl_session *s, tl_session *slots, uint32_t n, const uint32_t *ids,
                             uint32_t depth, uint32_t decode, tl_arena *rows, double *t) {
  tl_qwen3_cache *caches[MAX_BATCH];
  float *logits[MAX_BATCH];
  uint32_t next[MAX_BATCH];
  tl_status st = TL_OK;
  double t0;
  for (uint32_t i = 0; i < n && st == TL_OK; i++) {
    tl_session *q = i == 0 ? s : &slots[i];
    caches[i] = &q->cache;
    logits[i] = q->logits;
    next[i] = (13u + i) % s->defined_ids; /* the sequences differ */
    q->cache.len = 0;
    for (uint32_t at = 0; st == TL_OK && at < depth; at += (uint32_t)s->prefill_chunk) {
      uint32_t k = depth - at < s->prefill_chunk ? depth - at : (uint32_t)s->prefill_chunk;
      st = tl_qwen3_forward(&s->qwen, caches[i], ids + at, k, logits[i], NULL, &s->arena, NULL);
    }
  }
  t0 = tl_now_s();
  for (uint32_t k = 0; k < decode && st == TL_OK; k++) {
    st = tl_qwen3_forward_rows(&s->qwen, caches, next, n, logits, rows, NULL);
    for (uint32_t i = 0; i < n; i++) next[i] = argmax(logits[i], s->qwen.cfg.vocab);
  }
  *t = tl_now_s() - t0;
  return st;
}

int tl_cmd_bench(int argc, char **argv) {
  const char *path = NULL;
  uint32_t prompt = 512, decode = 128, depth = 0, reps = 3, batch = 1, n_slots = 0, n_ids;
  tl_session *slots = NULL;
  void *rows_mem = NULL;
  tl_arena rows;
  bool json = false;
  tl_lane_options lo = tl_lane_defaults();
  const tl_native_lane *lane;
  tl_session s;
  char err[1024] = "";
  double t_load, t_open, t_threads, t_alloc, t_first, t_pp[16], t_tg[16], pp = 0, tg = 0, bw,
      bw_after;
  const uint8_t *wmem;
  size_t wlen;
  uint32_t *ids = NULL;
  tl_status st;
  uint64_t wbytes, peak, stacks;
  /* the binary and its libraries, before the model is opened */
  const uint64_t image = resident_now();
  int rc;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--grammar") == 0) return tl_cmd_bench_grammar(argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    }
    if (strcmp(a, "--json") == 0) continue;
    if ((rc = tl_lane_flag(json, argc, argv, &i, &lo)) != 0) {
      if (rc > 0) return rc;
      continue;
    }
    if (strcmp(a, "-p") == 0 || strcmp(a, "-n") == 0 || strcmp(a, "-d") == 0 ||
        strcmp(a, "-r") == 0) {
      uint32_t *dst = a[1] == 'p' ? &prompt : a[1] == 'n' ? &decode : a[1] == 'd' ? &depth : &reps;
      uint32_t lo_v = a[1] == 'r' ? 1 : 0, hi_v = a[1] == 'r' ? 15 : 1u << 20;
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) >= 0) return rc;
      if ((rc = tl_cli_flag_u32(json, a, v, lo_v, hi_v, dst)) >= 0) return rc;
      continue;
    }
    if (strcmp(a, "--batch") == 0) {
      if ((rc = tl_cli_value(json, argc, argv, &i, &v)) >= 0) return rc;
      if ((rc = tl_cli_flag_u32(json, a, v, 1, MAX_BATCH, &batch)) >= 0) return rc;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0') return tl_cli_usage(json, "unknown option '%s'\n%s", a, usage_text);
    if (path != NULL) return tl_cli_usage(json, "one model only\n%s", usage_text);
    path = a;
  }
  if (path == NULL) return tl_cli_usage(json, "no model given\n%s", usage_text);
  if (prompt == 0 && decode == 0) return tl_cli_usage(json, "-p and -n are both 0: nothing to measure");

  /* The load, phase by phase (open and verify; the lane's threads; the
   * cache, the weights' copy and their packing), then the first forward
   * pass: what a fresh `run` does before its first token. */
  t_load = tl_now_s();
  st = tl_session_open(&s, path, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  t_open = tl_now_s() - t_load;
  st = tl_session_lane(&s, &lo, err, sizeof err);
  t_threads = tl_now_s() - t_load - t_open;
  lane = &s.lane;
  if (st != TL_OK) {
    tl_session_close(&s);
    return tl_cli_fail(json, st, "%s: %s", path, err);
  }
  /* the prefill test runs `prompt` tokens in the session's prefill chunks,
   * as run and chat do */
  /* ids: the prefill test's prompt, the decode test's context and the
   * first forward pass's prompt are all taken from one sequence */
  n_ids = prompt > depth ? prompt : depth;
  n_ids = n_ids > FIRST_PROMPT ? n_ids : FIRST_PROMPT;
  st = tl_session_plan(&s, (n_ids > depth + decode ? n_ids : depth + decode) + 1, 0, err,
                       sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, err, sizeof err);
  t_load = tl_now_s() - t_load; /* open, lane, and the copy of the weights */
  t_alloc = t_load - t_open - t_threads;
  ids = malloc(n_ids * sizeof *ids);
  if (st == TL_OK && ids == NULL) {
    st = TL_ERR_OUT_OF_MEMORY;
    snprintf(err, sizeof err, "out of memory");
  }
  for (uint32_t i = 0; st == TL_OK && i < n_ids; i++)
    ids[i] = (uint32_t)((i * 7919u + 13u) % s.defined_ids);
  /* --batch: the other sequences' slots, and the rows' forward scratch */
  if (st == TL_OK && batch > 1 && decode > 0) {
    size_t bound = tl_qwen3_rows_scratch_bound(&s.qwen, batch, depth + decode + 1);
    slots = calloc(batch, sizeof *slots);
    rows_mem = bound != SIZE_MAX ? malloc(bound) : NULL;
    if (slots == NULL || rows_mem == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      snprintf(err, sizeof err, "out of memory for %u sequences", batch);
    } else {
      tl_arena_init(&rows, rows_mem, bound);
    }
    for (; st == TL_OK && n_slots + 1 < batch; n_slots++)
      st = tl_session_open_slot(&slots[n_slots + 1], &s, err, sizeof err);
  }
  t_first = tl_now_s();
  if (st == TL_OK) st = prefill(&s, ids, FIRST_PROMPT);
  if (st == TL_OK) (void)argmax(s.logits, s.qwen.cfg.vocab);
  t_first = tl_now_s() - t_first;
  if (st != TL_OK && err[0] == '\0')
    snprintf(err, sizeof err, "forward pass: %s", tl_status_name(st));
  /* The bound: the weights' read bandwidth, measured before and after the
   * tests (the host's load varies; the larger is the conservative bound). */
  wmem = lane->weights;
  wlen = lane->weights_len;
  {
    const tl_slm_section *sec;
    if (wmem == NULL && tl_slm_find(&s.model.slm, TL_SLM_TENSOR_DATA, &sec) == TL_OK) {
      wmem = sec->data;
      wlen = sec->len;
    }
  }
  bw = st == TL_OK ? read_bandwidth(lane, wmem, wlen, 5) : 0.0;
  for (uint32_t r = 0; st == TL_OK && r < reps; r++) {
    double t0;
    if (prompt > 0) {
      s.cache.len = 0;
      t0 = tl_now_s();
      st = prefill(&s, ids, prompt);
      t_pp[r] = tl_now_s() - t0;
    }
    if (st == TL_OK && decode > 0 && batch > 1) {
      st = decode_rows(&s, slots, batch, ids, depth, decode, &rows, &t_tg[r]);
    } else if (st == TL_OK && decode > 0) {
      uint32_t next = 13u % s.defined_ids;
      s.cache.len = 0;
      st = prefill(&s, ids, depth);
      t0 = tl_now_s();
      for (uint32_t k = 0; k < decode && st == TL_OK; k++) {
        st = tl_qwen3_forward(&s.qwen, &s.cache, &next, 1, s.logits, NULL, &s.arena, NULL);
        next = argmax(s.logits, s.qwen.cfg.vocab);
      }
      t_tg[r] = tl_now_s() - t0;
    }
    if (st != TL_OK) snprintf(err, sizeof err, "forward pass: %s", tl_status_name(st));
  }
  for (uint32_t i = 1; i <= n_slots; i++) tl_session_close(&slots[i]);
  free(slots);
  free(rows_mem);
  if (st != TL_OK) {
    free(ids);
    tl_session_close(&s);
    return tl_cli_fail(json, st, "%s: %s", path, err);
  }
  if (prompt > 0) pp = prompt / median(t_pp, reps);
  if (decode > 0) tg = (double)decode * batch / median(t_tg, reps);
  wbytes = weight_bytes_per_token(&s.qwen);
  bw_after = read_bandwidth(lane, wmem, wlen, 5);
  if (bw_after > bw) bw = bw_after;
  peak = peak_resident();
  /* Measured, not planned: a worker's stack is reserved at its full size
   * (8 MiB by default) but only the pages the kernels touched are
   * resident, and those are what the process's RSS holds. */
  stacks = tl_pool_stack_resident(lane->pool);
  if (json) {
    const tl_memory_plan *mp = &s.plan;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(path));
    json_object_set_new(o, "weights", json_string(type_name(s.qwen.layers[0].q.type)));
    json_object_set_new(o, "lane", json_string(lane->fast ? "fast" : "scalar"));
    json_object_set_new(o, "profile", json_string(tl_native_lane_profile(lane)));
    json_object_set_new(o, "isa", json_string(tl_native_lane_isa(lane)));
    json_object_set_new(o, "threads", json_integer(tl_native_lane_threads(lane)));
    json_object_set_new(o, "mmap", json_boolean(lane->weights == NULL));
    json_object_set_new(o, "prompt_tokens", json_integer(prompt));
    json_object_set_new(o, "decode_tokens", json_integer(decode));
    json_object_set_new(o, "decode_depth", json_integer(depth));
    json_object_set_new(o, "batch", json_integer(batch));
    json_object_set_new(o, "repetitions", json_integer(reps));
    json_object_set_new(o, "prefill_tokens_per_s", prompt ? json_real(pp) : json_null());
    json_object_set_new(o, "decode_tokens_per_s", decode ? json_real(tg) : json_null());
    json_object_set_new(o, "weight_bytes_per_token", json_integer((json_int_t)wbytes));
    json_object_set_new(o, "bandwidth_bytes_per_s", json_real(bw));
    json_object_set_new(o, "decode_fraction_of_bound",
                        decode ? json_real(tg / batch * (double)wbytes / bw) : json_null());
    json_object_set_new(o, "load_seconds", json_real(t_load));
    json_object_set_new(o, "open_seconds", json_real(t_open));
    json_object_set_new(o, "verify", json_string(s.model.stamped ? "stamp" : "full"));
    json_object_set_new(o, "threads_seconds", json_real(t_threads));
    json_object_set_new(o, "copy_seconds", json_real(lane->copy_seconds));
    json_object_set_new(o, "pack_seconds", json_real(lane->pack_seconds));
    json_object_set_new(o, "allocate_seconds", json_real(t_alloc));
    json_object_set_new(o, "first_forward_seconds", json_real(t_first));
    json_object_set_new(o, "first_token_seconds", json_real(t_load + t_first));
    json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)peak));
    json_object_set_new(o, "context", json_integer(s.context));
    json_object_set_new(
        o, "memory_plan",
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "weights", (json_int_t)mp->weights,
                  "tokenizer", (json_int_t)mp->tokenizer, "kv_cache", (json_int_t)mp->kv_cache,
                  "scratch", (json_int_t)mp->scratch, "logits", (json_int_t)mp->logits,
                  "sampler", (json_int_t)mp->sampler, "total", (json_int_t)mp->total));
    json_object_set_new(o, "runtime_image_rss_bytes", json_integer((json_int_t)image));
    json_object_set_new(o, "worker_stacks_rss_bytes", json_integer((json_int_t)stacks));
    json_dumpf(o, stdout, JSON_SORT_KEYS);
    fputc('\n', stdout);
    json_decref(o);
  } else {
    printf("%s: %s weights, %s lane (%s, %s), %u thread%s%s\n", path,
           type_name(s.qwen.layers[0].q.type), lane->fast ? "fast" : "scalar",
           tl_native_lane_profile(lane), tl_native_lane_isa(lane),
           tl_native_lane_threads(lane), tl_native_lane_threads(lane) > 1 ? "s" : "",
           lane->weights == NULL ? ", weights on the file mapping" : "");
    if (prompt) printf("  prefill %u tokens: %.2f tokens/s (median of %u)\n", prompt, pp, reps);
    if (decode && batch > 1)
      printf("  decode %u tokens of each of %u sequences stepped together after %u: %.2f "
             "tokens/s in all (median of %u)\n",
             decode, batch, depth, tg, reps);
    else if (decode)
      printf("  decode %u tokens after %u: %.2f tokens/s (median of %u), %.1f MB of weights "
             "per token, %.0f%% of the %.1f GB/s read bandwidth bound\n",
             decode, depth, tg, reps, wbytes / 1e6, 100.0 * tg * (double)wbytes / bw, bw / 1e9);
    else
      printf("  read bandwidth %.1f GB/s\n", bw / 1e9);
    printf("  first token %.2f s: open and verify (%s) %.2f s, threads %.2f s, weights %.2f s "
           "(copy %.2f s, validate and pack %.2f s), first %u-token forward pass %.2f s\n",
           t_load + t_first, s.model.stamped ? "stamp" : "full digests", t_open, t_threads,
           t_alloc, lane->copy_seconds,
           lane->pack_seconds, FIRST_PROMPT, t_first);
    {
      char text[512];
      tl_memory_plan_text(&s.plan, text, sizeof text);
      printf("  memory plan for %u tokens of context: %s\n", s.context, text);
    }
    printf("  peak RSS %.1f MB (runtime image %.1f MB, worker stacks %.1f MB resident)\n",
           peak / 1e6, image / 1e6, stacks / 1e6);
  }
  free(ids);
  tl_session_close(&s);
  return TL_EXIT_OK;
}
