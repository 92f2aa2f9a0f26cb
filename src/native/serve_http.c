/* serve_http.h: OpenAI's response bodies and events from the engine's
 * choices. */
#define _DEFAULT_SOURCE /* strdup */
#include "serve_http.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytes.h"
#include "fresh_seed.h"
#include "gen/think.h"
#include "run_common.h"
#include "utf8.h"

bool tl_srv_buf_add(tl_srv_buf *b, const void *s, size_t n) {
  if (b->failed) return false;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *p;
    while (cap < b->len + n + 1) cap *= 2;
    if ((p = realloc(b->p, cap)) == NULL) return !(b->failed = true);
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return true;
}

void tl_srv_buf_free(tl_srv_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

size_t tl_srv_utf8_complete(const uint8_t *s, size_t len) {
  for (size_t back = 1; back <= 3 && back <= len; back++) {
    size_t p = len - back, n;
    uint32_t cp;
    if (s[p] < 0x80) return len;
    if (s[p] >= 0xC2 && s[p] <= 0xF4) /* a lead byte: is it cut short? */
      return !tl_utf8_decode(s, len, p, &cp, &n) && p + n == len ? p : len;
  }
  return len;
}

char *tl_srv_utf8_clean(const uint8_t *s, size_t len, size_t *out_len) {
  /* each ill-formed byte becomes at most 3 bytes */
  char *out = malloc(3 * len + 1), *o = out;
  if (out == NULL) return NULL;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t n;
    if (tl_utf8_decode(s, len, i, &cp, &n)) {
      memcpy(o, s + i, n);
      o += n;
    } else {
      memcpy(o, "\xEF\xBF\xBD", 3);
      o += 3;
    }
    i += n;
  }
  *o = '\0';
  if (out_len != NULL) *out_len = (size_t)(o - out);
  return out;
}

static json_t *clean_string(const uint8_t *s, size_t len) {
  size_t n;
  char *c = tl_srv_utf8_clean(s, len, &n);
  json_t *j = c != NULL ? json_stringn(c, n) : NULL;
  free(c);
  return j;
}

void tl_srv_random_hex(char *out, size_t n) {
  uint8_t b[64];
  size_t got;
  if (n > sizeof b) n = sizeof b;
  got = tl_os_random(b, n);
  /* no entropy (never on Linux >= 3.17): the clock still tells ids apart */
  for (size_t i = got; i < n; i++) b[i] = (uint8_t)(clock() >> (i % 8));
  tl_hex_encode(b, n, out);
}

static const char tool_open[] = "<tool_call>", tool_close[] = "</tool_call>";

static const char *find(const char *s, size_t len, const char *what) {
  size_t w = strlen(what);
  for (size_t i = 0; i + w <= len; i++)
    if (memcmp(s + i, what, w) == 0) return s + i;
  return NULL;
}

/* The length of a trailing proper prefix of what at the end of s[0, len). */
static size_t partial_suffix(const uint8_t *s, size_t len, const char *what) {
  for (size_t k = strlen(what) - 1; k > 0; k--)
    if (k <= len && memcmp(s + len - k, what, k) == 0) return k;
  return 0;
}

size_t tl_srv_tool_hold(const uint8_t *text, size_t len) {
  const char *at = find((const char *)text, len, tool_open);
  if (at != NULL) return (size_t)(at - (const char *)text);
  return len - partial_suffix(text, len, tool_open);
}

