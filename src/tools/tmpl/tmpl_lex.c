/* The template lexer: Jinja2 3.1's lexer (jinja2/lexer.py) with the
 * environment transformers uses: trim_blocks=True, lstrip_blocks=True,
 * default delimiters, no line statements, keep_trailing_newline=False.
 *
 * Source normalisation (Environment._parse -> Lexer.tokeniter): the source
 * is split with str.splitlines() and joined with "\n", so every line
 * boundary Python knows (\r\n \r \n \v \f \x1c \x1d \x1e U+0085 U+2028
 * U+2029) becomes "\n" and one trailing boundary disappears. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl_cc.h"
#include "utf8.h"

/* ---- errors and positions ---------------------------------------------- */

static bool vfail(cc *c, tl_status st, uint32_t line, uint32_t col,
                  const char *fmt, va_list ap) {
  if (c->status != TL_OK) return false;
  c->status = st;
  if (c->err != NULL && c->err_cap > 0) {
    int n =
        snprintf(c->err, c->err_cap, "%u:%u: ", (unsigned)line, (unsigned)col);
    if (n >= 0 && (size_t)n < c->err_cap)
      vsnprintf(c->err + n, c->err_cap - (size_t)n, fmt, ap);
  }
  return false;
}

bool cc_fail(cc *c, tl_status st, uint32_t line, uint32_t col, const char *fmt,
             ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, st, line, col, fmt, ap);
  va_end(ap);
  return false;
}

bool cc_fail_tok(cc *c, tl_status st, const cc_tok *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, st, t->line, t->col, fmt, ap);
  va_end(ap);
  return false;
}

void cc_position(const cc *c, size_t off, uint32_t *line, uint32_t *col) {
  uint32_t l = 1, k = 1;
  for (size_t i = 0; i < off && i < c->len; i++) {
    unsigned char ch = (unsigned char)c->src[i];
    if (ch == '\n') {
      l++;
      k = 1;
    } else if ((ch & 0xC0) != 0x80) {
      k++;
    }
  }
  *line = l;
  *col = k;
}

/* ---- characters -------------------------------------------------------- */

/* str.isspace() */
static bool py_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static uint32_t decode_at(const char *s, size_t len, size_t pos, size_t *next) {
  size_t p = pos;
  uint32_t cp = 0;
  if (tl_utf8_next((const uint8_t *)s, len, &p, &cp) != TL_OK) {
    *next = pos + 1;
    return 0xFFFD;
  }
  *next = p;
  return cp;
}

/* Length of the run of Python whitespace at pos (regex \s*). */
static size_t ws_run(const cc *c, size_t pos) {
  size_t p = pos;
  while (p < c->len) {
    size_t nx;
    uint32_t cp = decode_at(c->src, c->len, p, &nx);
    if (!py_isspace(cp)) break;
    p = nx;
  }
  return p - pos;
}

/* Start of the trailing whitespace of s[from..to) (str.rstrip()). */
static size_t rstrip_pos(const cc *c, size_t from, size_t to) {
  size_t end = to;
  while (end > from) {
    size_t st = end - 1;
    while (st > from && ((unsigned char)c->src[st] & 0xC0) == 0x80) st--;
    size_t nx;
    uint32_t cp = decode_at(c->src, c->len, st, &nx);
    if (!py_isspace(cp)) break;
    end = st;
  }
  return end;
}

static bool is_linebreak_at(const char *s, size_t len, size_t i, size_t *n) {
  unsigned char ch = (unsigned char)s[i];
  if (ch == '\r') {
    *n = (i + 1 < len && s[i + 1] == '\n') ? 2 : 1;
    return true;
  }
  if (ch == '\n' || ch == 0x0B || ch == 0x0C || ch == 0x1C || ch == 0x1D ||
      ch == 0x1E) {
    *n = 1;
    return true;
  }
  if (ch == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85) {
    *n = 2;
    return true;
  }
  if (ch == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
      ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
    *n = 3;
    return true;
  }
  return false;
}

/* ---- tokens ------------------------------------------------------------ */

static cc_tok *push_tok(cc *c, cc_tok_type type, size_t start, size_t len) {
  if (c->n_toks == c->cap_toks) {
    size_t ncap = c->cap_toks ? c->cap_toks * 2 : 256;
    cc_tok *nt = realloc(c->toks, ncap * sizeof *nt);
    if (nt == NULL) {
      cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
      return NULL;
    }
    c->toks = nt;
    c->cap_toks = ncap;
  }
  cc_tok *t = &c->toks[c->n_toks++];
  memset(t, 0, sizeof *t);
  t->type = type;
  t->start = start;
  t->len = len;
  cc_position(c, start, &t->line, &t->col);
  return t;
}

