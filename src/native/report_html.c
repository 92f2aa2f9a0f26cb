/* The promotion report's page (report.h, docs/report.md): HTML with inline
 * styles and inline SVG charts, no script. Everything drawn comes from
 * tl_report_inputs; each number shown is also printed in a data-
 * attribute with %.17g (doubles read back exactly) so a checker can hold
 * the page against the receipts without trusting this file. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ------------------------------------------------------------------------ */
/* Writing                                                                  */

static void esc(FILE *f, const char *s) {
  for (; s != NULL && *s; s++) switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fputc(*s, f);
    }
}

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s != NULL ? s : "";
}

static double num(const json_t *o, const char *key) {
  return json_number_value(json_object_get(o, key));
}

/* ` name="value"`, value escaped. */
static void attr(FILE *f, const char *name, const char *value) {
  fprintf(f, " %s=\"", name);
  esc(f, value);
  fputc('"', f);
}

/* A number attribute: %.17g, or "" for a JSON null / missing value. */
static void num_attr(FILE *f, const char *name, const json_t *v) {
  if (json_is_integer(v)) fprintf(f, " %s=\"%lld\"", name, (long long)json_integer_value(v));
  else if (json_is_real(v)) fprintf(f, " %s=\"%.17g\"", name, json_real_value(v));
  else fprintf(f, " %s=\"\"", name);
}

/* A table cell with a number for people: 4 significant digits. */
static void num_cell(FILE *f, const json_t *v, const char *unit) {
  if (json_is_number(v)) fprintf(f, "<td class=\"n\">%.4g%s</td>", json_number_value(v), unit);
  else fputs("<td class=\"n\">&ndash;</td>", f);
}

static void bytes_cell(FILE *f, double b) {
  if (fabs(b) < 1e6) fprintf(f, "<td class=\"n\">%.1f kB</td>", b / 1e3);
  else fprintf(f, "<td class=\"n\">%.1f MB</td>", b / 1e6);
}

/* The first 12 hex digits, the whole id in the title. */
static void short_id(FILE *f, const char *hex) {
  char head[13];
  snprintf(head, sizeof head, "%s", hex);
  fputs("<code", f);
  attr(f, "title", hex);
  fputc('>', f);
  esc(f, head);
  fputs("</code>", f);
}

static const char style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;"
    "max-width:1100px;margin:24px auto;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px "
    "solid #d8dce4;padding-bottom:4px}h3{font-size:14px;margin:16px 0 6px}"
    "table{border-collapse:collapse;margin:6px 0 10px}td,th{border:1px solid #d8dce4;"
    "padding:3px 7px;text-align:left;vertical-align:top}th{background:#f2f4f8}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}"
    ".pass{color:#17783c}.fail{color:#b3261e}.not_run{color:#6b7280}"
    "#decision{font-size:18px;padding:10px 14px;border-radius:6px;margin:12px 0}"
    "#decision.promoted{background:#e5f5ea;border:1px solid #9fd3b0}"
    "#decision.not_promoted{background:#fbe9e7;border:1px solid #f0aaa3}"
    "figure{margin:8px 0 16px}figcaption{color:#4b5563;font-size:13px}"
    "svg text{font:11px system-ui,sans-serif;fill:#374151}"
    ".muted{color:#6b7280}.div{font-size:12px;white-space:pre-wrap;word-break:break-all}";

/* ------------------------------------------------------------------------ */
/* Axes                                                                     */

typedef struct box {
  double x, y, w, h; /* the plotting area in SVG units */
} box;

typedef struct axis {
  double lo, hi;
  bool log;
} axis;

/* Position of v along an axis of length len (0 at lo); clamped. */
static double scale(const axis *a, double v, double len) {
  double t;
  if (a->log) {
    if (!(v > a->lo)) v = a->lo;
    t = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
  } else {
    t = a->hi > a->lo ? (v - a->lo) / (a->hi - a->lo) : 0.0;
  }
  if (!(t >= 0.0)) t = 0.0;
  if (t > 1.0) t = 1.0;
  return t * len;
}

static double sx(const box *b, const axis *a, double v) { return b->x + scale(a, v, b->w); }
static double sy(const box *b, const axis *a, double v) { return b->y + b->h - scale(a, v, b->h); }

/* A round upper limit for a linear axis: 1, 2 or 5 times a power of 10. */
static double nice_max(double v) {
  double p, m;
  if (!(v > 0.0)) return 1.0;
  p = pow(10.0, floor(log10(v)));
  m = v / p;
  return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * p;
}

static void frame(FILE *f, const box *b) {
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
             "stroke=\"#9ca3af\"/>",
          b->x, b->y, b->w, b->h);
}

/* Ticks and labels of a linear y axis with 4 steps; fmt formats a value. */
static void y_ticks(FILE *f, const box *b, const axis *a, const char *fmt) {
  for (int i = 0; i <= 4; i++) {
    double v = a->lo + (a->hi - a->lo) * i / 4.0, y = sy(b, a, v);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eef0f4\"/>",
            b->x, b->x + b->w, y, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", b->x - 4, y + 4);
    fprintf(f, fmt, v);
    fputs("</text>", f);
  }
}

