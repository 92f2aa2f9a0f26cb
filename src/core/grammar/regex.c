/* Regular expressions: the ECMA-262 pattern subset of docs/structured.md
 * ("Regular expressions") read into builder expressions by recursive
 * descent. What the subset leaves out (backreferences, lookaround, \b,
 * property escapes, anchors inside the pattern) is refused with
 * TL_ERR_UNSUPPORTED_FEATURE naming the construct and its offset; a
 * malformed pattern is TL_ERR_INVALID_ARGUMENT. */
#include "grammar/regex.h"

#include <string.h>

#include "grammar/charset.h"
#include "utf8.h"

#define RX_MAX_DEPTH 32 /* nested groups: the parser recurses once per level */
#define RX_CHUNK 32     /* items gathered before folding into one node */
#define RX_LIT_MAX 64   /* bytes of adjacent literal characters merged */

typedef struct rx {
  tl_gbuilder *b;
  const uint8_t *s;
  size_t n, i;
  bool search, json, failed;
  bool nullable; /* the last group or alternation can match the empty text */
  unsigned depth;
  tl_gerror *err;
  tl_charset cs; /* the last atom's class (consumed before the next atom) */
} rx;

typedef enum { ATOM_FAIL, ATOM_CHAR, ATOM_SET, ATOM_EXPR } atom_kind;

static void fail(rx *r, tl_status st, size_t at, const char *what) {
  bool fresh = r->err->status == TL_OK;
  if (r->failed) return;
  r->failed = true;
  tl_gerror_set(r->err, st, (uint32_t)at, "regex: ", what, NULL);
  if (fresh) {
    tl_gerror_append(r->err, " at offset ", 11);
    tl_gerror_append_u64(r->err, at);
  }
  tl_gb_fail(r->b, r->err);
}

static void unsupported(rx *r, size_t at, const char *what) {
  fail(r, TL_ERR_UNSUPPORTED_FEATURE, at, what);
}

static void invalid(rx *r, size_t at, const char *what) {
  fail(r, TL_ERR_INVALID_ARGUMENT, at, what);
}

/* ---- sequences and alternatives, folded in chunks ------------------------ */

typedef struct seqb {
  tl_gexpr items[RX_CHUNK];
  size_t n;
  uint8_t lit[RX_LIT_MAX];
  size_t lit_n;
} seqb;

static void seq_push_expr(rx *r, seqb *q, tl_gexpr e) {
  if (q->n == RX_CHUNK) {
    q->items[0] = tl_gb_seq(r->b, q->items, q->n);
    q->n = 1;
  }
  q->items[q->n++] = e;
}

static void seq_flush(rx *r, seqb *q) {
  if (q->lit_n == 0) return;
  seq_push_expr(r, q, tl_gb_literal(r->b, q->lit, q->lit_n));
  q->lit_n = 0;
}

static void seq_push(rx *r, seqb *q, tl_gexpr e) {
  seq_flush(r, q);
  seq_push_expr(r, q, e);
}

/* One character's bytes in the chosen encoding. */
static size_t encode_char(const rx *r, uint32_t cp, uint8_t out[6]) {
  return r->json ? tl_json_char_canonical(cp, out) : tl_utf8_encode(cp, out);
}

static void seq_push_char(rx *r, seqb *q, uint32_t cp) {
  uint8_t enc[6];
  size_t len = encode_char(r, cp, enc);
  if (q->lit_n + len > RX_LIT_MAX) seq_flush(r, q);
  memcpy(q->lit + q->lit_n, enc, len);
  q->lit_n += len;
}

static tl_gexpr seq_end(rx *r, seqb *q) {
  seq_flush(r, q);
  if (q->n == 1) return q->items[0];
  return tl_gb_seq(r->b, q->items, q->n);
}

static tl_gexpr char_expr(rx *r, uint32_t cp) {
  uint8_t enc[6];
  return tl_gb_literal(r->b, enc, encode_char(r, cp, enc));
}

/* ---- escapes and classes -------------------------------------------------- */

