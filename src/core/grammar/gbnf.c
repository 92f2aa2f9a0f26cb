/* The GBNF reader: llama.cpp's grammar text (grammars/README.md there)
 * into the builder.
 *
 *   grammar  ::= space (rule)*
 *   rule     ::= name space '::=' space* alternates (newline | end)
 *   alternates ::= sequence ('|' space* sequence)*
 *   sequence ::= (item quantifier*)*
 *   item     ::= '"' char* '"' | '[' '^'? (char ('-' char)?)+ ']' | '.'
 *              | name | '(' alternates ')'
 *   quantifier ::= '*' | '+' | '?' | '{' m '}' | '{' m ',' '}' | '{' m ',' n '}'
 *
 * Blanks are spaces, tabs and '#' comments; newlines count as blanks only
 * inside parentheses, after '::=' and after '|' (a newline elsewhere ends
 * the rule), as in llama.cpp's parser. Characters are Unicode code points:
 * \xNN, \uNNNN and \UNNNNNNNN all name a code point (llama.cpp decodes the
 * model's text as UTF-8 and compares code points, so "\xe9" is U+00E9, the
 * two bytes C3 A9, never the byte E9).
 *
 * Where llama.cpp accepts a grammar whose meaning is surprising, this
 * reader refuses it with a message instead: an empty class "[]"
 * (llama.cpp: the empty string), a range whose end precedes its start
 * (llama.cpp: matches nothing), {m,n} with m > n, a second definition of
 * a rule (llama.cpp: the last one wins), a surrogate in a string, a code
 * point past U+10FFFF, and token terminals "<...>" (grammars here are
 * over text, not token ids). Repetition bounds are kept exactly up to
 * TL_GRAMMAR_MAX_REPEAT and refused past it (llama.cpp refuses a minimum
 * over 2000 and widens a maximum over 2000 to unbounded). Every
 * referenced rule must be defined, reachable from root or not, as in
 * llama.cpp.
 * Quantifiers stack as in llama.cpp ("x+?" is "(x+)?"); "x{0}" removes x,
 * and a quantifier right after it or after "" has nothing to repeat. */
#include <string.h>

#include "grammar/grammar.h"
#include "utf8.h"

/* Parentheses nest at most this deep (the reader recurses once per level). */
#define GBNF_MAX_NESTING 256u

typedef struct gbnf {
  tl_gbuilder *b;
  tl_arena *a;
  const uint8_t *s;
  size_t n, pos;
  /* A stack of u32 shared by every level: the items of the sequences and
   * alternatives being read, and a class's ranges while it is read. */
  uint32_t *stack;
  size_t top, cap;
  uint8_t *lit; /* a string literal's UTF-8 (at most n bytes) */
  /* Per builder rule id: where it was first referenced (NO_REF: never)
   * and defined (NO_REF: not yet), for messages with a place in them. */
  uint32_t *ref_at, *def_at;
  size_t n_rules, cap_rules;
  unsigned depth;
  tl_gerror err;
} gbnf;

#define NO_REF UINT32_MAX

/* Appends a string literal to the reader's error message. */
#define APPEND(p, lit) tl_gerror_append(&(p)->err, lit, sizeof lit - 1)