json_t *tl_srv_tool_calls(const char *text, size_t len, size_t *content_len) {
  const char *p = text, *end = text + len, *first = find(text, len, tool_open);
  json_t *calls;
  if (first == NULL || (calls = json_array()) == NULL) return NULL;
  for (p = first; (p = find(p, (size_t)(end - p), tool_open)) != NULL;) {
    const char *body = p + sizeof tool_open - 1;
    const char *close = find(body, (size_t)(end - body), tool_close);
    json_t *call, *name, *args, *fn;
    char *args_text = NULL, id[40] = "call_";
    if (close == NULL) goto refuse; /* cut short (max_tokens) */
    call = json_loadb(body, (size_t)(close - body), 0, NULL);
    name = json_object_get(call, "name");
    args = json_object_get(call, "arguments");
    if (!json_is_object(call) || !json_is_string(name) || args == NULL) {
      json_decref(call);
      goto refuse;
    }
    args_text = json_is_string(args) ? strdup(json_string_value(args))
                                     : json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    tl_srv_random_hex(id + 5, 12);
    fn = args_text ? json_pack("{s:O,s:s}", "name", name, "arguments", args_text) : NULL;
    free(args_text);
    json_decref(call);
    if (fn == NULL ||
        json_array_append_new(calls, json_pack("{s:s,s:s,s:o}", "id", id, "type", "function",
                                               "function", fn)) != 0)
      goto refuse;
    p = close + sizeof tool_close - 1;
  }
  *content_len = (size_t)(first - text);
  return calls;
refuse:
  json_decref(calls);
  return NULL;
}

char *tl_srv_error_body(const tl_srv_error *e) {
  json_t *doc = json_pack("{s:{s:s,s:s,s:o,s:o}}", "error", "message", e->message, "type",
                          e->type ? e->type : "server_error", "param",
                          e->param[0] ? json_string(e->param) : json_null(), "code",
                          e->code[0] ? json_string(e->code) : json_null());
  char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  return s;
}

/* ---- choices ---- */

tl_status tl_srv_choice_take(tl_srv_choice *c, const tl_srv_update *u) {
  if (u->text_len > c->raw_len && u->text_from <= c->raw_len) {
    size_t n = u->text_len - c->raw_len;
    if (c->raw_len + n > c->raw_cap) {
      size_t cap = c->raw_cap ? c->raw_cap : 256;
      uint8_t *p;
      while (cap < c->raw_len + n) cap *= 2;
      if ((p = realloc(c->raw, cap)) == NULL) return TL_ERR_OUT_OF_MEMORY;
      c->raw = p;
      c->raw_cap = cap;
    }
    memcpy(c->raw + c->raw_len, u->text + (c->raw_len - u->text_from), n);
    c->raw_len += n;
  }
  if (u->n_tokens > c->n_tokens && u->tokens_from <= c->n_tokens) {
    size_t n = u->n_tokens - c->n_tokens;
    if (c->n_tokens + n > c->tokens_cap) {
      size_t cap = c->tokens_cap ? c->tokens_cap : 64;
      tl_srv_token *p;
      while (cap < c->n_tokens + n) cap *= 2;
      if ((p = realloc(c->tokens, cap * sizeof *p)) == NULL) return TL_ERR_OUT_OF_MEMORY;
      c->tokens = p;
      c->tokens_cap = cap;
    }
    memcpy(c->tokens + c->n_tokens, u->tokens + (c->n_tokens - u->tokens_from),
           n * sizeof *c->tokens);
    c->n_tokens += n;
  }
  c->state = u->state;
  if (u->state == TL_SRV_DONE && !c->done) {
    c->done = true;
    c->result = u->result;
  }
  return TL_OK;
}

void tl_srv_gen_free(tl_srv_gen *g) {
  for (uint32_t i = 0; i < g->n; i++) {
    tl_srv_choice *c = &g->choices[i];
    if (c->job != NULL) {
      if (!c->done) tl_srv_job_cancel(c->job);
      tl_srv_job_release(c->job);
    }
    free(c->raw);
    free(c->tokens);
    memset(c, 0, sizeof *c);
  }
  g->n = 0;
  tl_srv_grammar_unref(g->grammar);
  g->grammar = NULL;
  tl_srv_prompt_free(&g->prompt);
  tl_srv_request_free(&g->req);
}

/* ---- pieces of responses ---- */

static const char *finish_reason(const tl_srv_result *r) {
  if (strcmp(r->finish, "max_tokens") == 0 || strcmp(r->finish, "context_full") == 0)
    return "length";
  return "stop";
}

/* A log-probability as JSON (-9999 stands for -inf, as OpenAI's). */
static json_t *lp_json(float lp) { return json_real(isfinite(lp) ? (double)lp : -9999.0); }

static json_t *bytes_json(const uint8_t *b, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++) json_array_append_new(a, json_integer(b[i]));
  return a;
}

