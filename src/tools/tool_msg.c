#include "tool_msg.h"

#include <stdio.h>

void tl_tool_vmsg(char *err, size_t err_cap, const char *file, const char *fmt,
                  va_list ap) {
  int n = snprintf(err, err_cap, "%s: ", file);
  if (n >= 0 && (size_t)n < err_cap)
    vsnprintf(err + n, err_cap - (size_t)n, fmt, ap);
}

tl_status tl_fail(char *err, size_t err_cap, tl_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_cap, fmt, ap);
  va_end(ap);
  return st;
}
