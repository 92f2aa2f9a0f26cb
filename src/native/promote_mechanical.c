/* tinylm promote's mechanical claims (docs/promotion.md, the table of
 * claim kinds): artifact, independent_reader, tokenizer, template, eos
 * and sampler, each run in process through the code the CLI commands use
 * (slm_view.c for inspect, encoder.c for encode/decode, chat_render.c for
 * render, turn.c for run, sampler_selftest.c for the sampler's known
 * answers), and plan init's case sets for them.
 *
 * Every runner (OBSERVE) keeps what the runtime produced as one
 * observation object: one JSON line per case (compact, sorted keys,
 * "case" = the case id); every judge (JUDGE) compares each line with its
 * case's expected values from the plan (judge_lines), so promote and
 * every reader reach the same verdict from the same bytes. */
#define _POSIX_C_SOURCE 200809L
#include "promote_mechanical.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cbor_doc.h"
#include "chat_render.h"
#include "cli.h"
#include "encoder.h"
#include "file.h"
#include "hash/sha256.h"
#include "kernels/kernels.h"
#include "promote_plan.h"
#include "quant/quant.h"
#include "qwen3_schema.h"
#include "sample/sampler_selftest.h"
#include "slm_view.h"
#include "template_eos.h"
#include "turn.h"

/* ------------------------------------------------------------------------ */
/* What every runner shares                                                 */

typedef struct run {
  tl_claim_ctx *c;
  tl_claim_result *out;
  const json_t *cases; /* the claim's cases array */
  size_t n;            /* cases */
  char *obs; /* the observation: JSON lines */
  size_t obs_len, obs_cap;
} run;

