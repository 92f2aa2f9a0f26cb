/* String formats as exact grammars (docs/structured.md, "Formats"): date,
 * time and date-time per RFC 3339 §5.6 (month lengths, leap years, leap
 * seconds at 23:59:60 UTC), uuid per RFC 4122's text form, ipv4 as a
 * dotted quad of 0-255 without leading zeros, and a documented subset of
 * email. Every format here is ASCII without '"' or '\', so the grammar of
 * the value is also the grammar of the JSON string's inside. */
#include <string.h>

#include "grammar/schema_internal.h"

static tl_gexpr cls(sc *c, const char *pairs) {
  uint32_t r[16];
  size_t n = strlen(pairs);
  for (size_t i = 0; i < n; i++) r[i] = (uint8_t)pairs[i];
  return tl_gb_class(c->b, r, n / 2, false);
}

static tl_gexpr seqv(sc *c, const tl_gexpr *v, size_t n) { return tl_gb_seq(c->b, v, n); }
static tl_gexpr altv(sc *c, const tl_gexpr *v, size_t n) { return tl_gb_alt(c->b, v, n); }
static tl_gexpr digit(sc *c) { return cls(c, "09"); }
static tl_gexpr rep(sc *c, tl_gexpr e, uint32_t lo, uint32_t hi) { return tl_gb_repeat(c->b, e, lo, hi); }

/* ---- RFC 3339 ---- */

static tl_gexpr full_date(sc *c) {
  tl_gexpr d28 = altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){sc_lit(c, "0"), cls(c, "19")}, 2),
                                      seqv(c, (tl_gexpr[]){sc_lit(c, "1"), digit(c)}, 2),
                                      seqv(c, (tl_gexpr[]){sc_lit(c, "2"), cls(c, "08")}, 2)}, 3);
  tl_gexpr d30 = altv(c, (tl_gexpr[]){d28, sc_lit(c, "29"), sc_lit(c, "30")}, 3);
  tl_gexpr d31 = altv(c, (tl_gexpr[]){d30, sc_lit(c, "31")}, 2);
  tl_gexpr m31 = altv(c, (tl_gexpr[]){sc_lit(c, "01"), sc_lit(c, "03"), sc_lit(c, "05"),
                                      sc_lit(c, "07"), sc_lit(c, "08"), sc_lit(c, "10"),
                                      sc_lit(c, "12")}, 7);
  tl_gexpr m30 = altv(c, (tl_gexpr[]){sc_lit(c, "04"), sc_lit(c, "06"), sc_lit(c, "09"),
                                      sc_lit(c, "11")}, 4);
  /* Two digits divisible by 4: [02468][048] | [13579][26]. */
  tl_gexpr div4 = altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){cls(c, "0022446688"), cls(c, "004488")}, 2),
                                       seqv(c, (tl_gexpr[]){cls(c, "1133557799"), cls(c, "2266")}, 2)}, 2);
  tl_gexpr div4_not00 =
      altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){sc_lit(c, "0"), cls(c, "4488")}, 2),
                           seqv(c, (tl_gexpr[]){cls(c, "22446688"), cls(c, "004488")}, 2),
                           seqv(c, (tl_gexpr[]){cls(c, "1133557799"), cls(c, "2266")}, 2)}, 3);
  /* Leap years: divisible by 4, centuries only when divisible by 400. */
  tl_gexpr leap = altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){digit(c), digit(c), div4_not00}, 3),
                                       seqv(c, (tl_gexpr[]){div4, sc_lit(c, "00")}, 2)}, 2);
  tl_gexpr month_day = altv(
      c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){m31, sc_lit(c, "-"), d31}, 3),
                      seqv(c, (tl_gexpr[]){m30, sc_lit(c, "-"), d30}, 3),
                      seqv(c, (tl_gexpr[]){sc_lit(c, "02-"), d28}, 2)}, 3);
  return altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){rep(c, digit(c), 4, 4), sc_lit(c, "-"), month_day}, 3),
                              seqv(c, (tl_gexpr[]){leap, sc_lit(c, "-02-29")}, 2)}, 2);
}

