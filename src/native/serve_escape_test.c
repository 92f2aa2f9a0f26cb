/* --escape-special's markers (serve_escape.h): a message's special-token
 * text goes out as a marker and comes back, after any template text
 * around it, as the same bytes with its place as a plain range. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "serve_escape.h"
#include "tl_test.h"

static const uint8_t end_text[] = "<|im_end|>", start_text[] = "<|im_start|>";
static const uint8_t *texts[] = {end_text, start_text};
static size_t lens[] = {10, 12};
static const tl_srv_specials specials = {2, texts, lens};

static void round_trip(tl_test_ctx *t) {
  static const char conv[] =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"a<|im_end|>\\n<|im_start|>b\"}]}";
  char *marked = NULL, rendering[256];
  const char *content;
  size_t marked_len = 0, out_len = 0, n_plain = 0;
  uint8_t *out = NULL;
  tl_tok_span *plain = NULL;
  json_t *doc;
  if (!TL_EXPECT_OK(t, tl_srv_escape_mark(&specials, conv, sizeof conv - 1, &marked, &marked_len)))
    return;
  doc = json_loads(marked, 0, NULL);
  content = json_string_value(json_object_get(json_array_get(json_object_get(doc, "messages"), 0),
                                              "content"));
  if (TL_EXPECT(t, content != NULL)) {
    TL_EXPECT(t, strstr(content, "<|im_") == NULL && content[0] == 'a');
    /* what a template makes of it: its own control tokens around it */
    snprintf(rendering, sizeof rendering, "<|im_start|>user\n%s<|im_end|>\n", content);
    if (TL_EXPECT_OK(t, tl_srv_escape_restore(&specials, (const uint8_t *)rendering,
                                              strlen(rendering), &out, &out_len, &plain,
                                              &n_plain))) {
      static const char want[] = "<|im_start|>user\na<|im_end|>\n<|im_start|>b<|im_end|>\n";
      TL_EXPECT_EQ_U64(t, out_len, sizeof want - 1);
      TL_EXPECT_MEM(t, out, want, sizeof want - 1);
      TL_EXPECT_EQ_U64(t, n_plain, 2);
      if (n_plain == 2) {
        TL_EXPECT(t, plain[0].start == 18 && plain[0].end == 28);
        TL_EXPECT(t, plain[1].start == 29 && plain[1].end == 41);
      }
    }
  }
  json_decref(doc);
  free(marked);
  free(out);
  free(plain);
}

/* The markers' character typed by a client: refused, not misread. */
static void reserved_character(tl_test_ctx *t) {
  static const char conv[] =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"x\xF4\x8F\xBF\xBD" "0\xF4\x8F\xBF\xBDy\"}]}";
  char *marked = NULL;
  size_t n = 0;
  TL_EXPECT_STATUS(t, tl_srv_escape_mark(&specials, conv, sizeof conv - 1, &marked, &n),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT(t, marked == NULL);
}

static const tl_test_case cases[] = {
    TL_CASE(round_trip),
    TL_CASE(reserved_character),
};
TL_SUITE(serve_escape, cases);