static tl_status infra(tl_claim_ctx *c, tl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status infra(tl_claim_ctx *c, tl_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (c->err != NULL && c->err_cap > 0) vsnprintf(c->err, c->err_cap, fmt, ap);
  va_end(ap);
  return st;
}

static const char *claim_name(const tl_claim_ctx *c) {
  const char *s = json_string_value(json_object_get(c->claim, "name"));
  return s != NULL ? s : "?";
}

/* Starts a claim: out zeroed, one outcome per case with its id. */
static tl_status begin(run *r, tl_claim_ctx *c, tl_claim_result *out) {
  memset(r, 0, sizeof *r);
  r->c = c;
  r->out = out;
  r->cases = NULL;
  {
    tl_status st = tl_claim_result_begin(c, out, &r->cases);
    r->n = out->n_cases;
    return st;
  }
}

static const json_t *case_body(const run *r, size_t i) {
  return json_object_get(json_array_get(r->cases, i), "case");
}

/* Records case i's raw output (line is stolen): one line of the
 * observation, with the case id. */
static tl_status record(run *r, size_t i, json_t *line) {
  char hex[65], *text;
  size_t len;
  tl_hex_encode(r->out->cases[i].id, 32, hex);
  if (line == NULL || json_object_set_new(line, "case", json_string(hex)) != 0) {
    json_decref(line);
    return infra(r->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  text = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  json_decref(line);
  if (text == NULL) return infra(r->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  len = strlen(text);
  if (r->obs_len + len + 1 > r->obs_cap) {
    size_t cap = (r->obs_len + len + 1) * 2;
    char *p = realloc(r->obs, cap);
    if (p == NULL) {
      free(text);
      return infra(r->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    r->obs = p;
    r->obs_cap = cap;
  }
  memcpy(r->obs + r->obs_len, text, len);
  r->obs[r->obs_len + len] = '\n';
  r->obs_len += len + 1;
  free(text);
  return TL_OK;
}

/* Stores the observation: OBSERVE's end. */
static tl_status finish(run *r, tl_status st) {
  char err[512];
  if (st == TL_OK) {
    st = tl_store_put(r->c->store, "observation", (const uint8_t *)r->obs,
                      r->obs_len, r->out->observation, err, sizeof err);
    if (st != TL_OK)
      infra(r->c, st, "claim %s: %s", claim_name(r->c), err);
    else
      r->out->has_observation = true;
  }
  free(r->obs);
  r->obs = NULL;
  if (st != TL_OK) tl_claim_result_free(r->out);
  return st;
}

/* A case's verdict as a line judge gives it: the first reason it fails. */
typedef struct verdict {
  bool pass;
  const char *rule;
  char why[1024];
} verdict;

static void fail(verdict *v, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(verdict *v, const char *rule, const char *fmt, ...) {
  va_list ap;
  if (!v->pass) return;
  v->pass = false;
  v->rule = rule;
  va_start(ap, fmt);
  vsnprintf(v->why, sizeof v->why, fmt, ap);
  va_end(ap);
}

/* A kind's judge of one case: its case body (the plan's expected values)
 * against its line of the observation. The invariant's name, or NULL
 * with c->err set when the case cannot be judged. */
typedef const char *(*line_judge)(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                                  verdict *v);

/* JUDGE for every mechanical kind: the stored observation line by line,
 * each line the case of the plan at its place; a case's `output` is the
 * SHA-256 of its line (without the newline); the claim's stop rule is
 * that of its first failing case in plan order. */
static tl_status judge_lines(tl_claim_ctx *c, const uint8_t observation[32],
                             tl_claim_result *out, line_judge fn) {
  const json_t *cases;
  uint8_t *bytes = NULL;
  size_t len = 0, at = 0, passed = 0;
  tl_status st = tl_claim_result_begin(c, out, &cases);
  if (st == TL_OK) st = tl_store_get(c->store, observation, &bytes, &len, c->err, c->err_cap);
  for (size_t i = 0; st == TL_OK && i < out->n_cases; i++) {
    const uint8_t *nl = at < len ? memchr(bytes + at, '\n', len - at) : NULL;
    size_t n = nl != NULL ? (size_t)(nl - bytes) - at : 0;
    json_t *line = nl != NULL ? json_loadb((const char *)bytes + at, n, JSON_REJECT_DUPLICATES,
                                           NULL)
                              : NULL;
    uint8_t id[32];
    verdict v = {true, NULL, ""};
    tl_case_outcome *o = &out->cases[i];
    if (line == NULL || !tl_hex32_parse(json_string_value(json_object_get(line, "case")), id) ||
        memcmp(id, o->id, 32) != 0) {
      st = infra(c, TL_ERR_INVALID_ARGUMENT,
                 "claim %s: the stored observation's line %zu is not the plan's case %zu",
                 claim_name(c), i + 1, i);
    } else if ((o->invariant = fn(c, json_object_get(json_array_get(cases, i), "case"), line,
                                  &v)) == NULL) {
      st = TL_ERR_INVALID_ARGUMENT;
    } else {
      tl_sha256(bytes + at, n, o->output);
      o->pass = v.pass;
      passed += v.pass;
      if (!v.pass && out->pass) {
        out->pass = false;
        out->stop_rule = v.rule;
        snprintf(out->first_divergence, sizeof out->first_divergence, "%s", v.why);
      }
    }
    json_decref(line);
    at += n + 1;
  }
  if (st == TL_OK && at != len)
    st = infra(c, TL_ERR_INVALID_ARGUMENT,
               "claim %s: the stored observation has more lines than the plan's cases",
               claim_name(c));
  free(bytes);
  if (st != TL_OK) {
    tl_claim_result_free(out);
    return st;
  }
  memcpy(out->observation, observation, 32);
  out->has_observation = true;
  snprintf(out->summary, sizeof out->summary, "%zu of %zu cases passed", passed, out->n_cases);
  return TL_OK;
}

/* The session's model, or the artifact opened from slm_path (*opened:
 * the caller closes it). */
static tl_status model_for(tl_claim_ctx *c, tl_native_model *own,
                           const tl_native_model **m, bool *opened) {
  char err[1024];
  tl_status st;
  *opened = false;
  if (c->session != NULL) {
    *m = &c->session->model;
    return TL_OK;
  }
  if (c->slm_path == NULL)
    return infra(c, TL_ERR_INVALID_ARGUMENT, "no artifact to run on");
  st = tl_native_model_open(c->slm_path, own, err, sizeof err);
  if (st != TL_OK) return infra(c, st, "%s", err);
  *m = own;
  *opened = true;
  return TL_OK;
}

/* An integer of a case as uint32. */
static bool u32_at(const json_t *v, uint32_t *out) {
  json_int_t x = json_integer_value(v);
  if (!json_is_integer(v) || x < 0 || x > (json_int_t)UINT32_MAX) return false;
  *out = (uint32_t)x;
  return true;
}

/* Index of the first difference between two JSON arrays (ids, offset
 * pairs), or -1 when equal (a length difference counts at the shorter
 * length). */
static long first_diff_json(const json_t *want, const json_t *got) {
  size_t w = json_array_size(want), n = json_array_size(got);
  for (size_t i = 0; i < w && i < n; i++)
    if (!json_equal(json_array_get(want, i), json_array_get(got, i))) return (long)i;
  return w == n ? -1 : (long)(w < n ? w : n);
}

/* Two hex texts compared as bytes: *at the first differing byte (-1
 * when equal) and both lengths; false when either is not hex. */
static bool hex_diff(const char *want, const char *got, long *at, size_t *nw, size_t *ng) {
  uint8_t *a = NULL, *b = NULL;
  bool ok = want != NULL && got != NULL && tl_cli_unhex(want, &a, nw) == 0 &&
            tl_cli_unhex(got, &b, ng) == 0;
  *at = -1;
  for (size_t i = 0; ok && *at < 0 && i < *nw && i < *ng; i++)
    if (a[i] != b[i]) *at = (long)i;
  if (ok && *at < 0 && *nw != *ng) *at = (long)(*nw < *ng ? *nw : *ng);
  free(a);
  free(b);
  return ok;
}

static bool same_text(const char *a, const char *b) {
  return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* ------------------------------------------------------------------------ */
/* tokenizer: tests/tok/golden.jsonl lines (tests/tok/check_golden.mjs)     */

/* Decodes the golden ids in one mode: the bytes as hex, or the error. */
static tl_status tok_decode(run *r, const tl_tokenizer *tok, const json_t *c,
                            const char *field, tl_tok_decode_mode mode, json_t *line) {
  const json_t *ids = json_object_get(c, "ids");
  uint32_t *v = malloc((json_array_size(ids) + 1) * sizeof *v);
  uint8_t *got = NULL;
  size_t n = json_array_size(ids), len = 0, bad = 0;
  tl_status st;
  if (v == NULL) return infra(r->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < n; i++)
    if (!u32_at(json_array_get(ids, i), &v[i])) v[i] = UINT32_MAX;
  st = tl_decoder_run(tok, v, n, mode, &got, &len, &bad);
  free(v);
  if (st == TL_ERR_OUT_OF_MEMORY) {
    free(got);
    return infra(r->c, st, "out of memory");
  }
  json_object_set_new(line, field,
                      st != TL_OK ? json_pack("{s:s,s:I}", "error", tl_status_name(st), "index",
                                              (json_int_t)bad)
                                  : tl_cli_json_hex(got, len));
  free(got);
  return TL_OK;
}

/* OBSERVE: the input's ids and byte offsets (or the encoder's error), and
 * the golden ids decoded raw and visible, as check_golden.mjs does. */
static tl_status tok_case(run *r, const tl_native_model *m, tl_encoder *e,
                          size_t i) {
  const json_t *c = case_body(r, i);
  const char *hex = json_string_value(json_object_get(c, "hex"));
  uint8_t *text = NULL;
  size_t len = 0, n = 0, bad = 0;
  json_t *line = json_object();
  tl_status st;
  (void)m; /* e has its tokenizer */
  if (hex == NULL || tl_cli_unhex(hex, &text, &len) != 0) {
    json_decref(line);
    return infra(r->c, TL_ERR_INVALID_ARGUMENT,
                 "tokenizer cases[%zu]: no \"hex\" input", i);
  }
  st = tl_encoder_run(e, text, len, &n, &bad);
  free(text);
  if (st == TL_ERR_OUT_OF_MEMORY) {
    json_decref(line);
    return infra(r->c, st, "out of memory");
  }
  if (st == TL_ERR_INVALID_UTF8)
    json_object_set_new(line, "error",
                        json_pack("{s:s,s:I}", "error", "invalid_utf8",
                                  "offset", (json_int_t)bad));
  else if (st != TL_OK)
    json_object_set_new(line, "error",
                        json_pack("{s:s}", "error", tl_status_name(st)));
  if (json_object_get(c, "invalid_utf8_offset") != NULL) return record(r, i, line);
  if (st == TL_OK) {
    json_t *spans = json_array();
    for (size_t k = 0; k < n; k++)
      json_array_append_new(spans, json_pack("[I,I]", (json_int_t)e->spans[k].start,
                                             (json_int_t)e->spans[k].end));
    json_object_set_new(line, "ids", tl_cli_json_ids(e->ids, n));
    json_object_set_new(line, "offsets", spans);
  }
  if ((st = tok_decode(r, e->tok, c, "decode_raw_hex", TL_TOK_DECODE_RAW, line)) != TL_OK ||
      (st = tok_decode(r, e->tok, c, "decode_visible_hex", TL_TOK_DECODE_VISIBLE, line)) !=
          TL_OK) {
    json_decref(line);
    return st;
  }
  return record(r, i, line);
}

static const char *judge_tok(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                             verdict *v) {
  static const char *const decodes[] = {"decode_raw_hex", "decode_visible_hex"};
  const json_t *inv = json_object_get(cs, "invalid_utf8_offset"),
               *err = json_object_get(line, "error");
  const char *name = json_string_value(json_object_get(cs, "name"));
  const char *got_err = json_string_value(json_object_get(err, "error"));
  long d;
  if (name == NULL) name = "?";
  if (inv != NULL) {
    if (!same_text(got_err, "invalid_utf8") || !json_is_integer(inv) ||
        !json_equal(inv, json_object_get(err, "offset")))
      fail(v, TL_RULE_MECHANICAL,
           "tokenizer case %s: expected invalid_utf8 at byte %lld, got %s with %zu ids", name,
           (long long)json_integer_value(inv), got_err ? got_err : "ok",
           json_array_size(json_object_get(line, "ids")));
    return "invalid_utf8_offset";
  }
  if (err != NULL) {
    fail(v, TL_RULE_MECHANICAL, "tokenizer case %s: encode failed: %s", name,
         got_err ? got_err : "?");
  } else if ((d = first_diff_json(json_object_get(cs, "ids"), json_object_get(line, "ids"))) >=
             0) {
    fail(v, TL_RULE_MECHANICAL,
         "tokenizer case %s: ids differ at token %ld (expected %zu tokens, got %zu)", name, d,
         json_array_size(json_object_get(cs, "ids")),
         json_array_size(json_object_get(line, "ids")));
  } else if ((d = first_diff_json(json_object_get(cs, "offsets"),
                                  json_object_get(line, "offsets"))) >= 0) {
    fail(v, TL_RULE_MECHANICAL, "tokenizer case %s: byte offsets differ at token %ld", name, d);
  }
  for (size_t k = 0; k < 2; k++) {
    const json_t *got = json_object_get(line, decodes[k]);
    size_t nw = 0, ng = 0;
    if (json_is_object(got)) {
      fail(v, TL_RULE_MECHANICAL, "tokenizer case %s: %s: %s at id %lld", name, decodes[k],
           json_string_value(json_object_get(got, "error")),
           (long long)json_integer_value(json_object_get(got, "index")));
    } else if (!hex_diff(json_string_value(json_object_get(cs, decodes[k])),
                         json_string_value(got), &d, &nw, &ng)) {
      infra(c, TL_ERR_INVALID_ARGUMENT, "tokenizer case %s: %s is not hex text", name,
            decodes[k]);
      return NULL;
    } else if (d >= 0) {
      fail(v, TL_RULE_MECHANICAL,
           "tokenizer case %s: %s differs at byte %ld (expected %zu bytes, got %zu)", name,
           decodes[k], d, nw, ng);
    }
  }
  return "ids_offsets_decodes";
}

/* A claim whose cases run through the artifact's tokenizer (and
 * template): each case by fn. */
typedef tl_status (*model_case_fn)(run *r, const tl_native_model *m,
                                   tl_encoder *e, size_t i);

static tl_status model_claim(tl_claim_ctx *c, tl_claim_result *out,
                             bool need_template, model_case_fn fn) {
  run r;
  tl_native_model own;
  const tl_native_model *m = NULL;
  bool opened = false;
  tl_encoder e = {0};
  tl_status st = begin(&r, c, out);
  if (st != TL_OK) return st;
  st = model_for(c, &own, &m, &opened);
  if (st == TL_OK && need_template && !m->has_template)
    st = infra(c, TL_ERR_INVALID_MODEL, "%s: has no chat template",
               c->slm_path ? c->slm_path : "the artifact");
  if (st == TL_OK) {
    e.tok = m->tok;
    for (size_t i = 0; st == TL_OK && i < r.n; i++) st = fn(&r, m, &e, i);
  }
  tl_encoder_free(&e);
  if (opened) tl_native_model_close(&own);
  return finish(&r, st);
}

tl_status tl_claim_tokenizer(tl_claim_ctx *c, tl_claim_result *out) {
  return model_claim(c, out, false, tok_case);
}

tl_status tl_judge_tokenizer(tl_claim_ctx *c, const uint8_t observation[32],
                             tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_tok);
}

/* ------------------------------------------------------------------------ */
/* template: tests/tmpl/golden.jsonl lines (tests/tmpl/check_golden.mjs)    */

/* Where tinylm refuses on purpose what Jinja renders (check_golden.mjs's
 * DECLARED_DEVIATIONS, docs/template.md Input): such a case passes only
 * when refused with invalid_argument, of this kind ("input", or NULL for
 * the JSON reader's refusal), with detail in the message. */
typedef struct deviation {
  const char *name, *kind, *detail;
} deviation;
static const deviation deviations[] = {
    {"raise_user_content_list", "input", "messages["},
    {"raise_system_content_number_with_tools", "input", "messages["},
    {"raise_messages_missing", "input", "no \"messages\" member"},
    {"lenient_missing_role", "input", "messages["},
    {"lenient_tool_content_number", "input", "messages["},
    {"lenient_tool_content_null_bool", "input", "messages["},
    {"lenient_tool_content_object", "input", "messages["},
    {"lenient_int_beyond_64_bits", NULL, "integer out of int64 range"},
};

static const deviation *deviation_of(const char *name) {
  for (size_t i = 0; name != NULL && i < sizeof deviations / sizeof *deviations; i++)
    if (strcmp(deviations[i].name, name) == 0) return &deviations[i];
  return NULL;
}

/* The error kind the CLI reports (tl_render_fail): none for JSON syntax. */
static const char *render_kind(const tl_render_error *re) {
  return strcmp(re->kind, "json") == 0 ? NULL : re->kind;
}

/* OBSERVE: the conversation rendered as transformers renders it, and its
 * ids; or the refusal. */
static tl_status tmpl_case(run *r, const tl_native_model *m, tl_encoder *e,
                           size_t i) {
  const json_t *c = case_body(r, i);
  const char *conv = json_string_value(json_object_get(c, "conv_json"));
  const char *prefix = json_string_value(json_object_get(c, "template_prefix"));
  tl_render_out ro = {0};
  tl_render_error re;
  json_t *line = json_object();
  size_t n = 0, bad = 0;
  tl_status st;
  if (conv == NULL) {
    json_decref(line);
    return infra(r->c, TL_ERR_INVALID_ARGUMENT,
                 "template cases[%zu]: no \"conv_json\" text", i);
  }
  if (prefix != NULL) {
    /* Its goldens were rendered through another template (this one with
     * the prefix before it): not this artifact's, so never a pass. */
    json_object_set_new(line, "skipped", json_string(prefix));
    return record(r, i, line);
  }
  st = tl_native_render(m, (const uint8_t *)conv, strlen(conv),
                        TL_RENDER_AS_TRANSFORMERS, &ro, &re);
  if (st == TL_ERR_OUT_OF_MEMORY) {
    json_decref(line);
    return infra(r->c, st, "out of memory");
  }
  if (st != TL_OK) {
    json_object_set_new(line, "error",
                        json_pack("{s:s,s:s?,s:s}", "error", tl_status_name(st),
                                  "kind", render_kind(&re), "message",
                                  re.message));
    return record(r, i, line);
  }
  json_object_set_new(line, "text_hex", tl_cli_json_hex(ro.text, ro.len));
  st = tl_encoder_run(e, ro.text, ro.len, &n, &bad);
  if (st == TL_OK) json_object_set_new(line, "ids", tl_cli_json_ids(e->ids, n));
  else json_object_set_new(line, "ids_error", json_string(tl_status_name(st)));
  tl_render_out_free(&ro);
  return record(r, i, line);
}

/* A refusal against the declared deviation or the oracle's own. */
static void judge_refusal(const char *name, const json_t *want_err, const json_t *err,
                          verdict *v) {
  const deviation *dev = deviation_of(name);
  const char *status = json_string_value(json_object_get(err, "error"));
  const char *kind = json_string_value(json_object_get(err, "kind"));
  const char *message = json_string_value(json_object_get(err, "message"));
  if (message == NULL) message = "";
  if (dev != NULL) {
    if (!same_text(status, "invalid_argument") || !same_text(kind, dev->kind) ||
        strstr(message, dev->detail) == NULL)
      fail(v, TL_RULE_MECHANICAL,
           "template case %s: declared deviation: expected invalid_argument%s%s mentioning "
           "'%s', got %s (%s: %s)",
           name, dev->kind ? " kind " : "", dev->kind ? dev->kind : "", dev->detail,
           status ? status : "?", kind ? kind : "json", message);
  } else if (want_err != NULL) {
    const char *want_kind = json_string_value(json_object_get(want_err, "tinylm_kind"));
    const char *oracle_kind = json_string_value(json_object_get(want_err, "kind"));
    const char *want_msg = json_string_value(json_object_get(want_err, "message"));
    bool ok = want_kind != NULL && same_text(kind, want_kind);
    if (ok && same_text(oracle_kind, "raise_exception")) ok = same_text(message, want_msg);
    if (!ok)
      fail(v, TL_RULE_MECHANICAL,
           "template case %s: the oracle raised (%s: %s); tinylm refused with kind %s: %s",
           name, want_kind ? want_kind : "(no tinylm kind)", want_msg ? want_msg : "",
           kind ? kind : "json", message);
  } else {
    fail(v, TL_RULE_MECHANICAL, "template case %s: refused (%s, %s: %s)", name,
         status ? status : "?", kind ? kind : "json", message);
  }
}

static const char *judge_tmpl(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                              verdict *v) {
  const json_t *want_err = json_object_get(cs, "error"), *err = json_object_get(line, "error");
  const char *name = json_string_value(json_object_get(cs, "name"));
  const char *skipped = json_string_value(json_object_get(line, "skipped"));
  const char *got_hex = json_string_value(json_object_get(line, "text_hex"));
  size_t nw = 0, ng = 0;
  long d;
  if (name == NULL) name = "?";
  if (skipped != NULL) {
    fail(v, TL_RULE_MECHANICAL,
         "template case %s: rendered through %s + the template, not this artifact's template "
         "alone",
         name, skipped);
  } else if (err != NULL) {
    judge_refusal(name, want_err, err, v);
  } else if (deviation_of(name) != NULL || want_err != NULL) {
    fail(v, TL_RULE_MECHANICAL, "template case %s: rendered %zu bytes where %s", name,
         got_hex ? strlen(got_hex) / 2 : 0,
         deviation_of(name) != NULL ? "tinylm declares a refusal" : "the oracle raised");
  } else if (json_object_get(line, "ids_error") != NULL) {
    fail(v, TL_RULE_MECHANICAL, "template case %s: tokenizing the rendered prompt failed: %s",
         name, json_string_value(json_object_get(line, "ids_error")));
  } else if (!hex_diff(json_string_value(json_object_get(cs, "text_hex")), got_hex, &d, &nw,
                       &ng)) {
    infra(c, TL_ERR_INVALID_ARGUMENT, "template case %s: text_hex is not hex text", name);
    return NULL;
  } else if (d >= 0) {
    fail(v, TL_RULE_MECHANICAL,
         "template case %s: text differs at byte %ld (expected %zu bytes, got %zu)", name, d,
         nw, ng);
  } else if ((d = first_diff_json(json_object_get(cs, "ids"), json_object_get(line, "ids"))) >=
             0) {
    fail(v, TL_RULE_MECHANICAL,
         "template case %s: ids differ at index %ld (expected %zu, got %zu)", name, d,
         json_array_size(json_object_get(cs, "ids")),
         json_array_size(json_object_get(line, "ids")));
  }
  return "rendered_bytes_ids";
}

tl_status tl_claim_template(tl_claim_ctx *c, tl_claim_result *out) {
  return model_claim(c, out, true, tmpl_case);
}

tl_status tl_judge_template(tl_claim_ctx *c, const uint8_t observation[32],
                            tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_tmpl);
}

/* ------------------------------------------------------------------------ */
/* sampler: the known answers of sampler_vectors.h                          */

static json_t *u64_hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return json_string(buf);
}

static json_t *u64s_hex(const uint64_t *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && v != NULL && i < n; i++)
    json_array_append_new(a, u64_hex(v[i]));
  return a;
}

static json_t *u32s(const uint32_t *v, size_t n) {
  return tl_cli_json_ids(v, v != NULL ? n : 0);
}

/* A known answer as its content hash covers it (promote_mechanical.h). */
static json_t *vector_json(const tl_sampler_vector *v) {
  return json_pack(
      "{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:I,s:o,"
      "s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o}",
      "name", v->name, "n", (json_int_t)v->n, "logits", u32s(v->logits, v->n),
      "temperature", u64_hex(v->temperature), "top_p", u64_hex(v->top_p),
      "min_p", u64_hex(v->min_p), "repeat_penalty", u64_hex(v->repeat_penalty),
      "top_k", (json_int_t)v->top_k, "repeat_window",
      (json_int_t)v->repeat_window, "min_new", (json_int_t)v->min_new,
      "defined_ids", (json_int_t)v->defined_ids, "eos", u32s(v->eos, v->n_eos),
      "ban", u32s(v->ban, v->n_ban), "history", u32s(v->history, v->n_history),
      "n_generated", (json_int_t)v->n_generated, "seed", u64_hex(v->seed),
      "draw", (json_int_t)v->draw, "token", (json_int_t)v->token, "turn",
      (json_int_t)v->turn, "stream", (json_int_t)v->stream, "draw_word",
      (json_int_t)v->draw_word, "id", (json_int_t)v->id, "n_candidates",
      (json_int_t)v->n_candidates, "n_survivors", (json_int_t)v->n_survivors,
      "survivors", u32s(v->survivors, v->n_survivors), "q",
      u64s_hex(v->q, v->n_survivors), "bounds",
      u64s_hex(v->bounds, v->n_survivors));
}

static tl_status json_sha256(const json_t *o, uint8_t out[32]) {
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  if (text == NULL) return TL_ERR_OUT_OF_MEMORY;
  tl_sha256(text, strlen(text), out);
  free(text);
  return TL_OK;
}

tl_status tl_sampler_vector_sha256(const tl_sampler_vector *v,
                                   uint8_t out[32]) {
  json_t *o = vector_json(v);
  tl_status st = json_sha256(o, out);
  json_decref(o);
  return st;
}

/* A known answer about how ties are broken (by its name). */
static bool about_ties(const char *name) { return strstr(name, "tie") != NULL; }

static json_t *draw_json(const tl_sampler_draw *d) {
  size_t k = d->n_survivors < TL_SAMPLER_SELFTEST_MAX_SURVIVORS
                 ? d->n_survivors
                 : TL_SAMPLER_SELFTEST_MAX_SURVIVORS;
  json_t *q = json_array(), *b = json_array();
  for (size_t j = 0; j < k; j++) {
    json_array_append_new(q, u64_hex(tl_f64_to_bits(d->q[j])));
    json_array_append_new(b, u64_hex(tl_f64_to_bits(d->bounds[j])));
  }
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:b,s:o,s:o,s:o}", "id",
                   (json_int_t)d->id, "draw_word", (json_int_t)d->draw_word,
                   "draws_used", (json_int_t)d->draws_used, "n_candidates",
                   (json_int_t)d->n_candidates, "n_survivors",
                   (json_int_t)d->n_survivors, "truncated", d->truncated,
                   "survivors", tl_cli_json_ids(d->survivors, k), "q", q, "bounds", b);
}

/* OBSERVE: this build's known answer of that name (the oracle's inputs
 * and answer) and the runtime's draw on its inputs. */
static tl_status sampler_case(run *r, const tl_sampler_vector *table, size_t n,
                              size_t i) {
  const char *name = json_string_value(json_object_get(case_body(r, i), "vector"));
  const tl_sampler_vector *v = NULL;
  tl_sampler_draw d;
  json_t *line;
  tl_status st;
  if (name == NULL)
    return infra(r->c, TL_ERR_INVALID_ARGUMENT, "sampler cases[%zu]: no \"vector\" name", i);
  for (size_t k = 0; k < n && v == NULL; k++)
    if (strcmp(table[k].name, name) == 0) v = &table[k];
  if (v == NULL) return record(r, i, json_pack("{s:s}", "missing", name));
  line = json_pack("{s:o}", "known_answer", vector_json(v));
  st = tl_sampler_vector_draw(v, &d);
  if (line != NULL)
    json_object_set_new(line, st == TL_OK ? "draw" : "error",
                        st == TL_OK ? draw_json(&d) : json_string(tl_status_name(st)));
  return record(r, i, line);
}

/* The draw equals the oracle's answer (tl_sampler_vector_matches, on the
 * stored JSON). */
static bool draw_matches(const json_t *ka, const json_t *d) {
  static const char *const same[] = {"id", "draw_word", "n_candidates", "n_survivors",
                                     "survivors", "q", "bounds"};
  for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
    if (!json_equal(json_object_get(ka, same[k]), json_object_get(d, same[k]))) return false;
  return json_integer_value(json_object_get(d, "draws_used")) == 1 &&
         json_is_false(json_object_get(d, "truncated")) &&
         json_integer_value(json_object_get(ka, "n_survivors")) <=
             TL_SAMPLER_SELFTEST_MAX_SURVIVORS;
}

static const char *judge_sampler(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                                 verdict *v) {
  const char *name = json_string_value(json_object_get(cs, "vector"));
  const char *want = json_string_value(json_object_get(cs, "sha256"));
  const json_t *ka = json_object_get(line, "known_answer"), *d = json_object_get(line, "draw");
  uint8_t want_id[32], have[32];
  char hex[65];
  if (name == NULL || want == NULL || !tl_hex32_parse(want, want_id)) {
    infra(c, TL_ERR_INVALID_ARGUMENT,
          "sampler case: expected {\"vector\": NAME, \"sha256\": HEX64}");
    return NULL;
  }
  if (ka == NULL) {
    fail(v, TL_RULE_MISSING_OUTPUT, "sampler case %s: this build has no such known answer",
         name);
  } else if (json_sha256(ka, have) != TL_OK) {
    infra(c, TL_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  } else if (memcmp(have, want_id, 32) != 0) {
    tl_hex_encode(have, 32, hex);
    fail(v, TL_RULE_MECHANICAL,
         "sampler case %s: this build's known answer has content hash %s, the plan registered "
         "%s",
         name, hex, want);
  } else if (d == NULL) {
    fail(v, about_ties(name) ? TL_RULE_SAMPLER_TIE : TL_RULE_MECHANICAL,
         "sampler case %s: the sampler refused it (%s)", name,
         json_string_value(json_object_get(line, "error")));
  } else if (!draw_matches(ka, d)) {
    fail(v, about_ties(name) ? TL_RULE_SAMPLER_TIE : TL_RULE_MECHANICAL,
         "sampler case %s: drew id %lld (draw word %08llx, %lld survivors), the oracle %lld "
         "(%08llx, %lld)",
         name, (long long)json_integer_value(json_object_get(d, "id")),
         (long long)json_integer_value(json_object_get(d, "draw_word")),
         (long long)json_integer_value(json_object_get(d, "n_survivors")),
         (long long)json_integer_value(json_object_get(ka, "id")),
         (long long)json_integer_value(json_object_get(ka, "draw_word")),
         (long long)json_integer_value(json_object_get(ka, "n_survivors")));
  }
  return "draw";
}

tl_status tl_claim_sampler_table(tl_claim_ctx *c, tl_claim_result *out,
                                 const tl_sampler_vector *table, size_t n) {
  run r;
  tl_status st = begin(&r, c, out);
  if (st != TL_OK) return st;
  for (size_t i = 0; st == TL_OK && i < r.n; i++)
    st = sampler_case(&r, table, n, i);
  return finish(&r, st);
}

tl_status tl_claim_sampler(tl_claim_ctx *c, tl_claim_result *out) {
  return tl_claim_sampler_table(c, out, tl_sampler_vectors,
                                TL_SAMPLER_VECTOR_COUNT);
}

tl_status tl_judge_sampler(tl_claim_ctx *c, const uint8_t observation[32],
                           tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_sampler);
}

/* ------------------------------------------------------------------------ */
/* eos: {"eos": [ids], "end_of_turn": id}                                   */

/* One turn after the prompt [id] with the sampler banned from every id
 * but `id` (greedy, at most two tokens): the generation loop must stop
 * on it as EOS after one token. The cache is left as it was. */
static tl_status forced_turn(tl_session *s, uint32_t id, tl_turn *t,
                             char *err, size_t err_cap) {
  uint32_t vocab = s->qwen.cfg.vocab, *ban, cache_len = s->cache.len;
  tl_generation_params g;
  tl_turn_params tp;
  tl_sampler_field field;
  atomic_int cancel = 0;
  size_t n_ban = 0;
  tl_status st;
  if (id >= vocab) {
    snprintf(err, err_cap, "id %u is outside the vocabulary (%u)", id, vocab);
    return TL_ERR_INVALID_ARGUMENT;
  }
  ban = malloc(vocab * sizeof *ban);
  if (ban == NULL) {
    snprintf(err, err_cap, "out of memory");
    return TL_ERR_OUT_OF_MEMORY;
  }
  for (uint32_t k = 0; k < vocab; k++)
    if (k != id) ban[n_ban++] = k;
  memset(&g, 0, sizeof g);
  g.given = TL_GIVEN_TEMPERATURE;
  g.temperature = 0.0;
  g.max_tokens = 2;
  memset(&tp, 0, sizeof tp);
  tp.gen = &g;
  tp.mode = "text";
  tp.prompt_bytes = (const uint8_t *)"";
  tp.cancel = &cancel;
  tp.ban = ban;
  tp.n_ban = n_ban;
  st = tl_turn_run(s, &tp, &id, 1, t, &field, err, err_cap);
  s->cache.len = cache_len;
  free(ban);
  return st;
}

/* want (JSON ids) is a set (no id twice) equal to have (JSON ids). */
static bool same_set(const json_t *want, const json_t *have) {
  size_t w = json_array_size(want);
  if (!json_is_array(have) || w != json_array_size(have)) return false;
  for (size_t i = 0; i < w; i++) {
    uint32_t v;
    bool found = false;
    if (!u32_at(json_array_get(want, i), &v)) return false;
    for (size_t j = 0; j < w; j++)
      found |= json_integer_value(json_array_get(have, j)) == (json_int_t)v;
    for (size_t j = 0; j < i; j++) /* a repeated id is not a set */
      if (json_integer_value(json_array_get(want, j)) == (json_int_t)v)
        return false;
    if (!found) return false;
  }
  return true;
}

/* OBSERVE: the runtime's EOS set, the template's own turn end, and a
 * generation forced to emit each id the plan names and its turn end. */
static tl_status eos_case(run *r, tl_session *s, size_t i) {
  const json_t *c = case_body(r, i), *want = json_object_get(c, "eos");
  uint32_t turn_end = UINT32_MAX;
  const tl_slm_section *tok, *tmpl;
  json_t *line, *stops = json_array();
  char err[512];
  tl_status st;
  /* The template's own turn terminator, derived again from the artifact's
   * tokenizer and template as convert did. */
  if (tl_slm_find(&s->model.slm, TL_SLM_TOKENIZER, &tok) == TL_OK &&
      tl_slm_find(&s->model.slm, TL_SLM_TEMPLATE, &tmpl) == TL_OK &&
      tl_template_turn_end(tok->data, tok->len, tmpl->data, tmpl->len,
                           &turn_end, err, sizeof err) != TL_OK)
    turn_end = UINT32_MAX;
  line = json_pack("{s:o,s:I}", "eos", tl_cli_json_ids(s->eos, s->n_eos), "turn_end",
                   turn_end == UINT32_MAX ? (json_int_t)-1 : (json_int_t)turn_end);
  for (size_t k = 0; k <= json_array_size(want); k++) {
    uint32_t id;
    tl_turn t;
    if (!u32_at(k < json_array_size(want) ? json_array_get(want, k)
                                          : json_object_get(c, "end_of_turn"),
                &id))
      break;
    st = forced_turn(s, id, &t, err, sizeof err);
    if (st == TL_ERR_OUT_OF_MEMORY) {
      json_decref(stops);
      json_decref(line);
      return infra(r->c, st, "eos: %s", err);
    }
    if (st != TL_OK) {
      json_array_append_new(stops, json_pack("{s:I,s:s}", "id", (json_int_t)id,
                                             "error", tl_status_name(st)));
      continue;
    }
    json_array_append_new(
        stops, json_pack("{s:I,s:o,s:s,s:s}", "id", (json_int_t)id, "ids",
                         tl_cli_json_ids(t.r.ids, t.r.n_ids), "stop",
                         tl_stop_reason_name(t.r.stop), "status",
                         tl_status_name(t.status)));
    tl_turn_free(&t);
  }
  json_object_set_new(line, "stops", stops);
  return record(r, i, line);
}

static const char *judge_eos(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                             verdict *v) {
  const json_t *want = json_object_get(cs, "eos"), *have = json_object_get(line, "eos");
  const json_t *stops = json_object_get(line, "stops");
  json_int_t turn_end = json_integer_value(json_object_get(line, "turn_end"));
  uint32_t eot;
  if (!json_is_array(want) || !u32_at(json_object_get(cs, "end_of_turn"), &eot)) {
    infra(c, TL_ERR_INVALID_ARGUMENT,
          "eos case: expected {\"eos\": [ids], \"end_of_turn\": id}");
    return NULL;
  }
  if (!same_set(want, have))
    fail(v, TL_RULE_MECHANICAL,
         "eos: the runtime's EOS set has %zu ids (first %lld), the plan registered %zu",
         json_array_size(have), (long long)json_integer_value(json_array_get(have, 0)),
         json_array_size(want));
  else if (turn_end != (json_int_t)eot)
    fail(v, TL_RULE_MECHANICAL,
         "eos: the template ends a turn with id %lld, the plan registered %u",
         (long long)turn_end, eot);
  /* Every id the plan says must stop a generation, and the turn end. */
  for (size_t k = 0; k <= json_array_size(want); k++) {
    const json_t *s = json_array_get(stops, k), *ids = json_object_get(s, "ids");
    json_int_t id = json_integer_value(k < json_array_size(want) ? json_array_get(want, k)
                                                                 : json_object_get(cs, "end_of_turn"));
    if (s == NULL || json_integer_value(json_object_get(s, "id")) != id)
      fail(v, TL_RULE_MECHANICAL, "eos: no generation forced to emit %lld is recorded",
           (long long)id);
    else if (json_object_get(s, "error") != NULL)
      fail(v, TL_RULE_MECHANICAL, "eos: a turn forced to emit %lld: %s", (long long)id,
           json_string_value(json_object_get(s, "error")));
    else if (!same_text(json_string_value(json_object_get(s, "status")), tl_status_name(TL_OK)) ||
             !same_text(json_string_value(json_object_get(s, "stop")),
                        tl_stop_reason_name(TL_STOP_EOS)) ||
             json_array_size(ids) != 1 || json_integer_value(json_array_get(ids, 0)) != id)
      fail(v, TL_RULE_MECHANICAL,
           "eos: a generation that emits %lld did not stop there (%zu tokens, stop %s, %s)",
           (long long)id, json_array_size(ids), json_string_value(json_object_get(s, "stop")),
           json_string_value(json_object_get(s, "status")));
  }
  if (json_array_size(stops) != json_array_size(want) + 1)
    fail(v, TL_RULE_MECHANICAL, "eos: %zu generations recorded, the plan names %zu ids",
         json_array_size(stops), json_array_size(want) + 1);
  return "eos_set_and_stop";
}

tl_status tl_claim_eos(tl_claim_ctx *c, tl_claim_result *out) {
  run r;
  tl_status st = begin(&r, c, out);
  if (st != TL_OK) return st;
  if (c->session == NULL)
    st = infra(c, TL_ERR_INVALID_ARGUMENT, "the eos claim needs a session");
  for (size_t i = 0; st == TL_OK && i < r.n; i++)
    st = eos_case(&r, c->session, i);
  return finish(&r, st);
}

tl_status tl_judge_eos(tl_claim_ctx *c, const uint8_t observation[32], tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_eos);
}

/* ------------------------------------------------------------------------ */
/* artifact: {"check": "verify"}                                            */

/* A problem found, for the verify report and the divergence. */
typedef struct finding {
  const char *rule;
  bool oom;
  char where[300];
  char detail[512];
} finding;

static bool found(finding *f, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool found(finding *f, const char *rule, const char *fmt, ...) {
  va_list ap;
  f->rule = rule;
  va_start(ap, fmt);
  vsnprintf(f->detail, sizeof f->detail, fmt, ap);
  va_end(ap);
  return false;
}

/* Every stored value finite (f32/f16/bf16 elements, q8/q4 block scales),
 * then the quantized blocks' other rules (docs/quant.md Q-17) row by row
 * through the runtime's own decoder. */
static bool stored_values_ok(const tl_slm_tensor *x, float *row, finding *f) {
  size_t elems = x->rows * x->n, nb = (x->n + TL_QUANT_BLOCK - 1) / TL_QUANT_BLOCK;
  size_t row_bytes = 0;
  snprintf(f->where, sizeof f->where, "tensor %.*s", (int)x->name_len, x->name);
  switch (x->type) {
  case TL_QTYPE_F32:
    for (size_t k = 0; k < elems; k++)
      if ((tl_load_le32(x->data + 4 * k) & 0x7f800000u) == 0x7f800000u)
        return found(f, TL_RULE_NON_FINITE, "element %zu is not finite", k);
    return true;
  case TL_QTYPE_F16:
    for (size_t k = 0; k < elems; k++)
      if ((tl_load_le16(x->data + 2 * k) & 0x7c00u) == 0x7c00u)
        return found(f, TL_RULE_NON_FINITE, "element %zu is not finite", k);
    return true;
  case TL_QTYPE_BF16:
    for (size_t k = 0; k < elems; k++)
      if ((tl_load_le16(x->data + 2 * k) & 0x7f80u) == 0x7f80u)
        return found(f, TL_RULE_NON_FINITE, "element %zu is not finite", k);
    return true;
  case TL_QTYPE_Q8:
  case TL_QTYPE_Q4: {
    size_t block = x->type == TL_QTYPE_Q8 ? TL_QUANT_Q8_BLOCK_BYTES
                                          : TL_QUANT_Q4_BLOCK_BYTES;
    for (size_t b = 0; b < x->rows * nb; b++)
      if ((tl_load_le32(x->data + b * block) & 0x7f800000u) == 0x7f800000u)
        return found(f, TL_RULE_NON_FINITE,
                     "the scale of block %zu (element %zu) is not finite", b,
                     (b / nb) * x->n + (b % nb) * TL_QUANT_BLOCK);
    if (tl_quant_row_bytes(x->type, x->n, &row_bytes) != TL_OK)
      return found(f, TL_RULE_PACK_MISMATCH, "rows of %zu elements", x->n);
    for (size_t rr = 0; rr < x->rows; rr++)
      if (tl_quant_unpack(x->type, x->data + rr * row_bytes, row_bytes, 1,
                          x->n, row) != TL_OK)
        return found(f, TL_RULE_PACK_MISMATCH,
                     "row %zu breaks the block rules of docs/quant.md Q-17",
                     rr);
    return true;
  }
  }
  return found(f, TL_RULE_PACK_MISMATCH, "unknown element type");
}

/* The same for any layout: a packed q8/q4 tensor (SLM-11) is checked as
 * the stored blocks it stands for. */
static bool tensor_values_ok(const tl_slm_tensor *x, float *row, finding *f) {
  tl_slm_tensor stored = *x;
  uint8_t *bytes;
  size_t row_bytes = 0;
  bool ok;
  if (!x->packed) return stored_values_ok(x, row, f);
  bytes = malloc(x->len ? x->len : 1);
  if (bytes == NULL) {
    f->oom = true;
    return found(f, TL_RULE_PACK_MISMATCH, "out of memory");
  }
  (void)tl_quant_row_bytes(x->type, x->n, &row_bytes); /* checked at open */
  tl_kern_unpack(x->type, x->data, bytes, row_bytes, x->n, 0, x->rows);
  stored.data = bytes;
  stored.packed = false;
  ok = stored_values_ok(&stored, row, f);
  free(bytes);
  return ok;
}

static bool keys_known(const json_t *o, const char *const *known, size_t n,
                       const char *where, finding *f) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    bool ok = false;
    for (size_t i = 0; i < n && !ok; i++) ok = strcmp(known[i], k) == 0;
    if (!ok) {
      snprintf(f->where, sizeof f->where, "%s.%s", where, k);
      return found(f, TL_RULE_UNKNOWN_FIELD, "not in the known schema");
    }
  }
  return true;
}