static tl_gexpr two(sc *c, unsigned v) {
  char s[3] = {(char)('0' + v / 10), (char)('0' + v % 10), 0};
  return sc_lit(c, s);
}

static tl_gexpr hour(sc *c) {
  return altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){cls(c, "01"), digit(c)}, 2),
                              seqv(c, (tl_gexpr[]){sc_lit(c, "2"), cls(c, "03")}, 2)}, 2);
}

static tl_gexpr sixty(sc *c) { return seqv(c, (tl_gexpr[]){cls(c, "05"), digit(c)}, 2); }

static tl_gexpr full_time(sc *c) {
  uint32_t frac_rule = sc_fresh_rule(c);
  tl_gexpr frac = tl_gb_ref(c->b, frac_rule);
  tl_gexpr offset = altv(c, (tl_gexpr[]){cls(c, "ZZzz"),
                                         seqv(c, (tl_gexpr[]){cls(c, "++--"), hour(c), sc_lit(c, ":"),
                                                              sixty(c)}, 4)}, 2);
  tl_gexpr normal = seqv(c, (tl_gexpr[]){hour(c), sc_lit(c, ":"), sixty(c), sc_lit(c, ":"), sixty(c),
                                         frac, offset}, 7);
  tl_gexpr leap = TL_GEXPR_NONE;
  tl_gb_define(c->b, frac_rule,
               rep(c, seqv(c, (tl_gexpr[]){sc_lit(c, "."), rep(c, digit(c), 1, SC_FRAC_DIGITS)}, 2), 0, 1));
  /* A leap second is 23:59:60 in UTC: each local time with the one offset
   * that takes it there (Z only with 23:59 itself). */
  for (int sign = 0; sign < 2; sign++)
    for (unsigned off = 0; off < 1440; off++) {
      unsigned local = (1439 + (sign == 0 ? off : 1440 - off)) % 1440;
      char text[16];
      tl_gexpr e;
      text[0] = (char)('0' + local / 600);
      text[1] = (char)('0' + local / 60 % 10);
      text[2] = ':';
      text[3] = (char)('0' + local % 60 / 10);
      text[4] = (char)('0' + local % 10);
      memcpy(text + 5, ":60", 4);
      e = seqv(c, (tl_gexpr[]){sc_lit(c, text), frac,
                               sc_lit(c, sign == 0 ? "+" : "-"), two(c, off / 60), sc_lit(c, ":"),
                               two(c, off % 60)}, 6);
      leap = leap == TL_GEXPR_NONE ? e : altv(c, (tl_gexpr[]){leap, e}, 2);
    }
  leap = altv(c, (tl_gexpr[]){leap, seqv(c, (tl_gexpr[]){sc_lit(c, "23:59:60"), frac, cls(c, "ZZzz")}, 3)}, 2);
  return altv(c, (tl_gexpr[]){normal, leap}, 2);
}

/* ---- the others ---- */

static tl_gexpr hex_run(sc *c, uint32_t n) { return rep(c, cls(c, "09AFaf"), n, n); }

static tl_gexpr uuid(sc *c) {
  return seqv(c, (tl_gexpr[]){hex_run(c, 8), sc_lit(c, "-"), hex_run(c, 4), sc_lit(c, "-"),
                              hex_run(c, 4), sc_lit(c, "-"), hex_run(c, 4), sc_lit(c, "-"),
                              hex_run(c, 12)}, 9);
}

/* 0-255 without leading zeros. */
static tl_gexpr octet(sc *c) {
  return altv(c, (tl_gexpr[]){seqv(c, (tl_gexpr[]){sc_lit(c, "25"), cls(c, "05")}, 2),
                              seqv(c, (tl_gexpr[]){sc_lit(c, "2"), cls(c, "04"), digit(c)}, 3),
                              seqv(c, (tl_gexpr[]){sc_lit(c, "1"), digit(c), digit(c)}, 3),
                              seqv(c, (tl_gexpr[]){cls(c, "19"), digit(c)}, 2), digit(c)}, 5);
}

