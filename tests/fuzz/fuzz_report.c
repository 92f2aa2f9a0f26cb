/* libFuzzer target for the promotion report's page (src/native/report_html.c).
 * The store objects it draws from are checked by their SHA-256 only, so
 * anyone who can write a store chooses their JSON: any JSON object holding
 * a view, run record, custody, benchmark, plan, judgements and statistics
 * (of any shape) must give a page, never a crash, a leak or markup taken
 * from the input: no "<script" and no "<img" in the page, whatever the
 * strings held. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/native/report_html.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *doc = json_loadb((const char *)data, size, 0, NULL);
  char *html = NULL;
  size_t len = 0;
  tl_report_inputs in;
  if (doc == NULL) return 0;
  in = (tl_report_inputs){json_object_get(doc, "view"),
                          json_object_get(doc, "run"),
                          json_object_get(doc, "custody"),
                          json_object_get(doc, "benchmark"),
                          json_object_get(doc, "plan"),
                          json_object_get(doc, "judgements"),
                          json_object_get(doc, "statistics"),
                          json_is_true(json_object_get(doc, "public"))};
  if (tl_report_html(&in, &html, &len) == TL_OK) {
    if (strlen(html) != len || strstr(html, "<script") != NULL || strstr(html, "<img") != NULL)
      abort();
    free(html);
  }
  json_decref(doc);
  return 0;
}
