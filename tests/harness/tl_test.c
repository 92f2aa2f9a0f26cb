#include "tl_test.h"

#include <string.h>

static size_t cstrlen(const char *s) { return strlen(s); }

static void put(tl_test_ctx *t, const char *s) { t->write(s, cstrlen(s)); }

static void put_u64(tl_test_ctx *t, uint64_t v) {
  char buf[24];
  size_t i = sizeof buf;
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  t->write(buf + i, sizeof buf - i);
}

static void put_i64(tl_test_ctx *t, int64_t v) {
  if (v < 0) {
    put(t, "-");
    put_u64(t, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(t, (uint64_t)v);
  }
}

static void put_hex(tl_test_ctx *t, const void *data, size_t len) {
  static const char digits[] = "0123456789abcdef";
  const uint8_t *p = (const uint8_t *)data;
  char pair[2];
  for (size_t i = 0; i < len; i++) {
    pair[0] = digits[p[i] >> 4];
    pair[1] = digits[p[i] & 15];
    t->write(pair, 2);
  }
}

void tl_test_print(tl_test_ctx *t, const char *s) { put(t, s); }
void tl_test_print_u64(tl_test_ctx *t, uint64_t v) { put_u64(t, v); }
void tl_test_print_hex(tl_test_ctx *t, const void *data, size_t len) {
  put_hex(t, data, len);
}

/* "suite.case", as every report line names it. */
static void put_case(tl_test_ctx *t) {
  put(t, t->suite);
  put(t, ".");
  put(t, t->name);
}

void tl_test_skip(tl_test_ctx *t, const char *why) {
  t->skipped++;
  put(t, "skip: ");
  put_case(t);
  put(t, ": ");
  put(t, why);
  put(t, "\n");
}

/* "  FAIL suite.case file:line: expr" — the values follow on the line. */
static void fail_head(tl_test_ctx *t, const char *file, int line,
                      const char *expr) {
  t->failed_checks++;
  put(t, "  FAIL ");
  put_case(t);
  put(t, " ");
  put(t, file);
  put(t, ":");
  put_i64(t, line);
  put(t, ": ");
  put(t, expr);
}

bool tl_test_check(tl_test_ctx *t, bool ok, const char *file, int line,
                   const char *expr) {
  t->checks++;
  if (ok) return true;
  fail_head(t, file, line, expr);
  put(t, "\n");
  return false;
}

bool tl_test_check_u64(tl_test_ctx *t, uint64_t got, uint64_t want,
                       const char *file, int line, const char *expr) {
  t->checks++;
  if (got == want) return true;
  fail_head(t, file, line, expr);
  put(t, ": got ");
  put_u64(t, got);
  put(t, ", want ");
  put_u64(t, want);
  put(t, "\n");
  return false;
}

bool tl_test_check_i64(tl_test_ctx *t, int64_t got, int64_t want,
                       const char *file, int line, const char *expr) {
  t->checks++;
  if (got == want) return true;
  fail_head(t, file, line, expr);
  put(t, ": got ");
  put_i64(t, got);
  put(t, ", want ");
  put_i64(t, want);
  put(t, "\n");
  return false;
}

bool tl_test_check_status(tl_test_ctx *t, tl_status got, tl_status want,
                          const char *file, int line, const char *expr) {
  t->checks++;
  if (got == want) return true;
  fail_head(t, file, line, expr);
  put(t, ": got ");
  put(t, tl_status_name(got));
  put(t, ", want ");
  put(t, tl_status_name(want));
  put(t, "\n");
  return false;
}

bool tl_test_check_mem(tl_test_ctx *t, const void *got, const void *want,
                       size_t len, const char *file, int line,
                       const char *expr) {
  t->checks++;
  const uint8_t *g = (const uint8_t *)got, *w = (const uint8_t *)want;
  size_t at, shown;
  if (len == 0 || memcmp(got, want, len) == 0) return true;
  for (at = 0; g[at] == w[at]; at++) {
  }
  shown = len - at < 32 ? len - at : 32;
  fail_head(t, file, line, expr);
  put(t, ": first difference at byte ");
  put_u64(t, at);
  put(t, " of ");
  put_u64(t, len);
  put(t, "\n    got  ");
  put_hex(t, g + at, shown);
  put(t, "\n    want ");
  put_hex(t, w + at, shown);
  put(t, "\n");
  return false;
}

bool tl_test_contains(const char *s, const char *part) {
  size_t n = strlen(part), len = strlen(s);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(s + i, part, n) == 0) return true;
  return false;
}

