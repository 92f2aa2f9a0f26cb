/* Native helper for tools/oracle/sampler_random.py: runs the core sampler
 * (src/core/sample/) over cases read from stdin and prints its full trace.
 *
 *   sampler_tool run < cases
 *       One case per line, whitespace-separated, integers in decimal and
 *       bit patterns in hex:
 *         WORD SEED DRAW TOKEN TURN STREAM
 *         T_BITS TOP_K TOP_P_BITS MIN_P_BITS PENALTY_BITS WINDOW MIN_NEW
 *         DEFINED_IDS FREQUENCY_BITS PRESENCE_BITS N_EOS EOS... N_BAN BAN...
 *         N_HIST HIST... N_BIAS (BIAS_ID BIAS_BITS)... N_GENERATED
 *         N LOGIT_BITS...
 *       (f64 bits for the profile floats, f32 bits for the logits). WORD
 *       is "-" (the draw comes from the position: tl_sample) or a draw word
 *       in hex that replaces it (tl_sample_with_draw). One
 *       line per case:
 *         OK ID DRAW_WORD N_CANDIDATES COUNT (SURVIVOR_ID Q_BITS BOUND_BITS)*
 *         ERR STATUS FAULT FAULT_INDEX
 *   sampler_tool exp < lines of f64 bits
 *       tl_exp of each, as f64 bits (lets the oracle check its port).
 *   sampler_tool draw SEED DRAW TOKEN TURN STREAM
 *       The draw word (hex) at that position.
 *
 * Host code: stdio and malloc are fine here. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "bytes.h"
#include "math/detmath.h"
#include "sample/philox.h"
#include "sample/sampler.h"
#include "tinylm.h"

static int usage(void) {
  fprintf(stderr,
          "usage: sampler_tool run < cases\n"
          "       sampler_tool exp < f64-bits\n"
          "       sampler_tool draw SEED DRAW TOKEN TURN STREAM\n");
  return 2;
}

typedef struct tokens {
  char *p;
  int bad;
} tokens;

static unsigned long long next_num(tokens *t, int base) {
  char *end;
  unsigned long long v;
  while (*t->p == ' ' || *t->p == '\t') t->p++;
  if (*t->p == '\0' || *t->p == '\n' || *t->p == '-') {
    t->bad = 1;
    return 0;
  }
  errno = 0;
  v = strtoull(t->p, &end, base);
  if (errno != 0 || end == t->p) t->bad = 1;
  t->p = end;
  return v;
}

static uint32_t *read_ids(tokens *t, size_t *n) {
  uint32_t *ids;
  *n = (size_t)next_num(t, 10);
  if (t->bad || *n > (1u << 26)) {
    t->bad = 1;
    return NULL;
  }
  ids = malloc((*n ? *n : 1) * sizeof *ids);
  if (!ids) {
    t->bad = 1;
    return NULL;
  }
  for (size_t i = 0; i < *n; i++) ids[i] = (uint32_t)next_num(t, 10);
  return ids;
}

static int run_case(char *line) {
  tokens t = {line, 0};
  tl_sampler_profile p;
  tl_sample_input in;
  tl_sample_trace tr;
  tl_sample_result res;
  tl_arena arena;
  uint32_t *eos, *ban, *hist, *bias_ids = NULL, *ids = NULL;
  double *bias = NULL, *probs = NULL, *bounds = NULL;
  float *logits = NULL;
  void *arena_mem = NULL;
  size_t n_eos, n_ban, n_hist, n_bias, n;
  tl_status st;
  int ok = 1, have_forced = 0;
  uint32_t forced = 0;

  memset(&in, 0, sizeof in);
  while (*t.p == ' ' || *t.p == '\t') t.p++;
  if (*t.p == '-' && (t.p[1] == ' ' || t.p[1] == '\t')) {
    t.p++;
  } else {
    forced = (uint32_t)next_num(&t, 16);
    have_forced = 1;
  }
  in.pos.seed = next_num(&t, 10);
  in.pos.draw = (uint32_t)next_num(&t, 10);
  in.pos.token = (uint32_t)next_num(&t, 10);
  in.pos.turn = (uint32_t)next_num(&t, 10);
  in.pos.stream = (uint32_t)next_num(&t, 10);
  p = tl_sampler_profile_default(1);
  p.temperature = tl_bits_to_f64(next_num(&t, 16));
  p.top_k = (uint32_t)next_num(&t, 10);
  p.top_p = tl_bits_to_f64(next_num(&t, 16));
  p.min_p = tl_bits_to_f64(next_num(&t, 16));
  p.repeat_penalty = tl_bits_to_f64(next_num(&t, 16));
  p.repeat_window = (uint32_t)next_num(&t, 10);
  p.min_new = (uint32_t)next_num(&t, 10);
  p.defined_ids = (uint32_t)next_num(&t, 10);
  p.frequency_penalty = tl_bits_to_f64(next_num(&t, 16));
  p.presence_penalty = tl_bits_to_f64(next_num(&t, 16));
  eos = read_ids(&t, &n_eos);
  ban = read_ids(&t, &n_ban);
  hist = read_ids(&t, &n_hist);
  /* The biases: a count, then id and f64 bits pairs. */
  n_bias = (size_t)next_num(&t, 10);
  if (!t.bad && n_bias <= (1u << 20)) {
    bias_ids = malloc((n_bias ? n_bias : 1) * sizeof *bias_ids);
    bias = malloc((n_bias ? n_bias : 1) * sizeof *bias);
    if (!bias_ids || !bias) t.bad = 1;
    for (size_t i = 0; !t.bad && i < n_bias; i++) {
      bias_ids[i] = (uint32_t)next_num(&t, 10);
      bias[i] = tl_bits_to_f64(next_num(&t, 16));
    }
  } else {
    t.bad = 1;
  }
  p.bias_ids = bias_ids;
  p.bias = bias;
  p.n_bias = n_bias;
  p.eos = eos;
  p.n_eos = n_eos;
  p.ban = ban;
  p.n_ban = n_ban;
  in.history = hist;
  in.n_history = n_hist;
  in.n_generated = (uint32_t)next_num(&t, 10);
  n = (size_t)next_num(&t, 10);
  if (!t.bad && n <= (1u << 24)) {
    logits = malloc((n ? n : 1) * sizeof *logits);
    ids = malloc((n ? n : 1) * sizeof *ids);
    probs = malloc((n ? n : 1) * sizeof *probs);
    bounds = malloc((n ? n : 1) * sizeof *bounds);
    if (!logits || !ids || !probs || !bounds) t.bad = 1;
    for (size_t i = 0; !t.bad && i < n; i++)
      logits[i] = tl_bits_to_f32((uint32_t)next_num(&t, 16));
  } else {
    t.bad = 1;
  }
  if (t.bad) {
    fprintf(stderr, "sampler_tool: malformed case line\n");
    ok = 0;
    goto done;
  }
  in.logits = logits;
  in.n = n;
  memset(&tr, 0, sizeof tr);
  tr.ids = ids;
  tr.probs = probs;
  tr.bounds = bounds;
  tr.cap = n;
  /* Exactly the documented bound: the run also checks it suffices. */
  arena_mem = malloc(tl_sampler_scratch_bytes(n));
  if (!arena_mem) {
    ok = 0;
    goto done;
  }
  tl_arena_init(&arena, arena_mem, tl_sampler_scratch_bytes(n));
  st = have_forced ? tl_sample_with_draw(&p, &in, forced, &arena, &tr, &res)
                   : tl_sample(&p, &in, &arena, &tr, &res);
  if (arena.used != 0) {
    fprintf(stderr, "sampler_tool: scratch arena not rewound\n");
    ok = 0;
    goto done;
  }
  if (st != TL_OK) {
    printf("ERR %s %s %zu\n", tl_status_name(st),
           tl_sample_fault_name(res.fault), res.fault_index);
    goto done;
  }
  if (res.id != tr.chosen || tr.truncated || res.draws_used != 1 ||
      tr.count != res.n_survivors) {
    fprintf(stderr, "sampler_tool: result and trace disagree\n");
    ok = 0;
    goto done;
  }
  printf("OK %u %08x %zu %zu", res.id, res.draw_word, res.n_candidates,
         tr.count);
  for (size_t j = 0; j < tr.count; j++)
    printf(" %u %016llx %016llx", ids[j],
           (unsigned long long)tl_f64_to_bits(probs[j]),
           (unsigned long long)tl_f64_to_bits(bounds[j]));
  printf("\n");