/* {"token", "logprob", "bytes"} of one id. */
static json_t *token_json(const tl_srv_gen *g, uint32_t id, float lp) {
  const uint8_t *b = NULL;
  size_t n = 0;
  (void)tl_srv_token_bytes(g->engine, id, &b, &n);
  return json_pack("{s:o,s:o,s:o}", "token", clean_string(b, n), "logprob", lp_json(lp),
                   "bytes", bytes_json(b, n));
}

static uint32_t n_top(const tl_srv_gen *g, const tl_srv_token *t) {
  return t->n_top < g->req.top_logprobs ? t->n_top : g->req.top_logprobs;
}

/* The logprobs of tokens [from, to): chat's {"content": [...]} or the
 * completions' legacy {tokens, token_logprobs, top_logprobs,
 * text_offset}. */
static json_t *logprobs_json(const tl_srv_gen *g, const tl_srv_choice *c, size_t from,
                             size_t to) {
  if (!g->req.logprobs) return json_null();
  if (g->chat) {
    json_t *content = json_array();
    for (size_t i = from; content != NULL && i < to; i++) {
      const tl_srv_token *t = &c->tokens[i];
      json_t *e = token_json(g, t->id, t->logprob), *top = json_array();
      for (uint32_t k = 0; top != NULL && k < n_top(g, t); k++)
        json_array_append_new(top, token_json(g, t->top_ids[k], t->top_logprobs[k]));
      json_object_set_new(e, "top_logprobs", top);
      json_array_append_new(content, e);
    }
    return json_pack("{s:o}", "content", content);
  }
  json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
         *offsets = json_array();
  for (size_t i = from; i < to; i++) {
    const tl_srv_token *t = &c->tokens[i];
    const uint8_t *b = NULL;
    size_t n = 0;
    json_t *top = json_object();
    (void)tl_srv_token_bytes(g->engine, t->id, &b, &n);
    json_array_append_new(tokens, clean_string(b, n));
    json_array_append_new(lps, lp_json(t->logprob));
    for (uint32_t k = 0; top != NULL && k < n_top(g, t); k++) {
      char *key;
      (void)tl_srv_token_bytes(g->engine, t->top_ids[k], &b, &n);
      if ((key = tl_srv_utf8_clean(b, n, NULL)) != NULL)
        json_object_set_new(top, key, lp_json(t->top_logprobs[k]));
      free(key);
    }
    json_array_append_new(tops, top);
    json_array_append_new(offsets, json_integer((json_int_t)(i ? c->tokens[i - 1].text_end : 0)));
  }
  return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs",
                   tops, "text_offset", offsets);
}

/* The token entries whose text lies in the first `end` bytes of the
 * reply, from `from` on: a token's text starts before end and (while the
 * reply goes on) ends by it. Tokens without visible text at the end (EOS)
 * are not the reply's. */
static size_t tokens_within(const tl_srv_choice *c, size_t from, size_t end, bool final) {
  size_t i = from;
  while (i < c->n_tokens) {
    size_t start = i ? c->tokens[i - 1].text_end : 0;
    if (start >= end || (!final && c->tokens[i].text_end > end)) break;
    i++;
  }
  return i;
}

/* The "tinylm" entry of a finished choice. */
static json_t *choice_ext(const tl_srv_choice *c, uint32_t index) {
  const tl_srv_result *r = &c->result;
  return json_pack("{s:i,s:o,s:o,s:s,s:i,s:i,s:f,s:f,s:f}", "index", (int)index, "receipt_id",
                   r->receipt_id[0] ? json_string(r->receipt_id) : json_null(), "seed",
                   tl_run_seed_json(r->seed), "stop", r->finish, "slot", (int)r->slot,
                   "cached_tokens", (int)r->cached_tokens, "queue_ms",
                   r->queue_seconds * 1e3, "prefill_ms", r->prefill_seconds * 1e3, "decode_ms",
                   r->decode_seconds * 1e3);
}