/* The effective config (docs/qwen3-config.md §Effective config): the
 * qwen3/1 map, nothing more, and every deviation a declared resolution of
 * the profile it names, or (an embedding artifact's only) an
 * embedding_unused EOS record. convert refuses an unknown config.json field
 * and stops on a conflict without a declared resolution before it writes
 * anything, so a converted artifact carries neither: what is checked here
 * is that the artifact as it stands still says so. */
static bool config_ok(const json_t *cfg, bool embedding, finding *f) {
  static const char *const top[] = {"schema",   "profile",     "config",
                                    "defaults", "documentary", "deviations"};
  const json_t *map = json_object_get(cfg, "config"), *v;
  const char *k, *profile = json_string_value(json_object_get(cfg, "profile"));
  size_t i;
  if (!json_is_object(cfg) || !json_is_object(map)) {
    snprintf(f->where, sizeof f->where, "metadata.config");
    return found(f, TL_RULE_UNKNOWN_FIELD, "not a qwen3/1 effective config");
  }
  if (!keys_known(cfg, top, sizeof top / sizeof *top, "metadata.config", f))
    return false;
  if (!same_text(json_string_value(json_object_get(cfg, "schema")),
                 TL_QWEN3_SCHEMA)) {
    snprintf(f->where, sizeof f->where, "metadata.config.schema");
    return found(f, TL_RULE_UNKNOWN_FIELD, "schema is not %s", TL_QWEN3_SCHEMA);
  }
  if (!keys_known(map, tl_qwen3_effective_fields, TL_QWEN3_N_EFFECTIVE,
                  "metadata.config.config", f))
    return false;
  for (i = 0; i < TL_QWEN3_N_EFFECTIVE; i++)
    if (json_object_get(map, tl_qwen3_effective_fields[i]) == NULL) {
      snprintf(f->where, sizeof f->where, "metadata.config.config.%s",
               tl_qwen3_effective_fields[i]);
      return found(f, TL_RULE_UNKNOWN_FIELD, "missing: the behaviour is unknown");
    }
  json_object_foreach((json_t *)json_object_get(cfg, "documentary"), k, v) {
    if (!tl_qwen3_is_documentary(k)) {
      snprintf(f->where, sizeof f->where, "metadata.config.documentary.%s", k);
      return found(f, TL_RULE_UNKNOWN_FIELD,
                   "not a documentary field of qwen3/1");
    }
  }
  json_array_foreach(json_object_get(cfg, "deviations"), i, v) {
    const char *kind = json_string_value(json_object_get(v, "kind"));
    const char *field = json_string_value(json_object_get(v, "field"));
    const char *by = json_string_value(json_object_get(v, "profile"));
    bool declared = same_text(kind, "declared_resolution") && by != NULL &&
                    same_text(by, profile);
    if (!declared && !(embedding && same_text(kind, "embedding_unused"))) {
      snprintf(f->where, sizeof f->where, "metadata.config.deviations[%zu]", i);
      return found(f, TL_RULE_SOURCE_CONFLICT,
                   "%s: a source conflict without a declared resolution of "
                   "the artifact's profile",
                   field ? field : "?");
    }
  }
  return true;
}

