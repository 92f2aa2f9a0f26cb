/* The request reader's test helpers, shared by serve_request_test.c and
 * serve_compat_test.c: a body parsed against a small vocabulary, and the
 * checks of an acceptance and of a refusal (status, type, param, code, a
 * UTF-8 message, nothing left in the request). Test-only. */
#ifndef TL_SERVE_REQUEST_CHECKS_H
#define TL_SERVE_REQUEST_CHECKS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "serve_request.h"
#include "tl_test.h"
#include "utf8.h"

#define VOCAB 1000u /* the vocabulary size these requests are checked against */
#define USER_HI "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static inline tl_status parse_n(tl_srv_kind kind, const char *body, size_t len, tl_srv_request *r,
                         tl_srv_error *e) {
  return tl_srv_request_parse(kind, (const uint8_t *)body, len, VOCAB, r, e);
}

static inline bool all_zero(const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0) return false;
  return true;
}

/* The body is accepted; r then holds it (the caller frees it). */
static inline bool accepted_at(tl_test_ctx *t, tl_srv_kind kind, const char *body, size_t len,
                        tl_srv_request *r, const char *file, int line) {
  tl_srv_error e;
  tl_status st = parse_n(kind, body, len, r, &e);
  if (!tl_test_check_status(t, st, TL_OK, file, line, body)) {
    tl_test_print(t, "  refused: ");
    tl_test_print(t, e.message);
    tl_test_print(t, "\n");
    return false;
  }
  return true;
}
#define ACCEPTED(t, kind, body, r) accepted_at(t, kind, body, strlen(body), r, __FILE__, __LINE__)

/* Accepted and freed: for the bodies whose values need no look. */
static inline bool ok_at(tl_test_ctx *t, tl_srv_kind kind, const char *body, const char *file, int line) {
  tl_srv_request r;
  bool ok = accepted_at(t, kind, body, strlen(body), &r, file, line);
  if (ok) tl_srv_request_free(&r);
  return ok;
}
#define OK(t, kind, body) ok_at(t, kind, body, __FILE__, __LINE__)

/* Refused with 400 invalid_request_error, this param and code, a message,
 * and nothing in *out. */
static inline bool refused_at(tl_test_ctx *t, tl_srv_kind kind, const char *body, size_t len,
                       const char *param, const char *code, tl_srv_error *e, const char *file,
                       int line) {
  tl_srv_request r;
  tl_status st = parse_n(kind, body, len, &r, e);
  bool ok = tl_test_check_status(t, st, TL_ERR_INVALID_ARGUMENT, file, line, body);
  if (st == TL_OK) tl_srv_request_free(&r);
  ok = ok && tl_test_check_u64(t, (uint64_t)e->status, 400, file, line, "status") &&
       tl_test_check_str(t, e->type, "invalid_request_error", file, line, "type") &&
       tl_test_check_str(t, e->code, code, file, line, body) &&
       tl_test_check_str(t, e->param, param, file, line, body) &&
       tl_test_check(t, e->message[0] != '\0', file, line, "a message") &&
       tl_test_check(t, tl_utf8_validate((const uint8_t *)e->message, strlen(e->message), NULL) ==
                            TL_OK,
                     file, line, "the message is UTF-8") &&
       tl_test_check(t, all_zero(&r, sizeof r), file, line, "*out holds nothing");
  return ok;
}
#define REFUSED(t, kind, body, param, code)                                                   \
  do {                                                                                        \
    tl_srv_error e_;                                                                          \
    refused_at(t, kind, body, strlen(body), param, code, &e_, __FILE__, __LINE__);            \
  } while (0)

#endif
