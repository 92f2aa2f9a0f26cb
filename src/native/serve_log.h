/* The access log of `tinylm serve` (docs/server.md, Access log): one line
 * per request, never a byte of the prompt or the reply. */
#ifndef TL_NATIVE_SERVE_LOG_H
#define TL_NATIVE_SERVE_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef enum tl_srv_log_format { TL_SRV_LOG_TEXT, TL_SRV_LOG_JSON } tl_srv_log_format;

typedef struct tl_srv_access {
  time_t when;                  /* the request's arrival */
  const char *id;               /* the X-Request-Id sent back */
  const char *method, *path;    /* as the client sent them (escaped here) */
  unsigned status;              /* 499: the client went away unanswered */
  double ms;                    /* arrival to the last byte */
  bool has_tokens; /* the counts below are given: a generation or an embedding */
  uint32_t prompt_tokens, completion_tokens;
} tl_srv_access;

/* "text" or "json". */
bool tl_srv_log_format_parse(const char *s, tl_srv_log_format *out);

/* The line, '\n' ended, malloc'd (NULL: out of memory). text: key=value
 * fields; json: one object. method and path keep printable ASCII but '"'
 * and '\\', the rest as \xHH, at most 256 bytes: a client cannot forge a
 * line or break the JSON. */
char *tl_srv_access_line(tl_srv_log_format f, const tl_srv_access *a);

#endif
