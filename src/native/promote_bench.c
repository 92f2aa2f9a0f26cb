#define _POSIX_C_SOURCE 200809L
#include "promote_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"

extern char **environ;

void tl_bench_cpu_name(char *buf, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(buf, cap, "unknown");
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char *colon = strchr(line, ':'), *v, *e;
    if (strncmp(line, "model name", 10) != 0 || colon == NULL) continue;
    for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {
    }
    for (e = v + strlen(v); e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'); e--) {
    }
    if (e > v) snprintf(buf, cap, "%.*s", (int)(e - v), v);
    break;
  }
  if (f != NULL) fclose(f);
}

json_t *tl_bench_plan_default(const char *lane, uint32_t max_positions) {
  static const uint32_t lengths[] = {16, 64, 256, 1024, 4096};
  const uint32_t decode = 16, last = strcmp(lane, "scalar") == 0 ? 1024 : 4096;
  json_t *kept;
  uint32_t limit, longest = 0;
  bool dropped = false;
  if (max_positions < decode + 2) return NULL;
  limit = max_positions - decode - 1; /* bench plans P + D + 1 tokens */
  kept = json_array();
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0] && lengths[i] <= last; i++) {
    if (lengths[i] > limit) {
      dropped = true;
      continue;
    }
    json_array_append_new(kept, json_integer(lengths[i]));
    longest = lengths[i];
  }
  if (dropped && limit > longest) json_array_append_new(kept, json_integer(limit));
  return json_pack("{s:o,s:i,s:i}", "prompt_tokens", kept, "decode_tokens", (int)decode,
                   "repetitions", 1);
}

