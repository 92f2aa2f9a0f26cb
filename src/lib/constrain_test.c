/* The turn's constraint (constrain.h) over the real Qwen3 tokenizer
 * (build/tok/qwen3-tokenizer.slm, make tok-slm; skipped when it is not
 * made): the model's vocabulary trie, the mask against a slow reference,
 * and the thinking rule of docs/structured.md; and constrained turns on the
 * tiny golden artifact (its tokenizer has Qwen3's special and added
 * tokens over a byte vocabulary). */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "constrain.h"
#include "model.h"
#include "session.h"
#include "tl_test.h"
#include "turn.h"

#define QWEN3_TOK "build/tok/qwen3-tokenizer.slm"
/* Qwen3's EOS set (<|endoftext|>, <|im_end|>) and its padded rows. */
static const uint32_t EOS[2] = {151643, 151645};
#define ROWS 151936u

static bool open_tok(tl_test_ctx *t, tl_native_model *m, tl_grammar_vocab *v) {
  char err[512];
  if (access(QWEN3_TOK, R_OK) != 0) {
    tl_test_skip(t, QWEN3_TOK " is not made (make tok-slm)");
    return false;
  }
  if (!TL_EXPECT_OK(t, tl_native_model_open(QWEN3_TOK, m, err, sizeof err))) return false;
  if (!TL_EXPECT_OK(t, tl_grammar_vocab_get(m->grammar_vocab, m->tok, v))) {
    tl_native_model_close(m);
    return false;
  }
  return true;
}

/* Grammars made with the builder (the readers have their own tests):
 *   0  {"n": DIGITS} with DIGITS one or more of 0-9
 *   1  "yes" | "no" | a JSON-like string of any scalar values but '"'
 *   2  ("ab" | "a")* "c"  (ambiguous: several stacks alive at once) */
static const tl_grammar *make_grammar(tl_arena *a, int which) {
  static const uint32_t digits[2] = {'0', '9'}, quote[2] = {'"', '"'};
  tl_gbuilder *b;
  const tl_grammar *g = NULL;
  tl_gerror err;
  tl_gexpr e;
  uint32_t root;
  if (tl_gb_new(a, &b) != TL_OK) return NULL;
  root = tl_gb_rule(b, "root", 4);
  if (which == 0) {
    tl_gexpr items[3] = {tl_gb_literal(b, (const uint8_t *)"{\"n\": ", 6),
                         tl_gb_repeat(b, tl_gb_class(b, digits, 1, false), 1, TL_GB_UNBOUNDED),
                         tl_gb_literal(b, (const uint8_t *)"}", 1)};
    e = tl_gb_seq(b, items, 3);
  } else if (which == 1) {
    tl_gexpr q = tl_gb_literal(b, (const uint8_t *)"\"", 1);
    tl_gexpr str[3] = {q, tl_gb_repeat(b, tl_gb_class(b, quote, 1, true), 0, TL_GB_UNBOUNDED),
                       q};
    tl_gexpr alts[3] = {tl_gb_literal(b, (const uint8_t *)"yes", 3),
                        tl_gb_literal(b, (const uint8_t *)"no", 2), tl_gb_seq(b, str, 3)};
    e = tl_gb_alt(b, alts, 3);
  } else {
    tl_gexpr alts[2] = {tl_gb_literal(b, (const uint8_t *)"ab", 2),
                        tl_gb_literal(b, (const uint8_t *)"a", 1)};
    tl_gexpr items[2] = {tl_gb_repeat(b, tl_gb_alt(b, alts, 2), 0, TL_GB_UNBOUNDED),
                         tl_gb_literal(b, (const uint8_t *)"c", 1)};
    e = tl_gb_seq(b, items, 2);
  }
  tl_gb_define(b, root, e);
  return tl_gb_finish(b, root, &g, &err) == TL_OK ? g : NULL;
}

static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)(*s >> 33);
}

/* The bytes the reference feeds for id: none for a token the visible
 * decode skips (flagged special), else its bytes. */
static bool text_token(const tl_tokenizer *tok, uint32_t id, const uint8_t **b, size_t *n) {
  size_t visible = 0, bad = 0;
  tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_VISIBLE, NULL, 0, &visible, &bad);
  return visible != 0 && tl_tok_token_bytes(tok, id, b, n) == TL_OK && *n > 0;
}

