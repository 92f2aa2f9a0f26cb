/* The test harness: suites of cases, checks that print file:line and both
 * values, one closing line "N passed, N failed" (", N skipped" appended when
 * a case skipped part of its work: tl_test_skip).
 *
 * It is freestanding like the core (output goes through a writer callback),
 * so the same test files run natively and inside the wasm32 module. */
#ifndef TL_TEST_H
#define TL_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef void (*tl_test_writer)(const char *text, size_t len);

typedef struct tl_test_ctx {
  tl_test_writer write;
  const char *suite;
  const char *name;
  unsigned failed_checks;
  unsigned checks;  /* checks made by the running case */
  unsigned skipped; /* tl_test_skip calls by the running case */
} tl_test_ctx;

typedef void (*tl_test_fn)(tl_test_ctx *t);

typedef struct tl_test_case {
  const char *name;
  tl_test_fn fn;
} tl_test_case;

typedef struct tl_test_suite {
  const char *name;
  const tl_test_case *cases;
  size_t count;
} tl_test_suite;

#define TL_CASE(fn) \
  { #fn, fn }
/* Defines tl_suite_<name>; the build collects every *_test.c's suite. */
#define TL_SUITE(name, cases_array)       \
  const tl_test_suite tl_suite_##name = { \
      #name, cases_array, sizeof(cases_array) / sizeof((cases_array)[0])}

/* Runs the cases whose "suite.case" contains filter (NULL: all), prints a
 * line per failed check, a line per failed case and the closing count
 * line. Returns the number of failed cases. */
size_t tl_test_run(const tl_test_suite *const *suites, size_t n_suites,
                   const char *filter, tl_test_writer write);

/* Records that the running case skipped part of its work (what it could
 * not check here, e.g. a kernel variant this CPU lacks): prints
 * "skip: suite.case: why" and counts one skip in the closing line. A case
 * that skipped and made no check counts as skipped, not passed. */
void tl_test_skip(tl_test_ctx *t, const char *why);

/* Checks. Each evaluates to true when it held, so a test can stop early:
 *   if (!TL_EXPECT_OK(t, st)) return;                                   */
bool tl_test_check(tl_test_ctx *t, bool ok, const char *file, int line,
                   const char *expr);
bool tl_test_check_u64(tl_test_ctx *t, uint64_t got, uint64_t want,
                       const char *file, int line, const char *expr);
bool tl_test_check_i64(tl_test_ctx *t, int64_t got, int64_t want,
                       const char *file, int line, const char *expr);
bool tl_test_check_status(tl_test_ctx *t, tl_status got, tl_status want,
                          const char *file, int line, const char *expr);
bool tl_test_check_mem(tl_test_ctx *t, const void *got, const void *want,
                       size_t len, const char *file, int line,
                       const char *expr);
bool tl_test_check_str(tl_test_ctx *t, const char *got, const char *want,
                       const char *file, int line, const char *expr);

/* Whether part occurs in s (strstr, which the wasm build's libc lacks). */
bool tl_test_contains(const char *s, const char *part);

#define TL_EXPECT(t, cond) tl_test_check((t), (cond), __FILE__, __LINE__, #cond)
#define TL_EXPECT_EQ_U64(t, got, want)                                \
  tl_test_check_u64((t), (uint64_t)(got), (uint64_t)(want), __FILE__, \
                    __LINE__, #got " == " #want)
#define TL_EXPECT_EQ_I64(t, got, want)                                        \
  tl_test_check_i64((t), (int64_t)(got), (int64_t)(want), __FILE__, __LINE__, \
                    #got " == " #want)
#define TL_EXPECT_STATUS(t, got, want) \
  tl_test_check_status((t), (got), (want), __FILE__, __LINE__, #got)
#define TL_EXPECT_OK(t, got) TL_EXPECT_STATUS(t, got, TL_OK)
#define TL_EXPECT_MEM(t, got, want, len)                           \
  tl_test_check_mem((t), (got), (want), (len), __FILE__, __LINE__, \
                    #got " == " #want)
#define TL_EXPECT_STR(t, got, want) \
  tl_test_check_str((t), (got), (want), __FILE__, __LINE__, #got " == " #want)

/* Output helpers for tests that print context. */
void tl_test_print(tl_test_ctx *t, const char *s);
void tl_test_print_u64(tl_test_ctx *t, uint64_t v);
void tl_test_print_hex(tl_test_ctx *t, const void *data, size_t len);

/* Deterministic generator for test inputs (splitmix64). */
typedef struct tl_test_rng {
  uint64_t state;
} tl_test_rng;
uint64_t tl_test_rng_next(tl_test_rng *rng);
void tl_test_rng_fill(tl_test_rng *rng, uint8_t *out, size_t len);

/* Hex text to bytes for test vectors; returns the byte count or SIZE_MAX on
 * malformed hex or when it does not fit in cap. */
size_t tl_test_unhex(const char *hex, uint8_t *out, size_t cap);

#endif