static tl_gexpr ipv4(sc *c) {
  tl_gexpr dot = sc_lit(c, ".");
  return seqv(c, (tl_gexpr[]){octet(c), dot, octet(c), sc_lit(c, "."), octet(c), sc_lit(c, "."),
                              octet(c)}, 7);
}

/* RFC 5322 dot-atom local part @ a host name (RFC 1123 labels of 1-63
 * letters, digits and inner hyphens) or [an IPv4 address]. Quoted local
 * parts and IPv6 literals are outside the subset. */
static tl_gexpr email(sc *c) {
  static const uint32_t atext[] = {'!', '!', '#', '\'', '*', '+', '-', '-', '/', '9', '=', '=',
                                   '?', '?', 'A', 'Z', '^', '~'};
  tl_gexpr atom = rep(c, tl_gb_class(c->b, atext, sizeof atext / sizeof atext[0] / 2, false), 1,
                      TL_GB_UNBOUNDED);
  tl_gexpr local = seqv(c, (tl_gexpr[]){atom, rep(c, seqv(c, (tl_gexpr[]){sc_lit(c, "."), atom}, 2),
                                                  0, TL_GB_UNBOUNDED)}, 2);
  tl_gexpr alnum = cls(c, "09AZaz");
  tl_gexpr label = seqv(c, (tl_gexpr[]){alnum, rep(c, seqv(c, (tl_gexpr[]){rep(c, cls(c, "--09AZaz"), 0, 61),
                                                                            cls(c, "09AZaz")}, 2), 0, 1)}, 2);
  tl_gexpr host = seqv(c, (tl_gexpr[]){label, rep(c, seqv(c, (tl_gexpr[]){sc_lit(c, "."), label}, 2),
                                                  0, TL_GB_UNBOUNDED)}, 2);
  tl_gexpr domain = altv(c, (tl_gexpr[]){host, seqv(c, (tl_gexpr[]){sc_lit(c, "["), ipv4(c),
                                                                   sc_lit(c, "]")}, 3)}, 2);
  return seqv(c, (tl_gexpr[]){local, sc_lit(c, "@"), domain}, 3);
}

static bool is(const char *name, size_t len, const char *k) {
  return len == strlen(k) && memcmp(name, k, len) == 0;
}

enum { F_DATE, F_TIME, F_DATE_TIME, F_UUID, F_IPV4, F_EMAIL };

/* date "T" time, from the date and time rules (shared with those formats). */
static tl_gexpr date_time(sc *c) {
  return seqv(c, (tl_gexpr[]){sc_shared(c, &c->format_rule[F_DATE], full_date), cls(c, "TTtt"),
                              sc_shared(c, &c->format_rule[F_TIME], full_time)}, 3);
}

/* Each format's grammar is one rule per call, however many strings use it
 * (time's leap-second table is thousands of alternatives). */
tl_gexpr sc_format(sc *c, const char *name, size_t len) {
  static const struct {
    const char *name;
    tl_gexpr (*make)(sc *);
  } formats[] = {[F_DATE] = {"date", full_date},   [F_TIME] = {"time", full_time},
                 [F_DATE_TIME] = {"date-time", date_time}, [F_UUID] = {"uuid", uuid},
                 [F_IPV4] = {"ipv4", ipv4},         [F_EMAIL] = {"email", email}};
  char shown[64];
  size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (is(name, len, formats[i].name)) return sc_shared(c, &c->format_rule[i], formats[i].make);
  memcpy(shown, name, n);
  shown[n] = 0;
  sc_fail(c, TL_ERR_UNSUPPORTED_FEATURE, "unsupported format", shown);
  return TL_GEXPR_NONE;
}
