/* libFuzzer target for the bounded reader of the Hub's JSON answers in
 * src/native/hub_http.c (tl_hub_json_values, tl_hub_parse_json), which
 * pull and drift put every model-info and tree-page answer through (issue
 * 23.5: 63 MB of [{},{},...] took 4.8 GB). The first two bytes pick the
 * value cap (1 .. 65536); the rest is the server's body.
 *
 * Whatever comes in: a body holding more values than the cap is refused
 * with TL_ERR_BOUNDS before jansson allocates; a document that is accepted
 * holds at most that many values and keys (counted here by walking it), so
 * memory stays in proportion to the cap; a refusal is BOUNDS or IO with a
 * message. Run with -rss_limit_mb (tests/fuzz/run.sh passes 2048). */
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

/* Values and keys of v, as tl_hub_json_values counts them. */
static size_t count(const json_t *v) {
  size_t n = 1, i;
  const char *key;
  json_t *item;
  if (json_is_array(v)) {
    json_array_foreach((json_t *)v, i, item) n += count(item);
  } else if (json_is_object(v)) {
    json_object_foreach((json_t *)v, key, item) n += 1 + count(item);
  }
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *doc = NULL;
  char err[512];
  size_t cap, counted;
  tl_status st;
  if (size < 2) return 0;
  cap = 1 + ((size_t)data[0] << 8 | data[1]);
  data += 2;
  size -= 2;
  counted = tl_hub_json_values(data, size, cap);
  st = tl_hub_parse_json(data, size, cap, "fuzz", &doc, err, sizeof err);
  if (counted > cap) {
    CHECK(st == TL_ERR_BOUNDS && doc == NULL);
  } else if (st == TL_OK) {
    CHECK(doc != NULL && count(doc) <= cap);
  } else {
    CHECK(st == TL_ERR_IO && doc == NULL && err[0] != '\0');
  }
  json_decref(doc);
  return 0;
}
