/* The chat-template IR (docs/template.md §IR): opcodes and the closed sets
 * of filters, tests, methods and functions, shared by the compiler
 * (src/tools/tmpl) and the renderer. Numbers are part of IR version 1:
 * append, never renumber. */
#ifndef TL_CORE_TMPL_IR_H
#define TL_CORE_TMPL_IR_H

#define TL_TMPL_IR_FORMAT "tinylm-tmpl-ir"
#define TL_TMPL_IR_VERSION 1u

/* Limits every valid IR respects (the loader checks them). */
#define TL_TMPL_MAX_NODES 65536u
#define TL_TMPL_MAX_STRINGS 65536u
#define TL_TMPL_MAX_KIDS 4096u  /* children of one node */
#define TL_TMPL_MAX_DEPTH 64u   /* nesting of nodes (tree height) */
#define TL_TMPL_MAX_COMPARE 15u /* operators in one chained comparison */

/* Node = [op, a, b, c, kids]; see docs/template.md for each op's fields. */
typedef enum tl_tmpl_op {
  /* expressions */
  TL_OP_NONE = 0,     /* None */
  TL_OP_BOOL = 1,     /* a: 0 or 1 */
  TL_OP_INT = 2,      /* a: the integer */
  TL_OP_FLOAT = 3,    /* b: IEEE-754 binary64 bits (finite) */
  TL_OP_STR = 4,      /* b: string index */
  TL_OP_NAME = 5,     /* b: string index of the variable name */
  TL_OP_LIST = 6,     /* kids: items */
  TL_OP_TUPLE = 7,    /* kids: items */
  TL_OP_DICT = 8,     /* kids: key0, value0, key1, value1, ... */
  TL_OP_GETATTR = 9,  /* b: attribute name string; kids: [object] */
  TL_OP_GETITEM = 10, /* kids: [object, key] */
  TL_OP_SLICE = 11,   /* b: presence mask (1 start, 2 stop, 4 step);
                         kids: [object, present parts in that order] */
  TL_OP_NOT = 12,     /* kids: [x] */
  TL_OP_NEG = 13,     /* kids: [x] */
  TL_OP_POS = 14,     /* kids: [x] */
  TL_OP_BINARY = 15,  /* b: tl_tmpl_binop; kids: [left, right] */
  TL_OP_AND = 16,     /* kids: [left, right] */
  TL_OP_OR = 17,      /* kids: [left, right] */
  TL_OP_COMPARE = 18, /* b: operators, 4 bits each, first in the low bits;
                         c: operator count n; kids: n + 1 operands */
  TL_OP_CONCAT = 19,  /* kids: operands of ~ */
  TL_OP_COND = 20,    /* b: 1 when an else part exists;
                         kids: [condition, then, (else)] */
  TL_OP_FILTER = 21,  /* b: tl_tmpl_filter; c: presence mask of parameters;
                         kids: [value, present arguments in order] */
  TL_OP_TEST = 22,    /* a: 1 when negated (is not); b: tl_tmpl_test;
                         kids: [value, arguments] */
  TL_OP_METHOD = 23,  /* b: tl_tmpl_method; c: presence mask;
                         kids: [object, present arguments in order] */
  TL_OP_CALL = 24,    /* b: tl_tmpl_func; kids: arguments (namespace:
                         name0 (a STR node), value0, ...) */
  /* statements */
  TL_OP_BLOCK = 32,  /* kids: statements */
  TL_OP_TEXT = 33,   /* b: string index */
  TL_OP_OUTPUT = 34, /* kids: [expression] */
  TL_OP_IF = 35,     /* b: 1 when an else body exists;
                        kids: cond0, body0, cond1, body1, ..., (else) */
  TL_OP_FOR = 36,    /* b: flags (1 filter, 2 else);
                        kids: [target, iterable, body, (filter), (else)] */
  TL_OP_SET = 37,    /* kids: [target, value]; target: NAME, TUPLE of
                        NAME, or GETATTR of NAME (namespace attribute) */
  TL_OP_BREAK = 38,
  TL_OP_CONTINUE = 39
} tl_tmpl_op;

typedef enum tl_tmpl_binop {
  TL_BIN_ADD,
  TL_BIN_SUB,
  TL_BIN_MUL,
  TL_BIN_DIV,
  TL_BIN_FLOORDIV,
  TL_BIN_MOD,
  TL_BIN_POW,
  TL_BIN_COUNT_
} tl_tmpl_binop;

typedef enum tl_tmpl_cmp {
  TL_CMP_EQ,
  TL_CMP_NE,
  TL_CMP_LT,
  TL_CMP_LE,
  TL_CMP_GT,
  TL_CMP_GE,
  TL_CMP_IN,
  TL_CMP_NOTIN,
  TL_CMP_COUNT_
} tl_tmpl_cmp;