/* Soundness and completeness of the mask (the definition: a token
 * is in it iff appending its bytes keeps the text a prefix of a sentence)
 * at random reachable states: a reference matcher with the prefix
 * replayed from its start state takes every token's bytes with
 * tl_gmatcher_accept alone (no trie, no mask cache), and the two agree
 * bit for bit, and on EOS. */
static void mask_matches_the_reference(tl_test_ctx *t) {
  tl_native_model m;
  tl_grammar_vocab v;
  const size_t region = 64u << 20;
  uint8_t *mem = malloc(3 * region), prefix[4096];
  uint64_t *allow = calloc(ROWS / 64, sizeof *allow), seed = 7;
  int states = 0;
  if (!TL_EXPECT(t, mem != NULL && allow != NULL) || !open_tok(t, &m, &v)) {
    free(mem);
    free(allow);
    return;
  }
  for (int which = 0; which < 3; which++) {
    tl_arena ga, wa, ra;
    tl_gmatcher *walker, *ref;
    const tl_grammar *g;
    size_t plen = 0;
    tl_arena_init(&ga, mem, region);
    tl_arena_init(&wa, mem + region, region);
    tl_arena_init(&ra, mem + 2 * region, region);
    g = make_grammar(&ga, which);
    if (!TL_EXPECT(t, g != NULL) || !TL_EXPECT_OK(t, tl_gmatcher_new(&wa, g, v.trie, 0, &walker)) ||
        !TL_EXPECT_OK(t, tl_gmatcher_new(&ra, g, v.trie, 0, &ref)))
      break;
    for (int step = 0; step < 7; step++) {
      uint32_t n = tl_gvocab_tokens(v.trie), allowed = 0, wrong = 0, pick;
      bool eos = false;
      if (tl_gmatcher_finished(walker)) break;
      if (!TL_EXPECT_OK(t, tl_gmatcher_mask(walker, allow, &eos))) break;
      states++;
      tl_gmatcher_reset(ref);
      if (!TL_EXPECT_OK(t, tl_gmatcher_accept(ref, prefix, plen))) break;
      TL_EXPECT_EQ_U64(t, eos, tl_gmatcher_accepting(ref));
      for (uint32_t id = 0; id < n; id++) {
        const uint8_t *b;
        size_t len;
        bool in_mask = (allow[id / 64] >> (id % 64)) & 1u, ok = false;
        if (text_token(m.tok, id, &b, &len) && tl_gmatcher_accept(ref, b, len) == TL_OK) {
          ok = true;
          tl_gmatcher_reset(ref); /* back to the prefix */
          tl_gmatcher_accept(ref, prefix, plen);
        }
        wrong += ok != in_mask;
        allowed += ok;
      }
      TL_EXPECT_EQ_U64(t, wrong, 0);
      if (allowed == 0) break;
      /* a random allowed token leads to the next state */
      pick = lcg(&seed) % allowed;
      for (uint32_t id = 0; id < n; id++) {
        const uint8_t *b;
        size_t len;
        if (!((allow[id / 64] >> (id % 64)) & 1u) || pick-- != 0) continue;
        tl_tok_token_bytes(m.tok, id, &b, &len);
        if (plen + len > sizeof prefix || !TL_EXPECT_OK(t, tl_gmatcher_accept(walker, b, len)))
          step = 7;
        else
          memcpy(prefix + plen, b, len), plen += len;
        break;
      }
    }
  }
  TL_EXPECT(t, states >= 15);
  tl_native_model_close(&m);
  free(mem);
  free(allow);
}

static bool bit(const uint64_t *w, uint32_t id) { return (w[id / 64] >> (id % 64)) & 1u; }

/* The thinking rule on grammar 0 ({"n": DIGITS}): the first token may be
 * <think> besides the grammar's; inside the thought every id but EOS,
 * until the budget is spent, then only </think>; after it the grammar,
 * with a newline allowed first; EOS only once the document is complete. */