/* SLM-20: every ledger entry's dest (and an alias's `of`) is a stored
 * tensor, every stored tensor the dest of a non-alias entry. */
static bool ledger_ok(const json_t *ledger, const tl_slm_tensors *t, finding *f) {
  size_t i, j;
  json_t *e, *op;
  bool *fed = calloc(t->n + 1, sizeof *fed);
  if (fed == NULL) {
    f->oom = true;
    return found(f, TL_RULE_PACK_MISMATCH, "out of memory");
  }
  json_array_foreach(ledger, i, e) {
    const char *src = json_string_value(json_object_get(e, "source"));
    const char *dest = json_string_value(json_object_get(e, "dest"));
    bool alias = false;
    tl_slm_tensor x;
    snprintf(f->where, sizeof f->where, "metadata.ledger[%zu] (%s)", i,
             src ? src : "?");
    if (dest == NULL ||
        tl_slm_tensor_find(t, dest, strlen(dest), &x) != TL_OK) {
      free(fed);
      return found(f, TL_RULE_UNCONSUMED_TENSOR,
                   "source tensor %s: its dest %s is not a stored tensor",
                   src ? src : "?", dest ? dest : "(none)");
    }
    json_array_foreach(json_object_get(e, "ops"), j, op) {
      const char *of = json_string_value(json_object_get(op, "of"));
      if (!same_text(json_string_value(json_object_get(op, "op")), "alias"))
        continue;
      alias = true;
      if (of == NULL || tl_slm_tensor_find(t, of, strlen(of), &x) != TL_OK) {
        free(fed);
        return found(f, TL_RULE_UNCONSUMED_TENSOR,
                     "source tensor %s: an alias of %s, which is not stored",
                     src ? src : "?", of ? of : "(none)");
      }
    }
    if (!alias)
      for (size_t k = 0; k < t->n; k++) {
        tl_slm_tensor y;
        if (tl_slm_tensor_at(t, k, &y) == TL_OK && y.name_len == strlen(dest) &&
            memcmp(y.name, dest, y.name_len) == 0)
          fed[k] = true;
      }
  }
  for (size_t k = 0; k < t->n; k++)
    if (!fed[k]) {
      tl_slm_tensor y;
      free(fed);
      (void)tl_slm_tensor_at(t, k, &y);
      snprintf(f->where, sizeof f->where, "tensor %.*s", (int)y.name_len, y.name);
      return found(f, TL_RULE_PACK_MISMATCH,
                   "no ledger entry says where it came from");
    }
  free(fed);
  return true;
}