static bool is_word(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int peek(const gbnf *p) { return p->pos < p->n ? p->s[p->pos] : -1; }

/* Starts the reader's error: "gbnf: " what. */
static tl_gerror *error_begin(gbnf *p, tl_status st, size_t at, const char *what) {
  memset(&p->err, 0, sizeof p->err);
  tl_gerror_set(&p->err, st, (uint32_t)at, "gbnf: ", what, (const char *)NULL);
  return &p->err;
}

/* Ends it with where it is (line and column count from 1; columns count
 * characters), hands it to the builder and returns false. */
static bool error_end(gbnf *p) {
  size_t at = p->err.offset, line = 1, col = 1;
  for (size_t i = 0; i < at && i < p->n; i++) {
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else if ((p->s[i] & 0xC0) != 0x80) {
      col++;
    }
  }
  APPEND(p, " at line ");
  tl_gerror_append_u64(&p->err, line);
  APPEND(p, ", column ");
  tl_gerror_append_u64(&p->err, col);
  tl_gb_fail(p->b, &p->err);
  return false;
}

static bool fail(gbnf *p, tl_status st, size_t at, const char *what) {
  error_begin(p, st, at, what);
  return error_end(p);
}

static bool push(gbnf *p, uint32_t v) {
  if (p->top == p->cap) {
    uint32_t *grown;
    if (tl_arena_alloc_array(p->a, p->cap * 2, sizeof *grown, 4, (void **)&grown) != TL_OK)
      return fail(p, TL_ERR_OUT_OF_MEMORY, p->pos, "out of memory");
    memcpy(grown, p->stack, p->top * sizeof *grown);
    p->stack = grown;
    p->cap *= 2;
  }
  p->stack[p->top++] = v;
  return true;
}

/* The builder's id for a rule name at text[at..at+len), with room for it
 * in ref_at/def_at; NO_REF once the builder has failed. */
static uint32_t rule_id(gbnf *p, size_t at, size_t len) {
  uint32_t id = tl_gb_rule(p->b, (const char *)p->s + at, len);
  if (id == TL_GEXPR_NONE) return NO_REF;
  while (id >= p->cap_rules) {
    size_t cap = p->cap_rules ? 2 * p->cap_rules : 64;
    uint32_t *r, *d;
    if (tl_arena_alloc_array(p->a, cap, sizeof *r, 4, (void **)&r) != TL_OK ||
        tl_arena_alloc_array(p->a, cap, sizeof *d, 4, (void **)&d) != TL_OK) {
      fail(p, TL_ERR_OUT_OF_MEMORY, at, "out of memory");
      return NO_REF;
    }
    if (p->cap_rules > 0) { /* memcpy from NULL is undefined even for 0 bytes */
      memcpy(r, p->ref_at, p->cap_rules * sizeof *r);
      memcpy(d, p->def_at, p->cap_rules * sizeof *d);
    }
    p->ref_at = r;
    p->def_at = d;
    p->cap_rules = cap;
  }
  for (; p->n_rules <= id; p->n_rules++) p->ref_at[p->n_rules] = p->def_at[p->n_rules] = NO_REF;
  return id;
}

/* Blanks and comments; newlines too when newline_ok. */
static void skip_space(gbnf *p, bool newline_ok) {
  while (p->pos < p->n) {
    uint8_t c = p->s[p->pos];
    if (c == '#') {
      while (p->pos < p->n && p->s[p->pos] != '\n' && p->s[p->pos] != '\r') p->pos++;
    } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
      p->pos++;
    } else {
      return;
    }
  }
}

static int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* One character of a string or class: an escape or a UTF-8 character (the
 * whole input was validated). *cp may be past U+10FFFF (\U escapes); the
 * caller decides. */
static bool read_char(gbnf *p, uint32_t *cp) {
  size_t at = p->pos;
  if (p->s[at] != '\\') {
    size_t len;
    tl_utf8_decode(p->s, p->n, at, cp, &len);
    p->pos += len;
    return true;
  }
  if (at + 1 >= p->n) return fail(p, TL_ERR_INVALID_ARGUMENT, at, "unexpected end of input after '\\'");
  uint8_t e = p->s[at + 1];
  size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
  p->pos = at + 2;
  if (digits > 0) {
    uint32_t v = 0;
    for (size_t i = 0; i < digits; i++) {
      int h = p->pos < p->n ? hex_value(p->s[p->pos]) : -1;
      if (h < 0) {
        error_begin(p, TL_ERR_INVALID_ARGUMENT, at, "'\\");
        tl_gerror_append(&p->err, (const char *)&e, 1);
        APPEND(p, "' needs ");
        tl_gerror_append_u64(&p->err, digits);
        APPEND(p, " hex digits");
        return error_end(p);
      }
      v = v << 4 | (uint32_t)h;
      p->pos++;
    }
    *cp = v;
    return true;
  }
  switch (e) {
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 't': *cp = '\t'; return true;
    case '\\': case '"': case '[': case ']': *cp = e; return true;
    default: break;
  }
  error_begin(p, TL_ERR_INVALID_ARGUMENT, at, "unknown escape '\\");
  size_t len = 1;
  if (e >= 0x80) { /* the whole character, never half of one */
    uint32_t ignored;
    tl_utf8_decode(p->s, p->n, at + 1, &ignored, &len);
  }
  tl_gerror_append(&p->err, (const char *)p->s + at + 1, len);
  APPEND(p, "' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xNN \\uNNNN \\UNNNNNNNN)");
  return error_end(p);
}

