/* gen/think.h: where Qwen3's think block lies in a reply. */
#include "gen/think.h"

#include <string.h>

static const char think_open[] = "<think>", think_close[] = "</think>";
#define OPEN_LEN (sizeof think_open - 1)
#define CLOSE_LEN (sizeof think_close - 1)

/* The offset of the first "</think>" in s[from, len), or len. */
static size_t find_close(const uint8_t *s, size_t from, size_t len) {
  for (size_t i = from; i + CLOSE_LEN <= len; i++)
    if (memcmp(s + i, think_close, CLOSE_LEN) == 0) return i;
  return len;
}

/* The length of the longest proper prefix of "</think>" that ends s[0, len). */
static size_t partial_close(const uint8_t *s, size_t len) {
  for (size_t k = CLOSE_LEN - 1; k > 0; k--)
    if (k <= len && memcmp(s + len - k, think_close, k) == 0) return k;
  return 0;
}

void tl_think_split(const uint8_t *s, size_t len, bool final, tl_think *t) {
  size_t from = OPEN_LEN, close;
  memset(t, 0, sizeof *t);
  if (!final && len < OPEN_LEN && (len == 0 || memcmp(s, think_open, len) == 0)) {
    t->block = true; /* may yet open one: hold it all */
    t->reason_from = t->reason_to = t->answer_from = len;
    return;
  }
  if (len < OPEN_LEN || memcmp(s, think_open, OPEN_LEN) != 0) return;
  t->block = true;
  while (from < len && s[from] == '\n') from++;
  t->reason_from = from;
  close = find_close(s, OPEN_LEN, len);
  if (close < len) {
    t->closed = true;
    t->reason_to = close;
    t->answer_from = close + CLOSE_LEN;
    while (t->answer_from < len && s[t->answer_from] == '\n') t->answer_from++;
  } else {
    t->reason_to = len - (final ? 0 : partial_close(s, len));
    t->answer_from = len;
  }
  if (t->reason_to < from) t->reason_to = from; /* "<think>\n\n</think>": nothing between */
  while (t->reason_to > from && s[t->reason_to - 1] == '\n') t->reason_to--;
}
