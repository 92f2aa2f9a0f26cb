/* The generation loop (gen/generate.h) on a seeded synthetic model
 * (tests/support/model_gen) and a hand-built tokenizer
 * (tests/support/tok_build.h) whose ids cover the model's vocabulary: the
 * 256 single bytes, three merges ("ab", "cd", "xy"), and added tokens
 * <|im_end|> (special, the EOS), <|im_start|> (special) and <think> (not
 * special), so every id's bytes are known. A scripted `choose` emits a
 * given id sequence; a greedy one takes the argmax (lowest id on ties).
 *
 * Covered: the four stop rules (EOS kept in ids and raw bytes, not in the
 * visible bytes; stop strings spanning tokens, with the streamed bytes
 * never holding a byte of the match and adding up to the final visible
 * bytes; max tokens; a full cache), cancellation at every check (prefill
 * chunks and decode steps) with the cache ending at the last completed
 * forward pass, KV-cache prefix reuse against recomputation (bit-identical
 * logits and K/V), and a cancelled chat turn followed by the next one.
 * Freestanding, so it runs natively and in wasm32. */
#include "gen/generate.h"

#include <string.h>

#include "arena.h"
#include "model/model_gen.h"
#include "tl_test.h"
#include "tok/tokenizer.h"
#include "tok_build.h"

#define MODEL_CAP (512u << 10)
#define ARENA_CAP (2u << 20)
#define SCRATCH_CAP (1u << 20)
#define TOK_CAP (8u << 10)
#define TOK_ARENA_CAP (2u << 20)

/* Tokenizer ids (see build_tok). */
#define ID_AB 256u
#define ID_CD 257u
#define ID_XY 258u
#define ID_EOS 259u   /* <|im_end|>, special */
#define ID_START 260u /* <|im_start|>, special */
#define ID_THINK 261u /* <think>, not special */
#define VOCAB 262u

#define MAX_IDS 320
#define BYTES_CAP 8192
#define REC_STEPS 16

static tok_builder builder;
static _Alignas(64) uint8_t tok_section[TOK_CAP];
static _Alignas(64) uint8_t tok_arena_mem[TOK_ARENA_CAP];
static _Alignas(64) uint8_t model_buf[MODEL_CAP];
static _Alignas(64) uint8_t arena_mem[ARENA_CAP];
static _Alignas(64) uint8_t scratch_mem[SCRATCH_CAP];

typedef struct fixture {
  tl_model_gen g;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_qwen3 m;
  tl_arena arena;   /* model tables and caches */
  tl_arena scratch; /* builder scratch, then forward scratch */
  tl_arena tok_arena;
  const tl_tokenizer *tok;
} fixture;

static bool build_tok(tl_test_ctx *t, fixture *f) {
  size_t len;
  tok_build_init(&builder);
  tok_build_merge(&builder, "a b");
  tok_build_merge(&builder, "c d");
  tok_build_merge(&builder, "x y");
  tok_build_added(&builder, "<|im_end|>", TL_TOK_ADDED_SPECIAL);
  tok_build_added(&builder, "<|im_start|>", TL_TOK_ADDED_SPECIAL);
  tok_build_added(&builder, "<think>", 0);
  len = tok_build_finish(&builder, tok_section, sizeof tok_section);
  if (!TL_EXPECT(t, len > 0)) return false;
  tl_arena_init(&f->tok_arena, tok_arena_mem, sizeof tok_arena_mem);
  if (!TL_EXPECT_OK(t, tl_tok_load(tok_section, len, &f->tok_arena, &f->tok)))
    return false;
  return TL_EXPECT_EQ_U64(t, tl_tok_vocab_size(f->tok), VOCAB) &&
         TL_EXPECT_EQ_U64(t, builder.n_tokens, VOCAB);
}

/* The model (vocab = the tokenizer's ids) and the tokenizer. */
static bool setup_pos(tl_test_ctx *t, fixture *f, uint32_t max_positions) {
  size_t len;
  memset(f, 0, sizeof *f);
  f->g = tl_model_gen_tiny(TL_QTYPE_F32, 23);
  f->g.vocab = VOCAB;
  f->g.max_positions = max_positions;
  tl_arena_init(&f->arena, arena_mem, ARENA_CAP);
  tl_arena_init(&f->scratch, scratch_mem, SCRATCH_CAP);
  if (!TL_EXPECT_OK(t, tl_model_gen_build(&f->g, model_buf, MODEL_CAP,
                                          &f->scratch, &len)))
    return false;
  if (!TL_EXPECT_OK(t, tl_model_gen_open(model_buf, len, &f->slm, &f->ts,
                                         &f->m, &f->arena)))
    return false;
  return build_tok(t, f);
}

static bool setup(tl_test_ctx *t, fixture *f) { return setup_pos(t, f, 256); }

static bool new_cache(tl_test_ctx *t, fixture *f, tl_qwen3_cache *c,
                      uint32_t capacity) {
  return TL_EXPECT_OK(t, tl_qwen3_cache_init(c, &f->m, capacity, &f->arena));
}


static size_t bytes_to_ids(const char *s, uint32_t *ids) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n; i++) ids[i] = (uint8_t)s[i];
  return n;
}

/* ------------------------------------------------------------------------ */
/* Callbacks                                                                */

/* Emits ids[step]; notes whether `generated` always held what it emitted. */
typedef struct script {
  const uint32_t *ids;
  size_t n;
  bool history_ok;
} script;

static tl_status choose_script(void *ctx, const float *logits, size_t vocab,
                               const uint32_t *generated, size_t step,
                               uint32_t *id) {
  script *s = ctx;
  (void)logits;
  if (vocab != VOCAB || step >= s->n) return TL_ERR_INVALID_ARGUMENT;
  if (step > 0 && memcmp(generated, s->ids, step * sizeof *generated) != 0)
    s->history_ok = false;
  *id = s->ids[step];
  return TL_OK;
}