static void label(FILE *f, double x, double y, const char *anchor, const char *text) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
  esc(f, text);
  fputs("</text>", f);
}

/* ------------------------------------------------------------------------ */
/* Decision, claims, custody                                                */

static void decision(FILE *f, const json_t *view) {
  const char *d = str(view, "decision");
  const json_t *claims = json_object_get(view, "claims"), *c, *rules = json_object_get(view, "stop_rules");
  size_t i, passed = 0;
  json_array_foreach(claims, i, c) passed += strcmp(str(c, "verdict"), "pass") == 0;
  fprintf(f, "<section id=\"decision\" class=\"%s\"", strcmp(d, "promoted") == 0 ? "promoted" : "not_promoted");
  attr(f, "data-decision", d);
  attr(f, "data-receipt", str(view, "receipt"));
  fprintf(f, "><strong>%s</strong>: %zu of %zu claims passed on lane ",
          strcmp(d, "promoted") == 0 ? "PROMOTED" : "NOT PROMOTED", passed,
          json_array_size(claims));
  esc(f, str(view, "lane"));
  if (json_array_size(rules) > 0) {
    fputs(". Stop rules: ", f);
    json_array_foreach(rules, i, c) {
      fputs(i ? ", " : "", f);
      fputs("<code>", f);
      esc(f, str(c, "rule"));
      fputs("</code> (claim ", f);
      esc(f, str(c, "claim"));
      fputs(")", f);
    }
  }
  fputs(".<br><span class=\"muted\">promotion receipt ", f);
  esc(f, str(view, "receipt"));
  fputs("</span></section>\n", f);
}

/* The plan's claim of that name (a claim that did not run has no
 * comparison: its kind and level are the plan's). */
static const json_t *plan_claim(const json_t *plan, const char *name) {
  const json_t *c;
  size_t i;
  json_array_foreach(json_object_get(plan, "claims"), i, c) if (strcmp(str(c, "name"), name) == 0) return c;
  return NULL;
}

