/* Status names are the enum identifiers, and unknown values are named. */
#include "tl_test.h"

static void names_match_identifiers(tl_test_ctx *t) {
  TL_EXPECT_STR(t, tl_status_name(TL_OK), "TL_OK");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_BOUNDS), "TL_ERR_BOUNDS");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_INTERNAL_INVARIANT),
                "TL_ERR_INTERNAL_INVARIANT");
  TL_EXPECT_STR(t, tl_status_name(TL_ERR_INVALID_CBOR), "TL_ERR_INVALID_CBOR");
  TL_EXPECT_STR(t, tl_status_name((tl_status)999), "TL_ERR_UNKNOWN");
}

static void version_string_matches_macros(tl_test_ctx *t) {
  TL_EXPECT_STR(t, tl_version(), TL_VERSION_STRING);
  TL_EXPECT_EQ_U64(
      t, TL_VERSION_NUMBER,
      TL_VERSION_MAJOR * 65536 + TL_VERSION_MINOR * 256 + TL_VERSION_PATCH);
}

static const tl_test_case cases[] = {
    TL_CASE(names_match_identifiers),
    TL_CASE(version_string_matches_macros),
};
TL_SUITE(status, cases);