static void thinking_then_the_grammar(tl_test_ctx *t) {
  tl_native_model m;
  tl_grammar_vocab v;
  tl_constraint c;
  tl_arena ga;
  tl_gmatcher *kept = NULL;
  const tl_grammar *g;
  size_t cap = 32u << 20, n = 0, bad = 0;
  uint8_t *mem = malloc(2 * cap);
  uint64_t *allow = calloc(ROWS / 64, sizeof *allow);
  uint32_t nl = UINT32_MAX, brace = UINT32_MAX, ids[8];
  if (!TL_EXPECT(t, mem != NULL && allow != NULL) || !open_tok(t, &m, &v)) {
    free(mem);
    free(allow);
    return;
  }
  tl_arena_init(&ga, mem, cap);
  g = make_grammar(&ga, 0);
  TL_EXPECT(t, v.think_open != UINT32_MAX && v.think_close != UINT32_MAX);
  /* "\n" and "{" are one token each */
  if (tl_tok_encode(m.tok, (const uint8_t *)"\n", 1, &ga, ids, NULL, 8, &n, &bad) == TL_OK &&
      n == 1)
    nl = ids[0];
  if (tl_tok_encode(m.tok, (const uint8_t *)"{", 1, &ga, ids, NULL, 8, &n, &bad) == TL_OK &&
      n == 1)
    brace = ids[0];
  if (!TL_EXPECT(t, g != NULL && nl != UINT32_MAX && brace != UINT32_MAX) ||
      !TL_EXPECT_OK(t, tl_constraint_start(&c, g, &v, m.tok, mem + cap, cap, &kept, allow, ROWS, EOS, 2,
                                           true, 3)))
    goto done;
  TL_EXPECT_OK(t, tl_constraint_mask(&c));
  TL_EXPECT(t, bit(allow, v.think_open) && bit(allow, brace) && !bit(allow, nl));
  TL_EXPECT(t, !bit(allow, EOS[0]) && !bit(allow, EOS[1]) && !bit(allow, v.think_close));
  TL_EXPECT_OK(t, tl_constraint_advance(&c, v.think_open));
  for (int i = 0; i < 3; i++) { /* the budget: 3 free tokens */
    TL_EXPECT_OK(t, tl_constraint_mask(&c));
    TL_EXPECT(t, bit(allow, nl) && bit(allow, v.think_open) && bit(allow, 151644));
    TL_EXPECT(t, !bit(allow, EOS[0]) && !bit(allow, EOS[1]));
    TL_EXPECT(t, !tl_constraint_complete(&c));
    TL_EXPECT_OK(t, tl_constraint_advance(&c, nl));
  }
  TL_EXPECT_OK(t, tl_constraint_mask(&c));
  for (uint32_t id = 0; id < ROWS; id++)
    if (bit(allow, id) != (id == v.think_close)) {
      TL_EXPECT_EQ_U64(t, id, v.think_close);
      break;
    }
  TL_EXPECT_OK(t, tl_constraint_advance(&c, v.think_close));
  TL_EXPECT_OK(t, tl_constraint_mask(&c));
  TL_EXPECT(t, bit(allow, nl) && bit(allow, brace) && !bit(allow, v.think_open));
  TL_EXPECT_OK(t, tl_constraint_advance(&c, nl));
  {
    static const char *const pieces[] = {"{", "\"", "n", "\":", " ", "1", "2", "}"};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
      size_t len = strlen(pieces[i]);
      if (!TL_EXPECT_OK(t, tl_tok_encode(m.tok, (const uint8_t *)pieces[i], len, &ga, ids,
                                         NULL, 8, &n, &bad)) ||
          !TL_EXPECT_EQ_U64(t, n, 1))
        break;
      TL_EXPECT_OK(t, tl_constraint_mask(&c));
      TL_EXPECT(t, bit(allow, ids[0]));
      /* EOS first after the last digit: {"n": 1 is not a document */
      TL_EXPECT(t, !bit(allow, EOS[1]));
      TL_EXPECT_OK(t, tl_constraint_advance(&c, ids[0]));
    }
  }
  TL_EXPECT(t, tl_constraint_complete(&c));
  TL_EXPECT_OK(t, tl_constraint_mask(&c));
  for (uint32_t id = 0; id < ROWS; id++) /* finished: EOS only */
    if (bit(allow, id) != (id == EOS[0] || id == EOS[1])) {
      TL_EXPECT_EQ_U64(t, id, EOS[1]);
      break;
    }
done:
  tl_native_model_close(&m);
  free(mem);
  free(allow);
}

/* Thinking off: the grammar from the first token, no <think>, and no
 * leading newline. And the rule that decides it (docs/structured.md). */
