/* tinylm grammar: compile a structured-output grammar and report it
 * (check), or run texts through its token mask with a real tokenizer
 * (match): what tests/grammar's conformance suites and users' debugging
 * call (docs/structured.md). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "encoder.h"
#include "file.h"
#include "grammar/grammar.h"
#include "model.h"

static const char usage_text[] =
    "usage: tinylm grammar check SPEC [--digest] [--json]\n"
    "       tinylm grammar match SPEC --tokenizer ARTIFACT.slm [--text FILE]\n"
    "SPEC is one of:\n"
    "  --json-schema FILE   a JSON Schema (draft 2020-12; docs/structured.md)\n"
    "  --json-object        any JSON object\n"
    "  --gbnf FILE          a llama.cpp GBNF grammar (start rule: root)\n"
    "  --regex TEXT         a regular expression, matched as a whole\n"
    "check prints the grammar's digest and sizes (--digest: the digest only)\n"
    "or the reader's typed error. match reads {\"text\": \"...\"} lines on stdin\n"
    "(or the one text of --text FILE), feeds each text's tokens through the\n"
    "token mask and prints {\"accepted\", \"complete\", \"refused_at_token\"} per\n"
    "line: accepted when every token was in the mask, complete when the whole\n"
    "text is a sentence of the grammar.\n";

/* The grammar's arena: generous address space, touched only as used. */
#define GRAMMAR_ARENA (256u << 20)
#define MATCHER_ARENA (64u << 20)

typedef struct spec {
  const char *schema_file, *gbnf_file, *regex;
  bool json_object;
} spec;

/* Consumes a SPEC flag at argv[*i]: 1 taken, 0 not one, or a usage exit. */
static int spec_flag(bool json, int argc, char **argv, int *i, spec *s) {
  if (strcmp(argv[*i], "--json-object") == 0) {
    s->json_object = true;
    return 1;
  }
  if (strcmp(argv[*i], "--json-schema") == 0) {
    int u = tl_cli_value(json, argc, argv, i, &s->schema_file);
    return u >= 0 ? -u - 1 : 1;
  }
  if (strcmp(argv[*i], "--gbnf") == 0) {
    int u = tl_cli_value(json, argc, argv, i, &s->gbnf_file);
    return u >= 0 ? -u - 1 : 1;
  }
  if (strcmp(argv[*i], "--regex") == 0) {
    int u = tl_cli_value(json, argc, argv, i, &s->regex);
    return u >= 0 ? -u - 1 : 1;
  }
  return 0;
}

/* Compiles the spec into arena; prints the error and returns an exit
 * status (>= 0) on failure, -1 on success. */
static int compile(bool json, const spec *s, tl_arena *arena, const tl_grammar **g,
                   double *seconds) {
  tl_gerror gerr;
  tl_status st;
  double t0;
  memset(&gerr, 0, sizeof gerr);
  if (s->schema_file != NULL || s->gbnf_file != NULL) {
    tl_file_view view = {0};
    char err[512];
    st = tl_file_open_view(s->schema_file != NULL ? s->schema_file : s->gbnf_file, &view, err,
                           sizeof err);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
    t0 = tl_now_s();
    st = s->schema_file != NULL
             ? tl_grammar_from_json_schema(arena, view.data, view.len, g, &gerr)
             : tl_grammar_from_gbnf(arena, view.data, view.len, g, &gerr);
    *seconds = tl_now_s() - t0;
    tl_file_close_view(&view);
  } else if (s->regex != NULL) {
    t0 = tl_now_s();
    st = tl_grammar_from_regex(arena, (const uint8_t *)s->regex, strlen(s->regex), g, &gerr);
    *seconds = tl_now_s() - t0;
  } else {
    t0 = tl_now_s();
    st = tl_grammar_json_object(arena, g, &gerr);
    *seconds = tl_now_s() - t0;
  }
  if (st != TL_OK)
    return tl_cli_fail_with(json, st, json_pack("{s:I}", "offset", (json_int_t)gerr.offset),
                            "%s", gerr.message);
  return -1;
}

static bool arena_new(tl_arena *a, size_t cap) {
  void *mem = malloc(cap);
  return mem != NULL && tl_arena_init(a, mem, cap) == TL_OK;
}