static void claims_table(FILE *f, const json_t *view, const json_t *plan, bool public_view) {
  const json_t *c;
  size_t i;
  fputs("<h2>Claims</h2>\n<table id=\"claims\"><tr><th>claim</th><th>kind</th><th>level</th>"
        "<th>verdict</th><th>stop rule</th><th>cases passed</th><th>tolerance</th>"
        "<th>attempt</th><th>comparison receipt</th>",
        f);
  if (!public_view) fputs("<th>summary and first divergence</th>", f);
  fputs("</tr>\n", f);
  json_array_foreach(json_object_get(view, "claims"), i, c) {
    const json_t *cases = json_object_get(c, "cases"), *k;
    const json_t *kinds = json_object_get(c, "kind") ? c : plan_claim(plan, str(c, "claim"));
    const char *verdict = str(c, "verdict");
    size_t j, passed = 0;
    json_array_foreach(cases, j, k) passed += json_is_true(json_object_get(k, "pass"));
    fputs("<tr", f);
    attr(f, "data-claim", str(c, "claim"));
    attr(f, "data-verdict", verdict);
    attr(f, "data-stop-rule", str(c, "stop_rule"));
    attr(f, "data-kind", str(kinds, "kind"));
    attr(f, "data-level", str(kinds, "level"));
    attr(f, "data-receipt", str(c, "receipt_id"));
    fprintf(f, " data-cases=\"%zu\" data-passed=\"%zu\"><td>", json_array_size(cases), passed);
    esc(f, str(c, "claim"));
    fputs("</td><td>", f);
    esc(f, str(kinds, "kind"));
    fputs("</td><td>", f);
    esc(f, str(kinds, "level"));
    fprintf(f, "</td><td class=\"%s\">", strcmp(verdict, "pass") == 0       ? "pass"
                                           : strcmp(verdict, "not_run") == 0 ? "not_run"
                                                                             : "fail");
    esc(f, strcmp(verdict, "not_run") == 0 ? "not run" : verdict);
    fputs("</td><td>", f);
    if (str(c, "stop_rule")[0]) {
      fputs("<code>", f);
      esc(f, str(c, "stop_rule"));
      fputs("</code>", f);
    }
    if (cases != NULL) fprintf(f, "</td><td class=\"n\">%zu of %zu</td><td>", passed, json_array_size(cases));
    else fputs("</td><td></td><td>", f);
    esc(f, str(c, "tolerance"));
    fputs("</td><td class=\"n\">", f);
    if (json_is_integer(json_object_get(c, "attempt")))
      fprintf(f, "%lld", (long long)json_integer_value(json_object_get(c, "attempt")));
    fputs("</td><td>", f);
    if (str(c, "receipt_id")[0]) short_id(f, str(c, "receipt_id"));
    fputs("</td>", f);
    if (!public_view) {
      fputs("<td>", f);
      esc(f, str(c, "summary"));
      if (strcmp(verdict, "not_run") == 0) esc(f, str(c, "why"));
      if (str(c, "first_divergence")[0]) {
        fputs("<div class=\"div fail\">first divergence: ", f);
        esc(f, str(c, "first_divergence"));
        fputs("</div>", f);
      }
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</table>\n", f);
}

static void custody_row(FILE *f, const char *field, const char *label_text, const char *value) {
  fputs("<tr", f);
  attr(f, "data-field", field);
  attr(f, "data-value", value);
  fputs("><th>", f);
  esc(f, label_text);
  fputs("</th><td><code>", f);
  esc(f, value);
  fputs("</code></td></tr>\n", f);
}

static void custody(FILE *f, const tl_report_inputs *in) {
  const json_t *cu = in->custody, *rt = json_object_get(cu, "runtime");
  const json_t *art = json_object_get(cu, "artifact"), *acq = json_object_get(art, "acquisition");
  const json_t *s;
  char threads[32];
  size_t i;
  fputs("<h2>Chain of custody</h2>\n", f);
  if (cu == NULL) {
    fputs("<p class=\"muted\">The run record names no custody object (the artifact did not "
          "open, or the promotion predates custody records).</p>\n",
          f);
    return;
  }
  fputs("<table id=\"custody\">\n", f);
  if (json_is_object(acq)) {
    custody_row(f, "repo", "source repository", str(acq, "repo_id"));
    custody_row(f, "commit", "source commit", str(acq, "resolved_commit"));
  }
  custody_row(f, "artifact_id", "artifact (SHA-256 of the .slm)", str(art, "id"));
  custody_row(f, "plan_id", "plan (SHA-256)", str(in->view, "plan_id"));
  custody_row(f, "build_id", "build", str(rt, "build_id"));
  custody_row(f, "lane", "lane", str(rt, "lane"));
  custody_row(f, "profile", "numerical profile", str(rt, "profile"));
  custody_row(f, "isa", "kernel variant", str(rt, "isa"));
  snprintf(threads, sizeof threads, "%lld", (long long)json_integer_value(json_object_get(rt, "threads")));
  custody_row(f, "threads", "threads", threads);
  fputs("</table>\n<p class=\"muted\">", f);
  fprintf(f, "%.1f MB artifact, quantisation ", num(art, "bytes") / 1e6);
  esc(f, str(json_object_get(art, "quantization"), "requested"));
  fputs(", converted by ", f);
  esc(f, str(json_object_get(art, "converter"), "name"));
  fputc(' ', f);
  esc(f, str(json_object_get(art, "converter"), "version"));
  if (!in->public_view) {
    fputs("; file ", f);
    esc(f, str(art, "path"));
  }
  fputs(". The run started ", f);
  esc(f, str(in->run, "started"));
  fputs(".</p>\n<h3>Source files</h3>\n<table id=\"sources\"><tr><th>file</th><th>bytes</th>"
        "<th>SHA-256</th></tr>\n",
        f);
  json_array_foreach(json_object_get(art, "sources"), i, s) {
    fputs("<tr", f);
    attr(f, "data-source", str(s, "name"));
    attr(f, "data-sha256", str(s, "sha256"));
    num_attr(f, "data-size", json_object_get(s, "size"));
    fputs("><td>", f);
    esc(f, str(s, "name"));
    fprintf(f, "</td><td class=\"n\">%lld</td><td><code>", (long long)json_integer_value(json_object_get(s, "size")));
    esc(f, str(s, "sha256"));
    fputs("</code></td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

/* ------------------------------------------------------------------------ */
/* (a) forward: each capture point's error over its bound                   */

static json_t *layer_of(const json_t *rec) {
  const json_t *l = json_object_get(rec, "layer");
  return json_integer(json_is_integer(l) ? json_integer_value(l) : -1);
}

static void forward_chart(FILE *f, const char *claim, const json_t *j) {
  const json_t *rep = json_object_get(j, "report"), *recs = json_object_get(rep, "records");
  const json_t *div = json_object_get(rep, "first_divergence"), *r;
  const box b = {64, 16, 900, 220};
  axis ya;
  size_t n = json_array_size(recs), i;
  long prev_layer = -2;
  int e_lo = -1, e_hi = 1, step;
  if (n == 0) return;
  /* whole decades around every finite non-zero ratio: 1e-12 .. 1e12 at most */
  json_array_foreach(recs, i, r) {
    double v = num(r, "bound_ratio");
    if (!(v > 0.0) || !isfinite(v)) continue;
    if ((int)floor(log10(v)) < e_lo) e_lo = (int)floor(log10(v));
    if ((int)ceil(log10(v)) > e_hi) e_hi = (int)ceil(log10(v));
  }
  e_lo = e_lo < -12 ? -12 : e_lo;
  e_hi = e_hi > 12 ? 12 : e_hi;
  ya = (axis){pow(10.0, e_lo), pow(10.0, e_hi), true};
  step = e_hi - e_lo > 12 ? 2 : 1;
  fputs("<figure class=\"chart forward\"", f);
  attr(f, "data-claim", claim);
  attr(f, "data-case", str(j, "case"));
  attr(f, "data-profile", str(j, "profile"));
  fprintf(f, "><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"980\" height=\"276\" "
             "viewBox=\"0 0 980 276\" role=\"img\">");
  frame(f, &b);
  for (int e = e_lo; e <= e_hi; e += step) {
    double y = sy(&b, &ya, pow(10.0, e));
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eef0f4\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>",
            b.x, b.x + b.w, y, y, b.x - 4, y + 4, e);
  }
  {
    double y = sy(&b, &ya, 1.0);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#b3261e\" "
               "stroke-dasharray=\"5 3\"/>",
            b.x, b.x + b.w, y, y);
    label(f, b.x + b.w - 2, y - 4, "end", "bound (ratio 1)");
  }
  fprintf(f, "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
             "text-anchor=\"middle\">error / bound</text>",
          b.y + b.h / 2, b.y + b.h / 2);
  json_array_foreach(recs, i, r) {
    double x = b.x + (n > 1 ? b.w * (double)i / (double)(n - 1) : b.w / 2);
    const json_t *ratio = json_object_get(r, "bound_ratio");
    json_t *layer = layer_of(r);
    long l = (long)json_integer_value(layer);
    bool pass = json_is_true(json_object_get(r, "pass"));
    double y = json_is_number(ratio) ? sy(&b, &ya, json_number_value(ratio)) : b.y;
    if (l != prev_layer && l >= 0) {
      fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>",
              x, x, b.y, b.y + b.h);
      if (n <= 120 || l % 4 == 0)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\">L%ld</text>", x + 1,
                b.y + b.h + 14, l);
    }
    prev_layer = l;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"", x, y,
            pass ? "#2563eb" : "#b3261e");
    attr(f, "data-stage", str(r, "stage"));
    num_attr(f, "data-layer", layer);
    if (json_is_number(ratio)) num_attr(f, "data-ratio", ratio);
    else fputs(" data-ratio=\"inf\"", f);
    attr(f, "data-pass", pass ? "true" : "false");
    fputs("><title>", f);
    esc(f, str(r, "stage"));
    if (l >= 0) fprintf(f, " layer %ld", l);
    if (json_is_number(ratio)) fprintf(f, ": %.3g of the bound", json_number_value(ratio));
    else fputs(": not finite", f);
    fputs("</title></circle>", f);
    if (json_is_object(div) && strcmp(str(div, "stage"), str(r, "stage")) == 0 &&
        json_equal(json_object_get(div, "layer"), json_object_get(r, "layer"))) {
      fputs("<g class=\"divergence\"", f);
      attr(f, "data-stage", str(r, "stage"));
      num_attr(f, "data-layer", layer);
      fprintf(f, "><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#b3261e\" "
                 "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
                 "fill=\"#b3261e\">first divergence: ",
              x, x, b.y, b.y + b.h, x + (i < n / 2 ? 4 : -4), b.y + b.h - 6,
              i < n / 2 ? "start" : "end");
      esc(f, str(r, "stage"));
      if (l >= 0) fprintf(f, " L%ld", l);
      fputs("</text></g>", f);
    }
    json_decref(layer);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">capture points in the order "
             "of the forward pass (L = layer)</text>",
          b.x + b.w / 2, b.y + b.h + 32);
  fputs("</svg><figcaption>Golden case ", f);
  short_id(f, str(j, "case"));
  fprintf(f, ": %zu capture points, profile <code>", n);
  esc(f, str(j, "profile"));
  fprintf(f, "</code>; %lld failing. Each point is a record's largest element error as a "
             "fraction of its preregistered bound (docs/tolerance.md); 0 is drawn on the "
             "bottom line, a non-finite error on the top one.",
          (long long)json_integer_value(json_object_get(json_object_get(rep, "counts"), "failing")));
  fputs("</figcaption>\n<details><summary>every capture point</summary><table><tr><th>stage"
        "</th><th>layer</th><th>error / bound</th><th>NRMSE</th><th>failing elements</th>"
        "</tr>\n",
        f);
  json_array_foreach(recs, i, r) {
    fputs("<tr><td>", f);
    esc(f, str(r, "stage"));
    fputs("</td><td>", f);
    if (json_is_integer(json_object_get(r, "layer")))
      fprintf(f, "%lld", (long long)json_integer_value(json_object_get(r, "layer")));
    fputs("</td>", f);
    num_cell(f, json_object_get(r, "bound_ratio"), "");
    num_cell(f, json_object_get(r, "nrmse"), "");
    num_cell(f, json_object_get(r, "failing"), "");
    fputs("</tr>\n", f);
  }
  fputs("</table></details></figure>\n", f);
}

