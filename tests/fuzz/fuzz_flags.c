/* libFuzzer target for the command line's numeric flag parsers
 * (src/native/cli.c: tl_cli_parse_u64, _i64, _f64), which every command
 * uses for every number it takes. For any bytes (up to the first NUL):
 *
 *  - u64 accepts exactly the non-empty strings of ASCII digits whose value
 *    is at most 2^64-1, decided here by comparing the digits (leading
 *    zeros dropped) with "18446744073709551615" as text, and the value
 *    printed back is those digits;
 *  - i64 accepts exactly an optional '-' then such digits within
 *    [-2^63, 2^63-1], and prints back the same way;
 *  - an accepted double is finite, is what strtod reads from the same
 *    text (bit for bit), uses only digits, '.', 'e', 'E', '+', '-' and
 *    starts with a digit, '.' or '-'; digits alone (up to 300) are always
 *    accepted; and its %.17g rendering is accepted again with the same
 *    bits. */
#define _POSIX_C_SOURCE 200809L /* as cli.c, included below */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/cli.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

/* The canonical decimal of a digit string (leading zeros dropped), or
 * NULL when s is not one. */
static const char *canonical_digits(const char *s) {
  if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) return NULL;
  while (s[0] == '0' && s[1] != '\0') s++;
  return s;
}

/* Whether digits (canonical) are at most limit (canonical), as text. */
static bool at_most(const char *digits, const char *limit) {
  size_t n = strlen(digits), k = strlen(limit);
  return n < k || (n == k && strcmp(digits, limit) <= 0);
}

static void check_u64(const char *s) {
  uint64_t v = 0;
  bool ok = tl_cli_parse_u64(s, &v);
  const char *d = canonical_digits(s);
  char back[32];
  CHECK(ok == (d != NULL && at_most(d, "18446744073709551615")));
  if (!ok) return;
  snprintf(back, sizeof back, "%" PRIu64, v);
  CHECK(strcmp(back, d) == 0);
}

static void check_i64(const char *s) {
  int64_t v = 0;
  bool ok = tl_cli_parse_i64(s, &v), neg = s[0] == '-';
  const char *d = canonical_digits(s + neg);
  char back[32], want[32];
  CHECK(ok == (d != NULL && at_most(d, neg ? "9223372036854775808"
                                           : "9223372036854775807")));
  if (!ok) return;
  snprintf(back, sizeof back, "%" PRId64, v);
  snprintf(want, sizeof want, "%s%s", neg && strcmp(d, "0") != 0 ? "-" : "", d);
  CHECK(strcmp(back, want) == 0);
}

static void check_f64(const char *s) {
  double v = 0, again = 0;
  bool ok = tl_cli_parse_f64(s, &v);
  size_t n = strlen(s);
  char text[64];
  if (n > 0 && n <= 300 && strspn(s, "0123456789") == n) CHECK(ok);
  if (!ok) return;
  CHECK(isfinite(v));
  CHECK(strspn(s, "0123456789.eE+-") == n);
  CHECK((s[0] >= '0' && s[0] <= '9') || s[0] == '.' || s[0] == '-');
  {
    double ref = strtod(s, NULL);
    CHECK(memcmp(&ref, &v, sizeof v) == 0);
  }
  snprintf(text, sizeof text, "%.17g", v);
  CHECK(tl_cli_parse_f64(text, &again));
  CHECK(memcmp(&again, &v, sizeof v) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  check_u64(s);
  check_i64(s);
  check_f64(s);
  free(s);
  return 0;
}