/* name, Jinja name, parameter names (after the value), required count */
#define TL_TMPL_FILTER_LIST(X)                                            \
  X(TL_F_LENGTH, "length", 0, "")                                         \
  X(TL_F_COUNT, "count", 0, "")                                           \
  X(TL_F_TOJSON, "tojson", 4, "ensure_ascii indent separators sort_keys") \
  X(TL_F_TRIM, "trim", 1, "chars")                                        \
  X(TL_F_JOIN, "join", 2, "d attribute")                                  \
  X(TL_F_UPPER, "upper", 0, "")                                           \
  X(TL_F_LOWER, "lower", 0, "")                                           \
  X(TL_F_DEFAULT, "default", 2, "default_value boolean")                  \
  X(TL_F_D, "d", 2, "default_value boolean")                              \
  X(TL_F_ITEMS, "items", 0, "")                                           \
  X(TL_F_LIST, "list", 0, "")                                             \
  X(TL_F_FIRST, "first", 0, "")                                           \
  X(TL_F_LAST, "last", 0, "")                                             \
  X(TL_F_STRING, "string", 0, "")                                         \
  X(TL_F_INT, "int", 2, "default base")                                   \
  X(TL_F_SAFE, "safe", 0, "")                                             \
  X(TL_F_CAPITALIZE, "capitalize", 0, "")                                 \
  X(TL_F_REPLACE, "replace", 3, "old new count")                          \
  X(TL_F_REVERSE, "reverse", 0, "")                                       \
  X(TL_F_ABS, "abs", 0, "")

#define TL_TMPL_TEST_LIST(X)            \
  X(TL_T_DEFINED, "defined", 0)         \
  X(TL_T_UNDEFINED, "undefined", 0)     \
  X(TL_T_NONE, "none", 0)               \
  X(TL_T_STRING, "string", 0)           \
  X(TL_T_MAPPING, "mapping", 0)         \
  X(TL_T_ITERABLE, "iterable", 0)       \
  X(TL_T_SEQUENCE, "sequence", 0)       \
  X(TL_T_NUMBER, "number", 0)           \
  X(TL_T_INTEGER, "integer", 0)         \
  X(TL_T_FLOAT, "float", 0)             \
  X(TL_T_BOOLEAN, "boolean", 0)         \
  X(TL_T_TRUE, "true", 0)               \
  X(TL_T_FALSE, "false", 0)             \
  X(TL_T_EVEN, "even", 0)               \
  X(TL_T_ODD, "odd", 0)                 \
  X(TL_T_DIVISIBLEBY, "divisibleby", 1) \
  X(TL_T_EQ, "eq", 1)                   \
  X(TL_T_EQUALTO, "equalto", 1)         \
  X(TL_T_NE, "ne", 1)                   \
  X(TL_T_IN, "in", 1)

/* Methods of str (S) and dict (D): name, Jinja name, owner, parameters */
#define TL_TMPL_METHOD_LIST(X)                        \
  X(TL_M_STARTSWITH, "startswith", 'S', 1, "prefix")  \
  X(TL_M_ENDSWITH, "endswith", 'S', 1, "suffix")      \
  X(TL_M_SPLIT, "split", 'S', 2, "sep maxsplit")      \
  X(TL_M_STRIP, "strip", 'S', 1, "chars")             \
  X(TL_M_LSTRIP, "lstrip", 'S', 1, "chars")           \
  X(TL_M_RSTRIP, "rstrip", 'S', 1, "chars")           \
  X(TL_M_REPLACE, "replace", 'S', 3, "old new count") \
  X(TL_M_UPPER, "upper", 'S', 0, "")                  \
  X(TL_M_LOWER, "lower", 'S', 0, "")                  \
  X(TL_M_TITLE, "title", 'S', 0, "")                  \
  X(TL_M_CAPITALIZE, "capitalize", 'S', 0, "")        \
  X(TL_M_FIND, "find", 'S', 1, "sub")                 \
  X(TL_M_ITEMS, "items", 'D', 0, "")                  \
  X(TL_M_KEYS, "keys", 'D', 0, "")                    \
  X(TL_M_VALUES, "values", 'D', 0, "")                \
  X(TL_M_GET, "get", 'D', 2, "key default")

#define TL_TMPL_FUNC_LIST(X)                  \
  X(TL_FN_NAMESPACE, "namespace")             \
  X(TL_FN_RAISE_EXCEPTION, "raise_exception") \
  X(TL_FN_STRFTIME_NOW, "strftime_now")

#define TL_TMPL_ENUM4_(name, jname, n, params) name,
#define TL_TMPL_ENUM3_(name, jname, n) name,
#define TL_TMPL_ENUM5_(name, jname, owner, n, params) name,
#define TL_TMPL_ENUM2_(name, jname) name,
typedef enum tl_tmpl_filter {
  TL_TMPL_FILTER_LIST(TL_TMPL_ENUM4_) TL_F_COUNT_
} tl_tmpl_filter;
typedef enum tl_tmpl_test {
  TL_TMPL_TEST_LIST(TL_TMPL_ENUM3_) TL_T_COUNT_
} tl_tmpl_test;
typedef enum tl_tmpl_method {
  TL_TMPL_METHOD_LIST(TL_TMPL_ENUM5_) TL_M_COUNT_
} tl_tmpl_method;
typedef enum tl_tmpl_func {
  TL_TMPL_FUNC_LIST(TL_TMPL_ENUM2_) TL_FN_COUNT_
} tl_tmpl_func;

#endif