static void thinking_off_and_the_rule(tl_test_ctx *t) {
  static const char open_prompt[] = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  static const char closed_prompt[] =
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  tl_native_model m;
  tl_grammar_vocab v;
  tl_constraint c;
  tl_arena ga;
  tl_gmatcher *kept = NULL;
  const tl_grammar *g;
  size_t cap = 32u << 20;
  uint8_t *mem = malloc(2 * cap);
  uint64_t *allow = calloc(ROWS / 64, sizeof *allow);
  if (!TL_EXPECT(t, mem != NULL && allow != NULL) || !open_tok(t, &m, &v)) {
    free(mem);
    free(allow);
    return;
  }
  TL_EXPECT(t, tl_constraint_thinking_open(&v, "messages", (const uint8_t *)open_prompt,
                                           strlen(open_prompt)));
  TL_EXPECT(t, !tl_constraint_thinking_open(&v, "messages", (const uint8_t *)closed_prompt,
                                            strlen(closed_prompt)));
  TL_EXPECT(t, !tl_constraint_thinking_open(&v, "text", (const uint8_t *)open_prompt,
                                            strlen(open_prompt)));
  tl_arena_init(&ga, mem, cap);
  g = make_grammar(&ga, 0);
  if (TL_EXPECT(t, g != NULL) &&
      TL_EXPECT_OK(t, tl_constraint_start(&c, g, &v, m.tok, mem + cap, cap, &kept, allow, ROWS, EOS, 2,
                                          false, 0))) {
    TL_EXPECT_EQ_U64(t, c.budget, TL_THINK_BUDGET_DEFAULT);
    TL_EXPECT_OK(t, tl_constraint_mask(&c));
    TL_EXPECT(t, !bit(allow, v.think_open) && !bit(allow, 198)); /* 198: "\n" */
  }
  /* The next turn with the same grammar compiled again keeps the matcher
   * and its caches (the start state's mask comes from the cache); another
   * grammar gets a new matcher. */
  {
    tl_gmatcher_stats before, after;
    const tl_grammar *again = make_grammar(&ga, 0), *other = make_grammar(&ga, 1);
    tl_gmatcher *first = kept;
    if (TL_EXPECT(t, again != NULL && other != NULL && first != NULL)) {
      tl_gmatcher_get_stats(first, &before);
      TL_EXPECT_OK(t, tl_constraint_start(&c, again, &v, m.tok, mem + cap, cap, &kept, allow, ROWS,
                                          EOS, 2, false, 0));
      TL_EXPECT(t, kept == first);
      TL_EXPECT_OK(t, tl_constraint_mask(&c));
      tl_gmatcher_get_stats(kept, &after);
      TL_EXPECT_EQ_U64(t, after.mask_cache_hits, before.mask_cache_hits + 1);
      TL_EXPECT(t, !bit(allow, v.think_open) && !bit(allow, 198));
      TL_EXPECT_OK(t, tl_constraint_start(&c, other, &v, m.tok, mem + cap, cap, &kept, allow, ROWS,
                                          EOS, 2, false, 0));
      tl_gmatcher_get_stats(kept, &after);
      TL_EXPECT_EQ_U64(t, after.masks, 0);
    }
  }
  tl_native_model_close(&m);
  free(mem);
  free(allow);
}

#define TINY "tests/golden/slm/tiny-f32.slm"
#define TINY_THINK_OPEN 344u
#define TINY_THINK_CLOSE 345u

typedef struct tiny_turns {
  tl_session s;
  tl_arena ga;
  uint8_t *mem;
  const tl_grammar *g;
  uint8_t digest[32];
} tiny_turns;

static bool tiny_open(tl_test_ctx *t, tiny_turns *tt) {
  tl_lane_options lane = tl_lane_defaults();
  char err[512];
  lane.fast = false;
  memset(tt, 0, sizeof *tt);
  tt->mem = malloc(1u << 20);
  if (!TL_EXPECT(t, tt->mem != NULL) ||
      !TL_EXPECT_OK(t, tl_session_open(&tt->s, TINY, err, sizeof err)))
    return false;
  tl_arena_init(&tt->ga, tt->mem, 1u << 20);
  tt->g = make_grammar(&tt->ga, 0);
  if (!TL_EXPECT(t, tt->g != NULL) ||
      !TL_EXPECT_OK(t, tl_session_lane(&tt->s, &lane, err, sizeof err)) ||
      !TL_EXPECT_OK(t, tl_session_plan(&tt->s, 96, 0, err, sizeof err)) ||
      !TL_EXPECT_OK(t, tl_session_allocate(&tt->s, 0, err, sizeof err)))
    return false;
  tl_grammar_digest(tt->g, tt->digest);
  return true;
}