static int grammar_check(bool json, const spec *s, bool digest_only) {
  tl_arena arena;
  const tl_grammar *g;
  double seconds = 0;
  uint8_t digest[32];
  char hex[65];
  int rc;
  if (!arena_new(&arena, GRAMMAR_ARENA))
    return tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "no memory for the grammar");
  rc = compile(json, s, &arena, &g, &seconds);
  if (rc < 0) {
    tl_grammar_digest(g, digest);
    tl_hex_encode(digest, 32, hex);
    if (json) {
      json_t *o = json_pack("{s:s, s:I, s:I, s:f}", "digest", hex, "rules",
                            (json_int_t)tl_grammar_rules(g), "elems",
                            (json_int_t)tl_grammar_elems(g), "compile_seconds", seconds);
      char *text = json_dumps(o, JSON_COMPACT);
      if (text != NULL) puts(text);
      free(text);
      json_decref(o);
    } else if (digest_only) {
      puts(hex);
    } else {
      printf("digest %s\nrules %u\nelems %u\ncompile_ms %.3f\n", hex, tl_grammar_rules(g),
             tl_grammar_elems(g), seconds * 1e3);
    }
    rc = TL_EXIT_OK;
  }
  free(arena.base);
  return rc;
}

/* ---- match ---- */

typedef struct matcher_ctx {
  tl_encoder enc;
  tl_gmatcher *m;
  uint64_t *allow;
  uint32_t n_tokens;
  const uint8_t **bytes;
  uint32_t *lens;
} matcher_ctx;

/* The vocabulary: every token's bytes, NULL for tokens flagged special
 * (what the visible decode drops). */
static tl_status vocab_of(const tl_tokenizer *tok, tl_arena *a, matcher_ctx *x,
                          const tl_gvocab **v) {
  x->n_tokens = tl_tok_vocab_size(tok);
  x->bytes = calloc(x->n_tokens, sizeof *x->bytes);
  x->lens = calloc(x->n_tokens, sizeof *x->lens);
  if (x->bytes == NULL || x->lens == NULL) return TL_ERR_OUT_OF_MEMORY;
  for (uint32_t id = 0; id < x->n_tokens; id++) {
    const uint8_t *p;
    size_t len, vis_len = 0;
    uint8_t probe[1];
    tl_status st = tl_tok_token_bytes(tok, id, &p, &len);
    if (st != TL_OK) return st;
    st = tl_tok_decode(tok, &id, 1, TL_TOK_DECODE_VISIBLE, probe, 0, &vis_len, NULL);
    if (len > 0 && vis_len == 0) continue; /* special */
    x->bytes[id] = p;
    x->lens[id] = (uint32_t)len;
  }
  return tl_gvocab_build(a, x->n_tokens, x->bytes, x->lens, v);
}

/* One text: its tokens through the mask. */
static tl_status match_text(matcher_ctx *x, const uint8_t *text, size_t len, json_t **out) {
  size_t n = 0, bad = 0, refused = SIZE_MAX;
  bool eos = false;
  tl_status st = tl_encoder_run(&x->enc, text, len, &n, &bad);
  if (st != TL_OK) return st;
  tl_gmatcher_reset(x->m);
  for (size_t i = 0; i < n; i++) {
    uint32_t id = x->enc.ids[i];
    bool in_mask;
    const uint8_t *p;
    size_t plen;
    st = tl_gmatcher_mask(x->m, x->allow, &eos);
    if (st != TL_OK) return st;
    in_mask = (x->allow[id / 64] >> (id % 64)) & 1u;
    (void)tl_tok_token_bytes(x->enc.tok, id, &p, &plen);
    /* The mask and the byte-level advance must agree (a special token
     * has no bytes in the vocabulary and is never in the mask). */
    st = x->bytes[id] == NULL ? TL_ERR_INVALID_ARGUMENT : tl_gmatcher_accept(x->m, p, plen);
    if (in_mask != (st == TL_OK)) return TL_ERR_INTERNAL_INVARIANT;
    if (!in_mask) {
      refused = i;
      break;
    }
  }
  if (refused == SIZE_MAX) {
    st = tl_gmatcher_mask(x->m, x->allow, &eos);
    if (st != TL_OK) return st;
    if (eos != tl_gmatcher_accepting(x->m)) return TL_ERR_INTERNAL_INVARIANT;
  }
  *out = json_pack("{s:b, s:b, s:o, s:I}", "accepted", refused == SIZE_MAX, "complete",
                   refused == SIZE_MAX && eos, "refused_at_token",
                   refused == SIZE_MAX ? json_null() : json_integer((json_int_t)refused),
                   "tokens", (json_int_t)n);
  return TL_OK;
}

static int print_result(bool json, matcher_ctx *x, const uint8_t *text, size_t len,
                        long lineno) {
  json_t *o = NULL;
  char *s;
  tl_status st = match_text(x, text, len, &o);
  if (st != TL_OK)
    return lineno > 0 ? tl_cli_fail(json, st, "stdin line %ld: the mask check failed", lineno)
                      : tl_cli_fail(json, st, "the mask check failed");
  s = json_dumps(o, JSON_COMPACT);
  if (s != NULL) puts(s);
  free(s);
  json_decref(o);
  return -1;
}

