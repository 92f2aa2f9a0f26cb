/* serve_grammar.h: a request's constraint through the core's grammar
 * readers, in an arena grown until the grammar fits. */
#include "serve_grammar.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json/json.h"

struct tl_srv_grammar {
  atomic_int refs;
  void *mem;
  const tl_grammar *g;
};

/* A first arena of 1 MiB, doubled while the grammar does not fit. */
#define FIRST_BYTES ((size_t)1 << 20)

/* What a tool without parameters takes: OpenAI's empty parameter list. */
static const char no_parameters[] =
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
/* json_object beside tools, where it must be an expression. */
static const char any_object[] = "{\"type\":\"object\"}";

/* One attempt: the grammar in arena a, or the reader's error and the
 * field it concerns (param; "" for the request's format field). */
typedef struct attempt {
  tl_arena *a;
  const tl_srv_request *r;
  tl_gerror ge;
  char param[96];
} attempt;

static const tl_json_value *parse_json(attempt *t, const char *text, size_t len) {
  tl_json_value *v = NULL;
  tl_json_error je;
  tl_status st = tl_json_parse((const uint8_t *)text, len, NULL, t->a, &v, &je);
  /* the text is jansson's output or a constant: only memory can fail */
  if (st != TL_OK) tl_gerror_set(&t->ge, st, 0, "cannot read the schema: ", tl_status_name(st), NULL);
  return st == TL_OK ? v : NULL;
}

/* A schema as an expression of b; param names it in errors. */
static tl_gexpr value_expr(attempt *t, tl_gbuilder *b, const tl_json_value *v, const char *param) {
  tl_gexpr e = v != NULL ? tl_gb_json_schema(b, v, &t->ge) : TL_GEXPR_NONE;
  if (t->ge.status != TL_OK && t->param[0] == '\0') snprintf(t->param, sizeof t->param, "%s", param);
  return e;
}

/* The same from the schema's JSON text. */
static tl_gexpr schema_expr(attempt *t, tl_gbuilder *b, const char *text, size_t len,
                            const char *param) {
  return value_expr(t, b, parse_json(t, text, len), param);
}

/* One tool's call block: <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>. */
static tl_gexpr call_expr(attempt *t, tl_gbuilder *b, const tl_json_value *tool, size_t index) {
  const tl_json_value *fn = tl_json_get(tool, "function", 8);
  const tl_json_value *name = tl_json_get(fn, "name", 4), *params = tl_json_get(fn, "parameters", 10);
  static const char open[] = "<tool_call>\n{\"name\": ", mid[] = ", \"arguments\": ",
                    close[] = "}\n</tool_call>";
  char param[96];
  json_t *js = json_stringn(name->u.str.ptr, name->u.str.len);
  char *quoted = js != NULL ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
  tl_gexpr parts[5];
  json_decref(js);
  if (quoted == NULL) {
    tl_gerror_set(&t->ge, TL_ERR_OUT_OF_MEMORY, 0, "out of memory", NULL);
    return TL_GEXPR_NONE;
  }
  snprintf(param, sizeof param, "tools[%zu].function.parameters", index);
  parts[0] = tl_gb_literal(b, (const uint8_t *)open, sizeof open - 1);
  parts[1] = tl_gb_literal(b, (const uint8_t *)quoted, strlen(quoted));
  parts[2] = tl_gb_literal(b, (const uint8_t *)mid, sizeof mid - 1);
  parts[3] = params != NULL && params->type != TL_JSON_NULL /* null: not given, as OpenAI's */
                 ? value_expr(t, b, params, param)
                 : schema_expr(t, b, no_parameters, sizeof no_parameters - 1, param);
  parts[4] = tl_gb_literal(b, (const uint8_t *)close, sizeof close - 1);
  free(quoted);
  return tl_gb_seq(b, parts, 5);
}

/* The tool calls: one block of the allowed tools, then (parallel) more
 * after "\n". */
static tl_gexpr tools_expr(attempt *t, tl_gbuilder *b) {
  const tl_srv_request *r = t->r;
  const tl_json_value *tools = parse_json(t, r->tools, r->tools_len);
  tl_gexpr *alts, call, more[2];
  size_t n = 0;
  uint32_t rule;
  if (tools == NULL) return TL_GEXPR_NONE;
  if (tl_arena_alloc_array(t->a, tools->u.arr.n, sizeof *alts, _Alignof(tl_gexpr), (void **)&alts) != TL_OK) {
    tl_gerror_set(&t->ge, TL_ERR_OUT_OF_MEMORY, 0, "out of memory", NULL);
    return TL_GEXPR_NONE;
  }
  for (size_t i = 0; i < tools->u.arr.n; i++)
    if (r->tool_choice != TL_SRV_TOOLS_NAMED || i == r->forced_tool)
      alts[n++] = call_expr(t, b, &tools->u.arr.items[i], i);
  rule = tl_gb_rule(b, "tool-call", 9);
  tl_gb_define(b, rule, tl_gb_alt(b, alts, n));
  call = tl_gb_ref(b, rule);
  if (!r->parallel_tool_calls) return call;
  more[0] = tl_gb_literal(b, (const uint8_t *)"\n", 1);
  more[1] = call;
  more[1] = tl_gb_repeat(b, tl_gb_seq(b, more, 2), 0, TL_GB_UNBOUNDED);
  more[0] = call;
  return tl_gb_seq(b, more, 2);
}

