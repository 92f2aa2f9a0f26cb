/* Chat-template runtime: loads the compiled template IR (untrusted bytes,
 * validated completely) and renders it over a JSON object of variables with
 * Jinja2's semantics as transformers configures it (docs/template.md).
 *
 * Bounded: the IR is a tree (no recursion), loops run only over values
 * (input arrays, or values derived from them), every evaluation step counts
 * against limits.max_steps, output against limits.max_output, and every
 * value made while rendering comes from the caller's arena. */
#ifndef TL_CORE_TMPL_H
#define TL_CORE_TMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "json/json.h"
#include "tinylm.h"
#include "tmpl/tmpl_ir.h"

/* ---- loading ------------------------------------------------------------ */

typedef struct tl_tmpl_node {
  uint32_t op;
  int64_t a;
  uint64_t b, c;
  const uint32_t *kids; /* n_kids child node indices, each < this node's */
  uint32_t n_kids;
} tl_tmpl_node;

typedef struct tl_tmpl_str {
  const char *ptr; /* borrowed from the IR bytes */
  size_t len;
} tl_tmpl_str;

typedef struct tl_tmpl_program {
  uint8_t source_sha256[32];
  const tl_tmpl_str *strings;
  uint32_t n_strings;
  const tl_tmpl_node *nodes;
  uint32_t n_nodes;
  uint32_t root;
  uint32_t max_depth; /* height of the tree */
} tl_tmpl_program;

typedef struct tl_tmpl_load_error {
  uint32_t node;      /* offending node index, or UINT32_MAX */
  size_t offset;      /* CBOR byte offset when the CBOR itself is bad */
  const char *reason; /* static text */
} tl_tmpl_load_error;

/* Validates ir[0..len) (docs/template.md §IR) and builds the program in
 * arena; the program borrows ir, which must outlive it. Errors:
 * TL_ERR_INVALID_CBOR (not the CBOR profile), TL_ERR_INVALID_MODEL (valid
 * CBOR, invalid IR: see err), TL_ERR_UNSUPPORTED_ABI (another format or
 * version), TL_ERR_OUT_OF_MEMORY, TL_ERR_INVALID_ARGUMENT. */
tl_status tl_tmpl_load(const uint8_t *ir, size_t len, tl_arena *arena,
                       tl_tmpl_program *out, tl_tmpl_load_error *err);

/* ---- rendering ---------------------------------------------------------- */

typedef struct tl_tmpl_limits {
  uint64_t max_steps; /* node evaluations + loop iterations + string work/64 */
  size_t max_output;  /* bytes */
  size_t max_vars;    /* live local variables (all scopes) */
} tl_tmpl_limits;

/* 1,000,000 steps, 1 MiB of output, 1024 variables. */
tl_tmpl_limits tl_tmpl_limits_default(void);

typedef enum tl_tmpl_error_kind {
  TL_TMPL_ERR_NONE = 0,
  TL_TMPL_ERR_RAISED,       /* raise_exception(msg): message = msg */
  TL_TMPL_ERR_UNDEFINED,    /* jinja2.UndefinedError */
  TL_TMPL_ERR_TYPE,         /* a Python TypeError / ValueError equivalent */
  TL_TMPL_ERR_UNSUPPORTED,  /* outside the subset at run time */
  TL_TMPL_ERR_STEP_LIMIT,   /* max_steps exceeded */
  TL_TMPL_ERR_OUTPUT_LIMIT, /* max_output exceeded */
  TL_TMPL_ERR_VARS_LIMIT,   /* max_vars exceeded */
  TL_TMPL_ERR_BUFFER,       /* out_cap too small; *out_len is the need */
  TL_TMPL_ERR_MEMORY,       /* the arena ran out */
  TL_TMPL_ERR_INPUT         /* variables are not a JSON object, ... */
} tl_tmpl_error_kind;

#define TL_TMPL_MSG_CAP 256

typedef struct tl_tmpl_error {
  tl_tmpl_error_kind kind;
  uint32_t node;                 /* IR node being evaluated, or UINT32_MAX */
  char message[TL_TMPL_MSG_CAP]; /* NUL-terminated UTF-8, maybe truncated */
  size_t message_len;
} tl_tmpl_error;

/* "raised", "undefined", ... */
const char *tl_tmpl_error_kind_name(tl_tmpl_error_kind kind);

/* Who inserted what (docs/template.md §Ownership). */
typedef struct tl_tmpl_ownership {
  bool add_generation_prompt; /* the variable was passed and truthy */
  /* Rendering with add_generation_prompt false gives a prefix of the
   * output; the rest [gen_offset, gen_offset + gen_len) is the generation
   * prefix the template emitted. gen_len 0: none was emitted. */
  bool gen_is_suffix;
  size_t gen_offset, gen_len;
  /* bos_token / eos_token: the string variables of those names, if any. */
  bool bos_at_start;           /* the output begins with bos_token */
  bool eos_at_end;             /* the output ends with eos_token */
  size_t bos_count, eos_count; /* occurrences in the output */
} tl_tmpl_ownership;

/* Renders prog over vars (a JSON object: messages, tools,
 * add_generation_prompt, bos_token, ...). Bytes go to out[0..out_cap)
 * (out may be NULL when out_cap is 0); *out_len is the length of the
 * rendering, also when it did not fit (then TL_ERR_BOUNDS with kind
 * TL_TMPL_ERR_BUFFER). arena holds values made during rendering; it is
 * rewound before returning. own may be NULL.
 * Errors: TL_ERR_INVALID_ARGUMENT (template error: raised, undefined,
 * type; see err), TL_ERR_UNSUPPORTED_FEATURE, TL_ERR_BOUNDS (limits or
 * buffer), TL_ERR_OUT_OF_MEMORY, TL_ERR_INVALID_MODEL (IR invariant). */
tl_status tl_tmpl_render(const tl_tmpl_program *prog, const tl_json_value *vars,
                         const tl_tmpl_limits *limits, tl_arena *arena,
                         uint8_t *out, size_t out_cap, size_t *out_len,
                         tl_tmpl_ownership *own, tl_tmpl_error *err);

/* ---- tables shared with the compiler ------------------------------------ */

typedef struct tl_tmpl_sig {
  const char *name;
  uint8_t n_params;
  const char *params; /* space-separated parameter names */
  char owner;         /* methods: 'S' str, 'D' dict; else 0 */
} tl_tmpl_sig;

extern const tl_tmpl_sig tl_tmpl_filters[TL_F_COUNT_];
extern const tl_tmpl_sig tl_tmpl_tests[TL_T_COUNT_];
extern const tl_tmpl_sig tl_tmpl_methods[TL_M_COUNT_];
extern const tl_tmpl_sig tl_tmpl_funcs[TL_FN_COUNT_];

#endif
