/* libFuzzer target for the server text tinylm pull reads in
 * src/native/hub_http.c: response header lines (on_header: X-Error-Message,
 * X-Repo-Commit, ETags, X-Linked-Size, Link) and tl_hub_printable, which
 * every message with server text goes through. The first byte picks the
 * reader and the output capacity; the rest is the server's bytes.
 *
 * Whatever comes in, what goes out must be safe to print and to put in
 * JSON: NUL-terminated within its buffer, well-formed UTF-8 (checked with
 * the core's validator), and free of C0/DEL/C1 controls, bidirectional
 * overrides and line separators (decoded here). tl_hub_printable must not
 * cut what fits, and must keep a well-formed input without controls as it
 * is. */
#define _POSIX_C_SOURCE 200809L /* as hub_http.c: before any header */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/hub_http.c"
#include "../../src/tools/tool_msg.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static bool shown_ok(const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  if (n == cap) return false; /* no NUL inside the buffer */
  if (tl_utf8_validate((const uint8_t *)s, n, NULL) != TL_OK) return false;
  for (size_t pos = 0; pos < n;) {
    uint32_t cp;
    size_t k;
    if (!tl_utf8_decode((const uint8_t *)s, n, pos, &cp, &k)) return false;
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E ||
        cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
        (cp >= 0x2066 && cp <= 0x2069))
      return false;
    pos += k;
  }
  return true;
}

/* Whether s[0..n) is well-formed UTF-8 that needs no escape. */
static bool plain(const uint8_t *s, size_t n) {
  if (tl_utf8_validate(s, n, NULL) != TL_OK) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] == 0x7F) return false;
  for (size_t pos = 0; pos < n;) {
    uint32_t cp;
    size_t k;
    tl_utf8_decode(s, n, pos, &cp, &k);
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
        (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
      return false;
    pos += k;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char out[4200];
  if (size < 1) return 0;
  uint8_t mode = data[0];
  data++, size--;
  if ((mode & 1) == 0) {
    size_t cap = 1 + (size_t)(mode >> 1) * 16; /* 1..2033 */
    memset(out, 'Z', sizeof out);
    tl_hub_printable((const char *)data, size, out, cap);
    CHECK(shown_ok(out, cap));
    CHECK(out[cap] == 'Z' || cap == sizeof out); /* nothing past cap */
    if (plain(data, size) && size < cap) {
      CHECK(strlen(out) == size && memcmp(out, data, size) == 0);
    }
  } else {
    /* One header line, as curl hands it over (not NUL-terminated). */
    tl_hub_headers hd;
    xfer x;
    char *line = malloc(size ? size : 1);
    CHECK(line != NULL);
    memcpy(line, data, size);
    memset(&hd, 0, sizeof hd);
    memset(&x, 0, sizeof x);
    hd.linked_size = -1;
    x.hd = &hd;
    x.own_origin = (mode & 2) != 0;
    CHECK(on_header(line, 1, size, &x) == size);
    CHECK(shown_ok(x.error_text, sizeof x.error_text));
    CHECK(shown_ok(hd.repo_commit, sizeof hd.repo_commit));
    CHECK(shown_ok(hd.linked_etag, sizeof hd.linked_etag));
    CHECK(shown_ok(hd.etag, sizeof hd.etag));
    CHECK(shown_ok(hd.next, sizeof hd.next));
    CHECK(hd.linked_size >= -2);
    free(line);
  }
  return 0;
}