/* The argmax (lowest id on ties); records the logits it chose from. */
typedef struct greedy {
  float logits[REC_STEPS][VOCAB];
  size_t steps;
} greedy;

static tl_status choose_greedy(void *ctx, const float *logits, size_t vocab,
                               const uint32_t *generated, size_t step,
                               uint32_t *id) {
  greedy *g = ctx;
  uint32_t best = 0;
  (void)generated;
  if (vocab != VOCAB) return TL_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 1; i < vocab; i++)
    if (logits[i] > logits[best]) best = i;
  if (step < REC_STEPS) memcpy(g->logits[step], logits, vocab * sizeof *logits);
  g->steps = step + 1;
  *id = best;
  return TL_OK;
}

/* What the optional callbacks saw. */
typedef struct watch {
  uint8_t streamed[BYTES_CAP];
  size_t n_streamed, n_visible_calls;
  uint32_t tokens[MAX_IDS];
  size_t streamed_at_token[MAX_IDS]; /* n_streamed when token i arrived */
  size_t n_tokens;
  size_t prefill_calls, prefill_done;
  size_t checks;    /* cancellation checks so far */
  size_t cancel_at; /* cancelled() is true from this check on (0: never) */
  bool overflow;
} watch;

static void on_visible(void *ctx, const uint8_t *b, size_t n) {
  watch *w = ctx;
  w->n_visible_calls++;
  if (n == 0 || n > BYTES_CAP - w->n_streamed) {
    w->overflow = true; /* an empty call, or more than any run makes */
    return;
  }
  memcpy(w->streamed + w->n_streamed, b, n);
  w->n_streamed += n;
}

static void on_token(void *ctx, uint32_t id) {
  watch *w = ctx;
  if (w->n_tokens >= MAX_IDS) {
    w->overflow = true;
    return;
  }
  w->streamed_at_token[w->n_tokens] = w->n_streamed;
  w->tokens[w->n_tokens++] = id;
}

static void on_prefill(void *ctx, size_t done, size_t total) {
  watch *w = ctx;
  (void)total;
  w->prefill_calls++;
  w->prefill_done = done;
}

static bool is_cancelled(void *ctx) {
  watch *w = ctx;
  w->checks++;
  return w->cancel_at != 0 && w->checks >= w->cancel_at;
}

/* Output buffers. */
typedef struct outbuf {
  uint32_t ids[MAX_IDS];
  uint8_t raw[BYTES_CAP], visible[BYTES_CAP];
  float logits[VOCAB];
  tl_gen_result r;
} outbuf;

static void out_init(outbuf *o) {
  memset(&o->r, 0, sizeof o->r);
  o->r.ids = o->ids;
  o->r.ids_cap = MAX_IDS;
  o->r.raw = o->raw;
  o->r.raw_cap = BYTES_CAP;
  o->r.visible = o->visible;
  o->r.visible_cap = BYTES_CAP;
}

static const uint32_t eos_set[] = {ID_EOS};

/* Parameters with every callback wired to w. */
static tl_gen_params params(uint32_t max_new, watch *w) {
  tl_gen_params p;
  memset(&p, 0, sizeof p);
  p.max_new = max_new;
  p.eos = eos_set;
  p.n_eos = 1;
  p.on_visible = on_visible;
  p.on_token = on_token;
  p.on_prefill = on_prefill;
  p.cancelled = is_cancelled;
  p.cb_ctx = w;
  return p;
}

static tl_status gen(fixture *f, tl_qwen3_cache *c, const uint32_t *prompt,
                     size_t n, const tl_gen_params *p, outbuf *o) {
  out_init(o);
  return tl_generate(&f->m, c, f->tok, prompt, n, p, &f->scratch, o->logits,
                     &o->r);
}

/* Raw bytes of ids (RAW decode). */
static size_t raw_of(fixture *f, const uint32_t *ids, size_t n, uint8_t *out,
                     size_t cap) {
  size_t len = 0, bad;
  if (tl_tok_decode(f->tok, ids, n, TL_TOK_DECODE_RAW, out, cap, &len, &bad) != TL_OK)
    return SIZE_MAX;
  return len;
}

/* ------------------------------------------------------------------------ */