static bool at(const cc *c, size_t pos, const char *lit) {
  size_t n = strlen(lit);
  return pos <= c->len && c->len - pos >= n &&
         memcmp(c->src + pos, lit, n) == 0;
}

/* Data before a tag, with Jinja's OptionalLStrip rule applied. */
static bool emit_data(cc *c, size_t from, size_t to, char sign, bool is_var,
                      bool line_starting) {
  size_t end = to;
  if (sign == '-') {
    end = rstrip_pos(c, from, to);
  } else if (sign != '+' && !is_var) {
    size_t l_pos = from;
    for (size_t i = to; i > from; i--)
      if (c->src[i - 1] == '\n') {
        l_pos = i;
        break;
      }
    if (l_pos > from || line_starting) {
      if (to > l_pos && ws_run(c, l_pos) >= to - l_pos) end = l_pos;
    }
  }
  if (end > from && push_tok(c, TK_DATA, from, end - from) == NULL)
    return false;
  return true;
}

/* (\d+_)*\d+ at pos; returns its length (0: none). */
static size_t digits_run(const cc *c, size_t pos) {
  size_t p = pos;
  if (p >= c->len || c->src[p] < '0' || c->src[p] > '9') return 0;
  for (;;) {
    while (p < c->len && c->src[p] >= '0' && c->src[p] <= '9') p++;
    if (p + 1 < c->len && c->src[p] == '_' && c->src[p + 1] >= '0' &&
        c->src[p + 1] <= '9') {
      p++;
      continue;
    }
    return p - pos;
  }
}

static bool lex_number(cc *c, size_t *pos) {
  size_t p = *pos, d = digits_run(c, p);
  size_t end = p + d;
  bool is_float = false;
  bool after_dot = p > 0 && c->src[p - 1] == '.';
  if (!after_dot) {
    size_t q = end;
    bool frac = false;
    if (q < c->len && c->src[q] == '.') {
      size_t f = digits_run(c, q + 1);
      if (f > 0) {
        q += 1 + f;
        frac = true;
      }
    }
    size_t e = q;
    bool expo = false;
    if (e < c->len && (c->src[e] == 'e' || c->src[e] == 'E')) {
      size_t s = e + 1;
      if (s < c->len && (c->src[s] == '+' || c->src[s] == '-')) s++;
      size_t x = digits_run(c, s);
      if (x > 0) {
        e = s + x;
        expo = true;
      }
    }
    if (expo) {
      end = e;
      is_float = true;
    } else if (frac) {
      end = q;
      is_float = true;
    }
  }
  char buf[512];
  size_t k = 0;
  if (end - p >= sizeof buf)
    return cc_fail(c, TL_ERR_BOUNDS, 0, 0, "number literal too long");
  for (size_t i = p; i < end; i++)
    if (c->src[i] != '_') buf[k++] = c->src[i];
  buf[k] = '\0';
  if (!is_float && c->src[p] == '0') {
    /* integer_re: 0b.. 0o.. 0x.. [1-9](_?\d)* 0(_?0)* */
    bool zeros = true;
    for (size_t i = 0; i < k; i++) zeros = zeros && buf[i] == '0';
    char nx = p + 1 < c->len ? c->src[p + 1] : ' ';
    if (!zeros || nx == 'b' || nx == 'B' || nx == 'o' || nx == 'O' ||
        nx == 'x' || nx == 'X') {
      uint32_t l, col;
      cc_position(c, p, &l, &col);
      return cc_fail(c, TL_ERR_UNSUPPORTED_FEATURE, l, col,
                     "an integer literal with a leading zero or a base "
                     "prefix is not supported");
    }
  }
  cc_tok *t = push_tok(c, is_float ? TK_FLOAT : TK_INT, p, end - p);
  if (t == NULL) return false;
  if (is_float) {
    char *ep;
    t->fval = strtod(buf, &ep);
    if (t->fval > 1.7976931348623157e308 || t->fval < -1.7976931348623157e308)
      return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                         "a float literal that overflows is not supported");
  } else {
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++) {
      unsigned dgt = (unsigned)(buf[i] - '0');
      if (v > (UINT64_MAX - dgt) / 10 || v * 10 + dgt > (uint64_t)INT64_MAX)
        return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                           "an integer literal above 2^63-1 is not supported");
      v = v * 10 + dgt;
    }
    t->ival = (int64_t)v;
  }
  *pos = end;
  return true;
}