static bool metadata_ok(const tl_slm *slm, const tl_slm_tensors *t,
                        tl_slm_artifact_kind kind, finding *f) {
  static const char *const model_keys[] = {
      "format",      "artifact_kind", "converter",    "tokenizer",
      "chat_template", "config",      "config_sha256", "quantization",
      "ledger",      "generation_defaults", "sources", "acquisition",
      "embedding"};
  static const char *const tok_keys[] = {"format", "artifact_kind", "converter",
                                         "tokenizer", "chat_template"};
  static const char *const gen_keys[] = {"do_sample", "temperature", "top_k",
                                         "top_p",     "min_p",
                                         "repetition_penalty"};
  const tl_slm_section *sec;
  json_t *meta = NULL, *gen;
  char why[256];
  bool ok;
  snprintf(f->where, sizeof f->where, "section metadata");
  if (tl_slm_find(slm, TL_SLM_METADATA, &sec) != TL_OK ||
      tl_cbor_to_json(sec->data, sec->len, &meta, why, sizeof why) != TL_OK ||
      !json_is_object(meta)) {
    json_decref(meta);
    return found(f, TL_RULE_PACK_MISMATCH, "not a CBOR map");
  }
  if (kind == TL_SLM_ARTIFACT_MODEL) {
    gen = json_object_get(meta, "generation_defaults");
    ok = keys_known(meta, model_keys, sizeof model_keys / sizeof *model_keys,
                    "metadata", f) &&
         (json_is_null(gen) ||
          keys_known(gen, gen_keys, sizeof gen_keys / sizeof *gen_keys,
                     "metadata.generation_defaults", f)) &&
         config_ok(json_object_get(meta, "config"),
                   json_object_get(meta, "embedding") != NULL, f) &&
         ledger_ok(json_object_get(meta, "ledger"), t, f);
  } else {
    ok = keys_known(meta, tok_keys, sizeof tok_keys / sizeof *tok_keys,
                    "metadata", f);
  }
  json_decref(meta);
  return ok;
}