bool tl_test_check_str(tl_test_ctx *t, const char *got, const char *want,
                       const char *file, int line, const char *expr) {
  t->checks++;
  if (got != NULL && want != NULL && strcmp(got, want) == 0) return true;
  fail_head(t, file, line, expr);
  put(t, ": got \"");
  put(t, got ? got : "(null)");
  put(t, "\", want \"");
  put(t, want ? want : "(null)");
  put(t, "\"\n");
  return false;
}

/* Does "suite.name" contain filter? */
static bool matches(const char *suite, const char *name, const char *filter) {
  size_t ls = cstrlen(suite), ln = cstrlen(name), lf, total;
  if (filter == NULL || filter[0] == '\0') return true;
  lf = cstrlen(filter);
  total = ls + 1 + ln;
  for (size_t start = 0; start + lf <= total; start++) {
    size_t k = 0;
    for (; k < lf; k++) {
      size_t i = start + k;
      char c = i < ls ? suite[i] : i == ls ? '.' : name[i - ls - 1];
      if (c != filter[k]) break;
    }
    if (k == lf) return true;
  }
  return false;
}

size_t tl_test_run(const tl_test_suite *const *suites, size_t n_suites,
                   const char *filter, tl_test_writer write) {
  size_t passed = 0, failed = 0, skipped = 0;
  tl_test_ctx t;
  t.write = write;
  for (size_t s = 0; s < n_suites; s++) {
    for (size_t c = 0; c < suites[s]->count; c++) {
      const tl_test_case *tc = &suites[s]->cases[c];
      if (!matches(suites[s]->name, tc->name, filter)) continue;
      t.suite = suites[s]->name;
      t.name = tc->name;
      t.failed_checks = 0;
      t.checks = 0;
      t.skipped = 0;
      tc->fn(&t);
      skipped += t.skipped;
      if (t.failed_checks == 0 && t.skipped != 0 && t.checks == 0) {
        /* it checked nothing: counted in the skips, not a pass */
      } else if (t.failed_checks == 0) {
        passed++;
      } else {
        failed++;
        put(&t, "FAILED ");
        put(&t, t.suite);
        put(&t, ".");
        put(&t, t.name);
        put(&t, "\n");
      }
    }
  }
  put_u64(&t, passed);
  put(&t, " passed, ");
  put_u64(&t, failed);
  put(&t, " failed");
  if (skipped != 0) {
    put(&t, ", ");
    put_u64(&t, skipped);
    put(&t, " skipped");
  }
  put(&t, "\n");
  return failed;
}

uint64_t tl_test_rng_next(tl_test_rng *rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void tl_test_rng_fill(tl_test_rng *rng, uint8_t *out, size_t len) {
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = tl_test_rng_next(rng);
    for (size_t k = 0; k < 8 && i + k < len; k++)
      out[i + k] = (uint8_t)(v >> (8 * k));
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t tl_test_unhex(const char *hex, uint8_t *out, size_t cap) {
  size_t n = 0;
  while (hex[0] != '\0') {
    int hi = hexval(hex[0]), lo;
    if (hi < 0 || hex[1] == '\0') return SIZE_MAX;
    lo = hexval(hex[1]);
    if (lo < 0 || n == cap) return SIZE_MAX;
    out[n++] = (uint8_t)(hi << 4 | lo);
    hex += 2;
  }
  return n;
}