static void eos_stops_and_is_not_visible(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o;
  tl_qwen3_cache c;
  uint32_t prompt[16];
  size_t np;
  static const uint32_t s1[] = {'A', ID_AB, ID_EOS, 'C'};
  static const uint32_t s2[] = {ID_EOS, 'C'};
  script sc = {s1, 4, true};
  tl_gen_params p;
  if (!setup(t, &f) || !new_cache(t, &f, &c, 64)) return;
  np = bytes_to_ids("hello", prompt);
  memset(&w, 0, sizeof w);
  p = params(10, &w);
  p.choose = choose_script;
  p.choose_ctx = &sc;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_EOS);
  TL_EXPECT_STR(t, tl_stop_reason_name(o.r.stop), "eos");
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 3);
  TL_EXPECT_MEM(t, o.ids, s1, 3 * sizeof *s1);
  TL_EXPECT(t, sc.history_ok);
  TL_EXPECT_EQ_U64(t, o.r.raw_len, 13);
  TL_EXPECT_MEM(t, o.raw, "Aab<|im_end|>", 13);
  TL_EXPECT_EQ_U64(t, o.r.visible_len, 3);
  TL_EXPECT_MEM(t, o.visible, "Aab", 3);
  TL_EXPECT_EQ_U64(t, w.n_streamed, 3);
  TL_EXPECT_MEM(t, w.streamed, "Aab", 3);
  TL_EXPECT(t, !w.overflow);
  TL_EXPECT_EQ_U64(t, w.n_tokens, 3);
  TL_EXPECT_MEM(t, w.tokens, s1, 3 * sizeof *s1);
  /* The prompt and every generated id but the EOS were fed. */
  TL_EXPECT_EQ_U64(t, o.r.prompt_fed, np);
  TL_EXPECT_EQ_U64(t, c.len, np + 2);
  TL_EXPECT_EQ_U64(t, w.prefill_done, np);

  /* EOS first: nothing visible, nothing fed after the prompt. */
  c.len = 0;
  memset(&w, 0, sizeof w);
  sc.ids = s2;
  sc.n = 2;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_EOS);
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 1);
  TL_EXPECT_EQ_U64(t, o.r.raw_len, 10);
  TL_EXPECT_EQ_U64(t, o.r.visible_len, 0);
  TL_EXPECT_EQ_U64(t, w.n_streamed, 0);
  TL_EXPECT_EQ_U64(t, w.n_visible_calls, 0);
  TL_EXPECT_EQ_U64(t, c.len, np);

  /* A special token that is not in the EOS set does not stop the run and
   * is raw but not visible; <think> (added, not special) is visible. */
  {
    static const uint32_t s3[] = {ID_START, ID_THINK, 'z', ID_EOS};
    c.len = 0;
    memset(&w, 0, sizeof w);
    sc.ids = s3;
    sc.n = 4;
    if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
    TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_EOS);
    TL_EXPECT_EQ_U64(t, o.r.n_ids, 4);
    TL_EXPECT_EQ_U64(t, o.r.raw_len, 12 + 7 + 1 + 10);
    TL_EXPECT_MEM(t, o.raw, "<|im_start|><think>z<|im_end|>", 30);
    TL_EXPECT_EQ_U64(t, o.r.visible_len, 8);
    TL_EXPECT_MEM(t, o.visible, "<think>z", 8);
    TL_EXPECT_EQ_U64(t, w.n_streamed, 8);
    TL_EXPECT_MEM(t, w.streamed, "<think>z", 8);
  }
}

/* One stop-string scenario: the script, the stop strings, the expected
 * visible bytes and how many ids are generated. */
typedef struct stop_case {
  const char *name;
  uint32_t ids[8];
  size_t n_ids; /* ids generated (the script may hold more) */
  size_t n_script;
  const char *stops[3];
  const char *visible;
} stop_case;

static const stop_case stop_cases[] = {
    /* "b|c": the match spans two tokens. */
    {"two tokens", {ID_AB, ID_CD, 'Z'}, 2, 3, {"bc"}, "a"},
    /* "b|c|x": three tokens, the first one partly visible. */
    {"three tokens", {'Q', ID_AB, 'c', ID_XY, 'Z'}, 4, 5, {"bcx"}, "Qa"},
    /* A false start is held back, then released; the real match later. */
    {"false start", {ID_AB, 'c', ID_AB, 'z', 'Z'}, 4, 5, {"abz"}, "abc"},
    /* The match at the very start. */
    {"whole first token", {ID_CD, 'Z'}, 1, 2, {"cd"}, ""},
    /* The match inside one token. */
    {"inside a token", {'q', ID_XY, 'Z'}, 2, 3, {"y"}, "qx"},
    /* Two stop strings: the one that completes first wins. */
    {"two strings", {'k', ID_AB, 'c', ID_CD, 'Z'}, 3, 5, {"cdd", "bc"}, "ka"},
    /* A special token in the raw stream before the match: raw and visible
     * differ by its text. */
    {"special before", {'Q', ID_START, ID_AB, ID_CD, 'Z'}, 4, 5, {"bc"}, "Qa"},
    /* A stop string that is a special token's text: raw has it, visible
     * does not; the visible bytes before it stay. */
    {"special text", {'Q', ID_AB, ID_START, 'R'}, 3, 4, {"<|im_start|>"}, "Qab"},
    /* A stop string that spans visible bytes and a special token. */
    {"spans special", {ID_AB, 'c', ID_START, 'd', 'Z'}, 4, 5, {"c<|im_start|>d"}, "ab"},
    /* A stop string inside a non-special added token (visible). */
    {"inside added", {'Q', ID_THINK, 'Z'}, 2, 3, {"ink"}, "Q<th"},
    /* Two matches end together: the visible bytes end before the longer
     * (as if the bytes had come one at a time). */
    {"same end", {'Q', 'a', ID_CD, 'Z'}, 3, 4, {"cd", "acd"}, "Q"},
    /* An empty stop string never matches (nor holds anything back). */
    {"empty string", {'a', ID_XY, 'z', 'z', 'Z'}, 4, 5, {"", "zz"}, "axy"},
};

static void stop_string_spans_tokens_with_holdback(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o;
  static uint8_t want_raw[BYTES_CAP];
  tl_qwen3_cache c;
  uint32_t prompt[16];
  size_t np;
  if (!setup(t, &f) || !new_cache(t, &f, &c, 64)) return;
  np = bytes_to_ids("stop", prompt);
  for (size_t i = 0; i < sizeof stop_cases / sizeof stop_cases[0]; i++) {
    const stop_case *sc = &stop_cases[i];
    script s = {sc->ids, sc->n_script, true};
    const uint8_t *stops[3];
    size_t lens[3], n_stops = 0, vis = strlen(sc->visible), raw_len;
    tl_gen_params p;
    unsigned before = t->failed_checks;
    for (; n_stops < 3 && sc->stops[n_stops] != NULL; n_stops++) {
      stops[n_stops] = (const uint8_t *)sc->stops[n_stops];
      lens[n_stops] = strlen(sc->stops[n_stops]);
    }
    c.len = 0;
    memset(&w, 0, sizeof w);
    p = params(10, &w);
    p.choose = choose_script;
    p.choose_ctx = &s;
    p.stops = stops;
    p.stop_lens = lens;
    p.n_stops = n_stops;
    if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
    raw_len = raw_of(&f, sc->ids, sc->n_ids, want_raw, sizeof want_raw);
    TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_STRING);
    TL_EXPECT_STR(t, tl_stop_reason_name(o.r.stop), "stop_string");
    TL_EXPECT_EQ_U64(t, o.r.n_ids, sc->n_ids);
    TL_EXPECT_MEM(t, o.ids, sc->ids, sc->n_ids * sizeof *o.ids);
    /* Raw keeps every byte generated. */
    TL_EXPECT_EQ_U64(t, o.r.raw_len, raw_len);
    TL_EXPECT_MEM(t, o.raw, want_raw, raw_len);
    /* Visible ends right before the match. */
    TL_EXPECT_EQ_U64(t, o.r.visible_len, vis);
    TL_EXPECT_MEM(t, o.visible, sc->visible, vis);
    /* The stream adds up to the visible bytes (so it never held a byte of
     * the match), and no call was empty. */
    TL_EXPECT_EQ_U64(t, w.n_streamed, vis);
    TL_EXPECT_MEM(t, w.streamed, sc->visible, vis);
    TL_EXPECT(t, !w.overflow);
    /* Every token before the stop was fed. */
    TL_EXPECT_EQ_U64(t, c.len, np + sc->n_ids - 1);
    if (t->failed_checks != before) {
      tl_test_print(t, "  in stop case: ");
      tl_test_print(t, sc->name);
      tl_test_print(t, "\n");
    }
  }
}