static bool check_scalar(gbnf *p, size_t at, uint32_t cp, bool in_string) {
  if (cp > TL_UTF8_MAX_SCALAR) return fail(p, TL_ERR_INVALID_ARGUMENT, at, "code point past U+10FFFF");
  if (in_string && cp >= 0xD800 && cp <= 0xDFFF)
    return fail(p, TL_ERR_INVALID_ARGUMENT, at, "a surrogate (U+D800..U+DFFF) is not a character");
  return true;
}

/* "...": its UTF-8 as a literal; *have is false for "" (nothing to
 * repeat, as in llama.cpp). */
static bool read_string(gbnf *p, tl_gexpr *out, bool *have) {
  size_t start = p->pos++, len = 0;
  while (p->pos < p->n && p->s[p->pos] != '"') {
    size_t at = p->pos;
    uint32_t cp;
    if (!read_char(p, &cp) || !check_scalar(p, at, cp, true)) return false;
    len += tl_utf8_encode(cp, p->lit + len);
  }
  if (p->pos >= p->n) return fail(p, TL_ERR_INVALID_ARGUMENT, start, "unterminated string");
  p->pos++;
  *have = len > 0;
  if (*have) *out = tl_gb_literal(p->b, p->lit, len);
  return true;
}

/* [...] or [^...]: pairs of code points on the stack while it is read. */
static bool read_class(gbnf *p, tl_gexpr *out) {
  size_t start = p->pos++, base = p->top;
  bool negate = p->pos < p->n && p->s[p->pos] == '^';
  if (negate) p->pos++;
  while (p->pos < p->n && p->s[p->pos] != ']') {
    size_t at = p->pos;
    uint32_t lo, hi;
    if (!read_char(p, &lo) || !check_scalar(p, at, lo, false)) return false;
    hi = lo;
    if (p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
      size_t at_hi = ++p->pos;
      if (!read_char(p, &hi) || !check_scalar(p, at_hi, hi, false)) return false;
      if (hi < lo) return fail(p, TL_ERR_INVALID_ARGUMENT, at, "range ends before it starts");
    }
    if (!push(p, lo) || !push(p, hi)) return false;
  }
  if (p->pos >= p->n) return fail(p, TL_ERR_INVALID_ARGUMENT, start, "unterminated character class");
  if (p->top == base)
    return fail(p, TL_ERR_INVALID_ARGUMENT, start, "empty character class");
  p->pos++;
  *out = tl_gb_class(p->b, p->stack + base, (p->top - base) / 2, negate);
  p->top = base;
  return true;
}

/* A decimal count of a {m,n} quantifier. */
static bool read_count(gbnf *p, uint32_t *v) {
  size_t at = p->pos;
  uint64_t x = 0;
  if (!is_digit((uint8_t)peek(p))) return fail(p, TL_ERR_INVALID_ARGUMENT, at, "expecting a number in '{...}'");
  while (is_digit((uint8_t)peek(p))) {
    x = x * 10 + (uint64_t)(p->s[p->pos++] - '0');
    if (x > TL_GRAMMAR_MAX_REPEAT) {
      error_begin(p, TL_ERR_BOUNDS, at, "repetition count past the limit of ");
      tl_gerror_append_u64(&p->err, TL_GRAMMAR_MAX_REPEAT);
      return error_end(p);
    }
  }
  *v = (uint32_t)x;
  return true;
}

/* The bounds of a quantifier at p->pos (one of * + ? {). */
static bool read_quantifier(gbnf *p, bool nested, uint32_t *min, uint32_t *max) {
  uint8_t q = p->s[p->pos++];
  skip_space(p, nested);
  *min = q == '+' ? 1 : 0;
  *max = q == '?' ? 1 : TL_GB_UNBOUNDED;
  if (q != '{') return true;
  size_t open = p->pos - 1;
  if (!read_count(p, min)) return false;
  skip_space(p, nested);
  if (peek(p) == '}') {
    *max = *min;
  } else if (peek(p) == ',') {
    p->pos++;
    skip_space(p, nested);
    if (is_digit((uint8_t)peek(p))) {
      if (!read_count(p, max)) return false;
      skip_space(p, nested);
    }
    if (peek(p) != '}') return fail(p, TL_ERR_INVALID_ARGUMENT, p->pos, "expecting '}'");
  } else {
    return fail(p, TL_ERR_INVALID_ARGUMENT, p->pos, "expecting ',' or '}'");
  }
  p->pos++;
  skip_space(p, nested);
  if (*min > *max) return fail(p, TL_ERR_INVALID_ARGUMENT, open, "repetition {m,n} with m > n");
  return true;
}