/* The artifact as a file, opened lazily so that a damaged one is
 * described rather than refused: a runner on an artifact whose session
 * could not open still reports what is wrong. */
typedef struct artifact_file {
  tl_file_view view;
  tl_slm slm;
  tl_slm_tensors tensors;
  tl_slm_artifact_kind kind;
  size_t at;
  char what[300];
} artifact_file;

static tl_status artifact_open(tl_claim_ctx *c, artifact_file *a,
                               tl_status *verify_st) {
  char err[1024];
  tl_status st;
  memset(a, 0, sizeof *a);
  if (c->slm_path == NULL)
    return infra(c, TL_ERR_INVALID_ARGUMENT, "no artifact path");
  st = tl_file_open_view(c->slm_path, &a->view, err, sizeof err);
  if (st != TL_OK) return infra(c, st, "%s", err);
  *verify_st = tl_slm_view_open(a->view.data, a->view.len, true, NULL, &a->slm,
                                &a->tensors, &a->kind, &a->at, a->what,
                                sizeof a->what);
  /* The tensor data section's digest covers every tensor: name the one
   * whose own digest does not recompute. */
  if (*verify_st == TL_ERR_HASH_MISMATCH &&
      strcmp(a->what, "section tensor_data") == 0) {
    tl_slm_tensors t;
    tl_slm_tensor x;
    size_t at;
    if (tl_slm_tensors_open(&t, &a->slm, TL_SLM_VERIFY_LAZY, &at) == TL_OK)
      for (size_t i = 0; i < t.n; i++)
        if (tl_slm_tensor_at(&t, i, &x) == TL_OK &&
            tl_slm_tensor_verify(&x) != TL_OK) {
          snprintf(a->what, sizeof a->what, "tensor %.*s", (int)x.name_len,
                   x.name);
          a->at = (size_t)(x.data - a->view.data);
          break;
        }
  }
  return TL_OK;
}