static bool sbuf_put(char **buf, size_t *len, size_t *cap, const void *p,
                     size_t n) {
  if (*len + n + 1 > *cap) {
    size_t nc = (*cap ? *cap * 2 : 64);
    while (nc < *len + n + 1) nc *= 2;
    char *nb = realloc(*buf, nc);
    if (nb == NULL) return false;
    *buf = nb;
    *cap = nc;
  }
  memcpy(*buf + *len, p, n);
  *len += n;
  (*buf)[*len] = '\0';
  return true;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* A string literal: the body goes through
 * .encode("ascii", "backslashreplace").decode("unicode-escape"). */
static bool lex_string(cc *c, size_t *pos) {
  size_t p = *pos;
  char q = c->src[p];
  size_t i = p + 1;
  while (i < c->len && c->src[i] != q) {
    if (c->src[i] == '\\' && i + 1 < c->len) i++;
    /* step over a whole UTF-8 character */
    i++;
    while (i < c->len && ((unsigned char)c->src[i] & 0xC0) == 0x80) i++;
  }
  if (i >= c->len) {
    uint32_t l, col;
    cc_position(c, p, &l, &col);
    return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                   "syntax error: unterminated string literal");
  }
  cc_tok *t = push_tok(c, TK_STRING, p, i + 1 - p);
  if (t == NULL) return false;
  char *out = NULL;
  size_t olen = 0, ocap = 0;
  if (!sbuf_put(&out, &olen, &ocap, "", 0)) goto oom;
  for (size_t k = p + 1; k < i;) {
    unsigned char ch = (unsigned char)c->src[k];
    if (ch != '\\') {
      if (!sbuf_put(&out, &olen, &ocap, &c->src[k], 1)) goto oom;
      k++;
      continue;
    }
    /* backslash: what follows after backslashreplace */
    k++;
    unsigned char e = (unsigned char)c->src[k];
    if (e >= 0x80) {
      /* "\" + the char's backslashreplace form: "\\" then "xe9" literally */
      size_t nx;
      uint32_t cp = decode_at(c->src, c->len, k, &nx);
      char tmp[16];
      int n = cp < 0x100     ? snprintf(tmp, sizeof tmp, "\\x%02x", cp)
              : cp < 0x10000 ? snprintf(tmp, sizeof tmp, "\\u%04x", cp)
                             : snprintf(tmp, sizeof tmp, "\\U%08x", cp);
      /* "\\" + "\x.." decodes to a backslash followed by "x.." */
      if (!sbuf_put(&out, &olen, &ocap, "\\", 1) ||
          !sbuf_put(&out, &olen, &ocap, tmp + 1, (size_t)n - 1))
        goto oom;
      k = nx;
      continue;
    }
    uint32_t cp = 0;
    int need = 0;
    const char *simple = NULL;
    switch (e) {
      case '\n':
        k++;
        continue; /* line continuation */
      case '\\':
        simple = "\\";
        break;
      case '\'':
        simple = "'";
        break;
      case '"':
        simple = "\"";
        break;
      case 'a':
        simple = "\a";
        break;
      case 'b':
        simple = "\b";
        break;
      case 'f':
        simple = "\f";
        break;
      case 'n':
        simple = "\n";
        break;
      case 'r':
        simple = "\r";
        break;
      case 't':
        simple = "\t";
        break;
      case 'v':
        simple = "\v";
        break;
      case 'x':
        need = 2;
        break;
      case 'u':
        need = 4;
        break;
      case 'U':
        need = 8;
        break;
      case 'N':
        free(out);
        return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                           "\\N{...} escapes are not supported");
      default:
        break;
    }
    if (simple != NULL) {
      if (!sbuf_put(&out, &olen, &ocap, simple, 1)) goto oom;
      k++;
      continue;
    }
    if (e >= '0' && e <= '7') {
      int nd = 0;
      while (nd < 3 && k < i && c->src[k] >= '0' && c->src[k] <= '7') {
        cp = cp * 8 + (uint32_t)(c->src[k] - '0');
        k++;
        nd++;
      }
    } else if (need > 0) {
      k++;
      for (int d = 0; d < need; d++) {
        int h = k < i ? hexval(c->src[k]) : -1;
        if (h < 0) {
          free(out);
          return cc_fail_tok(c, TL_ERR_INVALID_ARGUMENT, t,
                             "syntax error: truncated \\%c escape", e);
        }
        cp = cp * 16 + (uint32_t)h;
        k++;
      }
    } else {
      /* unknown escape: kept as is */
      if (!sbuf_put(&out, &olen, &ocap, "\\", 1)) goto oom;
      continue;
    }
    uint8_t enc[4];
    size_t n = tl_utf8_encode(cp, enc);
    if (n == 0) {
      free(out);
      return cc_fail_tok(c, TL_ERR_UNSUPPORTED_FEATURE, t,
                         "an escape for a surrogate or a value above "
                         "U+10FFFF is not supported");
    }
    if (!sbuf_put(&out, &olen, &ocap, enc, n)) goto oom;
  }
  t->sval = out;
  t->slen = olen;
  *pos = i + 1;
  return true;