tl_status tl_spawn_read(const char *exe, char *const argv[], char **out, int *status,
                        char *err, size_t cap) {
  int fds[2];
  pid_t pid;
  posix_spawn_file_actions_t fa;
  size_t len = 0, room = 4096;
  char *buf;
  int rc;
  *out = NULL;
  if (pipe(fds) != 0) {
    snprintf(err, cap, "pipe: %s", strerror(errno));
    return TL_ERR_IO;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    snprintf(err, cap, "cannot start %s: %s", exe, strerror(rc));
    return TL_ERR_IO;
  }
  buf = malloc(room);
  for (;;) {
    ssize_t n;
    if (buf != NULL && len + 1 == room) {
      char *more = realloc(buf, room * 2);
      if (more == NULL) free(buf);
      buf = more;
      room *= 2;
    }
    if (buf == NULL) break; /* drain nothing more: the child gets SIGPIPE */
    n = read(fds[0], buf + len, room - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fds[0]);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  if (buf == NULL) {
    snprintf(err, cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  buf[len] = '\0';
  *out = buf;
  return TL_OK;
}

/* A positive finite number of o's key (NAN when it is not one). */
static double positive(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  return isfinite(x) && x > 0 ? x : NAN;
}

/* A byte count of o's key: a non-negative integer (-1 when it is not). */
static json_int_t bytes_of(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

json_t *tl_bench_point(const json_t *bench, uint32_t prompt_tokens, char *err, size_t cap) {
  static const char *const figures[] = {"prefill_tokens_per_s", "decode_tokens_per_s",
                                        "first_token_seconds"};
  static const char *const plan_parts[] = {"weights", "tokenizer", "kv_cache", "scratch",
                                           "logits",  "sampler"};
  static const char *const measured[] = {"worker_stacks_rss_bytes", "runtime_image_rss_bytes",
                                         "peak_rss_bytes"};
  const json_t *plan = json_object_get(bench, "memory_plan");
  json_int_t context = bytes_of(bench, "context");
  for (size_t i = 0; i < 3; i++)
    if (isnan(positive(bench, figures[i]))) {
      snprintf(err, cap, "tinylm bench gave no positive %s", figures[i]);
      return NULL;
    }
  for (size_t i = 0; i < 6; i++)
    if (bytes_of(plan, plan_parts[i]) < 0) {
      snprintf(err, cap, "tinylm bench gave no memory_plan.%s", plan_parts[i]);
      return NULL;
    }
  for (size_t i = 0; i < 3; i++)
    if (bytes_of(bench, measured[i]) < 0) {
      snprintf(err, cap, "tinylm bench gave no %s", measured[i]);
      return NULL;
    }
  if (bytes_of(bench, "prompt_tokens") != (json_int_t)prompt_tokens || context <= prompt_tokens) {
    snprintf(err, cap, "tinylm bench ran another prompt length or context");
    return NULL;
  }
  return json_pack(
      "{s:i,s:I,s:f,s:f,s:f,s:f,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "prompt_tokens",
      (int)prompt_tokens, "context", context, "prefill_tokens_per_s",
      positive(bench, "prefill_tokens_per_s"), "decode_ms_per_token",
      1e3 / positive(bench, "decode_tokens_per_s"), "decode_tokens_per_s",
      positive(bench, "decode_tokens_per_s"), "first_token_seconds",
      positive(bench, "first_token_seconds"), "memory", "weights", bytes_of(plan, "weights"),
      "tokenizer_template", bytes_of(plan, "tokenizer"), "kv_cache", bytes_of(plan, "kv_cache"),
      "activations",
      bytes_of(plan, "scratch") + bytes_of(plan, "logits") + bytes_of(plan, "sampler"),
      "worker_stacks", bytes_of(bench, "worker_stacks_rss_bytes"), "runtime_image",
      bytes_of(bench, "runtime_image_rss_bytes"), "peak_rss", bytes_of(bench, "peak_rss_bytes"));
}

/* One point: `tinylm bench MODEL -p P -n D -d P -r R --lane L [-t N]
 * --json` in its own process; *out its JSON object. */
static tl_status run_point(const tl_bench_step *b, uint32_t p, json_t **out, char *err,
                           size_t cap) {
  const tl_plan_benchmark *pb = &b->plan->benchmark;
  char ps[16], ds[16], rs[16], ts[16], *text = NULL;
  char *argv[] = {"tinylm", "bench",  (char *)b->slm_path, "-p", ps, "-n", ds,   "-d", ps,
                  "-r",     rs,       "--lane",            (char *)b->plan->lane, "--json",
                  "-t",     ts,       NULL};
  const char *exe = b->exe != NULL ? b->exe : "/proc/self/exe";
  json_error_t je;
  int status = 0;
  tl_status st;
  snprintf(ps, sizeof ps, "%u", p);
  snprintf(ds, sizeof ds, "%u", pb->decode_tokens);
  snprintf(rs, sizeof rs, "%u", pb->repetitions);
  snprintf(ts, sizeof ts, "%u", b->threads);
  if (b->threads == 0) argv[14] = NULL; /* the lane's default */
  *out = NULL;
  if ((st = tl_spawn_read(exe, argv, &text, &status, err, cap)) != TL_OK) return st;
  *out = json_loads(text, 0, &je);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const char *detail = json_string_value(json_object_get(*out, "detail"));
    if (WIFSIGNALED(status))
      snprintf(err, cap, "tinylm bench was killed by signal %d", WTERMSIG(status));
    else
      snprintf(err, cap, "tinylm bench exited %d: %.900s", WEXITSTATUS(status),
               detail != NULL ? detail : "(no error object)");
    st = TL_ERR_WORKER_FAILURE;
  } else if (!json_is_object(*out)) {
    snprintf(err, cap, "tinylm bench's output is not one JSON object: %s", je.text);
    st = TL_ERR_WORKER_FAILURE;
  }
  free(text);
  if (st != TL_OK) {
    json_decref(*out);
    *out = NULL;
  }
  return st;
}

static bool same_text(const json_t *a, const json_t *b, const char *key) {
  const char *x = json_string_value(json_object_get(a, key)),
             *y = json_string_value(json_object_get(b, key));
  return x != NULL && y != NULL && strcmp(x, y) == 0;
}

tl_status tl_promote_benchmark(const tl_bench_step *b, tl_store *store, uint8_t id[32], char *err,
                               size_t cap) {
  const tl_plan_benchmark *pb = &b->plan->benchmark;
  json_t *points = json_array(), *first = NULL, *obj = NULL;
  char cpu[256], hex[65], *text;
  tl_status st = TL_OK;
  if (!b->plan->has_benchmark) {
    json_decref(points);
    snprintf(err, cap, "the plan has no benchmark");
    return TL_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; st == TL_OK && i < pb->n_prompts; i++) {
    uint32_t p = pb->prompt_tokens[i];
    json_t *bench = NULL, *point = NULL;
    char why[1024];
    double t0 = tl_now_s();
    st = run_point(b, p, &bench, why, sizeof why);
    /* every point on the plan's lane, with the same profile, kernels and
     * threads */
    if (st == TL_OK &&
        (json_string_value(json_object_get(bench, "lane")) == NULL ||
         strcmp(json_string_value(json_object_get(bench, "lane")), b->plan->lane) != 0 ||
         !same_text(bench, first != NULL ? first : bench, "profile"))) {
      snprintf(why, sizeof why, "tinylm bench ran another lane or profile");
      st = TL_ERR_WORKER_FAILURE;
    }
    if (st == TL_OK && (!same_text(bench, first != NULL ? first : bench, "isa") ||
                        !json_equal(json_object_get(bench, "threads"),
                                    json_object_get(first != NULL ? first : bench, "threads")) ||
                        !json_is_integer(json_object_get(bench, "threads")))) {
      snprintf(why, sizeof why, "the lane's kernels or threads changed between points");
      st = TL_ERR_WORKER_FAILURE;
    }
    if (st == TL_OK && (point = tl_bench_point(bench, p, why, sizeof why)) == NULL)
      st = TL_ERR_WORKER_FAILURE;
    if (st != TL_OK) {
      snprintf(err, cap, "benchmark point of %u prompt tokens: %.900s", p, why);
      json_decref(bench);
      break;
    }
    fprintf(stderr, "  bench %6u tokens  prefill %.1f tokens/s, decode %.2f ms/token, peak RSS "
                    "%.1f MB (%.1f s)\n",
            p, json_number_value(json_object_get(point, "prefill_tokens_per_s")),
            json_number_value(json_object_get(point, "decode_ms_per_token")),
            (double)json_integer_value(
                json_object_get(json_object_get(point, "memory"), "peak_rss")) /
                1e6,
            tl_now_s() - t0);
    json_array_append_new(points, point);
    if (first == NULL) first = bench;
    else json_decref(bench);
  }
  if (st == TL_OK) {
    tl_bench_cpu_name(cpu, sizeof cpu);
    tl_hex_encode(b->artifact_id, 32, hex);
    obj = json_pack("{s:s,s:s,s:s,s:O,s:O,s:O,s:O,s:i,s:i,s:s,s:O}", "format",
                    TL_BENCHMARK_FORMAT, "artifact", hex, "build_id", b->build_id, "lane",
                    json_object_get(first, "lane"), "profile", json_object_get(first, "profile"),
                    "isa", json_object_get(first, "isa"), "threads",
                    json_object_get(first, "threads"), "decode_tokens", (int)pb->decode_tokens,
                    "repetitions", (int)pb->repetitions, "cpu", cpu, "points", points);
    text = obj != NULL ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    st = text != NULL ? tl_store_put(store, "benchmark", (const uint8_t *)text, strlen(text), id,
                                     err, cap)
                      : TL_ERR_OUT_OF_MEMORY;
    if (text == NULL) snprintf(err, cap, "out of memory");
    free(text);
  }
  json_decref(obj);
  json_decref(first);
  json_decref(points);
  return st;
}