/* OBSERVE: the artifact verified as convert would refuse it: the first
 * problem found (its rule, where, what), or none. */
tl_status tl_claim_artifact(tl_claim_ctx *c, tl_claim_result *out) {
  run r;
  artifact_file a;
  tl_status st = begin(&r, c, out), vst = TL_OK;
  if (st != TL_OK) return st;
  st = artifact_open(c, &a, &vst);
  for (size_t i = 0; st == TL_OK && i < r.n; i++) {
    finding f = {0};
    bool ok = true;
    float *row = NULL;
    json_t *line;
    if (vst != TL_OK) {
      /* A digest that does not recompute, or a layout the directory
       * breaks (docs/slm.md SLM-1..13). */
      snprintf(f.where, sizeof f.where, "%s", a.what);
      ok = found(&f, TL_RULE_PACK_MISMATCH, "%s at byte %zu",
                 tl_status_name(vst), a.at);
    }
    for (size_t k = 0; ok && k < a.tensors.n; k++) {
      tl_slm_tensor x;
      float *bigger;
      if (tl_slm_tensor_at(&a.tensors, k, &x) != TL_OK) break;
      bigger = realloc(row, (x.n ? x.n : 1) * sizeof *row);
      if (bigger == NULL) {
        st = infra(c, TL_ERR_OUT_OF_MEMORY, "out of memory");
        break;
      }
      row = bigger;
      ok = tensor_values_ok(&x, row, &f);
    }
    free(row);
    if (st != TL_OK) break;
    if (ok) ok = metadata_ok(&a.slm, &a.tensors, a.kind, &f);
    if (f.oom) {
      st = infra(c, TL_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    line = json_pack("{s:s,s:I,s:I,s:I}", "check", "verify", "file_bytes",
                     (json_int_t)a.view.len, "sections",
                     (json_int_t)(vst == TL_OK ? a.slm.n_sections : 0),
                     "tensors", (json_int_t)a.tensors.n);
    if (line != NULL)
      json_object_set_new(line, "problem",
                          ok ? json_null()
                             : json_pack("{s:s,s:s,s:s}", "rule", f.rule, "where", f.where,
                                         "detail", f.detail));
    st = record(&r, i, line);
  }
  if (a.view.data != NULL) tl_file_close_view(&a.view);
  return finish(&r, st);
}

/* The rules an artifact's problem may name (docs/promotion.md §Stop
 * rules), as the static text a result holds; NULL for another. */
static const char *artifact_rule(const char *s) {
  static const char *const rules[] = {TL_RULE_PACK_MISMATCH, TL_RULE_NON_FINITE,
                                      TL_RULE_SOURCE_CONFLICT, TL_RULE_UNKNOWN_FIELD,
                                      TL_RULE_UNCONSUMED_TENSOR};
  for (size_t i = 0; s != NULL && i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp(rules[i], s) == 0) return rules[i];
  return NULL;
}

/* What the runtime found is the verdict: a reader can only check that the
 * stored finding is one of the claim's rules (docs/promotion-receipts.md
 * §What a reader cannot re-derive). */
static const char *judge_artifact(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                                  verdict *v) {
  const json_t *p = json_object_get(line, "problem");
  if (!same_text(json_string_value(json_object_get(cs, "check")), "verify") ||
      json_object_size(cs) != 1) {
    infra(c, TL_ERR_INVALID_ARGUMENT, "artifact case: expected {\"check\": \"verify\"}");
    return NULL;
  }
  if (p == NULL || (!json_is_null(p) &&
                    artifact_rule(json_string_value(json_object_get(p, "rule"))) == NULL)) {
    infra(c, TL_ERR_INVALID_ARGUMENT,
          "artifact case: the stored problem is neither null nor one of the claim's rules");
    return NULL;
  }
  if (!json_is_null(p))
    fail(v, artifact_rule(json_string_value(json_object_get(p, "rule"))), "%s: %s",
         json_string_value(json_object_get(p, "where")),
         json_string_value(json_object_get(p, "detail")));
  return "verify";
}

tl_status tl_judge_artifact(tl_claim_ctx *c, const uint8_t observation[32],
                            tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_artifact);
}

/* ------------------------------------------------------------------------ */
/* independent_reader: {"reader": TEXT, "output": {...}}                    */

/* The first path where two JSON values differ ("$.tensors[3].blake3"), or
 * false when they are equal. */
static bool json_diff(const json_t *a, const json_t *b, char *path, size_t len,
                      size_t cap) {
  if (a == NULL || b == NULL) return a != b;
  if (json_typeof(a) != json_typeof(b)) return true;
  if (json_is_object(a)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      size_t n = len + (size_t)snprintf(path + len, cap - len, ".%s", k);
      if (n >= cap) n = cap - 1;
      if (json_diff(v, json_object_get(b, k), path, n, cap)) return true;
    }
    json_object_foreach((json_t *)b, k, v) {
      if (json_object_get(a, k) == NULL) {
        snprintf(path + len, cap - len, ".%s", k);
        return true;
      }
    }
    path[len] = '\0';
    return false;
  }
  if (json_is_array(a)) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
      size_t n = len + (size_t)snprintf(path + len, cap - len, "[%zu]", i);
      if (n >= cap) n = cap - 1;
      if (i >= json_array_size(b) ||
          json_diff(v, json_array_get(b, i), path, n, cap))
        return true;
    }
    if (json_array_size(b) > json_array_size(a)) {
      snprintf(path + len, cap - len, "[%zu]", json_array_size(a));
      return true;
    }
    path[len] = '\0';
    return false;
  }
  return !json_equal((json_t *)a, (json_t *)b);
}

/* OBSERVE: tinylm's own view of the artifact, the object `tinylm inspect
 * --json --verify` prints ({"inspect": ...}), or why it refuses it. */
tl_status tl_claim_independent_reader(tl_claim_ctx *c, tl_claim_result *out) {
  run r;
  artifact_file a;
  uint8_t id[32];
  json_t *mine = NULL;
  tl_status st = begin(&r, c, out), vst = TL_OK;
  if (st != TL_OK) return st;
  st = artifact_open(c, &a, &vst);
  if (st == TL_OK && vst == TL_OK) {
    st = tl_file_sha256(&a.view, id);
    if (st != TL_OK) st = infra(c, st, "%s: cannot be read", c->slm_path);
  }
  if (st == TL_OK && vst == TL_OK) {
    mine = tl_slm_view_json(&a.slm, &a.tensors, a.view.len, id, true, &vst);
    if (vst == TL_ERR_OUT_OF_MEMORY) st = infra(c, vst, "out of memory");
  }
  for (size_t i = 0; st == TL_OK && i < r.n; i++)
    st = record(&r, i,
                mine != NULL ? json_pack("{s:O}", "inspect", mine)
                             : json_pack("{s:s,s:s,s:I}", "error", tl_status_name(vst), "what",
                                         a.what, "at", (json_int_t)a.at));
  json_decref(mine);
  if (a.view.data != NULL) tl_file_close_view(&a.view);
  return finish(&r, st);
}

static const char *judge_reader(tl_claim_ctx *c, const json_t *cs, const json_t *line,
                                verdict *v) {
  const json_t *theirs = json_object_get(cs, "output");
  const char *reader = json_string_value(json_object_get(cs, "reader"));
  char path[512] = "$";
  if (reader == NULL || !json_is_object(theirs)) {
    infra(c, TL_ERR_INVALID_ARGUMENT,
          "independent_reader case: expected {\"reader\": TEXT, \"output\": {...}}");
    return NULL;
  }
  if (json_object_get(line, "inspect") == NULL)
    fail(v, TL_RULE_READER, "tinylm refuses the artifact that %s read (%s, %s at byte %lld)",
         reader, json_string_value(json_object_get(line, "what")),
         json_string_value(json_object_get(line, "error")),
         (long long)json_integer_value(json_object_get(line, "at")));
  else if (json_diff(theirs, json_object_get(line, "inspect"), path, 1, sizeof path))
    fail(v, TL_RULE_READER, "%s and tinylm differ first at %s", reader, path);
  return "inspect_object";
}

tl_status tl_judge_independent_reader(tl_claim_ctx *c, const uint8_t observation[32],
                                      tl_claim_result *out) {
  return judge_lines(c, observation, out, judge_reader);
}

/* ------------------------------------------------------------------------ */
/* plan init's case sets                                                    */

