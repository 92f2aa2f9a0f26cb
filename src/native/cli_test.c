/* The command line's strict number parsers (cli.h): what they accept is
 * the whole string as a number of that type, nothing else. Expected values
 * are the mathematical ones (2^64 - 1, -2^63) and, for doubles, the C
 * compiler's own reading of the same literal. */
#include <math.h>
#include <string.h>

#include "cli.h"
#include "tl_test.h"

static void unsigned_range_and_form(tl_test_ctx *t) {
  static const char *const refused[] = {
      "", " 1", "1 ", "+1", "-1", " -1", "-0", "0x10", "1e3", "1.0", "1,000",
      "18446744073709551616", "99999999999999999999999", "1\n", "\t1"};
  uint64_t v = 7;
  TL_EXPECT(t, tl_cli_parse_u64("0", &v) && v == 0);
  TL_EXPECT(t, tl_cli_parse_u64("0000042", &v) && v == 42);
  TL_EXPECT(t, tl_cli_parse_u64("18446744073709551615", &v) && v == UINT64_MAX);
  TL_EXPECT(t, tl_cli_parse_u64("018446744073709551615", &v) && v == UINT64_MAX);
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    v = 7;
    if (!TL_EXPECT(t, !tl_cli_parse_u64(refused[i], &v) && v == 7))
      return;
  }
}

static void signed_range_and_form(tl_test_ctx *t) {
  static const char *const refused[] = {"", "-", "--1", "+1", " -1", "- 1",
                                        "9223372036854775808",
                                        "-9223372036854775809", "1-"};
  int64_t v = 7;
  TL_EXPECT(t, tl_cli_parse_i64("-1", &v) && v == -1);
  TL_EXPECT(t, tl_cli_parse_i64("-0", &v) && v == 0);
  TL_EXPECT(t, tl_cli_parse_i64("9223372036854775807", &v) && v == INT64_MAX);
  TL_EXPECT(t, tl_cli_parse_i64("-9223372036854775808", &v) && v == INT64_MIN);
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    v = 7;
    if (!TL_EXPECT(t, !tl_cli_parse_i64(refused[i], &v) && v == 7)) return;
  }
}

static void doubles_are_finite_decimals(tl_test_ctx *t) {
  static const struct {
    const char *text;
    double want;
  } accepted[] = {{"0", 0.0},       {"1", 1.0},       {"0.1", 0.1},
                  {".5", .5},       {"1.", 1.},       {"-2.5e-3", -2.5e-3},
                  {"1E+2", 1E+2},   {"1e308", 1e308}, {"0e-5000", 0.0},
                  {"1.7976931348623157e308", 1.7976931348623157e308}};
  static const char *const refused[] = {
      "", ".", "-", "e5", "1e", "1e+", "+1", " 1", "1 ", "0x1p3", "inf",
      "-inf", "nan", "infinity", "1e309", "1e-400", "1,5", "1..2", "--1"};
  double v = 7;
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
    if (!TL_EXPECT(t, tl_cli_parse_f64(accepted[i].text, &v) &&
                          memcmp(&v, &accepted[i].want, sizeof v) == 0))
      return;
  TL_EXPECT(t, tl_cli_parse_f64("-0", &v) && v == 0 && signbit(v));
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    v = 7;
    if (!TL_EXPECT(t, !tl_cli_parse_f64(refused[i], &v) && v == 7)) return;
  }
}

/* Every command's one --json pre-scan: anywhere before "--", so that an
 * error found before the flag is reached is already JSON; after "--" it is
 * an operand (a file named --json). */
static void json_is_asked_anywhere_before_the_end_of_options(tl_test_ctx *t) {
  char *last[] = {"hash", "--algo", "x", "--json"}, *none[] = {"hash", "--algo", "x"};
  char *operand[] = {"hash", "--", "--json"}, *first[] = {"run", "--json", "m.slm"};
  TL_EXPECT(t, tl_cli_wants_json(4, last));
  TL_EXPECT(t, tl_cli_wants_json(3, first));
  TL_EXPECT(t, !tl_cli_wants_json(3, none));
  TL_EXPECT(t, !tl_cli_wants_json(3, operand));
}

static const tl_test_case cases[] = {
    TL_CASE(json_is_asked_anywhere_before_the_end_of_options),
    TL_CASE(unsigned_range_and_form),
    TL_CASE(signed_range_and_form),
    TL_CASE(doubles_are_finite_decimals),
};
TL_SUITE(cli, cases);
