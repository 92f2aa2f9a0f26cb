/* The element rule of docs/tolerance.md and the bound ratio the promotion
 * report plots: |c - r| / (atol + rtol max(|c|, |r|)), above 1 exactly
 * when an element fails. Values are exact in binary (halves, quarters). */
#include "compare.h"

#include <math.h>

#include "tl_test.h"

static void ratio_is_the_largest_error_over_its_bound(tl_test_ctx *t) {
  /* bounds 0.25 + 0.25 * max(|c|, |r|): element 0 errs 0.5 against
   * 0.25 + 0.25 * 1.5 = 0.625 (0.8); element 1 errs 0.5 against
   * 0.25 + 0.25 * 3 = 1 (0.5); element 2 is exact. */
  const double ref[3] = {1.0, 3.0, -2.0};
  const float cand[3] = {1.5f, 2.5f, -2.0f};
  tl_compare_stats s;
  tl_compare(ref, cand, 3, (tl_tolerance){0.25, 0.25}, 0.0, &s);
  TL_EXPECT(t, s.n_fail == 0);
  TL_EXPECT(t, s.max_bound_ratio == 0.8);
}

static void above_one_exactly_when_an_element_fails(tl_test_ctx *t) {
  /* rtol 0.25, atol 0.1875: element 0 errs 0.75 against 0.4375 (fails),
   * element 1 errs 0.25 against exactly 0.25 (ratio 1: passes). */
  const double ref[2] = {1.0, 0.0};
  const float cand[2] = {0.25f, 0.25f};
  tl_compare_stats s;
  tl_compare(ref, cand, 2, (tl_tolerance){0.25, 0.1875}, 0.0, &s);
  TL_EXPECT(t, s.n_fail == 1 && s.first_fail == 0);
  TL_EXPECT(t, s.max_bound_ratio == 0.75 / (0.1875 + 0.25));
  tl_compare(ref + 1, cand + 1, 1, (tl_tolerance){0.5, 0.125}, 0.0, &s);
  /* 0.25 against 0.125 + 0.5 * 0.25 = 0.25 */
  TL_EXPECT(t, s.n_fail == 0 && s.max_bound_ratio == 1.0);
}

static void non_finite_mismatches_are_infinite(tl_test_ctx *t) {
  const double ref[3] = {-INFINITY, 1.0, 2.0};
  const float cand[3] = {-INFINITY, NAN, 2.0f};
  tl_compare_stats s;
  tl_compare(ref, cand, 3, (tl_tolerance){0.5, 0.5}, 0.0, &s);
  TL_EXPECT(t, s.n_fail == 1 && s.first_fail == 1);
  TL_EXPECT(t, isinf(s.max_bound_ratio));
  /* equal infinities (masked scores) match: ratio 0 */
  tl_compare(ref, cand, 1, (tl_tolerance){0.5, 0.5}, 0.0, &s);
  TL_EXPECT(t, s.n_fail == 0 && s.max_bound_ratio == 0.0);
  /* a zero bound: any error is infinitely far over it */
  tl_compare(ref + 2, (const float[]){2.5f}, 1, (tl_tolerance){0.0, 0.0}, 0.0, &s);
  TL_EXPECT(t, s.n_fail == 1 && isinf(s.max_bound_ratio));
}

static const tl_test_case cases[] = {
    TL_CASE(ratio_is_the_largest_error_over_its_bound),
    TL_CASE(above_one_exactly_when_an_element_fails),
    TL_CASE(non_finite_mismatches_are_infinite),
};
TL_SUITE(compare, cases);