oom:
  free(out);
  return cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
}

static const char *const OPS[] = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
    "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

/* Tokens of one {{ }} or {% %} tag; pos is just after the opener. */
static bool lex_tag(cc *c, size_t *pos_io, bool is_block, size_t open_at,
                    bool *line_starting) {
  size_t pos = *pos_io;
  char stack[64];
  size_t depth = 0;
  for (;;) {
    if (depth == 0) {
      size_t end = 0;
      bool strip = false, trim = false;
      if (is_block) {
        if (at(c, pos, "+%}"))
          end = 3;
        else if (at(c, pos, "-%}"))
          end = 3, strip = true;
        else if (at(c, pos, "%}"))
          end = 2, trim = true;
      } else {
        if (at(c, pos, "-}}"))
          end = 3, strip = true;
        else if (at(c, pos, "}}"))
          end = 2;
      }
      if (end > 0) {
        if (push_tok(c, is_block ? TK_BLOCK_END : TK_VAR_END, pos, end) == NULL)
          return false;
        pos += end;
        if (strip) pos += ws_run(c, pos);
        if (trim && pos < c->len && c->src[pos] == '\n') pos++;
        *line_starting = pos > 0 && c->src[pos - 1] == '\n';
        *pos_io = pos;
        return true;
      }
    }
    if (pos >= c->len) {
      uint32_t l, col;
      cc_position(c, open_at, &l, &col);
      return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                     "syntax error: unexpected end of template: the %s tag "
                     "is not closed",
                     is_block ? "{%" : "{{");
    }
    size_t w = ws_run(c, pos);
    if (w > 0) {
      pos += w;
      continue;
    }
    char ch = c->src[pos];
    if (ch >= '0' && ch <= '9') {
      if (!lex_number(c, &pos)) return false;
      continue;
    }
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
      size_t e = pos;
      while (e < c->len &&
             ((c->src[e] >= 'a' && c->src[e] <= 'z') ||
              (c->src[e] >= 'A' && c->src[e] <= 'Z') ||
              (c->src[e] >= '0' && c->src[e] <= '9') || c->src[e] == '_'))
        e++;
      if (push_tok(c, TK_NAME, pos, e - pos) == NULL) return false;
      pos = e;
      continue;
    }
    if (ch == '\'' || ch == '"') {
      if (!lex_string(c, &pos)) return false;
      continue;
    }
    const char *op = NULL;
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
      if (at(c, pos, OPS[k])) {
        op = OPS[k];
        break;
      }
    uint32_t l, col;
    cc_position(c, pos, &l, &col);
    if (op == NULL)
      return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                     "syntax error: unexpected character");
    if (op[1] == '\0' && strchr("{([", op[0]) != NULL) {
      if (depth == sizeof stack)
        return cc_fail(c, TL_ERR_BOUNDS, l, col, "brackets nested too deeply");
      stack[depth++] = op[0] == '{' ? '}' : op[0] == '(' ? ')' : ']';
    } else if (op[1] == '\0' && strchr("})]", op[0]) != NULL) {
      if (depth == 0 || stack[depth - 1] != op[0])
        return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                       "syntax error: unexpected '%c'", op[0]);
      depth--;
    }
    cc_tok *t = push_tok(c, TK_OP, pos, strlen(op));
    if (t == NULL) return false;
    memcpy(t->op, op, strlen(op) + 1);
    pos += strlen(op);
  }
}

