/* Internals of the template compiler: tokens, the compiler state. */
#ifndef TL_TOOLS_TMPL_CC_H
#define TL_TOOLS_TMPL_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef enum cc_tok_type {
  TK_DATA,        /* text between tags (after whitespace control) */
  TK_VAR_BEGIN,   /* {{ */
  TK_VAR_END,     /* }} */
  TK_BLOCK_BEGIN, /* {% */
  TK_BLOCK_END,   /* %} */
  TK_NAME,
  TK_STRING, /* decoded value in sval/slen */
  TK_INT,
  TK_FLOAT,
  TK_OP, /* op: the operator text, e.g. "//" */
  TK_EOF
} cc_tok_type;

typedef struct cc_tok {
  cc_tok_type type;
  size_t start, len; /* in the normalised source */
  uint32_t line, col;
  char *sval; /* TK_STRING: malloc'd decoded text */
  size_t slen;
  int64_t ival;
  double fval;
  char op[3];
} cc_tok;

typedef struct cc_node {
  uint32_t op;
  int64_t a;
  uint64_t b, c;
  uint32_t *kids;
  uint32_t n_kids;
  uint32_t depth;
} cc_node;

typedef struct cc_str {
  char *ptr;
  size_t len;
} cc_str;

typedef struct cc {
  char *src; /* normalised source (newlines -> \n, last one dropped) */
  size_t len;
  cc_tok *toks;
  size_t n_toks, cap_toks;
  size_t pos; /* parser position */
  cc_node *nodes;
  size_t n_nodes, cap_nodes;
  cc_str *strs;
  size_t n_strs, cap_strs;
  unsigned loop_depth; /* for break/continue */
  unsigned recursion;
  tl_status status; /* first failure; sticky */
  char *err;
  size_t err_cap;
} cc;

/* Records the first failure: "L:C: message". Returns false. */
bool cc_fail(cc *c, tl_status st, uint32_t line, uint32_t col, const char *fmt,
             ...);
bool cc_fail_tok(cc *c, tl_status st, const cc_tok *t, const char *fmt, ...);
/* 1-based line and column (in characters) of a source offset. */
void cc_position(const cc *c, size_t off, uint32_t *line, uint32_t *col);

bool cc_lex(cc *c);
/* Parses the token stream; *root is the template's BLOCK node. */
bool cc_parse(cc *c, uint32_t *root);
bool cc_emit(cc *c, uint32_t root, const uint8_t sha[32], uint8_t **ir,
             size_t *ir_len);

#endif