static void tiny_close(tiny_turns *tt) {
  tl_session_close(&tt->s);
  free(tt->mem);
}

/* One turn after prompt (mode "text" or "messages") at temperature 1. */
static tl_status tiny_turn(tiny_turns *tt, const char *mode, const char *prompt, uint64_t seed,
                           bool grammar, uint32_t budget, tl_turn *out) {
  static atomic_int cancel;
  tl_generation_params gp;
  tl_turn_params tp;
  tl_sampler_field field;
  uint32_t ids[64];
  size_t n = 0, bad = 0;
  char err[256];
  tl_arena scratch;
  uint8_t *mem = malloc(8u << 20);
  tl_status st;
  if (mem == NULL) return TL_ERR_OUT_OF_MEMORY;
  tl_arena_init(&scratch, mem, 8u << 20);
  st = tl_tok_encode(tt->s.model.tok, (const uint8_t *)prompt, strlen(prompt), &scratch, ids,
                     NULL, 64, &n, &bad);
  free(mem);
  if (st != TL_OK) return st;
  memset(&gp, 0, sizeof gp);
  gp.given = TL_GIVEN_TEMPERATURE;
  gp.temperature = 1.0;
  gp.seed = seed;
  gp.max_tokens = 16;
  memset(&tp, 0, sizeof tp);
  tp.gen = &gp;
  tp.mode = mode;
  tp.prompt_bytes = (const uint8_t *)prompt;
  tp.prompt_len = strlen(prompt);
  tp.cancel = &cancel;
  tp.grammar = grammar ? tt->g : NULL;
  tp.think_budget = budget;
  tt->s.cache.len = 0;
  return tl_turn_run(&tt->s, &tp, ids, n, out, &field, err, sizeof err);
}

static bool has_bytes(const uint8_t *hay, size_t n, const uint8_t *needle, size_t k) {
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(hay + i, needle, k) == 0) return true;
  return false;
}

/* Constrained turns at temperature 1 over seeds: every reply is a prefix
 * of a sentence (a complete one when EOS stopped it: EOS is allowed only
 * there), checked by a fresh matcher; the receipt names the grammar's
 * digest, and is the same for the same seed, and another without the
 * grammar. */
static void constrained_turns_keep_to_the_grammar(tl_test_ctx *t) {
  tiny_turns tt;
  int complete = 0;
  if (!tiny_open(t, &tt)) {
    tiny_close(&tt);
    return;
  }
  for (uint64_t seed = 0; seed < 12; seed++) {
    tl_turn a, b, c;
    tl_grammar_vocab v;
    tl_gmatcher *m;
    tl_arena ma;
    uint8_t *mm = malloc(16u << 20);
    size_t raw = 0;
    if (!TL_EXPECT(t, mm != NULL)) break;
    TL_EXPECT_OK(t, tiny_turn(&tt, "text", "Hello", seed, true, 0, &a));
    TL_EXPECT_OK(t, a.status);
    TL_EXPECT(t, a.constrained);
    raw = a.r.raw_len;
    if (a.r.stop == TL_STOP_EOS) { /* the EOS token's text is not the grammar's */
      const uint8_t *eb;
      size_t en = 0;
      tl_tok_token_bytes(tt.s.model.tok, a.r.ids[a.r.n_ids - 1], &eb, &en);
      raw -= en;
    }
    tl_arena_init(&ma, mm, 16u << 20);
    if (TL_EXPECT_OK(t, tl_grammar_vocab_get(tt.s.model.grammar_vocab, tt.s.model.tok, &v)) &&
        TL_EXPECT_OK(t, tl_gmatcher_new(&ma, tt.g, v.trie, 0, &m)) &&
        TL_EXPECT_OK(t, tl_gmatcher_accept(m, a.r.raw, raw))) {
      if (a.r.stop == TL_STOP_EOS) TL_EXPECT(t, tl_gmatcher_accepting(m));
      TL_EXPECT_EQ_U64(t, a.grammar_complete, tl_gmatcher_accepting(m));
    }
    free(mm);
    TL_EXPECT_OK(t, a.receipt_status);
    TL_EXPECT(t, has_bytes(a.receipt, a.receipt_len, tt.digest, 32));
    complete += a.r.stop == TL_STOP_EOS;
    TL_EXPECT_OK(t, tiny_turn(&tt, "text", "Hello", seed, true, 0, &b));
    TL_EXPECT_MEM(t, a.receipt_id, b.receipt_id, 32);
    TL_EXPECT_OK(t, tiny_turn(&tt, "text", "Hello", seed, false, 0, &c));
    TL_EXPECT(t, memcmp(a.receipt_id, c.receipt_id, 32) != 0);
    TL_EXPECT(t, !has_bytes(c.receipt, c.receipt_len, tt.digest, 32));
    tl_turn_free(&a);
    tl_turn_free(&b);
    tl_turn_free(&c);
  }
  TL_EXPECT(t, complete > 0); /* the EOS path ran */
  tiny_close(&tt);
}