/* {%(-|+|)\s*raw\s*(-%}\s*|%}) at pos: its length, or 0. */
static size_t match_raw_begin(const cc *c, size_t pos, char *sign) {
  size_t p = pos + 2;
  *sign = 0;
  if (p < c->len && (c->src[p] == '-' || c->src[p] == '+')) *sign = c->src[p++];
  p += ws_run(c, p);
  if (!at(c, p, "raw")) return 0;
  p += 3;
  p += ws_run(c, p);
  if (at(c, p, "-%}")) {
    p += 3;
    p += ws_run(c, p);
  } else if (at(c, p, "%}")) {
    p += 2;
  } else {
    return 0;
  }
  return p - pos;
}

bool cc_lex(cc *c) {
  /* normalise line boundaries */
  char *n = malloc(c->len + 1);
  if (n == NULL) return cc_fail(c, TL_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < c->len;) {
    size_t bl;
    if (is_linebreak_at(c->src, c->len, i, &bl)) {
      n[k++] = '\n';
      i += bl;
    } else {
      n[k++] = c->src[i++];
    }
  }
  if (k > 0 && n[k - 1] == '\n') k--;
  n[k] = '\0';
  c->src = n;
  c->len = k;

  size_t pos = 0;
  bool line_starting = true;
  while (pos < c->len) {
    size_t p = pos;
    int kind = 0; /* '{' var, '%' block, '#' comment */
    for (; p + 1 < c->len; p++)
      if (c->src[p] == '{' && (c->src[p + 1] == '{' || c->src[p + 1] == '%' ||
                               c->src[p + 1] == '#')) {
        kind = c->src[p + 1];
        break;
      }
    if (kind == 0) {
      if (push_tok(c, TK_DATA, pos, c->len - pos) == NULL) return false;
      break;
    }
    char rsign;
    size_t rawlen = kind == '%' ? match_raw_begin(c, p, &rsign) : 0;
    char sign =
        (p + 2 < c->len && (c->src[p + 2] == '-' || c->src[p + 2] == '+'))
            ? c->src[p + 2]
            : 0;
    if (!emit_data(c, pos, p, sign, kind == '{', line_starting)) return false;
    if (rawlen > 0) {
      size_t body = p + rawlen;
      bool ls = c->src[body - 1] == '\n';
      /* (.*?)({%(-|+|)\s*endraw\s*(+%}|-%}\s*|%}\n?)) */
      for (size_t q = body;; q++) {
        if (q + 1 >= c->len) {
          uint32_t l, col;
          cc_position(c, p, &l, &col);
          return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                         "syntax error: missing end of raw directive");
        }
        if (!(c->src[q] == '{' && c->src[q + 1] == '%')) continue;
        size_t r = q + 2;
        char esign = 0;
        if (r < c->len && (c->src[r] == '-' || c->src[r] == '+'))
          esign = c->src[r++];
        r += ws_run(c, r);
        if (!at(c, r, "endraw")) continue;
        r += 6;
        r += ws_run(c, r);
        if (at(c, r, "+%}")) {
          r += 3;
        } else if (at(c, r, "-%}")) {
          r += 3;
          r += ws_run(c, r);
        } else if (at(c, r, "%}")) {
          r += 2;
          if (r < c->len && c->src[r] == '\n') r++;
        } else {
          continue;
        }
        if (!emit_data(c, body, q, esign, false, ls)) return false;
        pos = r;
        line_starting = c->src[r - 1] == '\n';
        break;
      }
      continue;
    }
    if (kind == '#') {
      size_t q = p + 2;
      for (;; q++) {
        if (q + 1 >= c->len) {
          uint32_t l, col;
          cc_position(c, p, &l, &col);
          return cc_fail(c, TL_ERR_INVALID_ARGUMENT, l, col,
                         "syntax error: missing end of comment tag");
        }
        if ((c->src[q] == '+' || c->src[q] == '-') && at(c, q + 1, "#}")) {
          bool strip = c->src[q] == '-';
          q += 3;
          if (strip) q += ws_run(c, q);
          break;
        }
        if (at(c, q, "#}")) {
          q += 2;
          if (q < c->len && c->src[q] == '\n') q++;
          break;
        }
      }
      pos = q;
      line_starting = c->src[q - 1] == '\n';
      continue;
    }
    if (push_tok(c, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, p,
                 sign ? 3 : 2) == NULL)
      return false;
    pos = p + (sign ? 3 : 2);
    if (!lex_tag(c, &pos, kind == '%', p, &line_starting)) return false;
  }
  return push_tok(c, TK_EOF, c->len, 0) != NULL;
}