static bool read_alternates(gbnf *p, bool nested, tl_gexpr *out);

/* Items and their quantifiers up to a '|', ')', newline (outside
 * parentheses), the end, or anything else the caller judges. */
static bool read_sequence(gbnf *p, bool nested, tl_gexpr *out) {
  size_t base = p->top;
  bool have_last = false; /* the top of the stack is an item a quantifier may follow */
  while (p->pos < p->n) {
    uint8_t c = p->s[p->pos];
    size_t at = p->pos;
    tl_gexpr e = TL_GEXPR_NONE;
    bool have = true;
    if (c == '"') {
      if (!read_string(p, &e, &have)) return false;
    } else if (c == '[') {
      if (!read_class(p, &e)) return false;
    } else if (c == '.') {
      static const uint32_t any[2] = {0, TL_UTF8_MAX_SCALAR};
      p->pos++;
      e = tl_gb_class(p->b, any, 1, false);
    } else if (is_word(c)) {
      while (is_word((uint8_t)peek(p))) p->pos++;
      uint32_t id = rule_id(p, at, p->pos - at);
      if (id == NO_REF) return false;
      if (p->ref_at[id] == NO_REF) p->ref_at[id] = (uint32_t)at;
      e = tl_gb_ref(p->b, id);
    } else if (c == '(') {
      if (p->depth == GBNF_MAX_NESTING) {
        error_begin(p, TL_ERR_BOUNDS, at, "parentheses nested deeper than ");
        tl_gerror_append_u64(&p->err, GBNF_MAX_NESTING);
        return error_end(p);
      }
      p->pos++;
      p->depth++;
      skip_space(p, true);
      if (!read_alternates(p, true, &e)) return false;
      p->depth--;
      if (peek(p) != ')') {
        if (p->pos >= p->n) return fail(p, TL_ERR_INVALID_ARGUMENT, at, "unclosed '('");
        return fail(p, TL_ERR_INVALID_ARGUMENT, p->pos, "expecting ')'");
      }
      p->pos++;
    } else if (c == '<' || c == '!') {
      return fail(p, TL_ERR_UNSUPPORTED_FEATURE, at,
                  "token terminals ('<...>', '!<...>') are not supported: grammars here are over text");
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      uint32_t min, max;
      if (!have_last) {
        error_begin(p, TL_ERR_INVALID_ARGUMENT, at, "nothing to repeat before '");
        tl_gerror_append(&p->err, (const char *)&c, 1);
        APPEND(p, "'");
        return error_end(p);
      }
      if (!read_quantifier(p, nested, &min, &max)) return false;
      if (max == 0) { /* x{0}: as if x were not there */
        p->top--;
        have_last = false;
      } else {
        p->stack[p->top - 1] = tl_gb_repeat(p->b, p->stack[p->top - 1], min, max);
      }
      continue;
    } else {
      break;
    }
    skip_space(p, nested);
    have_last = have;
    if (have && !push(p, e)) return false;
  }
  size_t count = p->top - base;
  *out = count == 1 ? p->stack[base] : tl_gb_seq(p->b, p->stack + base, count);
  p->top = base;
  return true;
}

static bool read_alternates(gbnf *p, bool nested, tl_gexpr *out) {
  size_t base = p->top;
  tl_gexpr e;
  if (!read_sequence(p, nested, &e) || !push(p, e)) return false;
  while (peek(p) == '|') {
    p->pos++;
    skip_space(p, true);
    if (!read_sequence(p, nested, &e) || !push(p, e)) return false;
  }
  size_t count = p->top - base;
  *out = count == 1 ? p->stack[base] : tl_gb_alt(p->b, p->stack + base, count);
  p->top = base;
  return true;
}

