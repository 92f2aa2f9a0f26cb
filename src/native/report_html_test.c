/* The report page's drawing (report.h): a page from the least a
 * promotion can hold, text from receipts always escaped, the public view
 * without the free text, the memory remainder computed from the parts.
 * tests/report/report_test.py checks whole pages against real stores. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "tl_test.h"

static char *page(tl_test_ctx *t, const tl_report_inputs *in) {
  char *html = NULL;
  size_t len = 0;
  if (!TL_EXPECT_OK(t, tl_report_html(in, &html, &len))) return NULL;
  TL_EXPECT(t, strlen(html) == len);
  return html;
}

static void a_bare_promotion_still_makes_a_page(tl_test_ctx *t) {
  /* no custody, no benchmark, no judgements, no statistics, a claim that
   * did not run: every section says what it lacks */
  json_t *view = json_pack("{s:s,s:s,s:s,s:[{s:s,s:s}],s:[]}", "decision", "not_promoted",
                           "receipt", "ab", "lane", "fast", "claims", "claim", "forward",
                           "verdict", "not_run", "stop_rules");
  json_t *empty = json_object();
  json_t *plan = json_pack("{s:[{s:s,s:s,s:s}]}", "claims", "name", "forward", "kind", "forward",
                           "level", "numerical");
  tl_report_inputs in = {view, empty, NULL, NULL, plan, empty, empty, false};
  char *html = page(t, &in);
  if (html != NULL) {
    TL_EXPECT(t, strstr(html, "data-decision=\"not_promoted\"") != NULL);
    TL_EXPECT(t, strstr(html, "data-verdict=\"not_run\"") != NULL);
    /* a claim that did not run has no comparison: kind and level are the plan's */
    TL_EXPECT(t, strstr(html, "data-kind=\"forward\" data-level=\"numerical\"") != NULL);
    TL_EXPECT(t, strstr(html, "names no custody object") != NULL);
    TL_EXPECT(t, strstr(html, "No benchmark step ran") != NULL);
    TL_EXPECT(t, strstr(html, "<script") == NULL);
  }
  free(html);
  json_decref(view);
  json_decref(plan);
  json_decref(empty);
}

static void text_from_receipts_is_escaped(tl_test_ctx *t) {
  json_t *view = json_pack(
      "{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:s,s:s}],s:[]}", "decision", "not_promoted", "receipt",
      "ab", "lane", "fast", "claims", "claim", "x\"><script>alert(1)</script>", "verdict",
      "\"><script>", "stop_rule", "tolerance_breach", "summary", "<img src=x onerror=alert(1)>",
      "first_divergence", "a & b", "receipt_id", "<script>alert(2)</script>", "stop_rules");
  json_t *empty = json_object();
  tl_report_inputs in = {view, empty, NULL, NULL, empty, empty, empty, false};
  char *html = page(t, &in);
  if (html != NULL) {
    TL_EXPECT(t, strstr(html, "<script") == NULL);
    TL_EXPECT(t, strstr(html, "<img") == NULL);
    TL_EXPECT(t, strstr(html, "&lt;script&gt;") != NULL);
    TL_EXPECT(t, strstr(html, "x&quot;&gt;") != NULL);
    TL_EXPECT(t, strstr(html, "a &amp; b") != NULL);
  }
  free(html);
  json_decref(view);
  json_decref(empty);
}

static void the_public_view_drops_the_free_text(tl_test_ctx *t) {
  json_t *view = json_pack("{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:s}],s:[]}", "decision", "promoted",
                           "receipt", "ab", "lane", "fast", "claims", "claim", "tokenizer",
                           "verdict", "pass", "summary", "SUMMARY-TEXT", "first_divergence",
                           "DIVERGENCE-TEXT", "stop_rules");
  json_t *custody = json_pack("{s:s,s:{s:s,s:s},s:{s:s}}", "format", "tinylm.custody/1",
                              "artifact", "id", "cd", "path", "/home/someone/PATH-TEXT.slm",
                              "runtime", "lane", "fast");
  json_t *empty = json_object();
  tl_report_inputs in = {view, empty, custody, NULL, empty, empty, empty, true};
  char *html = page(t, &in);
  if (html != NULL) {
    TL_EXPECT(t, strstr(html, "data-public=\"true\"") != NULL);
    TL_EXPECT(t, strstr(html, "SUMMARY-TEXT") == NULL);
    TL_EXPECT(t, strstr(html, "DIVERGENCE-TEXT") == NULL);
    TL_EXPECT(t, strstr(html, "PATH-TEXT") == NULL);
  }
  free(html);
  in.public_view = false;
  html = page(t, &in);
  if (html != NULL) TL_EXPECT(t, strstr(html, "SUMMARY-TEXT") != NULL && strstr(html, "PATH-TEXT") != NULL);
  free(html);
  json_decref(view);
  json_decref(custody);
  json_decref(empty);
}

static void memory_remainder_is_peak_minus_the_parts(tl_test_ctx *t) {
  /* 100 + 10 + 20 + 30 + 5 + 15 = 180 of a 200 peak: 20 left; a second
   * point whose parts exceed its peak by 30 keeps the sign */
  json_t *bm = json_pack(
      "{s:s,s:[{s:i,s:i,s:f,s:f,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i}},"
      "{s:i,s:i,s:f,s:f,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i}}]}",
      "format", "tinylm.benchmark/1", "points", "prompt_tokens", 16, "context", 33,
      "prefill_tokens_per_s", 100.0, "decode_ms_per_token", 2.0, "memory", "weights", 100,
      "tokenizer_template", 10, "kv_cache", 20, "activations", 30, "worker_stacks", 5,
      "runtime_image", 15, "peak_rss", 200, "prompt_tokens", 64, "context", 81,
      "prefill_tokens_per_s", 90.0, "decode_ms_per_token", 2.5, "memory", "weights", 100,
      "tokenizer_template", 10, "kv_cache", 40, "activations", 30, "worker_stacks", 5,
      "runtime_image", 15, "peak_rss", 170);
  json_t *view = json_pack("{s:s,s:s,s:s,s:[],s:[]}", "decision", "promoted", "receipt", "ab",
                           "lane", "fast", "claims", "stop_rules");
  json_t *empty = json_object();
  tl_report_inputs in = {view, empty, NULL, bm, empty, empty, empty, false};
  char *html = page(t, &in);
  if (html != NULL) {
    TL_EXPECT(t, strstr(html, "data-part=\"allocator_other\" data-bytes=\"20\"") != NULL);
    TL_EXPECT(t, strstr(html, "data-part=\"allocator_other\" data-bytes=\"-30\"") != NULL);
    TL_EXPECT(t, strstr(html, "data-prompt-tokens=\"64\" data-prefill-tokens-per-s=\"90\"") !=
                     NULL);
  }
  free(html);
  json_decref(bm);
  json_decref(view);
  json_decref(empty);
}

static const tl_test_case cases[] = {
    TL_CASE(a_bare_promotion_still_makes_a_page),
    TL_CASE(text_from_receipts_is_escaped),
    TL_CASE(the_public_view_drops_the_free_text),
    TL_CASE(memory_remainder_is_peak_minus_the_parts),
};
TL_SUITE(report_html, cases);