static void forward(FILE *f, const tl_report_inputs *in) {
  const char *claim;
  const json_t *list, *j;
  size_t i;
  bool any = false;
  fputs("<h2>Forward pass against the goldens</h2>\n", f);
  json_object_foreach((json_t *)in->judgements, claim, list) json_array_foreach(list, i, j) {
      if (json_array_size(json_object_get(json_object_get(j, "report"), "records")) == 0)
        continue;
      fputs("<h3>", f);
      esc(f, claim);
      fputs("</h3>\n", f);
      forward_chart(f, claim, j);
      any = true;
    }
  if (!any) fputs("<p class=\"muted\">No forward claim with stored judgements.</p>\n", f);
}

/* ------------------------------------------------------------------------ */
/* (b) latency and (c) memory: the benchmark step                           */

static void latency(FILE *f, const json_t *bm) {
  const json_t *pts = json_object_get(bm, "points"), *p;
  size_t n = json_array_size(pts), i;
  double max_pp = 0, max_ms = 0, lo_tok = 1e300, hi_tok = 0;
  box left = {64, 16, 380, 200}, right = {560, 16, 380, 200};
  axis xa, ya_pp, ya_ms;
  json_array_foreach(pts, i, p) {
    double t = num(p, "prompt_tokens");
    if (num(p, "prefill_tokens_per_s") > max_pp) max_pp = num(p, "prefill_tokens_per_s");
    if (num(p, "decode_ms_per_token") > max_ms) max_ms = num(p, "decode_ms_per_token");
    if (t < lo_tok) lo_tok = t;
    if (t > hi_tok) hi_tok = t;
  }
  xa = (axis){lo_tok > 0 ? lo_tok / 1.5 : 1, hi_tok > 0 ? hi_tok * 1.5 : 2, true};
  ya_pp = (axis){0, nice_max(max_pp), false};
  ya_ms = (axis){0, nice_max(max_ms), false};
  fputs("<h3>Latency against prompt length</h3>\n<figure class=\"chart latency\"><svg "
        "xmlns=\"http://www.w3.org/2000/svg\" width=\"980\" height=\"260\" viewBox=\"0 0 980 "
        "260\" role=\"img\">",
        f);
  frame(f, &left);
  frame(f, &right);
  y_ticks(f, &left, &ya_pp, "%.4g");
  y_ticks(f, &right, &ya_ms, "%.3g");
  label(f, left.x + left.w / 2, 250, "middle", "prefill tokens/s (prompt tokens, log scale)");
  label(f, right.x + right.w / 2, 250, "middle", "decode ms/token at that context");
  for (int panel = 0; panel < 2; panel++) {
    const box *b = panel ? &right : &left;
    const axis *ya = panel ? &ya_ms : &ya_pp;
    fputs("<polyline fill=\"none\" stroke=\"#2563eb\" points=\"", f);
    json_array_foreach(pts, i, p) fprintf(f, "%.1f,%.1f ", sx(b, &xa, num(p, "prompt_tokens")),
                                          sy(b, ya, num(p, panel ? "decode_ms_per_token"
                                                                 : "prefill_tokens_per_s")));
    fputs("\"/>", f);
  }
  json_array_foreach(pts, i, p) {
    fputs("<g", f);
    num_attr(f, "data-prompt-tokens", json_object_get(p, "prompt_tokens"));
    num_attr(f, "data-prefill-tokens-per-s", json_object_get(p, "prefill_tokens_per_s"));
    num_attr(f, "data-decode-ms-per-token", json_object_get(p, "decode_ms_per_token"));
    fputs(">", f);
    for (int panel = 0; panel < 2; panel++) {
      const box *b = panel ? &right : &left;
      double x = sx(b, &xa, num(p, "prompt_tokens"));
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#2563eb\"><title>%.0f "
                 "tokens: %.4g %s</title></circle>",
              x, sy(b, panel ? &ya_ms : &ya_pp, num(p, panel ? "decode_ms_per_token" : "prefill_tokens_per_s")),
              num(p, "prompt_tokens"),
              num(p, panel ? "decode_ms_per_token" : "prefill_tokens_per_s"),
              panel ? "ms/token" : "tokens/s");
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>", x,
              b->y + b->h + 14, num(p, "prompt_tokens"));
    }
    fputs("</g>", f);
  }
  fprintf(f, "</svg><figcaption>Prefill and decode measured separately, one process per "
             "prompt length (%zu lengths, %lld decoded tokens each, median of %lld), lane ",
          n, (long long)json_integer_value(json_object_get(bm, "decode_tokens")),
          (long long)json_integer_value(json_object_get(bm, "repetitions")));
  esc(f, str(bm, "lane"));
  fprintf(f, ", %lld threads, ", (long long)json_integer_value(json_object_get(bm, "threads")));
  esc(f, str(bm, "isa"));
  fputs(", on ", f);
  esc(f, str(bm, "cpu"));
  fputs(".</figcaption>\n<table><tr><th>prompt tokens</th><th>prefill tokens/s</th><th>decode "
        "ms/token</th><th>decode tokens/s</th><th>first token s</th></tr>\n",
        f);
  json_array_foreach(pts, i, p) {
    fprintf(f, "<tr><td class=\"n\">%.0f</td>", num(p, "prompt_tokens"));
    num_cell(f, json_object_get(p, "prefill_tokens_per_s"), "");
    num_cell(f, json_object_get(p, "decode_ms_per_token"), "");
    num_cell(f, json_object_get(p, "decode_tokens_per_s"), "");
    num_cell(f, json_object_get(p, "first_token_seconds"), "");
    fputs("</tr>\n", f);
  }
  fputs("</table></figure>\n", f);
}