/* The stream is incremental: held-back bytes wait for the token that
 * decides them and no longer. */
static void holdback_streams_as_soon_as_decided(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o;
  tl_qwen3_cache c;
  uint32_t prompt[4];
  static const uint32_t ids[] = {ID_AB, 'c', ID_AB, 'z', 'q', 'a', 'Z'};
  static const uint8_t stop[] = "abz!";
  const uint8_t *stops[1] = {stop};
  size_t lens[1] = {4};
  script s = {ids, 7, true};
  tl_gen_params p;
  if (!setup(t, &f) || !new_cache(t, &f, &c, 64)) return;
  prompt[0] = 'p';
  memset(&w, 0, sizeof w);
  p = params(6, &w);
  p.choose = choose_script;
  p.choose_ctx = &s;
  p.stops = stops;
  p.stop_lens = lens;
  p.n_stops = 1;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, 1, &p, &o))) return;
  /* "ab" | "c" | "ab" | "z" | "q" | "a", max tokens: no match. */
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_MAX_TOKENS);
  TL_EXPECT_EQ_U64(t, o.r.visible_len, 8);
  TL_EXPECT_MEM(t, o.visible, "abcabzqa", 8);
  TL_EXPECT_EQ_U64(t, w.n_tokens, 6);
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[0], 0);
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[1], 0); /* "ab" held */
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[2], 3); /* "abc": released */
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[3], 3); /* "ab" held */
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[4], 3); /* "abz" held */
  TL_EXPECT_EQ_U64(t, w.streamed_at_token[5], 7); /* "abzq": released */
  /* The final "a" was held until the run ended, then flushed. */
  TL_EXPECT_EQ_U64(t, w.n_streamed, 8);
  TL_EXPECT_MEM(t, w.streamed, "abcabzqa", 8);
  TL_EXPECT(t, !w.overflow);
}

static void max_tokens_stops(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o;
  tl_qwen3_cache c;
  uint32_t prompt[16];
  size_t np;
  static const uint32_t ids[] = {'a', 'b', ID_START, 'd', 'e', 'f'};
  script s = {ids, 6, true};
  tl_gen_params p;
  if (!setup(t, &f) || !new_cache(t, &f, &c, 64)) return;
  np = bytes_to_ids("max tokens", prompt);
  memset(&w, 0, sizeof w);
  p = params(4, &w);
  p.choose = choose_script;
  p.choose_ctx = &s;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_MAX_TOKENS);
  TL_EXPECT_STR(t, tl_stop_reason_name(o.r.stop), "max_tokens");
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 4);
  TL_EXPECT_MEM(t, o.ids, ids, 4 * sizeof *ids);
  TL_EXPECT_EQ_U64(t, o.r.raw_len, 15);
  TL_EXPECT_MEM(t, o.raw, "ab<|im_start|>d", 15);
  TL_EXPECT_EQ_U64(t, o.r.visible_len, 3);
  TL_EXPECT_MEM(t, o.visible, "abd", 3);
  TL_EXPECT_EQ_U64(t, w.n_streamed, 3);
  TL_EXPECT_EQ_U64(t, c.len, np + 3);
  TL_EXPECT(t, s.history_ok);

  /* max_new 0: no id, the prompt fed. */
  c.len = 0;
  memset(&w, 0, sizeof w);
  p.max_new = 0;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_MAX_TOKENS);
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 0);
  TL_EXPECT_EQ_U64(t, c.len, np);

  /* ids_cap below max_new is refused; an empty prompt too. */
  memset(&w, 0, sizeof w);
  p.max_new = 4;
  out_init(&o);
  o.r.ids_cap = 3;
  TL_EXPECT_STATUS(t, tl_generate(&f.m, &c, f.tok, prompt, np, &p, &f.scratch,
                                  o.logits, &o.r),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, gen(&f, &c, prompt, 0, &p, &o), TL_ERR_INVALID_ARGUMENT);
}