static json_t *usage_json(const tl_srv_gen *g) {
  uint64_t completion = 0;
  uint32_t prompt = (uint32_t)g->prompt.n_ids, cached = 0;
  for (uint32_t i = 0; i < g->n; i++) completion += g->choices[i].result.completion_tokens;
  if (g->n > 0 && g->choices[0].done) {
    prompt = g->choices[0].result.prompt_tokens;
    cached = g->choices[0].result.cached_tokens;
  }
  return json_pack("{s:I,s:I,s:I,s:{s:I}}", "prompt_tokens", (json_int_t)prompt,
                   "completion_tokens", (json_int_t)completion, "total_tokens",
                   (json_int_t)(prompt + completion), "prompt_tokens_details", "cached_tokens",
                   (json_int_t)cached);
}

/* The fields every body and chunk starts with. */
static json_t *head(const tl_srv_gen *g, const char *object) {
  return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", g->id, "object", object, "created",
                   (json_int_t)g->created, "model", g->req.model[0] ? g->req.model
                                                                    : g->facts.model_name,
                   "system_fingerprint", g->facts.build_id);
}

static char *dump(json_t *doc) {
  char *s = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  return s;
}

/* The choice's text from byte off on (no arithmetic on the null pointer
 * of a choice without text yet). */
static const uint8_t *text_at(const tl_srv_choice *c, size_t off) {
  return c->raw != NULL ? c->raw + off : c->raw;
}

/* A finished chat choice with tools, its content from raw byte `from`
 * on: its tool calls (NULL: none, the whole text is content) and where its
 * content ends in the raw bytes (the block markers are ASCII, so the
 * cleaned text, which the calls are read from, and the raw bytes agree up
 * to the first block). */
static json_t *tool_split(const tl_srv_choice *c, size_t from, size_t *content_end) {
  char *all = tl_srv_utf8_clean(text_at(c, from), c->raw_len - from, NULL);
  size_t before = 0;
  json_t *calls = all != NULL ? tl_srv_tool_calls(all, strlen(all), &before) : NULL;
  free(all);
  *content_end = calls != NULL ? from + tl_srv_tool_hold(text_at(c, from), c->raw_len - from)
                               : c->raw_len;
  return calls;
}

/* A chat reply's parts: its think block (reasoning_content unless
 * reasoning_format is "none"), where its content starts (after the block;
 * 0 with "none") and where tool calls are looked for (after the block
 * always: the think block is never read for calls). Completions: no block,
 * all of it content. */
typedef struct parts {
  tl_think th;
  size_t content_from, answer_from;
} parts;

static parts parts_of(const tl_srv_gen *g, const tl_srv_choice *c, bool final) {
  parts p;
  memset(&p, 0, sizeof p);
  if (!g->chat) return p;
  tl_think_split(c->raw, c->raw_len, final, &p.th);
  p.answer_from = p.th.answer_from;
  if (g->req.raw_reasoning) p.th.block = false;
  else p.content_from = p.answer_from;
  return p;
}

char *tl_srv_response_body(const tl_srv_gen *g) {
  json_t *doc = head(g, g->chat ? "chat.completion" : "text_completion"), *choices = json_array(),
         *ext = json_array();
  for (uint32_t i = 0; i < g->n; i++) {
    const tl_srv_choice *c = &g->choices[i];
    size_t text_len = c->raw_len, ntok = tokens_within(c, 0, c->raw_len, true);
    json_t *calls = NULL, *choice, *text;
    const char *reason = finish_reason(&c->result);
    parts p = parts_of(g, c, true);
    if (g->chat && g->req.has_tools && (calls = tool_split(c, p.answer_from, &text_len)) != NULL)
      reason = "tool_calls";
    text = clean_string(text_at(c, p.content_from), text_len - p.content_from);
    if (g->chat) {
      json_t *msg = json_pack("{s:s,s:o}", "role", "assistant", "content",
                              text_len == p.content_from && calls != NULL ? json_null()
                                                                           : json_incref(text));
      if (p.th.block)
        json_object_set_new(msg, "reasoning_content",
                            clean_string(text_at(c, p.th.reason_from),
                                         p.th.reason_to - p.th.reason_from));
      if (calls != NULL) json_object_set_new(msg, "tool_calls", calls);
      choice = json_pack("{s:i,s:o,s:o,s:s}", "index", (int)i, "message", msg, "logprobs",
                         logprobs_json(g, c, 0, ntok), "finish_reason", reason);
    } else {
      choice = json_pack("{s:i,s:O,s:o,s:s}", "index", (int)i, "text", text, "logprobs",
                         logprobs_json(g, c, 0, ntok), "finish_reason", reason);
    }
    json_decref(text);
    json_array_append_new(choices, choice);
    json_array_append_new(ext, choice_ext(c, i));
  }
  json_object_set_new(doc, "choices", choices);
  json_object_set_new(doc, "usage", usage_json(g));
  json_object_set_new(doc, "tinylm",
                      json_pack("{s:s,s:s,s:o}", "artifact_id", g->facts.artifact_id, "profile",
                                g->facts.profile, "choices", ext));
  return dump(doc);
}