static int hex_val(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* n hex digits at s[i..], or -1. */
static int32_t hex_n(const rx *r, size_t i, size_t n) {
  int32_t v = 0;
  if (i + n > r->n) return -1;
  for (size_t k = 0; k < n; k++) {
    int h = hex_val(r->s[i + k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/* \uXXXX (after the backslash and 'u'), a surrogate pair combined, or
 * \u{X...}. */
static atom_kind escape_u(rx *r, size_t at, uint32_t *cp) {
  int32_t v;
  if (r->i < r->n && r->s[r->i] == '{') {
    uint32_t w = 0;
    size_t j = r->i + 1;
    while (j < r->n && hex_val(r->s[j]) >= 0 && w <= TL_CS_MAX_CP)
      w = w * 16 + (uint32_t)hex_val(r->s[j++]);
    if (j == r->i + 1 || j >= r->n || r->s[j] != '}' || w > TL_CS_MAX_CP) {
      invalid(r, at, "malformed \\u{...} escape");
      return ATOM_FAIL;
    }
    r->i = j + 1;
    v = (int32_t)w;
  } else {
    v = hex_n(r, r->i, 4);
    if (v < 0) {
      invalid(r, at, "malformed \\uXXXX escape");
      return ATOM_FAIL;
    }
    r->i += 4;
    if (v >= 0xD800 && v <= 0xDBFF && r->i + 1 < r->n && r->s[r->i] == '\\' &&
        r->s[r->i + 1] == 'u') {
      int32_t lo = hex_n(r, r->i + 2, 4);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        r->i += 6;
      }
    }
  }
  if (v >= 0xD800 && v <= 0xDFFF) {
    unsupported(r, at, "a lone surrogate escape (no UTF-8 text contains one)");
    return ATOM_FAIL;
  }
  *cp = (uint32_t)v;
  return ATOM_CHAR;
}

/* An escape at s[i] == '\\': a character (*cp) or a class added to set. */
static atom_kind parse_escape(rx *r, bool in_class, uint32_t *cp, tl_charset *set) {
  size_t at = r->i;
  uint8_t c;
  tl_charset tmp;
  if (++r->i >= r->n) {
    invalid(r, at, "a trailing backslash");
    return ATOM_FAIL;
  }
  c = r->s[r->i++];
  tl_cs_clear(&tmp);
  switch (c) {
    case 'd': case 'D': tl_cs_add_digit(&tmp); break;
    case 'w': case 'W': tl_cs_add_word(&tmp); break;
    case 's': case 'S': tl_cs_add_space(&tmp); break;
    case 'n': *cp = '\n'; return ATOM_CHAR;
    case 't': *cp = '\t'; return ATOM_CHAR;
    case 'r': *cp = '\r'; return ATOM_CHAR;
    case 'f': *cp = '\f'; return ATOM_CHAR;
    case 'v': *cp = '\v'; return ATOM_CHAR;
    case 'b':
      if (in_class) {
        *cp = '\b';
        return ATOM_CHAR;
      }
      unsupported(r, at, "the word boundary \\b");
      return ATOM_FAIL;
    case 'B': unsupported(r, at, "the non-word-boundary \\B"); return ATOM_FAIL;
    case 'k': unsupported(r, at, "the named backreference \\k"); return ATOM_FAIL;
    case 'p': case 'P':
      unsupported(r, at, "the Unicode property escape \\p");
      return ATOM_FAIL;
    case '0':
      if (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
        unsupported(r, at, "the octal escape \\0N");
        return ATOM_FAIL;
      }
      *cp = 0;
      return ATOM_CHAR;
    case 'c':
      if (r->i < r->n && ((r->s[r->i] | 0x20) >= 'a' && (r->s[r->i] | 0x20) <= 'z')) {
        *cp = r->s[r->i++] % 32u;
        return ATOM_CHAR;
      }
      invalid(r, at, "\\c without a control letter");
      return ATOM_FAIL;
    case 'x': {
      int32_t v = hex_n(r, r->i, 2);
      if (v < 0) {
        invalid(r, at, "malformed \\xHH escape");
        return ATOM_FAIL;
      }
      r->i += 2;
      *cp = (uint32_t)v;
      return ATOM_CHAR;
    }
    case 'u': return escape_u(r, at, cp);
    default:
      if (c >= '1' && c <= '9') {
        unsupported(r, at, "the backreference \\N");
        return ATOM_FAIL;
      }
      if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
        invalid(r, at, "an unknown escape");
        return ATOM_FAIL;
      }
      if (c < 0x80) { /* escaped punctuation stands for itself */
        *cp = c;
        return ATOM_CHAR;
      }
      r->i--;
      if (tl_utf8_next(r->s, r->n, &r->i, cp) != TL_OK) {
        fail(r, TL_ERR_INVALID_UTF8, r->i, "invalid UTF-8");
        return ATOM_FAIL;
      }
      return ATOM_CHAR;
  }
  if (c == 'D' || c == 'W' || c == 'S') tl_cs_complement(&tmp);
  tl_cs_add_set(set, &tmp);
  return ATOM_SET;
}

/* One character at s[i] (UTF-8). */
static atom_kind plain_char(rx *r, uint32_t *cp) {
  if (tl_utf8_next(r->s, r->n, &r->i, cp) != TL_OK) {
    fail(r, TL_ERR_INVALID_UTF8, r->i, "invalid UTF-8");
    return ATOM_FAIL;
  }
  return ATOM_CHAR;
}

static atom_kind class_atom(rx *r, uint32_t *cp, tl_charset *set) {
  if (r->s[r->i] == '\\') return parse_escape(r, true, cp, set);
  return plain_char(r, cp);
}

/* [...] into r->cs. */
static atom_kind parse_class(rx *r) {
  size_t at = r->i;
  bool neg = false;
  r->i++;
  if (r->i < r->n && r->s[r->i] == '^') {
    neg = true;
    r->i++;
  }
  tl_cs_clear(&r->cs);
  for (;;) {
    uint32_t lo, hi;
    size_t item_at = r->i;
    atom_kind k;
    if (r->i >= r->n) {
      invalid(r, at, "an unterminated character class");
      return ATOM_FAIL;
    }
    if (r->s[r->i] == ']') {
      r->i++;
      break;
    }
    k = class_atom(r, &lo, &r->cs);
    if (k == ATOM_FAIL) return ATOM_FAIL;
    if (r->i + 1 < r->n && r->s[r->i] == '-' && r->s[r->i + 1] != ']') {
      r->i++;
      if (k == ATOM_SET || class_atom(r, &hi, &r->cs) != ATOM_CHAR) {
        if (!r->failed) invalid(r, item_at, "a class range with a class escape at one end");
        return ATOM_FAIL;
      }
      if (hi < lo) {
        invalid(r, item_at, "a class range out of order");
        return ATOM_FAIL;
      }
      tl_cs_add(&r->cs, lo, hi);
    } else if (k == ATOM_CHAR) {
      tl_cs_add(&r->cs, lo, lo);
    }
  }
  if (neg) tl_cs_complement(&r->cs);
  return ATOM_SET;
}

/* ---- quantifiers, atoms, branches ----------------------------------------- */

/* {n}, {n,}, {n,m} at s[i]: true with the bounds and i past it; false
 * (i unchanged) when the text there is not one. */
static bool brace_quant(rx *r, uint32_t *min, uint32_t *max, bool *too_big) {
  size_t j = r->i + 1;
  uint64_t v[2] = {0, 0};
  int have = 0;
  bool comma = false, digits = false;
  *too_big = false;
  for (; j < r->n; j++) {
    uint8_t c = r->s[j];
    if (c >= '0' && c <= '9') {
      v[have] = v[have] * 10 + (c - '0');
      if (v[have] > TL_GRAMMAR_MAX_REPEAT) {
        *too_big = true;
        v[have] = TL_GRAMMAR_MAX_REPEAT + 1;
      }
      digits = true;
    } else if (c == ',' && !comma && digits) {
      comma = true;
      have = 1;
      digits = false;
    } else if (c == '}') {
      break;
    } else {
      return false;
    }
  }
  if (j >= r->n || (!comma && !digits)) return false;
  *min = (uint32_t)v[0];
  *max = !comma ? *min : digits ? (uint32_t)v[1] : TL_GB_UNBOUNDED;
  r->i = j + 1;
  return true;
}

/* A quantifier at s[i]: 0 none, 1 read (bounds set), -1 failed. */
static int parse_quant(rx *r, uint32_t *min, uint32_t *max) {
  size_t at = r->i;
  bool too_big;
  if (r->i >= r->n) return 0;
  switch (r->s[r->i]) {
    case '*': *min = 0; *max = TL_GB_UNBOUNDED; r->i++; break;
    case '+': *min = 1; *max = TL_GB_UNBOUNDED; r->i++; break;
    case '?': *min = 0; *max = 1; r->i++; break;
    case '{':
      if (!brace_quant(r, min, max, &too_big)) return 0;
      if (too_big) {
        fail(r, TL_ERR_BOUNDS, at, "a repetition count above 100000");
        return -1;
      }
      if (*max < *min) {
        invalid(r, at, "a quantifier {n,m} with n > m");
        return -1;
      }
      break;
    default: return 0;
  }
  if (r->i < r->n && r->s[r->i] == '?') r->i++; /* lazy: the same language */
  return 1;
}

static tl_gexpr parse_alt(rx *r, bool top);

static bool ident_char(uint8_t c, bool first) {
  if (c == '_' || c == '$' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return true;
  return !first && c >= '0' && c <= '9';
}

static atom_kind parse_group(rx *r, tl_gexpr *e) {
  size_t at = r->i;
  r->i++;
  if (r->i < r->n && r->s[r->i] == '?') {
    uint8_t c1 = r->i + 1 < r->n ? r->s[r->i + 1] : 0;
    uint8_t c2 = r->i + 2 < r->n ? r->s[r->i + 2] : 0;
    if (c1 == ':') {
      r->i += 2;
    } else if (c1 == '=' || c1 == '!') {
      unsupported(r, at, "lookahead (?= (?!");
      return ATOM_FAIL;
    } else if (c1 == '<' && (c2 == '=' || c2 == '!')) {
      unsupported(r, at, "lookbehind (?<= (?<!");
      return ATOM_FAIL;
    } else if (c1 == '<') { /* a named group: the same language as ( ) */
      size_t j = r->i + 2;
      while (j < r->n && ident_char(r->s[j], j == r->i + 2)) j++;
      if (j == r->i + 2 || j >= r->n || r->s[j] != '>') {
        unsupported(r, at, "a group name outside [A-Za-z_$][A-Za-z0-9_$]*");
        return ATOM_FAIL;
      }
      r->i = j + 1;
    } else {
      unsupported(r, at, "a group modifier (?");
      return ATOM_FAIL;
    }
  }
  if (++r->depth > RX_MAX_DEPTH) {
    fail(r, TL_ERR_BOUNDS, at, "groups nested deeper than 32");
    return ATOM_FAIL;
  }
  *e = parse_alt(r, false);
  r->depth--;
  if (r->failed) return ATOM_FAIL;
  if (r->i >= r->n || r->s[r->i] != ')') {
    invalid(r, at, "an unterminated group");
    return ATOM_FAIL;
  }
  r->i++;
  return ATOM_EXPR;
}

static atom_kind parse_atom(rx *r, uint32_t *cp, tl_gexpr *e) {
  size_t at = r->i;
  uint32_t mn, mx;
  bool too_big;
  switch (r->s[r->i]) {
    case '(': return parse_group(r, e);
    case '[': return parse_class(r);
    case '.':
      r->i++;
      tl_cs_clear(&r->cs);
      tl_cs_add_dot(&r->cs);
      return ATOM_SET;
    case '\\': tl_cs_clear(&r->cs); return parse_escape(r, false, cp, &r->cs);
    case '*': case '+': case '?':
      invalid(r, at, "a quantifier with nothing to repeat");
      return ATOM_FAIL;
    case '{':
      if (brace_quant(r, &mn, &mx, &too_big)) {
        invalid(r, at, "a quantifier with nothing to repeat");
        return ATOM_FAIL;
      }
      r->i++; /* not a quantifier: a literal '{' (ECMA-262 Annex B) */
      *cp = '{';
      return ATOM_CHAR;
    default: return plain_char(r, cp);
  }
}

static tl_gexpr any_star(rx *r) {
  tl_charset all;
  tl_cs_clear(&all);
  tl_cs_complement(&all);
  return tl_gb_repeat(r->b, tl_cs_emit(r->b, &all, r->json, r->err), 0, TL_GB_UNBOUNDED);
}

/* A branch: atoms up to '|' or ')'. Anchors are allowed only at a
 * top-level branch's ends, where they decide whether a search pads it. */
static tl_gexpr parse_branch(rx *r, bool top) {
  seqb q;
  bool anchor_start = false, anchor_end = false, nullable = true;
  tl_gexpr body;
  q.n = 0;
  q.lit_n = 0;
  if (top && r->i < r->n && r->s[r->i] == '^') {
    anchor_start = true;
    r->i++;
  }
  while (r->i < r->n && r->s[r->i] != '|' && r->s[r->i] != ')' && !r->failed) {
    size_t at = r->i;
    uint32_t cp = 0, mn, mx;
    tl_gexpr e = TL_GEXPR_NONE;
    atom_kind k;
    int qn;
    if (r->s[r->i] == '$') {
      if (top && (r->i + 1 == r->n || r->s[r->i + 1] == '|')) {
        anchor_end = true;
        r->i++;
        break;
      }
      unsupported(r, at, "the anchor $ other than at the pattern's end");
      break;
    }
    if (r->s[r->i] == '^') {
      unsupported(r, at, "the anchor ^ other than at the pattern's start");
      break;
    }
    k = parse_atom(r, &cp, &e);
    if (k == ATOM_FAIL) break;
    qn = parse_quant(r, &mn, &mx);
    if (qn < 0) break;
    /* e* with e able to match nothing loops without reading (the builder
     * refuses it as left recursion), and its language is that of e
     * without the empty text, which this reader does not derive. */
    if (qn > 0 && k == ATOM_EXPR && r->nullable && mx == TL_GB_UNBOUNDED) {
      unsupported(r, at, "an unbounded quantifier on a group that can match the empty text");
      break;
    }
    if (!(qn > 0 && mn == 0) && !(k == ATOM_EXPR && r->nullable)) nullable = false;
    if (qn == 0 && k == ATOM_CHAR) {
      seq_push_char(r, &q, cp);
      continue;
    }
    if (k == ATOM_CHAR) e = char_expr(r, cp);
    if (k == ATOM_SET) e = tl_cs_emit(r->b, &r->cs, r->json, r->err);
    seq_push(r, &q, qn == 0 ? e : tl_gb_repeat(r->b, e, mn, mx));
  }
  if (r->failed) return TL_GEXPR_NONE;
  r->nullable = nullable;
  body = seq_end(r, &q);
  if (q.n == 0) body = tl_gb_literal(r->b, NULL, 0);
  if (top && r->search && !(anchor_start && anchor_end)) {
    tl_gexpr parts[3];
    size_t n = 0;
    if (!anchor_start) parts[n++] = any_star(r);
    parts[n++] = body;
    if (!anchor_end) parts[n++] = any_star(r);
    body = tl_gb_seq(r->b, parts, n);
  }
  return body;
}

static tl_gexpr parse_alt(rx *r, bool top) {
  tl_gexpr alts[RX_CHUNK];
  size_t n = 0;
  bool nullable = false;
  for (;;) {
    tl_gexpr br = parse_branch(r, top);
    if (r->failed) return TL_GEXPR_NONE;
    nullable = nullable || r->nullable;
    if (n == RX_CHUNK) {
      alts[0] = tl_gb_alt(r->b, alts, n);
      n = 1;
    }
    alts[n++] = br;
    if (r->i < r->n && r->s[r->i] == '|') {
      r->i++;
      continue;
    }
    break;
  }
  r->nullable = nullable;
  return n == 1 ? alts[0] : tl_gb_alt(r->b, alts, n);
}

tl_gexpr tl_gb_regex_enc(tl_gbuilder *b, const uint8_t *text, size_t len,
                         bool unanchored_search, bool json, tl_gerror *err) {
  rx r;
  tl_gexpr e;
  size_t bad = 0;
  memset(&r, 0, sizeof r);
  r.b = b;
  r.s = text;
  r.n = len;
  r.search = unanchored_search;
  r.json = json;
  r.err = err;
  if (len > 0 && tl_utf8_validate(text, len, &bad) != TL_OK) {
    fail(&r, TL_ERR_INVALID_UTF8, bad, "invalid UTF-8");
    return TL_GEXPR_NONE;
  }
  e = parse_alt(&r, true);
  if (!r.failed && r.i < r.n) invalid(&r, r.i, "an unmatched ')'");
  return r.failed ? TL_GEXPR_NONE : e;
}

tl_gexpr tl_gb_regex(tl_gbuilder *b, const uint8_t *text, size_t len, bool unanchored_search,
                     tl_gerror *err) {
  return tl_gb_regex_enc(b, text, len, unanchored_search, false, err);
}

tl_status tl_grammar_from_regex(tl_arena *arena, const uint8_t *text, size_t len,
                                const tl_grammar **out, tl_gerror *err) {
  tl_gbuilder *b;
  tl_status st;
  uint32_t root;
  tl_gexpr e;
  memset(err, 0, sizeof *err);
  *out = NULL;
  st = tl_gb_new(arena, &b);
  if (st != TL_OK) return tl_gerror_set(err, st, 0, "regex: out of memory", NULL);
  root = tl_gb_rule(b, "regex", 5);
  e = tl_gb_regex(b, text, len, false, err);
  if (err->status != TL_OK) return err->status;
  tl_gb_define(b, root, e);
  return tl_gb_finish(b, root, out, err);
}