static const struct {
  const char *part, *label, *color;
} memory_parts[] = {
    {"weights", "weights", "#2563eb"},
    {"tokenizer_template", "tokenizer + template", "#7c3aed"},
    {"kv_cache", "KV cache", "#059669"},
    {"activations", "activations + scratch", "#d97706"},
    {"worker_stacks", "worker stacks (resident)", "#db2777"},
    {"runtime_image", "runtime image (binary, libraries)", "#6b7280"},
    {"allocator_other", "allocator and other", "#d1d5db"},
};
#define N_MEMORY_PARTS (sizeof memory_parts / sizeof memory_parts[0])

/* The part's bytes; allocator_other is what the others leave of peak RSS. */
static double part_bytes(const json_t *mem, size_t k) {
  double rest = num(mem, "peak_rss");
  if (k + 1 < N_MEMORY_PARTS) return num(mem, memory_parts[k].part);
  for (size_t j = 0; j + 1 < N_MEMORY_PARTS; j++) rest -= num(mem, memory_parts[j].part);
  return rest;
}

static void memory(FILE *f, const json_t *bm) {
  const json_t *pts = json_object_get(bm, "points"), *p;
  size_t n = json_array_size(pts), i;
  double top = 0;
  box b = {80, 16, 620, 220};
  axis ya;
  json_array_foreach(pts, i, p) {
    const json_t *mem = json_object_get(p, "memory");
    double sum = 0;
    for (size_t k = 0; k < N_MEMORY_PARTS; k++) {
      double v = part_bytes(mem, k);
      sum += v > 0 ? v : 0;
    }
    if (sum > top) top = sum;
    if (num(mem, "peak_rss") > top) top = num(mem, "peak_rss");
  }
  ya = (axis){0, nice_max(top / 1e6) * 1e6, false};
  fputs("<h3>Memory against context</h3>\n<figure class=\"chart memory\"><svg "
        "xmlns=\"http://www.w3.org/2000/svg\" width=\"980\" height=\"276\" viewBox=\"0 0 980 "
        "276\" role=\"img\">",
        f);
  frame(f, &b);
  for (int t = 0; t <= 4; t++) {
    double v = ya.hi * t / 4.0, y = sy(&b, &ya, v);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eef0f4\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g MB</text>",
            b.x, b.x + b.w, y, y, b.x - 4, y + 4, v / 1e6);
  }
  json_array_foreach(pts, i, p) {
    const json_t *mem = json_object_get(p, "memory");
    double slot = b.w / (double)(n ? n : 1), x = b.x + slot * (double)i + slot * 0.15;
    double w = slot * 0.32, y = b.y + b.h;
    fputs("<g", f);
    num_attr(f, "data-context", json_object_get(p, "context"));
    fputs(">", f);
    for (size_t k = 0; k < N_MEMORY_PARTS; k++) {
      double v = part_bytes(mem, k), h = v > 0 ? b.h * v / ya.hi : 0;
      y -= h;
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\"", x,
              y, w, h, memory_parts[k].color);
      attr(f, "data-part", memory_parts[k].part);
      fprintf(f, " data-bytes=\"%.17g\"><title>%s: %.2f MB</title></rect>", v,
              memory_parts[k].label, v / 1e6);
    }
    {
      double v = num(mem, "peak_rss"), h = b.h * v / ya.hi;
      fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.2f\" fill=\"none\" "
                 "stroke=\"#111827\" stroke-dasharray=\"3 2\" data-part=\"peak_rss\"",
              x + w + 3, b.y + b.h - h, w, h);
      num_attr(f, "data-bytes", json_object_get(mem, "peak_rss"));
      fprintf(f, "><title>measured peak RSS: %.2f MB</title></rect>", v / 1e6);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text></g>", x + w,
            b.y + b.h + 14, num(p, "context"));
  }
  label(f, b.x + b.w / 2, b.y + b.h + 32, "middle",
        "context (tokens): plan parts stacked, measured peak RSS dashed beside");
  for (size_t k = 0; k < N_MEMORY_PARTS; k++) {
    double y = b.y + 8 + 18.0 * (double)k;
    fprintf(f, "<rect x=\"716\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>", y,
            memory_parts[k].color);
    label(f, 734, y + 10, "start", memory_parts[k].label);
  }
  fputs("</svg><figcaption>Weights, tokenizer/template, KV cache and activations are the "
        "preflight plan's; worker stacks, the runtime image and peak RSS are measured in the "
        "same process; allocator and other is the peak RSS minus every other part. A negative "
        "remainder means the plan counts memory that was never made resident.</figcaption>\n<table><tr><th>context</th>",
        f);
  for (size_t k = 0; k < N_MEMORY_PARTS; k++) {
    fputs("<th>", f);
    esc(f, memory_parts[k].label);
    fputs("</th>", f);
  }
  fputs("<th>peak RSS</th></tr>\n", f);
  json_array_foreach(pts, i, p) {
    const json_t *mem = json_object_get(p, "memory");
    fprintf(f, "<tr><td class=\"n\">%.0f</td>", num(p, "context"));
    for (size_t k = 0; k < N_MEMORY_PARTS; k++) bytes_cell(f, part_bytes(mem, k));
    bytes_cell(f, num(mem, "peak_rss"));
    fputs("</tr>\n", f);
  }
  fputs("</table></figure>\n", f);
}