static void context_full_stops(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o;
  static uint32_t ids[64];
  tl_qwen3_cache c;
  uint32_t prompt[16];
  size_t np;
  script s = {ids, 64, true};
  tl_gen_params p;
  for (size_t i = 0; i < 64; i++) ids[i] = 'a' + (uint32_t)(i % 26);
  if (!setup(t, &f) || !new_cache(t, &f, &c, 12)) return;
  np = bytes_to_ids("ctx f", prompt);
  memset(&w, 0, sizeof w);
  p = params(40, &w);
  p.choose = choose_script;
  p.choose_ctx = &s;
  p.prefill_chunk = 2;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  /* The cache fills up after 12 - 5 generated tokens are fed; the next
   * token is still chosen (its logits exist) but cannot be fed. */
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_CONTEXT);
  TL_EXPECT_STR(t, tl_stop_reason_name(o.r.stop), "context_full");
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 12 - np + 1);
  TL_EXPECT_EQ_U64(t, c.len, 12);
  TL_EXPECT_EQ_U64(t, w.n_streamed, o.r.n_ids);
  TL_EXPECT_EQ_U64(t, w.prefill_calls, 3);

  /* Max tokens at the same step wins (the rules' order). */
  c.len = 0;
  memset(&w, 0, sizeof w);
  p.max_new = (uint32_t)(12 - np + 1);
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_MAX_TOKENS);
  TL_EXPECT_EQ_U64(t, c.len, 12);

  /* A prompt that fills the cache exactly: one token, then context. */
  {
    uint32_t full[12];
    for (size_t i = 0; i < 12; i++) full[i] = 'A' + (uint32_t)i;
    c.len = 0;
    memset(&w, 0, sizeof w);
    p.max_new = 40;
    if (!TL_EXPECT_OK(t, gen(&f, &c, full, 12, &p, &o))) return;
    TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_CONTEXT);
    TL_EXPECT_EQ_U64(t, o.r.n_ids, 1);
    TL_EXPECT_EQ_U64(t, c.len, 12);
    /* One token more than fits: the forward pass refuses the last chunk;
     * the chunks before it were fed. */
    c.len = 0;
    memset(&w, 0, sizeof w);
    p.prefill_chunk = 5;
    TL_EXPECT_STATUS(t, gen(&f, &c, full, 12, &p, &o), TL_OK);
    c.len = 1;
    TL_EXPECT_STATUS(t, gen(&f, &c, full, 12, &p, &o), TL_ERR_CONTEXT_EXCEEDED);
    TL_EXPECT_EQ_U64(t, o.r.prompt_fed, 10);
    TL_EXPECT_EQ_U64(t, c.len, 11);
    TL_EXPECT_EQ_U64(t, o.r.n_ids, 0);
  }

  /* The model's max_position_embeddings bounds it too (a larger cache). */
  if (!setup_pos(t, &f, 16) || !new_cache(t, &f, &c, 40)) return;
  memset(&w, 0, sizeof w);
  p.max_new = 40;
  p.prefill_chunk = 0;
  if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
  TL_EXPECT_EQ_U64(t, o.r.stop, TL_STOP_CONTEXT);
  TL_EXPECT_EQ_U64(t, o.r.n_ids, 16 - np + 1);
  TL_EXPECT_EQ_U64(t, c.len, 16);
}

/* Cancellation at the k-th check, for every k: before each prefill chunk
 * and before each decode forward call. */
