/* The access log's lines: see serve_log.h. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "serve_log.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_MAX 256

bool tl_srv_log_format_parse(const char *s, tl_srv_log_format *out) {
  if (strcmp(s, "text") == 0) *out = TL_SRV_LOG_TEXT;
  else if (strcmp(s, "json") == 0) *out = TL_SRV_LOG_JSON;
  else return false;
  return true;
}

/* s as printable ASCII (see serve_log.h); out holds FIELD_MAX + 1. */
static void escape(const char *s, char *out) {
  size_t n = 0;
  for (; s != NULL && *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    bool plain = c > 0x20 && c < 0x7f && c != '"' && c != '\\';
    if (n + (plain ? 1 : 4) > FIELD_MAX) break;
    if (plain) out[n++] = (char)c;
    else n += (size_t)snprintf(out + n, 5, "\\x%02x", c);
  }
  out[n] = '\0';
}

char *tl_srv_access_line(tl_srv_log_format f, const tl_srv_access *a) {
  char method[FIELD_MAX + 1], path[FIELD_MAX + 1], when[32], *line;
  struct tm tm;
  escape(a->method, method);
  escape(a->path, path);
  gmtime_r(&a->when, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (f == TL_SRV_LOG_JSON) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:f}", "time", when, "id", a->id, "method", method,
                          "path", path, "status", (int)a->status, "ms", a->ms);
    char *s;
    if (o != NULL && a->has_tokens &&
        (json_object_set_new(o, "prompt_tokens", json_integer(a->prompt_tokens)) != 0 ||
         json_object_set_new(o, "completion_tokens", json_integer(a->completion_tokens)) != 0)) {
      json_decref(o);
      return NULL;
    }
    s = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(o);
    line = s != NULL ? malloc(strlen(s) + 2) : NULL;
    if (line != NULL) sprintf(line, "%s\n", s);
    free(s);
    return line;
  }
  line = malloc(4 * FIELD_MAX);
  if (line == NULL) return NULL;
  if (a->has_tokens)
    snprintf(line, 4 * FIELD_MAX,
             "%s id=%s method=%s path=%s status=%u ms=%.1f prompt_tokens=%u "
             "completion_tokens=%u\n",
             when, a->id, method, path, a->status, a->ms, a->prompt_tokens, a->completion_tokens);
  else
    snprintf(line, 4 * FIELD_MAX, "%s id=%s method=%s path=%s status=%u ms=%.1f\n", when, a->id,
             method, path, a->status, a->ms);
  return line;
}