/* ---- events ---- */

static bool event(tl_srv_buf *out, json_t *doc) {
  char *s = dump(doc);
  bool ok = s != NULL && tl_srv_buf_add(out, "data: ", 6) && tl_srv_buf_add(out, s, strlen(s)) &&
            tl_srv_buf_add(out, "\n\n", 2);
  free(s);
  return ok;
}

/* A chunk of choice i: chat's delta or the completions' text, with
 * logprobs and finish_reason (NULL: JSON null). */
static bool chunk(const tl_srv_gen *g, uint32_t i, tl_srv_buf *out, json_t *delta,
                  json_t *logprobs, const char *reason, json_t *ext) {
  json_t *doc = head(g, g->chat ? "chat.completion.chunk" : "text_completion"), *choice;
  if (g->chat)
    choice = json_pack("{s:i,s:o,s:o,s:o}", "index", (int)i, "delta", delta, "logprobs",
                       logprobs ? logprobs : json_null(), "finish_reason",
                       reason ? json_string(reason) : json_null());
  else
    choice = json_pack("{s:i,s:o,s:o,s:o}", "index", (int)i, "text", delta, "logprobs",
                       logprobs ? logprobs : json_null(), "finish_reason",
                       reason ? json_string(reason) : json_null());
  json_object_set_new(doc, "choices", json_pack("[o]", choice));
  if (ext != NULL) json_object_set_new(doc, "tinylm", ext);
  return event(out, doc);
}

bool tl_srv_stream_begin(const tl_srv_gen *g, tl_srv_buf *out) {
  bool ok = true;
  for (uint32_t i = 0; g->chat && ok && i < g->n; i++)
    ok = chunk(g, i, out, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL, NULL,
               NULL);
  return ok;
}

/* Content raw[raw_sent, end) with the logprobs of its tokens. */
static bool send_text(tl_srv_gen *g, uint32_t i, tl_srv_buf *out, size_t end, bool final) {
  tl_srv_choice *c = &g->choices[i];
  size_t ntok = tokens_within(c, c->tokens_sent, end, final);
  json_t *text, *lp = NULL;
  bool ok;
  if (end <= c->raw_sent && ntok == c->tokens_sent) return true;
  if (end < c->raw_sent) end = c->raw_sent;
  text = clean_string(c->raw + c->raw_sent, end - c->raw_sent);
  if (g->req.logprobs) lp = logprobs_json(g, c, c->tokens_sent, ntok);
  ok = chunk(g, i, out, g->chat ? json_pack("{s:o}", "content", text) : text, lp, NULL, NULL);
  c->raw_sent = end;
  c->tokens_sent = ntok;
  return ok;
}

/* A chat reply's think block as reasoning_content deltas (what is final
 * of it: never part of a tag, never part of a UTF-8 sequence); *p: the
 * reply's parts. */
static bool send_reasoning(tl_srv_gen *g, uint32_t i, tl_srv_buf *out, bool final, parts *p) {
  tl_srv_choice *c = &g->choices[i];
  size_t from, to;
  *p = parts_of(g, c, final);
  if (!p->th.block) return true;
  from = c->reasoning_sent > p->th.reason_from ? c->reasoning_sent : p->th.reason_from;
  to = final ? p->th.reason_to : tl_srv_utf8_complete(c->raw, p->th.reason_to);
  if (to <= from) return true;
  c->reasoning_sent = to;
  return chunk(g, i, out, json_pack("{s:o}", "reasoning_content", clean_string(c->raw + from, to - from)),
               NULL, NULL, NULL);
}

