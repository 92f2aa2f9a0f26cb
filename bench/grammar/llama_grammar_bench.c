/* llama.cpp's grammar sampler, timed the way `tinylm bench --grammar`
 * times tinylm's matcher (bench/grammar.sh runs both and prints them side
 * by side). Links libllama (llama.h, the C API) and nothing of tinylm.
 *
 *   llama_grammar_bench VOCAB.gguf REPS < jobs
 *
 * VOCAB.gguf: any GGUF with the tokenizer (loaded with vocab_only). Each
 * line of jobs is "NAME<TAB>GRAMMAR.gbnf<TAB>ID ID ..." (the instance's
 * token ids, as tinylm's tokenizer gives them: the same ids at the same
 * positions on both sides). Per job it writes one JSON line:
 *   compile_us   llama_sampler_init_grammar, REPS times
 *   mask_us      llama_sampler_apply on the whole vocabulary (logits 0),
 *                before each token of the instance and once after the last
 *   accept_us    llama_sampler_accept of each token
 *   allowed      tokens left unmasked at each position
 *   rejected_at  the first position whose instance token the grammar
 *                masked (-1: none; the walk stops there)
 *   eos_allowed  after the last token, EOS is unmasked
 * or {"name": ..., "error": ...} when the grammar does not load. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n + 1)) != NULL) {
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
      free(buf);
      buf = NULL;
    } else {
      buf[n] = '\0';
    }
  }
  fclose(f);
  return buf;
}

static void print_array(const char *key, const double *v, size_t n) {
  printf(", \"%s\": [", key);
  for (size_t i = 0; i < n; i++) printf("%s%.3f", i ? ", " : "", v[i]);
  printf("]");
}

static void run_job(const struct llama_vocab *vocab, int reps, const char *name,
                    const char *path, const llama_token *ids, size_t n_ids) {
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);
  char *text = read_file(path);
  struct llama_sampler *s;
  llama_token_data *cand = malloc((size_t)n_vocab * sizeof *cand);
  double *compile = malloc((size_t)reps * sizeof *compile);
  double *mask = malloc((n_ids + 1) * sizeof *mask), *accept = malloc((n_ids + 1) * sizeof *accept);
  double *allowed = malloc((n_ids + 1) * sizeof *allowed);
  long rejected = -1;
  size_t n_mask = 0;
  bool eos = false;
  if (text == NULL || cand == NULL || compile == NULL || mask == NULL || accept == NULL ||
      allowed == NULL) {
    printf("{\"name\": \"%s\", \"error\": \"cannot read %s\"}\n", name, path);
    goto done;
  }
  for (size_t i = 0; i < n_ids; i++)
    if (ids[i] < 0 || ids[i] >= n_vocab) {
      printf("{\"name\": \"%s\", \"error\": \"token id %d outside the vocabulary\"}\n", name,
             ids[i]);
      goto done;
    }
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    s = llama_sampler_init_grammar(vocab, text, "root");
    compile[r] = now_us() - t0;
    if (s == NULL) {
      printf("{\"name\": \"%s\", \"error\": \"llama_sampler_init_grammar refused it\"}\n", name);
      goto done;
    }
    llama_sampler_free(s);
  }
  s = llama_sampler_init_grammar(vocab, text, "root");
  for (size_t pos = 0; pos <= n_ids; pos++) {
    llama_token_data_array arr = {cand, (size_t)n_vocab, -1, false};
    size_t left = 0;
    for (int32_t i = 0; i < n_vocab; i++) cand[i] = (llama_token_data){i, 0.0f, 0.0f};
    double t0 = now_us();
    llama_sampler_apply(s, &arr);
    mask[n_mask] = now_us() - t0;
    for (size_t i = 0; i < arr.size; i++) left += isfinite(arr.data[i].logit) != 0;
    allowed[n_mask++] = (double)left;
    if (pos == n_ids) {
      llama_token e = llama_vocab_eos(vocab);
      eos = e >= 0 && e < n_vocab && isfinite(cand[e].logit);
      break;
    }
    /* apply keeps the array in place: cand[id] is token id */
    if (!isfinite(cand[ids[pos]].logit)) {
      rejected = (long)pos;
      break;
    }
    t0 = now_us();
    llama_sampler_accept(s, ids[pos]);
    accept[pos] = now_us() - t0;
  }
  llama_sampler_free(s);
  printf("{\"name\": \"%s\", \"vocab\": %d, \"tokens\": %zu", name, n_vocab, n_ids);
  print_array("compile_us", compile, (size_t)reps);
  print_array("mask_us", mask, n_mask);
  print_array("accept_us", accept, rejected >= 0 ? (size_t)rejected : n_ids);
  print_array("allowed", allowed, n_mask);
  printf(", \"rejected_at\": %ld, \"eos_allowed\": %s}\n", rejected, eos ? "true" : "false");
done:
  fflush(stdout);
  free(text);
  free(cand);
  free(compile);
  free(mask);
  free(accept);
  free(allowed);
}

int main(int argc, char **argv) {
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model *model;
  char line[1 << 16];
  int reps;
  if (argc != 3 || (reps = atoi(argv[2])) < 1) {
    fprintf(stderr, "usage: llama_grammar_bench VOCAB.gguf REPS < jobs\n");
    return 2;
  }
  llama_log_set(quiet, NULL);
  llama_backend_init();
  mp.vocab_only = true;
  model = llama_model_load_from_file(argv[1], mp);
  if (model == NULL) {
    fprintf(stderr, "llama_grammar_bench: cannot load the vocabulary of %s\n", argv[1]);
    return 1;
  }
  while (fgets(line, sizeof line, stdin) != NULL) {
    char *name = strtok(line, "\t"), *path = strtok(NULL, "\t"), *list = strtok(NULL, "\n");
    llama_token ids[8192];
    size_t n = 0;
    if (name == NULL || path == NULL) continue;
    for (char *tok = list ? strtok(list, " ") : NULL; tok != NULL && n < 8192;
         tok = strtok(NULL, " "))
      ids[n++] = (llama_token)atoi(tok);
    run_job(llama_model_get_vocab(model), reps, name, path, ids, n);
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
