/* Structured output in a generation turn (constrain.h). Also built into
 * the wasm32 API modules (docs/web.md, Modules): use only the C library
 * web/wasm/hosted provides (its pthread.h is the one static mutex). */
#include "constrain.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"

/* The matcher's caches beyond its minimum (tl_gmatcher_min_bytes): room
 * for a few hundred cached masks of Qwen3's vocabulary (19 KB each). */
#define MATCHER_CACHE_BYTES (8u << 20)
/* The trie's arena starts at this bound and doubles while the builder
 * asks for more, up to the last. */
#define VOCAB_ARENA_FIRST(n, bytes) (64u * (size_t)(n) + 16u * (bytes) + (1u << 20))
#define VOCAB_ARENA_MAX ((size_t)1 << 30)

/* What Qwen3's template writes after the generation prompt when thinking
 * is off (enable_thinking false): an empty thought. */
static const char EMPTY_THOUGHT[] = "<think>\n\n</think>\n\n";

struct tl_grammar_vocab_cell {
  bool done;
  tl_status st;
  void *mem;
  tl_grammar_vocab v;
};

/* One lock for every model's first build (a build happens once a model). */
static pthread_mutex_t g_vocab_lock = PTHREAD_MUTEX_INITIALIZER;

tl_grammar_vocab_cell *tl_grammar_vocab_cell_new(void) {
  return calloc(1, sizeof(tl_grammar_vocab_cell));
}

void tl_grammar_vocab_cell_free(tl_grammar_vocab_cell *c) {
  if (c == NULL) return;
  free(c->mem);
  free(c);
}

/* The one id text encodes to, if it is one token whose bytes are text;
 * else UINT32_MAX. */
static uint32_t one_token(const tl_tokenizer *tok, const char *text) {
  tl_encoder enc = {0};
  size_t n = 0, bad = 0, len = strlen(text), blen = 0;
  const uint8_t *b = NULL;
  uint32_t id = UINT32_MAX;
  enc.tok = tok;
  if (tl_encoder_run(&enc, (const uint8_t *)text, len, &n, &bad) == TL_OK && n == 1 &&
      tl_tok_token_bytes(tok, enc.ids[0], &b, &blen) == TL_OK && blen == len &&
      memcmp(b, text, len) == 0)
    id = enc.ids[0];
  tl_encoder_free(&enc);
  return id;
}

/* The bytes id stands for in a mask: its bytes when they are what the
 * generation's raw output gets for it (tl_tok_decode raw), NULL for a
 * token flagged special (never text a grammar matches: EOS, <|im_start|>)
 * and, conservatively, for one whose decoded bytes differ. Added tokens
 * that are not special (<think>, <tool_call>) are text like any other:
 * the tokenizer encodes that text to them, so a grammar that allows the
 * text allows the token. */
static const uint8_t *mask_bytes(const tl_tokenizer *tok, uint32_t id, uint32_t *len) {
  uint8_t dec[1024];
  const uint8_t *b;
  size_t n = 0, visible = 0, raw = 0, bad = 0;
  if (tl_tok_token_bytes(tok, id, &b, &n) != TL_OK || n == 0 || n > UINT32_MAX) return NULL;
  /* special: the visible decode skips it */
  tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_VISIBLE, NULL, 0, &visible, &bad);
  if (visible == 0) return NULL;
  if (tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_RAW, dec, sizeof dec, &raw, &bad) != TL_OK ||
      raw != n || memcmp(dec, b, n) != 0)
    return NULL;
  *len = (uint32_t)n;
  return b;
}

static tl_status build_vocab(tl_grammar_vocab_cell *c, const tl_tokenizer *tok) {
  uint32_t n = tl_tok_vocab_size(tok);
  const uint8_t **bytes = calloc(n ? n : 1, sizeof *bytes);
  uint32_t *lens = calloc(n ? n : 1, sizeof *lens);
  size_t total = 0, cap;
  tl_status st = bytes && lens ? TL_OK : TL_ERR_OUT_OF_MEMORY;
  for (uint32_t id = 0; st == TL_OK && id < n; id++) {
    bytes[id] = mask_bytes(tok, id, &lens[id]);
    if (bytes[id] == NULL) lens[id] = 0;
    total += lens[id];
  }
  for (cap = VOCAB_ARENA_FIRST(n, total); st == TL_OK; cap *= 2) {
    tl_arena a;
    free(c->mem);
    c->mem = malloc(cap);
    if (c->mem == NULL) {
      st = TL_ERR_OUT_OF_MEMORY;
      break;
    }
    tl_arena_init(&a, c->mem, cap);
    st = tl_gvocab_build(&a, n, bytes, lens, &c->v.trie);
    if (st != TL_ERR_OUT_OF_MEMORY || cap >= VOCAB_ARENA_MAX) break;
    st = TL_OK;
  }
  free(bytes);
  free(lens);
  if (st != TL_OK) {
    free(c->mem);
    c->mem = NULL;
    return st;
  }
  c->v.think_open = one_token(tok, "<think>");
  c->v.think_close = one_token(tok, "</think>");
  return TL_OK;
}

tl_status tl_grammar_vocab_get(tl_grammar_vocab_cell *c, const tl_tokenizer *tok,
                               tl_grammar_vocab *out) {
  tl_status st;
  if (c == NULL || tok == NULL) return TL_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&g_vocab_lock);
  if (!c->done) {
    c->st = build_vocab(c, tok);
    c->done = true;
  }
  st = c->st;
  if (st == TL_OK) *out = c->v;
  pthread_mutex_unlock(&g_vocab_lock);
  return st;
}