bool tl_srv_stream_choice(tl_srv_gen *g, uint32_t i, tl_srv_buf *out) {
  tl_srv_choice *c = &g->choices[i];
  bool tools = g->chat && g->req.has_tools;
  size_t end = c->raw_len, from;
  parts p;
  json_t *calls = NULL;
  const char *reason;
  bool ok;
  if (c->finished) return true;
  if (!c->done) {
    if (!send_reasoning(g, i, out, false, &p)) return false;
    from = p.content_from;
    if (tools) end = p.answer_from + tl_srv_tool_hold(text_at(c, p.answer_from), end - p.answer_from);
    end = tl_srv_utf8_complete(c->raw, end);
    if (end <= from || end <= c->raw_sent) return true; /* held */
    if (c->raw_sent < from) c->raw_sent = from;
    return send_text(g, i, out, end, false);
  }
  if (strcmp(c->result.finish, "error") == 0 || strcmp(c->result.finish, "cancelled") == 0) {
    tl_srv_error e;
    tl_srv_error_set(&e, 500, "server_error", "", "internal", "choice %u: %s", i,
                     c->result.error[0] ? c->result.error : c->result.finish);
    c->finished = true;
    return tl_srv_stream_error(&e, out);
  }
  reason = finish_reason(&c->result);
  ok = send_reasoning(g, i, out, true, &p);
  from = p.content_from;
  if (c->raw_sent < from) c->raw_sent = from;
  if (tools && (calls = tool_split(c, p.answer_from, &end)) != NULL) reason = "tool_calls";
  ok = ok && send_text(g, i, out, end, true);
  if (calls != NULL) {
    size_t k;
    json_t *call;
    json_array_foreach(calls, k, call) json_object_set_new(call, "index", json_integer((json_int_t)k));
    ok = ok && chunk(g, i, out, json_pack("{s:o}", "tool_calls", calls), NULL, NULL, NULL);
  }
  ok = ok && chunk(g, i, out, g->chat ? json_object() : json_string(""), NULL, reason,
                   choice_ext(c, i));
  c->finished = true;
  return ok;
}

bool tl_srv_stream_end(const tl_srv_gen *g, tl_srv_buf *out) {
  if (g->req.include_usage) {
    json_t *doc = head(g, g->chat ? "chat.completion.chunk" : "text_completion");
    json_object_set_new(doc, "choices", json_array());
    json_object_set_new(doc, "usage", usage_json(g));
    if (!event(out, doc)) return false;
  }
  return tl_srv_buf_add(out, "data: [DONE]\n\n", 14);
}

bool tl_srv_stream_error(const tl_srv_error *e, tl_srv_buf *out) {
  char *s = tl_srv_error_body(e);
  bool ok = s != NULL && tl_srv_buf_add(out, "data: ", 6) && tl_srv_buf_add(out, s, strlen(s)) &&
            tl_srv_buf_add(out, "\n\n", 2);
  free(s);
  return ok;
}

/* ---- metrics ---- */