static void benchmark(FILE *f, const tl_report_inputs *in) {
  fputs("<h2>Performance</h2>\n", f);
  if (in->benchmark == NULL || json_array_size(json_object_get(in->benchmark, "points")) == 0) {
    fputs("<p class=\"muted\">No benchmark step ran with this promotion", f);
    if (json_is_string(json_object_get(in->run, "benchmark_error"))) {
      fputs(": ", f);
      esc(f, str(in->run, "benchmark_error"));
    }
    fputs(" (a plan's <code>benchmark</code> field asks for one).</p>\n", f);
    return;
  }
  latency(f, in->benchmark);
  memory(f, in->benchmark);
}

/* ------------------------------------------------------------------------ */
/* (d) stochastic                                                           */

/* The design (from the plan) and, per prompt and configuration, whether
 * its seeds drew differently: what the claim counted as evidence; the
 * verdict, its counts and the largest TVD are the claim's summary above.
 * The measured false-alarm rate and power of the design, when plan init
 * recorded them (design.calibration), under the table. */
static void stochastic_claim(FILE *f, const char *claim, const json_t *stats,
                             const json_t *plan_claim, const json_t *cases) {
  const json_t *design = json_object_get(plan_claim, "design"), *cfgs, *row;
  const json_t *plan_cases = json_object_get(plan_claim, "cases");
  const char *calibration = str(design, "calibration");
  size_t i, k;
  cfgs = json_object_get(design, "configurations");
  fputs("<h3>", f);
  esc(f, claim);
  fputs("</h3>\n<figure class=\"stochastic\"", f);
  attr(f, "data-claim", claim);
  fprintf(f, "><figcaption>%lld seeds per prompt and configuration, %lld tokens each; every "
             "draw replayed by the reference sampler from the lane's own logits; the lanes' "
             "post-sampler distributions compared at teacher-forced steps (min_tvd %s). A prompt "
             "whose seeds all drew the same ids under a configuration is degenerate there and "
             "not counted (docs/promotion-stats.md).</figcaption>\n",
          (long long)json_integer_value(json_object_get(json_object_get(design, "seeds"), "count")),
          (long long)json_integer_value(json_object_get(design, "max_new")),
          str(json_object_get(design, "distributions"), "min_tvd"));
  fputs("<table><tr><th>case</th><th>next-token entropy (nats)</th>", f);
  json_array_foreach(cfgs, k, row) {
    fputs("<th>", f);
    esc(f, str(row, "name"));
    fputs("</th>", f);
  }
  fputs("</tr>\n", f);
  json_array_foreach(json_object_get(stats, "prompts"), i, row) {
    const json_t *v;
    const char *id = str(json_array_get(cases, i), "id");
    fputs("<tr><td>", f);
    short_id(f, id);
    fputs("</td><td>", f);
    esc(f, str(json_object_get(json_array_get(plan_cases, i), "case"), "entropy_nats"));
    fputs("</td>", f);
    json_array_foreach(row, k, v) {
      fputs("<td", f);
      attr(f, "data-case", id);
      attr(f, "data-configuration", str(json_array_get(cfgs, k), "name"));
      attr(f, "data-varied", json_is_true(v) ? "true" : "false");
      fputs(json_is_true(v) ? ">varied</td>" : ">degenerate</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</table>", f);
  if (calibration[0]) {
    fputs("<p class=\"calibration\">Measured for this design: ", f);
    esc(f, calibration);
    fputs("</p>", f);
  }
  fputs("</figure>\n", f);
}

static const json_t *view_claim(const json_t *view, const char *name) {
  const json_t *c;
  size_t i;
  json_array_foreach(json_object_get(view, "claims"), i, c) if (strcmp(str(c, "claim"), name) == 0) return c;
  return NULL;
}

static void stochastic(FILE *f, const tl_report_inputs *in) {
  const char *claim;
  const json_t *stats;
  if (json_object_size(in->statistics) == 0) return;
  fputs("<h2>Stochastic comparison</h2>\n", f);
  json_object_foreach((json_t *)in->statistics, claim, stats)
      stochastic_claim(f, claim, stats, plan_claim(in->plan, claim),
                       json_object_get(view_claim(in->view, claim), "cases"));
}

/* ------------------------------------------------------------------------ */
/* (e) case classes                                                         */

static void case_classes(FILE *f, const tl_report_inputs *in) {
  const json_t *pc;
  size_t i;
  bool heading = false;
  json_array_foreach(json_object_get(in->plan, "claims"), i, pc) {
    const json_t *vc = view_claim(in->view, str(pc, "name")), *pcase, *vcase;
    json_t *classes = json_object();
    const char *cls;
    json_t *counts;
    size_t j, k, widest = 1;
    bool any = false;
    json_array_foreach(json_object_get(pc, "cases"), j, pcase) {
      const char *category = str(json_object_get(pcase, "case"), "category");
      json_t *row;
      bool pass = false;
      if (!category[0]) continue;
      any = true;
      json_array_foreach(json_object_get(vc, "cases"), k, vcase) if (strcmp(str(vcase, "id"), str(pcase, "id")) == 0) {
        pass = json_is_true(json_object_get(vcase, "pass"));
        break;
      }
      row = json_object_get(classes, category);
      if (row == NULL) json_object_set_new(classes, category, row = json_pack("{s:i,s:i}", "cases", 0, "passed", 0));
      json_object_set_new(row, "cases", json_integer(json_integer_value(json_object_get(row, "cases")) + 1));
      if (pass) json_object_set_new(row, "passed", json_integer(json_integer_value(json_object_get(row, "passed")) + 1));
    }
    if (!any || vc == NULL) {
      json_decref(classes);
      continue;
    }
    if (!heading) fputs("<h2>Cases by class</h2>\n", f);
    heading = true;
    json_object_foreach(classes, cls, counts) if ((size_t)json_integer_value(json_object_get(counts, "cases")) > widest) widest = (size_t)json_integer_value(json_object_get(counts, "cases"));
    fputs("<h3>", f);
    esc(f, str(pc, "name"));
    fputs("</h3>\n<table class=\"case-classes\"", f);
    attr(f, "data-claim", str(pc, "name"));
    fputs("><tr><th>class</th><th>cases</th><th>passed</th><th></th></tr>\n", f);
    /* jansson iterates in insertion order; sort the names for a stable page */
    {
      const char **names = malloc(json_object_size(classes) * sizeof *names + 1);
      size_t m = 0;
      if (names != NULL) {
        json_object_foreach(classes, cls, counts) names[m++] = cls;
        for (size_t a = 1; a < m; a++)
          for (size_t b2 = a; b2 > 0 && strcmp(names[b2 - 1], names[b2]) > 0; b2--) {
            const char *t = names[b2];
            names[b2] = names[b2 - 1];
            names[b2 - 1] = t;
          }
        for (size_t a = 0; a < m; a++) {
          const json_t *row = json_object_get(classes, names[a]);
          long long nc = json_integer_value(json_object_get(row, "cases")),
                    np = json_integer_value(json_object_get(row, "passed"));
          fputs("<tr", f);
          attr(f, "data-class", names[a]);
          fprintf(f, " data-cases=\"%lld\" data-passed=\"%lld\"><td>", nc, np);
          esc(f, names[a]);
          fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n %s\">%lld</td><td><svg "
                     "xmlns=\"http://www.w3.org/2000/svg\" width=\"204\" height=\"12\">"
                     "<rect width=\"%.1f\" height=\"12\" fill=\"#9fd3b0\"/><rect x=\"%.1f\" "
                     "width=\"%.1f\" height=\"12\" fill=\"#b3261e\"/></svg></td></tr>\n",
                  nc, np == nc ? "pass" : "fail", np, 200.0 * (double)np / (double)widest,
                  200.0 * (double)np / (double)widest, 200.0 * (double)(nc - np) / (double)widest);
        }
      }
      free(names);
    }
    fputs("</table>\n", f);
    json_decref(classes);
  }
}

/* ------------------------------------------------------------------------ */

tl_status tl_report_html(const tl_report_inputs *in, char **html, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (f == NULL) return TL_ERR_OUT_OF_MEMORY;
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\" data-format=\"tinylm.report/1\" "
             "data-public=\"%s\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
             "content=\"width=device-width, initial-scale=1\">\n<title>tinylm promotion report",
          in->public_view ? "true" : "false");
  fputs("</title>\n<style>", f);
  fputs(style, f);
  fputs("</style>\n</head>\n<body>\n<h1>Promotion report</h1>\n<p class=\"muted\">"
        "Written by <code>tinylm report</code> from a verified promotion receipt and the store "
        "objects it names (docs/report.md)",
        f);
  if (in->public_view) fputs("; public view: no case text, no expected answers", f);
  fputs(".</p>\n", f);
  decision(f, in->view);
  claims_table(f, in->view, in->plan, in->public_view);
  custody(f, in);
  forward(f, in);
  benchmark(f, in);
  stochastic(f, in);
  case_classes(f, in);
  fputs("</body>\n</html>\n", f);
  if (fclose(f) != 0) {
    free(buf);
    return TL_ERR_OUT_OF_MEMORY;
  }
  *html = buf;
  *len = n;
  return TL_OK;
}