/* The composed grammars: tool calls, or tool calls or a JSON document. */
static tl_status compose(attempt *t, const tl_grammar **out) {
  const tl_srv_request *r = t->r;
  bool calls_only = r->tool_choice == TL_SRV_TOOLS_REQUIRED || r->tool_choice == TL_SRV_TOOLS_NAMED;
  tl_gbuilder *b;
  tl_gexpr body[2];
  uint32_t root;
  tl_status st = tl_gb_new(t->a, &b);
  if (st != TL_OK) return tl_gerror_set(&t->ge, st, 0, "out of memory", NULL);
  body[0] = tools_expr(t, b);
  if (!calls_only)
    body[1] = r->format == TL_SRV_FORMAT_JSON_OBJECT
                  ? schema_expr(t, b, any_object, sizeof any_object - 1, r->format_param)
                  : schema_expr(t, b, r->format_text, r->format_len, r->format_param);
  if (t->ge.status != TL_OK) return t->ge.status;
  root = tl_gb_rule(b, "root", 4);
  tl_gb_define(b, root, calls_only ? body[0] : tl_gb_alt(b, body, 2));
  return tl_gb_finish(b, root, out, &t->ge);
}

static tl_status attempt_run(attempt *t, const tl_grammar **out) {
  const tl_srv_request *r = t->r;
  const uint8_t *text = (const uint8_t *)r->format_text;
  if (r->tool_choice == TL_SRV_TOOLS_REQUIRED || r->tool_choice == TL_SRV_TOOLS_NAMED ||
      (r->has_tools && r->format != TL_SRV_FORMAT_GRAMMAR))
    return compose(t, out);
  switch (r->format) {
  case TL_SRV_FORMAT_JSON_OBJECT: return tl_grammar_json_object(t->a, out, &t->ge);
  case TL_SRV_FORMAT_JSON_SCHEMA:
    return tl_grammar_from_json_schema(t->a, text, r->format_len, out, &t->ge);
  case TL_SRV_FORMAT_GRAMMAR: return tl_grammar_from_gbnf(t->a, text, r->format_len, out, &t->ge);
  case TL_SRV_FORMAT_TEXT: break;
  }
  return tl_gerror_set(&t->ge, TL_ERR_INTERNAL_INVARIANT, 0, "no constraint to compile", NULL);
}

/* The reader's refusal as a 400 naming the field. */
static void refusal(const attempt *t, tl_srv_error *err) {
  const tl_srv_request *r = t->r;
  bool calls_only = r->tool_choice == TL_SRV_TOOLS_REQUIRED || r->tool_choice == TL_SRV_TOOLS_NAMED;
  const char *param = t->param[0] ? t->param : calls_only ? "tools" : r->format_param;
  const char *code = t->ge.status == TL_ERR_UNSUPPORTED_FEATURE ? "unsupported_value" : "invalid_value";
  if (!t->param[0] && r->format == TL_SRV_FORMAT_GRAMMAR) {
    /* GBNF is text a person wrote: where, as line and column */
    size_t line = 1, col = 1, end = t->ge.offset < r->format_len ? t->ge.offset : r->format_len;
    for (size_t i = 0; i < end; i++) {
      line += r->format_text[i] == '\n';
      col = r->format_text[i] == '\n' ? 1 : col + 1;
    }
    tl_srv_error_set(err, 400, NULL, param, code, "%s (line %zu, column %zu): %s", param, line, col,
                     t->ge.message);
    return;
  }
  tl_srv_error_set(err, 400, NULL, param, code, "%s: %s", param, t->ge.message);
}

tl_status tl_srv_grammar_compile(const tl_srv_request *r, tl_srv_grammar **out,
                                 tl_srv_error *err) {
  tl_srv_grammar *g;
  *out = NULL;
  if (!tl_srv_request_constrained(r)) return TL_OK;
  if ((g = calloc(1, sizeof *g)) == NULL) goto oom;
  atomic_init(&g->refs, 1);
  for (size_t size = FIRST_BYTES;; size *= 2) {
    attempt t;
    tl_arena a;
    tl_status st;
    memset(&t, 0, sizeof t);
    t.a = &a;
    t.r = r;
    free(g->mem);
    if ((g->mem = malloc(size)) == NULL) break;
    tl_arena_init(&a, g->mem, size);
    st = attempt_run(&t, &g->g);
    if (st == TL_OK) {
      *out = g;
      return TL_OK;
    }
    if (st == TL_ERR_OUT_OF_MEMORY && size < TL_SRV_GRAMMAR_MAX_BYTES) continue;
    if (st == TL_ERR_OUT_OF_MEMORY)
      snprintf(t.ge.message, sizeof t.ge.message, "the grammar needs more than %zu MiB",
               TL_SRV_GRAMMAR_MAX_BYTES >> 20);
    if (st == TL_ERR_INTERNAL_INVARIANT) {
      tl_srv_error_set(err, 500, NULL, "", "internal", "compiling the grammar: %s", t.ge.message);
    } else {
      refusal(&t, err);
    }
    tl_srv_grammar_unref(g);
    return st;
  }
oom:
  tl_srv_grammar_unref(g);
  tl_srv_error_set(err, 500, NULL, "", "internal", "out of memory compiling the grammar");
  return TL_ERR_OUT_OF_MEMORY;
}

const tl_grammar *tl_srv_grammar_get(const tl_srv_grammar *g) { return g != NULL ? g->g : NULL; }

tl_srv_grammar *tl_srv_grammar_ref(tl_srv_grammar *g) {
  if (g != NULL) atomic_fetch_add(&g->refs, 1);
  return g;
}

void tl_srv_grammar_unref(tl_srv_grammar *g) {
  if (g == NULL || atomic_fetch_sub(&g->refs, 1) != 1) return;
  free(g->mem);
  free(g);
}