char *tl_srv_metrics_text(const tl_srv_stats *s, const tl_srv_http_counts *c) {
  tl_srv_buf b = {0};
  char line[512];
#define METRIC(name, type, help, fmt, value)                                               \
  do {                                                                                     \
    int k = snprintf(line, sizeof line, "# HELP tinylm_" name " " help "\n# TYPE tinylm_" name \
                     " " type "\ntinylm_" name " " fmt "\n",                                \
                     value);                                                               \
    if (k > 0) tl_srv_buf_add(&b, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1); \
  } while (0)
  METRIC("prompt_tokens_total", "counter", "Prompt tokens processed (cached ones and embedding inputs included).",
         "%llu", (unsigned long long)s->prompt_tokens);
  METRIC("prompt_cached_tokens_total", "counter", "Prompt tokens taken from a slot's cache.",
         "%llu", (unsigned long long)s->cached_tokens);
  METRIC("tokens_predicted_total", "counter", "Tokens generated.", "%llu",
         (unsigned long long)s->generated_tokens);
  METRIC("prompt_seconds_total", "counter", "Seconds spent computing prompts.", "%.6f",
         s->prompt_seconds);
  METRIC("tokens_predicted_seconds_total", "counter", "Seconds spent decoding.", "%.6f",
         s->decode_seconds);
  METRIC("requests_processing", "gauge", "Jobs in a slot.", "%u", s->processing);
  METRIC("requests_queued", "gauge", "Jobs waiting for a slot.", "%u", s->queued);
  METRIC("requests_rejected_total", "counter",
         "HTTP requests refused (4xx and 5xx answers, queue full included).", "%llu",
         (unsigned long long)c->rejected);
  METRIC("requests_total", "counter", "HTTP requests received.", "%llu",
         (unsigned long long)c->requests);
  METRIC("requests_cancelled_total", "counter", "Jobs cancelled (a client went away).", "%llu",
         (unsigned long long)s->requests_cancelled);
  METRIC("slots_busy", "gauge", "Slots holding a job.", "%u", s->slots_busy);
  METRIC("kv_cache_usage_ratio", "gauge",
         "KV cache rows held by running jobs over every slot's rows (0..1).", "%.6f",
         s->kv_capacity != 0 ? (double)s->kv_used / (double)s->kv_capacity : 0.0);
  METRIC("decode_batches_total", "counter", "Batched decode passes over the weights.", "%llu",
         (unsigned long long)s->forward_batches);
  METRIC("decode_batched_tokens_total", "counter", "Tokens those passes decoded.", "%llu",
         (unsigned long long)s->batched_tokens);
  METRIC("decode_step_seconds_total", "counter", "Seconds those passes took.", "%.6f",
         s->decode_step_seconds);
  METRIC("prefill_chunk_seconds_total", "counter",
         "Seconds the prefill passes took on the forward thread.", "%.6f",
         s->prefill_chunk_seconds);
#undef METRIC
  if (b.failed) {
    tl_srv_buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* A Prometheus label value: \, " and line feeds escaped. */
static void add_label(tl_srv_buf *b, const char *v) {
  for (; *v != '\0' && !b->failed; v++)
    (void)(*v == '\\' ? tl_srv_buf_add(b, "\\\\", 2)
         : *v == '"' ? tl_srv_buf_add(b, "\\\"", 2)
         : *v == '\n' ? tl_srv_buf_add(b, "\\n", 2)
                      : tl_srv_buf_add(b, v, 1));
}

char *tl_srv_model_metrics_text(const tl_srv_model_sample *m, size_t n) {
  static const struct {
    const char *name, *type, *help;
  } families[] = {
      {"model_loaded", "gauge", "1 while the model is loaded."},
      {"model_loads_total", "counter", "Times the model was loaded."},
      {"model_unloads_total", "counter", "Times the model was unloaded to make room."},
      {"model_requests_processing", "gauge", "The model's jobs in a slot."},
      {"model_requests_queued", "gauge", "The model's jobs waiting for a slot."},
      {"model_prompt_tokens_total", "counter", "The model's prompt tokens processed."},
      {"model_tokens_predicted_total", "counter", "Tokens the model generated."},
  };
  tl_srv_buf b = {0};
  char line[256];
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
    int k = snprintf(line, sizeof line, "# HELP tinylm_%s %s\n# TYPE tinylm_%s %s\n",
                     families[f].name, families[f].help, families[f].name, families[f].type);
    tl_srv_buf_add(&b, line, (size_t)k);
    for (size_t i = 0; i < n; i++) {
      const tl_srv_stats *s = &m[i].stats;
      const uint64_t v[] = {m[i].loaded, m[i].loads, m[i].unloads, s->processing, s->queued,
                            s->prompt_tokens, s->generated_tokens};
      k = snprintf(line, sizeof line, "\"} %llu\n", (unsigned long long)v[f]);
      tl_srv_buf_add(&b, "tinylm_", 7);
      tl_srv_buf_add(&b, families[f].name, strlen(families[f].name));
      tl_srv_buf_add(&b, "{model=\"", 8);
      add_label(&b, m[i].name);
      tl_srv_buf_add(&b, line, (size_t)k);
    }
  }
  if (b.failed) {
    tl_srv_buf_free(&b);
    return NULL;
  }
  return b.p;
}