bool tl_constraint_thinking_open(const tl_grammar_vocab *v, const char *mode,
                                 const uint8_t *prompt, size_t len) {
  size_t k = sizeof EMPTY_THOUGHT - 1;
  if (v->think_open == UINT32_MAX || v->think_close == UINT32_MAX) return false;
  if (mode == NULL || strcmp(mode, "messages") != 0) return false;
  return !(len >= k && memcmp(prompt + len - k, EMPTY_THOUGHT, k) == 0);
}

size_t tl_constraint_region_bytes(const tl_grammar *g, const tl_gvocab *v) {
  size_t min = tl_gmatcher_min_bytes(g, v);
  return min <= SIZE_MAX - MATCHER_CACHE_BYTES ? min + MATCHER_CACHE_BYTES : SIZE_MAX;
}

static void set_bit(uint64_t *w, uint32_t id) { w[id / 64] |= 1ull << (id % 64); }

tl_status tl_constraint_start(tl_constraint *c, const tl_grammar *g, const tl_grammar_vocab *v,
                              const tl_tokenizer *tok, void *region, size_t cap,
                              tl_gmatcher **kept,
                              uint64_t *allow, size_t rows, const uint32_t *eos, size_t n_eos,
                              bool thinking, uint32_t budget) {
  memset(c, 0, sizeof *c);
  if (rows < tl_gvocab_tokens(v->trie)) return TL_ERR_INVALID_ARGUMENT;
  c->g = g;
  c->v = *v;
  c->tok = tok;
  c->allow = allow;
  c->rows = rows;
  c->words = (rows + 63) / 64;
  c->eos = eos;
  c->n_eos = n_eos;
  c->phase = thinking ? TL_CONSTRAINT_OPEN : TL_CONSTRAINT_GRAMMAR;
  c->budget = budget ? budget : TL_THINK_BUDGET_DEFAULT;
  if (*kept != NULL && tl_gmatcher_restart(*kept, g, 0) == TL_OK) {
    c->m = *kept;
  } else {
    tl_arena arena;
    tl_status st;
    *kept = NULL;
    tl_arena_init(&arena, region, cap);
    st = tl_gmatcher_new(&arena, g, v->trie, 0, &c->m);
    if (st != TL_OK) return st;
    *kept = c->m;
  }
  return TL_OK;
}

/* Inside a thought: every id but EOS (the reply must still come), or
 * only </think> once the budget is spent. */
static void thinking_mask(tl_constraint *c) {
  if (c->thought >= c->budget) {
    memset(c->allow, 0, c->words * sizeof *c->allow);
    set_bit(c->allow, c->v.think_close);
    return;
  }
  memset(c->allow, 0xff, c->words * sizeof *c->allow);
  for (size_t i = 0; i < c->n_eos; i++)
    if (c->eos[i] < c->rows) c->allow[c->eos[i] / 64] &= ~(1ull << (c->eos[i] % 64));
}

tl_status tl_constraint_mask(tl_constraint *c) {
  uint32_t n = tl_gvocab_tokens(c->v.trie);
  size_t trie_words = (n + 63) / 64;
  bool eos_ok = false;
  if (c->phase == TL_CONSTRAINT_THINKING) {
    thinking_mask(c);
    return TL_OK;
  }
  /* the rows past the vocabulary (the padded ones) are never the grammar's */
  memset(c->allow, 0, c->words * sizeof *c->allow);
  if (tl_gmatcher_finished(c->m)) {
    eos_ok = true; /* only EOS remains */
  } else {
    tl_status st = tl_gmatcher_mask(c->m, c->allow, &eos_ok);
    if (st != TL_OK) return st;
    if (n % 64) c->allow[trie_words - 1] &= (1ull << (n % 64)) - 1;
  }
  /* EOS where the grammar accepts, and only there (also an EOS id that is
   * not flagged special, which the trie would hold as text) */
  for (size_t i = 0; i < c->n_eos; i++)
    if (c->eos[i] < c->rows) {
      c->allow[c->eos[i] / 64] &= ~(1ull << (c->eos[i] % 64));
      if (eos_ok) set_bit(c->allow, c->eos[i]);
    }
  if (c->phase == TL_CONSTRAINT_OPEN) set_bit(c->allow, c->v.think_open);
  return TL_OK;
}

static bool is_eos(const tl_constraint *c, uint32_t id) {
  for (size_t i = 0; i < c->n_eos; i++)
    if (c->eos[i] == id) return true;
  return false;
}

tl_status tl_constraint_advance(tl_constraint *c, uint32_t id) {
  const uint8_t *b;
  size_t n = 0;
  if (is_eos(c, id)) return TL_OK; /* the generation ends here */
  if (c->phase == TL_CONSTRAINT_THINKING) {
    if (id != c->v.think_close) {
      c->thought++;
      return TL_OK;
    }
    /* The grammar starts after the thought, with the newlines a model
     * writes there allowed first. */
    c->phase = TL_CONSTRAINT_GRAMMAR;
    return tl_gmatcher_restart(c->m, c->g, TL_GM_LEADING_NEWLINES);
  }
  if (c->phase == TL_CONSTRAINT_OPEN && id == c->v.think_open) {
    c->phase = TL_CONSTRAINT_THINKING;
    return TL_OK;
  }
  c->phase = TL_CONSTRAINT_GRAMMAR;
  if (tl_tok_token_bytes(c->tok, id, &b, &n) != TL_OK ||
      tl_gmatcher_accept(c->m, b, n) != TL_OK)
    return TL_ERR_INTERNAL_INVARIANT;
  return TL_OK;
}

bool tl_constraint_complete(const tl_constraint *c) {
  return c->phase != TL_CONSTRAINT_THINKING && tl_gmatcher_accepting(c->m);
}
