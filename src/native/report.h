/* tinylm report (docs/report.md): one self-contained HTML page of a
 * verified promotion. cmd_report.c verifies the promotion (as `promote
 * show`) and loads the store objects it names; report_html.c draws the
 * page from them alone (tables and inline SVG, no script, nothing
 * fetched), every figure also in a data- attribute a checker can read. */
#ifndef TL_NATIVE_REPORT_H
#define TL_NATIVE_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tinylm.h"

typedef struct tl_report_inputs {
  const json_t *view;       /* promote show's verified view of the promotion */
  const json_t *run;        /* the run record (tinylm.promote-run/1) */
  const json_t *custody;    /* tinylm.custody/1, NULL when none was recorded */
  const json_t *benchmark;  /* tinylm.benchmark/1, NULL when none ran */
  const json_t *plan;       /* the plan (tinylm.plan/1) */
  const json_t *judgements; /* {claim: [tinylm.judgement/1, ...]} (forward claims) */
  const json_t *statistics; /* {claim: {"prompts": [[varied per configuration]]}} */
  bool public_view;         /* what `promote show --public` prints, no more */
} tl_report_inputs;

/* The page (malloc'd, *len bytes, NUL-terminated). */
tl_status tl_report_html(const tl_report_inputs *in, char **html, size_t *len);

#endif