done:
  free(eos);
  free(ban);
  free(hist);
  free(bias_ids);
  free(bias);
  free(logits);
  free(ids);
  free(probs);
  free(bounds);
  free(arena_mem);
  return ok;
}

int main(int argc, char **argv) {
  char *line = NULL;
  size_t cap = 0;
  if (argc == 2 && strcmp(argv[1], "run") == 0) {
    int ok = 1;
    while (getline(&line, &cap, stdin) > 0) {
      if (!run_case(line)) {
        ok = 0;
        break;
      }
      fflush(stdout);
    }
    free(line);
    return ok ? 0 : 1;
  }
  if (argc == 2 && strcmp(argv[1], "exp") == 0) {
    while (getline(&line, &cap, stdin) > 0) {
      uint64_t b = strtoull(line, NULL, 16);
      printf("%016llx\n",
             (unsigned long long)tl_f64_to_bits(tl_exp(tl_bits_to_f64(b))));
    }
    free(line);
    return 0;
  }
  if (argc == 7 && strcmp(argv[1], "draw") == 0) {
    tl_draw_pos pos;
    pos.seed = strtoull(argv[2], NULL, 0);
    pos.draw = (uint32_t)strtoul(argv[3], NULL, 0);
    pos.token = (uint32_t)strtoul(argv[4], NULL, 0);
    pos.turn = (uint32_t)strtoul(argv[5], NULL, 0);
    pos.stream = (uint32_t)strtoul(argv[6], NULL, 0);
    printf("%08x\n", tl_draw_word(&pos));
    return 0;
  }
  return usage();
}
