#include "cli.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void report(bool json, const char *code, json_t *extra, const char *fmt,
                   va_list ap) {
  char detail[1024];
  vsnprintf(detail, sizeof detail, fmt, ap);
  if (json) {
    json_t *obj = json_pack("{s:s, s:s}", "error", code, "detail", detail);
    if (obj != NULL && extra != NULL) json_object_update(obj, extra);
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(obj);
  }
  json_decref(extra);
  fprintf(stderr, "error: %s: %s\n", code, detail);
}

int tl_cli_fail(bool json, tl_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, tl_status_name(status), NULL, fmt, ap);
  va_end(ap);
  return TL_EXIT_FAILURE;
}

int tl_cli_fail_with(bool json, tl_status status, json_t *extra,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, tl_status_name(status), extra, fmt, ap);
  va_end(ap);
  return TL_EXIT_FAILURE;
}

int tl_cli_usage(bool json, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(json, "usage", NULL, fmt, ap);
  va_end(ap);
  return TL_EXIT_USAGE;
}

void tl_cli_hex(const uint8_t *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = '\0';
}