static tl_status add_claim(json_t *claims, const char *name, const char *oracle,
                           json_t *cases) {
  json_t *o = cases ? json_pack("{s:s,s:s,s:s,s:s,s:n,s:n,s:o}", "name", name,
                                "kind", name, "level", "mechanical", "oracle",
                                oracle, "tolerance", "design", "cases", cases)
                    : NULL;
  if (o == NULL || json_array_append_new(claims, o) != 0)
    return TL_ERR_OUT_OF_MEMORY;
  return TL_OK;
}

/* Appends {"id", "case"} for c (stolen). */
static tl_status add_case(json_t *cases, json_t *c) {
  json_t *o = c ? tl_plan_case(c) : NULL;
  if (o == NULL || json_array_append_new(cases, o) != 0)
    return TL_ERR_OUT_OF_MEMORY;
  return TL_OK;
}

/* The SHA-256 (hex) the artifact records for one of its tokenizer's
 * source files (metadata tokenizer.sources), or NULL. */
static const char *source_sha256(const json_t *meta, const char *file) {
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(json_object_get(meta, "tokenizer"), "sources"), i, s)
    if (same_text(json_string_value(json_object_get(s, "name")), file))
      return json_string_value(json_object_get(s, "sha256"));
  return NULL;
}

/* Whether the artifact's tokenizer came from the files a golden header
 * names (its "tokenizer_files": {name: {"sha256"}}). */
static bool same_tokenizer_files(const json_t *meta, const json_t *header) {
  const char *name;
  json_t *rec;
  const json_t *files = json_object_get(header, "tokenizer_files");
  if (json_object_size(files) == 0) return false;
  json_object_foreach((json_t *)files, name, rec)
    if (!same_text(source_sha256(meta, name),
                   json_string_value(json_object_get(rec, "sha256"))))
      return false;
  return true;
}

/* Reads a golden file: the header (first line) and, when keep says so,
 * each case line into cases. */
static tl_status read_goldens(const char *path, json_t **header,
                              bool (*keep)(const json_t *c), json_t *cases,
                              char *err, size_t err_cap) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0;
  long lineno = 0;
  tl_status st = TL_OK;
  *header = NULL;
  if (f == NULL) {
    snprintf(err, err_cap, "%s: cannot be read", path);
    return TL_ERR_IO;
  }
  while (st == TL_OK && getline(&line, &cap, f) > 0) {
    json_error_t je;
    json_t *c = json_loads(line, 0, &je);
    lineno++;
    if (!json_is_object(c)) {
      snprintf(err, err_cap, "%s:%ld: not a JSON object", path, lineno);
      json_decref(c);
      st = TL_ERR_INVALID_ARGUMENT;
    } else if (*header == NULL) {
      *header = c;
    } else if (keep == NULL || keep(c)) {
      st = add_case(cases, c);
      if (st != TL_OK) snprintf(err, err_cap, "out of memory");
    } else {
      json_decref(c);
    }
  }
  free(line);
  fclose(f);
  if (st == TL_OK && *header == NULL) {
    snprintf(err, err_cap, "%s: empty", path);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  return st;
}

/* Template goldens rendered through another template (template_prefix)
 * need another artifact: plan init leaves them out. */
static bool own_template(const json_t *c) {
  return json_object_get(c, "template_prefix") == NULL;
}

static tl_status tokenizer_claims(const json_t *meta, const char *root,
                                  json_t *claims, char *err, size_t err_cap) {
  char path[4096];
  json_t *header = NULL, *cases = json_array();
  tl_status st;
  /* Tokenizer: tests/tok/golden.jsonl when tokenizer.json and
   * tokenizer_config.json are the files the goldens were made from. */
  snprintf(path, sizeof path, "%s/tests/tok/golden.jsonl", root);
  st = read_goldens(path, &header, NULL, cases, err, err_cap);
  if (st == TL_OK && json_integer_value(json_object_get(
                         header, "tinylm_tokenizer_goldens")) != 1) {
    snprintf(err, err_cap, "%s: not a tokenizer golden file", path);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  if (st == TL_OK && same_tokenizer_files(meta, header)) {
    st = add_claim(claims, "tokenizer",
                   "HF tokenizers (tests/tok/golden.jsonl, written by "
                   "tools/oracle/tok_golden.mjs)",
                   cases);
    cases = NULL;
  }
  json_decref(cases);
  json_decref(header);
  if (st != TL_OK) return st;
  /* Template: tests/tmpl/golden.jsonl when the chat template is the one
   * the goldens rendered (its source SHA-256) and the tokenizer files are
   * theirs too (the ids and the special tokens). */
  header = NULL;
  cases = json_array();
  snprintf(path, sizeof path, "%s/tests/tmpl/golden.jsonl", root);
  st = read_goldens(path, &header, own_template, cases, err, err_cap);
  if (st == TL_OK && json_integer_value(json_object_get(
                         header, "tinylm_template_goldens")) != 1) {
    snprintf(err, err_cap, "%s: not a template golden file", path);
    st = TL_ERR_INVALID_ARGUMENT;
  }
  if (st == TL_OK && same_tokenizer_files(meta, header) &&
      same_text(json_string_value(json_object_get(
                    json_object_get(meta, "chat_template"), "source_sha256")),
                json_string_value(json_object_get(
                    json_object_get(header, "template"), "sha256")))) {
    st = add_claim(claims, "template",
                   "Jinja2 as transformers configures it (tests/tmpl/"
                   "golden.jsonl, written by tools/oracle/tmpl_golden.mjs)",
                   cases);
    cases = NULL;
  }
  json_decref(cases);
  json_decref(header);
  return st;
}

tl_status tl_plan_mechanical_claims(const tl_native_model *m, const char *root,
                                    const char *reader_json, json_t *claims,
                                    char *err, size_t err_cap) {
  const tl_slm_section *sec;
  json_t *meta = NULL, *cases, *eos;
  char why[256];
  tl_status st;
  if (tl_slm_find(&m->slm, TL_SLM_METADATA, &sec) != TL_OK ||
      tl_cbor_to_json(sec->data, sec->len, &meta, why, sizeof why) != TL_OK ||
      !json_is_object(meta)) {
    json_decref(meta);
    snprintf(err, err_cap, "the artifact's metadata is not a CBOR map");
    return TL_ERR_INVALID_MODEL;
  }
  /* artifact: always. */
  cases = json_array();
  st = add_case(cases, json_pack("{s:s}", "check", "verify"));
  if (st == TL_OK)
    st = add_claim(claims, "artifact",
                   "the artifact's own records: section and tensor digests, "
                   "ledger, qwen3/1 schema (docs/slm.md, "
                   "docs/qwen3-config.md)",
                   cases);
  else
    json_decref(cases);
  /* eos: the set the converter recorded from the source's config, and the
   * template's turn terminator it recorded. */
  eos = json_object_get(json_object_get(json_object_get(meta, "config"), "config"),
                        "eos_token_ids");
  if (st == TL_OK && json_array_size(eos) > 0) {
    json_t *eot = json_object_get(json_object_get(meta, "chat_template"),
                                  "turn_end_id");
    cases = json_array();
    st = add_case(cases, json_pack("{s:O,s:O}", "eos", eos, "end_of_turn",
                                   eot ? eot : json_null()));
    if (st == TL_OK && json_is_integer(eot))
      st = add_claim(claims, "eos",
                     "the converter's record of the source's EOS set "
                     "(config/generation_config) and the template's turn "
                     "terminator",
                     cases);
    else
      json_decref(cases);
  }
  if (st == TL_OK) st = tokenizer_claims(meta, root, claims, err, err_cap);
  /* sampler: every known answer of the oracle. */
  if (st == TL_OK) {
    cases = json_array();
    for (size_t i = 0; st == TL_OK && i < TL_SAMPLER_VECTOR_COUNT; i++) {
      uint8_t h[32];
      char hex[65];
      st = tl_sampler_vector_sha256(&tl_sampler_vectors[i], h);
      tl_hex_encode(h, 32, hex);
      if (st == TL_OK)
        st = add_case(cases, json_pack("{s:s,s:s}", "vector",
                                       tl_sampler_vectors[i].name, "sha256",
                                       hex));
    }
    if (st == TL_OK)
      st = add_claim(claims, "sampler",
                     "tools/oracle/sampler_ref.py (the known answers of "
                     "src/core/sample/sampler_vectors.h)",
                     cases);
    else
      json_decref(cases);
  }
  if (st == TL_OK && reader_json != NULL) {
    json_error_t je;
    json_t *o = json_load_file(reader_json, 0, &je);
    if (!json_is_object(o)) {
      json_decref(o);
      snprintf(err, err_cap, "%s:%d: not the JSON object of slm_inspect.py --json (%s)",
               reader_json, je.line, je.text);
      json_decref(meta);
      return TL_ERR_INVALID_ARGUMENT;
    }
    cases = json_array();
    st = add_case(cases, json_pack("{s:s,s:o}", "reader", "tools/slm_inspect.py",
                                   "output", o));
    if (st == TL_OK)
      st = add_claim(claims, "independent_reader",
                     "tools/slm_inspect.py --json (an independent reader "
                     "written from docs/slm.md)",
                     cases);
    else
      json_decref(cases);
  }
  json_decref(meta);
  if (st == TL_ERR_OUT_OF_MEMORY) snprintf(err, err_cap, "out of memory");
  return st;
}
