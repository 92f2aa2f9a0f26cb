/* Status names are the error codes the CLI prints: the identifier without
 * TL_ERR_, in lower case. Unknown values are named too. */
#include "tl_test.h"

static void names_are_lower_case_codes(tl_test_ctx *t) {
  TL_EXPECT_STR(t, tl_status_name(TL_OK), "ok");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_BOUNDS), "bounds");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_INTERNAL_INVARIANT),
                "internal_invariant");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_INVALID_CBOR), "invalid_cbor");
  TL_EXPECT_STR(t, tl_status_name((tl_status)999), "unknown");
}

static void version_string_matches_macros(tl_test_ctx *t) {
  TL_EXPECT_STR(t, tl_version(), TL_VERSION_STRING);
  TL_EXPECT_EQ_U64(
      t, TL_VERSION_NUMBER,
      TL_VERSION_MAJOR * 65536 + TL_VERSION_MINOR * 256 + TL_VERSION_PATCH);
}

static const tl_test_case cases[] = {
    TL_CASE(names_are_lower_case_codes),
    TL_CASE(version_string_matches_macros),
};
TL_SUITE(status, cases);
