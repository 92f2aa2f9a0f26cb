/* Grammar errors: a status and a message built from pieces, without
 * snprintf (the core is freestanding). */
#include <stdarg.h>

#include "grammar/grammar.h"

void tl_gerror_append(tl_gerror *err, const char *s, size_t n) {
  size_t len = 0;
  if (err == NULL) return;
  while (len < sizeof err->message && err->message[len] != '\0') len++;
  if (len >= sizeof err->message) len = sizeof err->message - 1;
  for (size_t i = 0; i < n && len + 1 < sizeof err->message; i++) err->message[len++] = s[i];
  err->message[len] = '\0';
}

void tl_gerror_append_u64(tl_gerror *err, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do {
    digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  tl_gerror_append(err, digits + sizeof digits - n, n);
}

tl_status tl_gerror_set(tl_gerror *err, tl_status status, uint32_t offset, ...) {
  va_list ap;
  const char *s;
  if (err == NULL || err->status != TL_OK) return status;
  err->status = status;
  err->offset = offset;
  err->message[0] = '\0';
  va_start(ap, offset);
  while ((s = va_arg(ap, const char *)) != NULL) {
    size_t n = 0;
    while (s[n] != '\0') n++;
    tl_gerror_append(err, s, n);
  }
  va_end(ap);
  return status;
}