static int grammar_match(bool json, const spec *s, const char *tok_path, const char *text_file) {
  tl_arena garena = {0}, varena = {0}, marena = {0};
  const tl_grammar *g;
  const tl_gvocab *v;
  tl_native_model model;
  matcher_ctx x;
  double seconds;
  char err[1024];
  int rc;
  tl_status st;
  memset(&x, 0, sizeof x);
  if (!arena_new(&garena, GRAMMAR_ARENA))
    return tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "no memory for the grammar");
  rc = compile(json, s, &garena, &g, &seconds);
  if (rc >= 0) {
    free(garena.base);
    return rc;
  }
  st = tl_native_model_open(tok_path, &model, err, sizeof err);
  if (st != TL_OK) {
    free(garena.base);
    return tl_cli_fail(json, st, "%s", err);
  }
  x.enc.tok = model.tok;
  rc = -1;
  if (!arena_new(&varena, (size_t)256u << 20)) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "no memory for the vocabulary");
    goto done;
  }
  st = vocab_of(model.tok, &varena, &x, &v);
  if (st == TL_OK) {
    size_t need = tl_gmatcher_min_bytes(g, v);
    if (!arena_new(&marena, need > MATCHER_ARENA ? need : MATCHER_ARENA)) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK) st = tl_gmatcher_new(&marena, g, v, 0, &x.m);
  x.allow = calloc((x.n_tokens + 63) / 64, sizeof *x.allow);
  if (st == TL_OK && x.allow == NULL) st = TL_ERR_OUT_OF_MEMORY;
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "cannot set up the matcher");
    goto done;
  }
  if (text_file != NULL) {
    tl_file_view view = {0};
    st = tl_file_open_view(text_file, &view, err, sizeof err);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
    rc = print_result(json, &x, view.data, view.len, 0);
    tl_file_close_view(&view);
  } else {
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    while (rc < 0 && getline(&line, &cap, stdin) > 0) {
      json_error_t jerr;
      json_t *in = json_loads(line, 0, &jerr);
      json_t *t = json_object_get(in, "text");
      lineno++;
      if (!json_is_string(t)) {
        rc = tl_cli_usage(json, "stdin line %ld: expected {\"text\": \"...\"}", lineno);
      } else {
        rc = print_result(json, &x, (const uint8_t *)json_string_value(t), json_string_length(t),
                          lineno);
      }
      json_decref(in);
      if (!tl_cli_flush(stdout)) break;
    }
    free(line);
  }
  if (rc < 0) rc = TL_EXIT_OK;
done:
  free(x.allow);
  free(x.bytes);
  free(x.lens);
  free(marena.base);
  free(varena.base);
  free(garena.base);
  tl_encoder_free(&x.enc);
  tl_native_model_close(&model);
  return rc;
}

int tl_cmd_grammar(int argc, char **argv) {
  bool json = tl_cli_wants_json(argc, argv), digest_only = false;
  const char *tok_path = NULL, *text_file = NULL;
  spec s = {NULL, NULL, NULL, false};
  bool check;
  if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
    fputs(usage_text, stdout);
    return TL_EXIT_OK;
  }
  if (argc < 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "match") != 0))
    return tl_cli_usage(json, "grammar needs check or match\n%s", usage_text);
  check = strcmp(argv[1], "check") == 0;
  for (int i = 2; i < argc; i++) {
    int r = spec_flag(json, argc, argv, &i, &s);
    if (r < 0) return -r - 1;
    if (r > 0) continue;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (check && strcmp(argv[i], "--digest") == 0) {
      digest_only = true;
    } else if (!check && strcmp(argv[i], "--tokenizer") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &tok_path);
      if (u >= 0) return u;
    } else if (!check && strcmp(argv[i], "--text") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &text_file);
      if (u >= 0) return u;
    } else {
      return tl_cli_usage(json, "unknown argument '%s'\n%s", argv[i], usage_text);
    }
  }
  if ((s.schema_file != NULL) + (s.gbnf_file != NULL) + (s.regex != NULL) + s.json_object != 1)
    return tl_cli_usage(json, "one of --json-schema, --json-object, --gbnf, --regex\n%s",
                        usage_text);
  if (check) return grammar_check(json, &s, digest_only);
  if (tok_path == NULL) return tl_cli_usage(json, "match needs --tokenizer ARTIFACT.slm\n%s", usage_text);
  return grammar_match(json, &s, tok_path, text_file);
}
