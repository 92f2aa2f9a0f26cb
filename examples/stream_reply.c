/* Streams one reply through the public API (include/tinylm.h only).
 *
 *   stream_reply MODEL.slm MESSAGE [-n N] [--seed S] [--temperature T]
 *                [--lane scalar|fast] [-t THREADS] [--preflight]
 *
 * Reads the artifact through the reader callback, renders MESSAGE as one
 * user message with the model's chat template (thinking as the template
 * has it by default: no enable_thinking is given), streams the reply to
 * stdout token by token until EOS or the context is full (-n N: at most N
 * tokens), and prints the generated ids and the receipt id on stderr (the
 * same receipt id `tinylm run --prompt MESSAGE` and `tinylm run
 * --messages` give for the same conversation and flags). --preflight
 * prints the memory plan instead. Exit status 0, or 1 with "error:
 * <code>: <message>" (also "error: io: ..." when stdout cannot be
 * written). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinylm.h"

static int64_t read_file(void *ctx, uint64_t offset, void *buf, size_t len) {
  FILE *f = ctx;
  size_t got;
  if (fseek(f, (long)offset, SEEK_SET) != 0) return -1;
  got = fread(buf, 1, len, f);
  return ferror(f) ? -1 : (int64_t)got;
}

/* Streams the reply; a failed write (a full disk, EPIPE with SIGPIPE
 * ignored) stops the generation: nobody reads the rest. */
static int out_errno;

static int on_text(void *ctx, const uint8_t *bytes, size_t len) {
  (void)ctx;
  fwrite(bytes, 1, len, stdout);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    if (out_errno == 0) out_errno = errno ? errno : EIO;
    return 1;
  }
  return 0;
}

/* Ends stdout: every write checked (fflush, ferror, fclose); a failure is
 * "error: io: cannot write standard output: <reason>" and exit 1. */
static int finish_stdout(int rc) {
  int failed = fflush(stdout) != 0 || ferror(stdout);
  if (failed && out_errno == 0) out_errno = errno ? errno : EIO;
  if (fclose(stdout) != 0 && !failed) {
    failed = 1;
    out_errno = errno;
  }
  if (!failed) return rc;
  fprintf(stderr, "error: io: cannot write standard output: %s\n",
          strerror(out_errno ? out_errno : EIO));
  return rc ? rc : 1;
}

/* Reports the last failure on handle h (TL_NO_HANDLE: this thread's). */
static int fail(uint32_t h) {
  tl_error e;
  tl_error_detail(h, &e);
  fprintf(stderr, "error: %s: %s", tl_status_name(e.status), e.message);
  if (e.status == TL_ERR_NUMERICAL_FAILURE)
    fprintf(stderr, " (stage %s, layer %d, position %u, index %llu)", e.stage, (int)e.layer,
            (unsigned)e.position, (unsigned long long)e.index);
  fputc('\n', stderr);
  return 1;
}

/* Writes s as a JSON string (escaping what JSON requires). */
static void put_json_string(char *out, size_t cap, const char *s) {
  size_t n = 0;
  if (n + 1 < cap) out[n++] = '"';
  for (; *s != '\0' && n + 7 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  if (n + 1 < cap) out[n++] = '"';
  out[n < cap ? n : cap - 1] = '\0';
}

static int run(int argc, char **argv) {
  tl_session_options so = {0};
  tl_generation_params gp = {0};
  tl_generation_result r;
  tl_model_handle model;
  tl_session_handle session;
  tl_generation_handle gen;
  int preflight = 0, rc = 0;
  char *conv;
  size_t conv_cap;
  FILE *f;
  if (argc < 3) {
    fprintf(stderr, "usage: stream_reply MODEL.slm MESSAGE [-n N] [--seed S] "
                    "[--temperature T] [--lane scalar|fast] [-t THREADS] [--preflight]\n");
    return 2;
  }
  gp.max_tokens = 0; /* no cap: until EOS or the context is full, as tinylm run */
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--preflight") == 0) {
      preflight = 1;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "stream_reply: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "-n") == 0) {
      gp.max_tokens = (uint32_t)strtoul(v, NULL, 10);
    } else if (strcmp(a, "--seed") == 0) {
      gp.seed = strtoull(v, NULL, 10);
    } else if (strcmp(a, "--temperature") == 0) {
      gp.temperature = strtod(v, NULL);
      gp.given |= TL_GIVEN_TEMPERATURE;
    } else if (strcmp(a, "--lane") == 0) {
      so.lane = strcmp(v, "scalar") == 0 ? TL_LANE_SCALAR : TL_LANE_FAST;
    } else if (strcmp(a, "-t") == 0) {
      so.threads = (uint32_t)strtoul(v, NULL, 10);
    } else {
      fprintf(stderr, "stream_reply: unknown option %s\n", a);
      return 2;
    }
  }
  if (tl_api_init(TL_ABI_VERSION) != TL_OK) return fail(TL_NO_HANDLE);
  f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  if (tl_model_open_reader(read_file, f, &model) != TL_OK) {
    fclose(f);
    return fail(TL_NO_HANDLE);
  }
  fclose(f);
  if (preflight) {
    tl_preflight_plan p;
    if (tl_model_preflight(model, &so, &p) != TL_OK) return fail(model);
    printf("{\"context\":%u,\"plan_bytes\":{\"weights\":%llu,\"tokenizer\":%llu,"
           "\"kv_cache\":%llu,\"scratch\":%llu,\"logits\":%llu,\"sampler\":%llu,"
           "\"total\":%llu}}\n",
           (unsigned)p.context, (unsigned long long)p.weights,
           (unsigned long long)p.tokenizer, (unsigned long long)p.kv_cache,
           (unsigned long long)p.scratch, (unsigned long long)p.logits,
           (unsigned long long)p.sampler, (unsigned long long)p.total);
    tl_model_close(model);
    return 0;
  }
  /* The conversation: one user message. */
  conv_cap = 6 * strlen(argv[2]) + 64;
  conv = malloc(conv_cap);
  if (conv == NULL) return 1;
  {
    size_t n = (size_t)snprintf(conv, conv_cap, "{\"messages\":[{\"role\":\"user\",\"content\":");
    put_json_string(conv + n, conv_cap - n - 3, argv[2]);
    strcat(conv, "}]}");
  }
  if (tl_session_new(model, &so, &session) != TL_OK) return fail(model);
  if (tl_generation_new(session, &gen) != TL_OK) return fail(session);
  gp.messages_json = conv;
  gp.messages_len = strlen(conv);
  gp.on_text = on_text;
  if (tl_generation_run(gen, &gp) != TL_OK) {
    /* Stopped by a failed write: finish_stdout says why. */
    rc = out_errno != 0 ? 1 : fail(gen);
  } else if (tl_generation_result_get(gen, &r) == TL_OK) {
    printf("\n");
    fprintf(stderr, "ids:");
    for (size_t i = 0; i < r.n_ids; i++) fprintf(stderr, " %u", (unsigned)r.ids[i]);
    fprintf(stderr, "\nstop: %s\nreceipt: %s\n", r.stop, r.receipt_id);
  }
  tl_generation_free(gen);
  tl_session_free(session);
  tl_model_close(model);
  free(conv);
  return rc;
}

int main(int argc, char **argv) { return finish_stdout(run(argc, argv)); }