/* Thinking in a turn (a chat-template prompt left open): over seeds, a
 * reply that opens <think> closes it within the budget (2 tokens here),
 * and what follows </think> keeps to the grammar with its leading
 * newlines; one that does not open it keeps to the grammar from its first
 * token. The receipt records the budget. */
static void thinking_in_a_turn(tl_test_ctx *t) {
  static const char prompt[] = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  tiny_turns tt;
  int thought = 0, direct = 0;
  if (!tiny_open(t, &tt)) {
    tiny_close(&tt);
    return;
  }
  for (uint64_t seed = 0; seed < 12; seed++) {
    tl_turn a;
    tl_grammar_vocab v;
    tl_gmatcher *m;
    tl_arena ma;
    uint8_t *mm = malloc(16u << 20);
    size_t from = 0, k = 0;
    bool opened;
    if (!TL_EXPECT(t, mm != NULL)) break;
    if (!TL_EXPECT_OK(t, tiny_turn(&tt, "messages", prompt, seed, true, 2, &a)) ||
        !TL_EXPECT(t, a.r.n_ids > 0)) {
      free(mm);
      break;
    }
    TL_EXPECT_EQ_U64(t, a.think_budget, 2);
    opened = a.r.ids[0] == TINY_THINK_OPEN;
    if (opened) {
      for (k = 1; k < a.r.n_ids && a.r.ids[k] != TINY_THINK_CLOSE; k++) {
      }
      TL_EXPECT(t, k <= 3 || k == a.r.n_ids); /* at most 2 thought tokens */
      TL_EXPECT(t, k < a.r.n_ids);
      k++;
    }
    thought += opened;
    direct += !opened;
    for (size_t i = 0; i < k; i++) { /* the bytes of the thought */
      const uint8_t *b;
      size_t n = 0;
      tl_tok_token_bytes(tt.s.model.tok, a.r.ids[i], &b, &n);
      from += n;
    }
    tl_arena_init(&ma, mm, 16u << 20);
    if (TL_EXPECT_OK(t, tl_grammar_vocab_get(tt.s.model.grammar_vocab, tt.s.model.tok, &v)) &&
        TL_EXPECT_OK(t, tl_gmatcher_new(&ma, tt.g, v.trie, opened ? TL_GM_LEADING_NEWLINES : 0,
                                        &m))) {
      size_t end = a.r.raw_len;
      if (a.r.stop == TL_STOP_EOS) {
        const uint8_t *eb;
        size_t en = 0;
        tl_tok_token_bytes(tt.s.model.tok, a.r.ids[a.r.n_ids - 1], &eb, &en);
        end -= en;
      }
      TL_EXPECT(t, from <= end);
      TL_EXPECT_OK(t, tl_gmatcher_accept(m, a.r.raw + from, end - from));
    }
    free(mm);
    tl_turn_free(&a);
  }
  TL_EXPECT(t, thought > 0 && direct > 0); /* both paths ran */
  tiny_close(&tt);
}

static const tl_test_case cases[] = {
    TL_CASE(mask_matches_the_reference),
    TL_CASE(thinking_then_the_grammar),
    TL_CASE(thinking_off_and_the_rule),
    TL_CASE(constrained_turns_keep_to_the_grammar),
    TL_CASE(thinking_in_a_turn),
};
TL_SUITE(constrain, cases);