static void cancellation_at_every_check(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf full, o;
  static const uint32_t ids[] = {'a', ID_AB, 'x', ID_START, 'y', ID_EOS, 'z'};
  static const uint8_t stop[] = "yq";
  const uint8_t *stops[1] = {stop};
  size_t lens[1] = {2};
  static const size_t chunks[] = {1, 4, 64};
  static const size_t starts[] = {0, 3};
  tl_qwen3_cache ref, c;
  uint32_t prompt[16], pre[3] = {'<', 's', '>'};
  size_t np;
  if (!setup(t, &f) || !new_cache(t, &f, &ref, 64) || !new_cache(t, &f, &c, 64))
    return;
  np = bytes_to_ids("cancel me!", prompt); /* 10 */
  for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
    for (size_t si = 0; si < sizeof starts / sizeof starts[0]; si++) {
      size_t chunk = chunks[ci], start = starts[si];
      size_t n_chunks = (np + chunk - 1) / chunk, total;
      script s = {ids, 7, true};
      tl_gen_params p;
      ref.len = 0;
      if (start && !TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &ref, pre, start, NULL,
                                                     NULL, &f.scratch, NULL)))
        return;
      memset(&w, 0, sizeof w);
      p = params(10, &w);
      p.choose = choose_script;
      p.choose_ctx = &s;
      p.prefill_chunk = chunk;
      p.stops = stops;
      p.stop_lens = lens;
      p.n_stops = 1;
      if (!TL_EXPECT_OK(t, gen(&f, &ref, prompt, np, &p, &full))) return;
      /* Six ids up to the EOS; five decode forward calls. */
      TL_EXPECT_EQ_U64(t, full.r.stop, TL_STOP_EOS);
      TL_EXPECT_EQ_U64(t, full.r.n_ids, 6);
      total = w.checks;
      TL_EXPECT_EQ_U64(t, total, n_chunks + 5);
      for (size_t k = 1; k <= total + 1; k++) {
        size_t want_ids, want_len, want_fed;
        unsigned before = t->failed_checks;
        c.len = 0;
        if (start && !TL_EXPECT_OK(t, tl_qwen3_forward(&f.m, &c, pre, start, NULL,
                                                       NULL, &f.scratch, NULL)))
          return;
        memset(&w, 0, sizeof w);
        w.cancel_at = k;
        s.history_ok = true;
        if (!TL_EXPECT_OK(t, gen(&f, &c, prompt, np, &p, &o))) return;
        if (k <= n_chunks) {
          want_fed = (k - 1) * chunk;
          want_ids = 0;
          want_len = start + want_fed;
        } else if (k <= total) {
          want_fed = np;
          want_ids = k - n_chunks;
          want_len = start + np + want_ids - 1;
        } else { /* never fires */
          want_fed = np;
          want_ids = 6;
          want_len = start + np + 5;
        }
        TL_EXPECT_EQ_U64(t, o.r.stop, k <= total ? TL_STOP_CANCELLED : TL_STOP_EOS);
        if (k <= total) TL_EXPECT_STR(t, tl_stop_reason_name(o.r.stop), "cancelled");
        TL_EXPECT_EQ_U64(t, o.r.prompt_fed, want_fed);
        TL_EXPECT_EQ_U64(t, o.r.n_ids, want_ids);
        TL_EXPECT_EQ_U64(t, c.len, want_len);
        TL_EXPECT_EQ_U64(t, w.checks, k <= total ? k : total);
        /* A prefix of the uncancelled run: ids, raw bytes, K/V rows. */
        TL_EXPECT_MEM(t, o.ids, full.ids, want_ids * sizeof *o.ids);
        TL_EXPECT(t, o.r.raw_len <= full.r.raw_len);
        TL_EXPECT_MEM(t, o.raw, full.raw, o.r.raw_len);
        TL_EXPECT(t, tl_model_gen_same_cache(&c, &ref, f.m.cfg.layers, c.len));
        /* The visible bytes: the ids' visible bytes (no stop matched),
         * all of them streamed (the held-back "y" too). */
        TL_EXPECT_EQ_U64(t, w.n_streamed, o.r.visible_len);
        TL_EXPECT_MEM(t, w.streamed, o.visible, o.r.visible_len);
        {
          static uint8_t vis[BYTES_CAP];
          size_t vl = 0, bad;
          TL_EXPECT_OK(t, tl_tok_decode(f.tok, o.ids, o.r.n_ids, TL_TOK_DECODE_VISIBLE,
                                        vis, sizeof vis, &vl, &bad));
          TL_EXPECT_EQ_U64(t, o.r.visible_len, vl);
          TL_EXPECT_MEM(t, o.visible, vis, vl);
        }
        if (t->failed_checks != before) {
          tl_test_print(t, "  at chunk ");
          tl_test_print_u64(t, chunk);
          tl_test_print(t, " start ");
          tl_test_print_u64(t, start);
          tl_test_print(t, " k ");
          tl_test_print_u64(t, k);
          tl_test_print(t, "\n");
          return;
        }
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Prefix reuse                                                             */

static size_t common_prefix(const uint32_t *a, size_t na, const uint32_t *b,
                            size_t nb) {
  size_t n = 0;
  while (n < na && n < nb && a[n] == b[n]) n++;
  return n;
}

/* Keeps `cached` = the ids whose K/V the cache holds, as cmd_chat does:
 * the prompt (all of it, [0, n)), then the generated ids that were fed. */
static void note_cached(uint32_t *cached, const uint32_t *prompt, size_t n,
                        const tl_gen_result *r, uint32_t cache_len) {
  size_t from_prompt = n < cache_len ? n : cache_len;
  memcpy(cached, prompt, from_prompt * sizeof *prompt);
  memcpy(cached + from_prompt, r->ids, (cache_len - from_prompt) * sizeof *r->ids);
}

/* Reuse (truncate to the common prefix, feed the rest) against a fresh
 * cache fed B from scratch: the logits after B, the next 8 greedy ids and
 * their logits, and K/V rows [0, len) are the same bits. */
static void reuse_equals_recomputation(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o1, o2, o3;
  static greedy g1, g2, g3;
  static uint32_t a[16], cached[128], b[128];
  tl_qwen3_cache turn1, fresh;
  tl_test_rng rng = {0x5eed};
  enum { NA = 12, GEN1 = 6, GEN2 = 9 };
  static const size_t chunk_sets[][3] = {{5, 3, 64}, {1, 64, 1}, {64, 2, 7}};
  if (!setup(t, &f) || !new_cache(t, &f, &turn1, 128) ||
      !new_cache(t, &f, &fresh, 128))
    return;
  for (size_t i = 0; i < NA; i++) a[i] = (uint32_t)(tl_test_rng_next(&rng) % VOCAB);
  for (size_t cs = 0; cs < sizeof chunk_sets / sizeof chunk_sets[0]; cs++) {
    for (int variant = 0; variant < 7; variant++) {
      tl_gen_params p;
      size_t nb = 0, reuse, len1;
      unsigned before = t->failed_checks;
      /* Turn 1: A, then 6 greedy ids (5 of them fed). */
      turn1.len = 0;
      memset(&w, 0, sizeof w);
      p = params(GEN1, &w);
      p.n_eos = 0; /* a plain continuation */
      p.choose = choose_greedy;
      p.choose_ctx = &g1;
      p.prefill_chunk = chunk_sets[cs][0];
      if (!TL_EXPECT_OK(t, gen(&f, &turn1, a, NA, &p, &o1))) return;
      if (!TL_EXPECT_EQ_U64(t, o1.r.n_ids, GEN1)) return;
      note_cached(cached, a, NA, &o1.r, turn1.len);
      len1 = turn1.len;
      TL_EXPECT_EQ_U64(t, len1, NA + GEN1 - 1);
      /* B shares a prefix with what the cache holds. */
      switch (variant) {
        case 0: /* everything cached, the unfed last id, then more */
          memcpy(b, cached, len1 * sizeof *b);
          nb = len1;
          b[nb++] = o1.ids[GEN1 - 1];
          for (int i = 0; i < 4; i++) b[nb++] = 'e' + (uint32_t)i;
          break;
        case 1: /* diverges inside A (as when the template drops reasoning) */
          memcpy(b, cached, 8 * sizeof *b);
          nb = 8;
          b[nb++] = (a[8] + 1) % VOCAB;
          for (int i = 0; i < 5; i++) b[nb++] = 'k' + (uint32_t)i;
          break;
        case 2: /* exactly the cached ids: one must be fed again */
          memcpy(b, cached, len1 * sizeof *b);
          nb = len1;
          break;
        case 3: /* a strict prefix of the cached ids */
          memcpy(b, cached, (len1 - 3) * sizeof *b);
          nb = len1 - 3;
          break;
        case 4: /* nothing in common */
          b[nb++] = (a[0] + 7) % VOCAB;
          for (int i = 0; i < 9; i++) b[nb++] = a[i];
          break;
        case 5: /* diverges inside the generated part */
          memcpy(b, cached, (NA + 2) * sizeof *b);
          nb = NA + 2;
          b[nb++] = (cached[NA + 2] + 1) % VOCAB;
          b[nb++] = ID_START;
          break;
        default: /* one token */
          b[nb++] = a[0];
          break;
      }
      /* The second turn with reuse, as cmd_chat does it. */
      reuse = common_prefix(b, nb, cached, turn1.len);
      if (reuse == nb) reuse--;
      turn1.len = (uint32_t)reuse;
      memset(&w, 0, sizeof w);
      p = params(GEN2, &w);
      p.n_eos = 0;
      p.choose = choose_greedy;
      p.choose_ctx = &g2;
      p.prefill_chunk = chunk_sets[cs][1];
      if (!TL_EXPECT_OK(t, gen(&f, &turn1, b + reuse, nb - reuse, &p, &o2))) return;
      /* From scratch. */
      fresh.len = 0;
      memset(&w, 0, sizeof w);
      p.choose_ctx = &g3;
      p.prefill_chunk = chunk_sets[cs][2];
      if (!TL_EXPECT_OK(t, gen(&f, &fresh, b, nb, &p, &o3))) return;
      switch (variant) {
        case 0: TL_EXPECT_EQ_U64(t, reuse, len1); break;
        case 1: TL_EXPECT_EQ_U64(t, reuse, 8); break;
        case 2: TL_EXPECT_EQ_U64(t, reuse, len1 - 1); break;
        case 3: TL_EXPECT_EQ_U64(t, reuse, len1 - 4); break;
        case 4: TL_EXPECT_EQ_U64(t, reuse, 0); break;
        case 5: TL_EXPECT_EQ_U64(t, reuse, NA + 2); break;
        default: TL_EXPECT_EQ_U64(t, reuse, 0); break;
      }
      TL_EXPECT_EQ_U64(t, o2.r.n_ids, GEN2);
      TL_EXPECT_EQ_U64(t, o3.r.n_ids, GEN2);
      TL_EXPECT_EQ_U64(t, g2.steps, GEN2);
      TL_EXPECT_EQ_U64(t, g3.steps, GEN2);
      TL_EXPECT_MEM(t, o2.ids, o3.ids, GEN2 * sizeof *o2.ids);
      /* Step 0: the logits after B; steps 1..8: after each greedy id. */
      TL_EXPECT_MEM(t, g2.logits, g3.logits, GEN2 * sizeof g2.logits[0]);
      TL_EXPECT_EQ_U64(t, turn1.len, nb + GEN2 - 1);
      TL_EXPECT_EQ_U64(t, fresh.len, nb + GEN2 - 1);
      TL_EXPECT(t, tl_model_gen_same_cache(&turn1, &fresh, f.m.cfg.layers, fresh.len));
      if (t->failed_checks != before) {
        tl_test_print(t, "  in chunk set ");
        tl_test_print_u64(t, cs);
        tl_test_print(t, " variant ");
        tl_test_print_u64(t, (uint64_t)variant);
        tl_test_print(t, "\n");
        return;
      }
    }
  }
}

/* ------------------------------------------------------------------------ */
/* A cancelled chat turn, then the next one                                 */

/* A miniature of cmd_chat's turn() (src/native/cmd_chat.c), kept to its
 * logic step for step: the conversation is a list of messages; each turn
 * appends the user message, renders the whole conversation to ids (here a
 * toy template: <|im_start|> role '\n' content-bytes <|im_end|> '\n' per
 * message, then <|im_start|> 'a' '\n'; the content is re-tokenized byte by
 * byte, so a reply made of merged or special ids renders differently from
 * how it was generated, as with the real template), reuses the cache for
 * the longest common token prefix with `cached` (at least one id fed),
 * generates, records in `cached` the prompt and the generated ids that
 * were fed, and on cancellation drops the user message (the partial reply
 * is never added). The draws do not depend on the turn index here (greedy
 * choose): cmd_chat numbers a dropped turn too, which only matters for
 * sampled draws. */
#define CHAT_MSGS 8
#define CHAT_CAP 256

typedef struct mini_chat {
  tl_qwen3_cache cache;
  uint32_t cached[CHAT_CAP];
  struct {
    char role;
    uint8_t content[64];
    size_t len;
  } msgs[CHAT_MSGS];
  size_t n_msgs;
} mini_chat;

static size_t render(const mini_chat *mc, uint32_t *ids) {
  size_t n = 0;
  for (size_t i = 0; i < mc->n_msgs; i++) {
    ids[n++] = ID_START;
    ids[n++] = (uint8_t)mc->msgs[i].role;
    ids[n++] = '\n';
    for (size_t j = 0; j < mc->msgs[i].len; j++) ids[n++] = mc->msgs[i].content[j];
    ids[n++] = ID_EOS;
    ids[n++] = '\n';
  }
  ids[n++] = ID_START;
  ids[n++] = 'a';
  ids[n++] = '\n';
  return n;
}

typedef struct chat_io {
  fixture *f;
  watch *w;
  outbuf *o;
  greedy *g;
  size_t reused; /* out */
} chat_io;

/* Returns false on a failed check. *kept: the turn stayed. */
static bool chat_turn(tl_test_ctx *t, mini_chat *mc, chat_io *io,
                      const char *text, size_t cancel_at, bool *kept) {
  static uint32_t ids[CHAT_CAP];
  size_t n, reuse, len = strlen(text);
  tl_gen_params p;
  mc->msgs[mc->n_msgs].role = 'u';
  memcpy(mc->msgs[mc->n_msgs].content, text, len);
  mc->msgs[mc->n_msgs].len = len;
  mc->n_msgs++;
  n = render(mc, ids);
  reuse = common_prefix(ids, n, mc->cached, mc->cache.len);
  if (reuse == n) reuse--; /* at least one token is fed for logits */
  mc->cache.len = (uint32_t)reuse;
  io->reused = reuse;
  memset(io->w, 0, sizeof *io->w);
  io->w->cancel_at = cancel_at;
  p = params(8, io->w);
  p.choose = choose_greedy;
  p.choose_ctx = io->g;
  p.prefill_chunk = 4;
  if (!TL_EXPECT_OK(t, gen(io->f, &mc->cache, ids + reuse, n - reuse, &p, io->o)))
    return false;
  note_cached(mc->cached, ids, n, &io->o->r, mc->cache.len);
  if (io->o->r.stop == TL_STOP_CANCELLED) {
    mc->n_msgs--; /* the turn is dropped */
    *kept = false;
    return true;
  }
  mc->msgs[mc->n_msgs].role = 'a';
  if (!TL_EXPECT(t, io->o->r.visible_len <= sizeof mc->msgs[0].content)) return false;
  memcpy(mc->msgs[mc->n_msgs].content, io->o->visible, io->o->r.visible_len);
  mc->msgs[mc->n_msgs].len = io->o->r.visible_len;
  mc->n_msgs++;
  *kept = true;
  return true;
}

static bool same_conversation(const mini_chat *a, const mini_chat *b) {
  if (a->n_msgs != b->n_msgs) return false;
  for (size_t i = 0; i < a->n_msgs; i++)
    if (a->msgs[i].role != b->msgs[i].role || a->msgs[i].len != b->msgs[i].len ||
        memcmp(a->msgs[i].content, b->msgs[i].content, a->msgs[i].len) != 0)
      return false;
  return true;
}

static void cancelled_turn_then_next_turn(tl_test_ctx *t) {
  static fixture f;
  static watch w;
  static outbuf o, ref_o;
  static greedy g, ref_g;
  static mini_chat mc, ref;
  chat_io io = {&f, &w, &o, &g, 0}, ref_io = {&f, &w, &ref_o, &ref_g, 0};
  size_t total, tested = 0;
  bool kept;
  if (!setup(t, &f)) return;
  /* The reference: turn 0, then turn 2 as if turn 1 never happened (its
   * cache never saw it). */
  memset(&ref, 0, sizeof ref);
  if (!new_cache(t, &f, &ref.cache, CHAT_CAP)) return;
  if (!chat_turn(t, &ref, &ref_io, "hi", 0, &kept) || !TL_EXPECT(t, kept)) return;
  if (!chat_turn(t, &ref, &ref_io, "ok", 0, &kept) || !TL_EXPECT(t, kept)) return;
  TL_EXPECT(t, ref_io.reused > 0);
  /* How many checks an uncancelled turn 1 makes. */
  memset(&mc, 0, sizeof mc);
  if (!new_cache(t, &f, &mc.cache, CHAT_CAP)) return;
  if (!chat_turn(t, &mc, &io, "hi", 0, &kept) || !chat_turn(t, &mc, &io, "how?", 0, &kept))
    return;
  total = w.checks;
  TL_EXPECT(t, total >= 4);
  for (size_t k = 1; k <= total; k++) {
    unsigned before = t->failed_checks;
    tl_qwen3_cache cache = mc.cache;
    memset(&mc, 0, sizeof mc); /* a new session on the same cache memory */
    mc.cache = cache;
    mc.cache.len = 0;
    if (!chat_turn(t, &mc, &io, "hi", 0, &kept) || !TL_EXPECT(t, kept)) return;
    if (!chat_turn(t, &mc, &io, "how?", k, &kept)) return;
    TL_EXPECT(t, !kept);
    TL_EXPECT_EQ_U64(t, mc.n_msgs, 2);
    if (!chat_turn(t, &mc, &io, "ok", 0, &kept) || !TL_EXPECT(t, kept)) return;
    tested++;
    /* Turn 2 equals the reference's: ids, every step's logits, the
     * visible text, the conversation, and the cache. */
    TL_EXPECT_EQ_U64(t, o.r.n_ids, ref_o.r.n_ids);
    TL_EXPECT_MEM(t, o.ids, ref_o.ids, ref_o.r.n_ids * sizeof *o.ids);
    TL_EXPECT_EQ_U64(t, g.steps, ref_g.steps);
    TL_EXPECT_MEM(t, g.logits, ref_g.logits,
                  (ref_g.steps < REC_STEPS ? ref_g.steps : REC_STEPS) * sizeof g.logits[0]);
    TL_EXPECT_EQ_U64(t, o.r.visible_len, ref_o.r.visible_len);
    TL_EXPECT_MEM(t, o.visible, ref_o.visible, ref_o.r.visible_len);
    TL_EXPECT(t, same_conversation(&mc, &ref));
    TL_EXPECT_EQ_U64(t, mc.cache.len, ref.cache.len);
    TL_EXPECT_MEM(t, mc.cached, ref.cached, ref.cache.len * sizeof *mc.cached);
    TL_EXPECT(t, tl_model_gen_same_cache(&mc.cache, &ref.cache, f.m.cfg.layers, ref.cache.len));
    if (t->failed_checks != before) {
      tl_test_print(t, "  cancelled at check ");
      tl_test_print_u64(t, k);
      tl_test_print(t, "\n");
      return;
    }
  }
  TL_EXPECT_EQ_U64(t, tested, total);
}

static const tl_test_case cases[] = {
    TL_CASE(eos_stops_and_is_not_visible),
    TL_CASE(stop_string_spans_tokens_with_holdback),
    TL_CASE(holdback_streams_as_soon_as_decided),
    TL_CASE(max_tokens_stops),
    TL_CASE(context_full_stops),
    TL_CASE(cancellation_at_every_check),
    TL_CASE(reuse_equals_recomputation),
    TL_CASE(cancelled_turn_then_next_turn),
};

TL_SUITE(generate, cases);
