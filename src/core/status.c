/* Status names: generated from TL_STATUS_LIST so the enum and the table
 * cannot drift apart. */
#include "tinylm.h"

const char *tl_status_name(tl_status status) {
  switch (status) {
#define TL_STATUS_CASE_(name, value, code) \
  case name:                               \
    return code;
    TL_STATUS_LIST(TL_STATUS_CASE_)
#undef TL_STATUS_CASE_
  }
  return "unknown";
}

const char *tl_version(void) { return TL_VERSION_STRING; }