static bool read_rule(gbnf *p) {
  size_t name = p->pos;
  while (is_word((uint8_t)peek(p))) p->pos++;
  size_t name_len = p->pos - name;
  if (name_len == 0) return fail(p, TL_ERR_INVALID_ARGUMENT, name, "expecting a rule name");
  skip_space(p, false);
  if (p->n - p->pos < 3 || memcmp(p->s + p->pos, "::=", 3) != 0) {
    error_begin(p, TL_ERR_INVALID_ARGUMENT, p->pos, "expecting '::=' after the rule name '");
    tl_gerror_append(&p->err, (const char *)p->s + name, name_len);
    APPEND(p, "'");
    return error_end(p);
  }
  p->pos += 3;
  skip_space(p, true);
  tl_gexpr body;
  if (!read_alternates(p, false, &body)) return false;
  int c = peek(p);
  if (c == '\r' || c == '\n') {
    p->pos += c == '\r' && p->pos + 1 < p->n && p->s[p->pos + 1] == '\n' ? 2 : 1;
  } else if (c == ')') {
    return fail(p, TL_ERR_INVALID_ARGUMENT, p->pos, "unmatched ')'");
  } else if (c >= 0) {
    error_begin(p, TL_ERR_INVALID_ARGUMENT, p->pos, "unexpected ");
    if (c >= 0x21 && c < 0x7F) {
      char q[3] = {'\'', (char)c, '\''};
      tl_gerror_append(&p->err, q, 3);
    } else {
      APPEND(p, "character");
    }
    APPEND(p, " (expecting an item, '|', a newline or the end)");
    return error_end(p);
  }
  uint32_t id = rule_id(p, name, name_len);
  if (id == NO_REF) return false;
  if (p->def_at[id] != NO_REF) {
    error_begin(p, TL_ERR_INVALID_ARGUMENT, name, "rule '");
    tl_gerror_append(&p->err, (const char *)p->s + name, name_len);
    APPEND(p, "' defined a second time");
    return error_end(p);
  }
  p->def_at[id] = (uint32_t)name;
  tl_gb_define(p->b, id, body);
  skip_space(p, true);
  return true;
}

/* Every referenced rule is defined, reachable from root or not (as
 * llama.cpp requires); the first reference to an undefined one is named. */
static bool check_defined(gbnf *p) {
  size_t worst = NO_REF;
  for (size_t id = 0; id < p->n_rules; id++)
    if (p->def_at[id] == NO_REF && p->ref_at[id] != NO_REF &&
        (worst == NO_REF || p->ref_at[id] < p->ref_at[worst]))
      worst = id;
  if (worst == NO_REF) return true;
  size_t at = p->ref_at[worst], len = 0;
  while (at + len < p->n && is_word(p->s[at + len])) len++;
  error_begin(p, TL_ERR_INVALID_ARGUMENT, at, "undefined rule '");
  tl_gerror_append(&p->err, (const char *)p->s + at, len);
  APPEND(p, "'");
  return error_end(p);
}

tl_status tl_grammar_from_gbnf(tl_arena *arena, const uint8_t *text, size_t len,
                               const tl_grammar **out, tl_gerror *err) {
  gbnf p;
  size_t bad;
  memset(&p, 0, sizeof p);
  memset(err, 0, sizeof *err);
  *out = NULL;
  if (text == NULL && len > 0)
    return tl_gerror_set(err, TL_ERR_INVALID_ARGUMENT, 0, "gbnf: no text", (const char *)NULL);
  if (len > UINT32_MAX)
    return tl_gerror_set(err, TL_ERR_BOUNDS, 0, "gbnf: grammar text past 4 GiB", (const char *)NULL);
  tl_status st = tl_gb_new(arena, &p.b);
  if (st != TL_OK) return tl_gerror_set(err, st, 0, "gbnf: out of memory", (const char *)NULL);
  p.a = arena;
  p.s = text;
  p.n = len;
  p.cap = 64;
  if (tl_arena_alloc_array(arena, p.cap, sizeof *p.stack, 4, (void **)&p.stack) != TL_OK ||
      tl_arena_alloc(arena, len, 1, (void **)&p.lit) != TL_OK) {
    fail(&p, TL_ERR_OUT_OF_MEMORY, 0, "out of memory");
  } else if (tl_utf8_validate(text, len, &bad) != TL_OK) {
    fail(&p, TL_ERR_INVALID_ARGUMENT, bad, "invalid UTF-8");
  } else {
    bool ok = true;
    skip_space(&p, true);
    while (ok && p.pos < p.n) ok = read_rule(&p);
    if (ok && tl_gb_error(p.b)->status == TL_OK && check_defined(&p)) {
      uint32_t root = tl_gb_rule(p.b, "root", 4);
      if (root != TL_GEXPR_NONE && (root >= p.n_rules || p.def_at[root] == NO_REF))
        fail(&p, TL_ERR_INVALID_ARGUMENT, 0, "no rule 'root' (the start rule)");
    }
  }
  return tl_gb_finish(p.b, tl_gb_rule(p.b, "root", 4), out, err);
}
