/* tinylm serve: an OpenAI-compatible HTTP server (docs/server.md) on
 * libmicrohttpd, one thread per connection. This file is the command, the
 * daemon and the routing; the request bodies are read by serve_request.c,
 * the generations run in serve_engine.c, and the response bodies and
 * events are written by serve_http.c.
 *
 * The socket is bound first (the listening line tells a test the port),
 * then the model loads in a thread (every endpoint answers 503 "loading"
 * meanwhile), while the main thread waits for SIGINT/SIGTERM. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "clock.h"
#include "file.h"
#include "fresh_seed.h"
#include "lane.h"
#include "serve_engine.h"
#include "serve_http.h"
#include "serve_log.h"
#include "serve_page.h"
#include "serve_request.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: tinylm serve MODEL.slm [--host H] [--port P] [--parallel N] [--queue N]\n"
    "                    [--ctx N] [--api-key KEY | --api-key-file F]\n"
    "                    [--cors-origin ORIGIN]... [--max-body-bytes N]\n"
    "                    [--receipt-dir DIR] [--mem-budget MB]\n"
    "                    [--log-format text|json] [--lane scalar|fast] [-t N] [--mmap]\n"
    "  an OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions,\n"
    "  /v1/models[/ID], /health, /props, /tokenize, /detokenize, /apply-template,\n"
    "  /metrics, and a chat page at / (docs/server.md)\n"
    "  (docs/server.md); same request and seed, same reply bytes at any load\n"
    "  --host H          address to listen on (default 127.0.0.1; another than\n"
    "                    loopback without an API key is warned about)\n"
    "  --port P          0..65535 (default 8080; 0: any free port, printed)\n"
    "  --parallel N      sequence slots decoded together, 1..64 (default 4)\n"
    "  --queue N         requests waiting for a slot, 0..4096 (default 64);\n"
    "                    more are answered 503 with Retry-After\n"
    "  --ctx N           context tokens per slot (default: the model's, at most\n"
    "                    4096)\n"
    "  --api-key KEY     require Authorization: Bearer KEY (or X-Api-Key: KEY)\n"
    "  --api-key-file F  the key from the first line of F\n"
    "  --cors-origin O   allow browser requests from origin O (\"*\": any);\n"
    "                    repeatable\n"
    "  --max-body-bytes N  largest request body (default 8388608); more: 413\n"
    "  --receipt-dir DIR keep every choice's run receipt in DIR\n"
    "  --mem-budget MB   refuse a memory plan over MB megabytes (default: the\n"
    "                    memory available)\n"
    "  --log-format F    the access log on stderr, one line per request: text\n"
    "                    (key=value, the default) or json\n" TL_LANE_USAGE
    "  SIGINT or SIGTERM stops the server (exit 0)\n";

#define MAX_ORIGINS 32

/* The one server of the process (signal handling is per process). */
static struct {
  struct MHD_Daemon *daemon;
  _Atomic(tl_srv_engine *) engine;
  atomic_bool stopping;
  tl_srv_engine_options eo;
  const char *api_key;
  size_t api_key_len;
  const char *origins[MAX_ORIGINS];
  size_t n_origins;
  size_t max_body;
  tl_srv_log_format log_format;
  atomic_uint_fast64_t requests, rejected;
  pthread_t main_thread;
  char load_error[1024];
  tl_status load_status;
} S;

typedef enum route_id {
  R_CHAT,
  R_COMPLETIONS,
  R_MODELS,
  R_HEALTH,
  R_TOKENIZE,
  R_DETOKENIZE,
  R_TEMPLATE,
  R_METRICS,
  R_MODEL, /* /v1/models/{id} */
  R_PROPS,
  R_PAGE /* a file of the chat page */
} route_id;

static const struct route {
  const char *path, *method;
  route_id id;
} routes[] = {
    {"/v1/chat/completions", "POST", R_CHAT}, {"/v1/completions", "POST", R_COMPLETIONS},
    {"/v1/models", "GET", R_MODELS},          {"/health", "GET", R_HEALTH},
    {"/tokenize", "POST", R_TOKENIZE},        {"/detokenize", "POST", R_DETOKENIZE},
    {"/apply-template", "POST", R_TEMPLATE},  {"/metrics", "GET", R_METRICS},
    {"/props", "GET", R_PROPS},
};
static const struct route model_route = {"/v1/models/{id}", "GET", R_MODEL};
static const struct route page_route = {"/", "GET", R_PAGE};

/* One HTTP request's state between the handler's calls, and what its
 * access-log line says. */
typedef struct conn_ctx {
  const struct route *route;
  const tl_srv_page_file *page; /* R_PAGE */
  tl_srv_buf body;
  uint64_t seen; /* body bytes received */
  bool too_large, answered;
  char id[25];      /* X-Request-Id */
  char method[16];
  char path[257];   /* at most 256 bytes of it */
  time_t when;
  double t0;
  unsigned status;  /* 0 until answered */
  bool generation;
  uint32_t prompt_tokens, completion_tokens;
} conn_ctx;

/* The request the calling thread serves (libmicrohttpd runs each
 * connection's callbacks on its own thread), for queue() to note its
 * status and id. */
static _Thread_local conn_ctx *current;

/* ---- answers ---- */

static const char *header(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The request's Origin when --cors-origin allows it, else NULL. */
static const char *allowed_origin(struct MHD_Connection *c) {
  const char *o = header(c, "Origin");
  for (size_t i = 0; o != NULL && i < S.n_origins; i++)
    if (strcmp(S.origins[i], "*") == 0 || strcmp(S.origins[i], o) == 0) return o;
  return NULL;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status,
                             struct MHD_Response *r, const char *type) {
  const char *origin = allowed_origin(c);
  enum MHD_Result ok;
  if (r == NULL) return MHD_NO;
  if (type != NULL) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (current != NULL) {
    MHD_add_response_header(r, "X-Request-Id", current->id);
    current->status = status;
  }
  if (origin != NULL) {
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
  }
  if (status >= 400) atomic_fetch_add(&S.rejected, 1);
  ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

/* body (malloc'd, taken; NULL: out of memory -> 500) as a JSON answer. */
static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, char *body,
                                  const char *retry_after, const char *allow) {
  struct MHD_Response *r;
  if (body == NULL) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":"
                              "\"server_error\",\"param\":null,\"code\":\"internal\"}}";
    r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    return queue(c, 500, r, "application/json");
  }
  r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (r == NULL) free(body);
  if (r != NULL && retry_after != NULL) MHD_add_response_header(r, "Retry-After", retry_after);
  if (r != NULL && allow != NULL) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
  return queue(c, status, r, "application/json");
}

static enum MHD_Result reply_doc(struct MHD_Connection *c, unsigned status, json_t *doc) {
  char *s = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  return reply_json(c, status, s, NULL, NULL);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, const tl_srv_error *e) {
  bool full = strcmp(e->code, "queue_full") == 0;
  unsigned status = e->status >= 400 && e->status <= 599 ? (unsigned)e->status : 500;
  return reply_json(c, status, tl_srv_error_body(e), full ? "1" : NULL, NULL);
}

static enum MHD_Result fail(struct MHD_Connection *c, int status, const char *type,
                            const char *code, const char *msg) {
  tl_srv_error e;
  tl_srv_error_set(&e, status, type, "", code, "%s", msg);
  return reply_error(c, &e);
}

/* An error from a function that may have failed without filling e. */
static enum MHD_Result reply_failed(struct MHD_Connection *c, tl_srv_error *e, tl_status st) {
  if (e->status == 0)
    tl_srv_error_set(e, 500, "server_error", "", "internal", "%s", tl_status_name(st));
  return reply_error(c, e);
}

/* ---- auth, CORS ---- */

/* Equal to the key, in time that depends on the key's length only. */
static bool key_matches(const char *given) {
  size_t n = strlen(given);
  unsigned char diff = (unsigned char)(n != S.api_key_len);
  for (size_t i = 0; i < S.api_key_len; i++)
    diff |= (unsigned char)(S.api_key[i] ^ (i < n ? given[i] : 0));
  return diff == 0;
}

static bool authorized(struct MHD_Connection *c) {
  const char *a = header(c, MHD_HTTP_HEADER_AUTHORIZATION), *x = header(c, "X-Api-Key");
  if (S.api_key == NULL) return true;
  if (a != NULL && strncasecmp(a, "Bearer ", 7) == 0 && key_matches(a + 7)) return true;
  return x != NULL && key_matches(x);
}

static enum MHD_Result preflight(struct MHD_Connection *c) {
  struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (r == NULL) return MHD_NO;
  if (allowed_origin(c) == NULL) return queue(c, 403, r, NULL);
  MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  MHD_add_response_header(r, "Access-Control-Allow-Headers",
                          "Authorization, Content-Type, X-Api-Key");
  MHD_add_response_header(r, "Access-Control-Max-Age", "600");
  return queue(c, 204, r, NULL);
}

/* ---- generation ---- */

/* Whether the client is still there: a closed or reset connection shows
 * as a hang-up on its socket (the body has been read by now). */
static bool client_alive(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  if (fd < 0) return true;
  return poll(&p, 1, 0) <= 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
}

static int conn_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return i != NULL ? i->connect_fd : -1;
}

/* Waits (about 100 ms at most) for news of the unfinished choices and
 * takes it in. False when the client went away or the server stops. */
static bool gather(tl_srv_gen *g, int fd) {
  bool waited = false;
  for (uint32_t i = 0; i < g->n; i++) {
    tl_srv_choice *c = &g->choices[i];
    tl_srv_update u;
    tl_status st;
    if (c->done) continue;
    memset(&u, 0, sizeof u);
    st = tl_srv_job_wait(c->job, waited ? 0 : 100, c->raw_len, c->n_tokens, c->state, &u);
    waited = true;
    if (st == TL_OK) st = tl_srv_choice_take(c, &u);
    tl_srv_update_free(&u);
    if (st != TL_OK && !c->done) { /* no memory for the news: end the choice */
      tl_srv_job_cancel(c->job);
      c->done = true;
      memset(&c->result, 0, sizeof c->result);
      c->result.finish = "error";
      c->result.status = st;
      snprintf(c->result.error, sizeof c->result.error, "%s", tl_status_name(st));
    }
  }
  return !atomic_load(&S.stopping) && client_alive(fd);
}

static bool all_done(const tl_srv_gen *g) {
  for (uint32_t i = 0; i < g->n; i++)
    if (!g->choices[i].done) return false;
  return true;
}

/* A streaming response's state, owned by its MHD response. */
typedef struct stream {
  tl_srv_gen g;
  conn_ctx *cc; /* the log's counts (alive while the response is read) */
  int fd;
  tl_srv_buf out;
  size_t out_pos;
  bool ended;
  double last_sent;
} stream;

/* The token counts of a generation, for the access log. */
static void count_tokens(conn_ctx *cc, const tl_srv_gen *g) {
  cc->generation = true;
  cc->prompt_tokens = g->n > 0 ? g->choices[0].result.prompt_tokens : 0;
  cc->completion_tokens = 0;
  for (uint32_t i = 0; i < g->n; i++) cc->completion_tokens += g->choices[i].result.completion_tokens;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  stream *s = cls;
  size_t n;
  (void)pos;
  /* thread per connection: block until there is something to send */
  while (s->out_pos == s->out.len) {
    bool finished = true;
    s->out.len = s->out_pos = 0;
    if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
    if (!gather(&s->g, s->fd)) return MHD_CONTENT_READER_END_WITH_ERROR;
    for (uint32_t i = 0; i < s->g.n; i++) {
      (void)tl_srv_stream_choice(&s->g, i, &s->out);
      finished = finished && s->g.choices[i].finished;
    }
    if (finished) {
      (void)tl_srv_stream_end(&s->g, &s->out);
      s->ended = true;
      count_tokens(s->cc, &s->g);
    }
    if (s->out.len == 0 && tl_now_s() - s->last_sent >= 2.0)
      (void)tl_srv_buf_add(&s->out, ": ping\n\n", 8); /* queued or in prefill */
    if (s->out.failed) return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  n = s->out.len - s->out_pos < max ? s->out.len - s->out_pos : max;
  memcpy(buf, s->out.p + s->out_pos, n);
  s->out_pos += n;
  s->last_sent = tl_now_s();
  return (ssize_t)n;
}

/* The response is gone (sent, or the client left): cancel what still
 * runs and release the jobs. */
static void stream_free(void *cls) {
  stream *s = cls;
  tl_srv_gen_free(&s->g);
  tl_srv_buf_free(&s->out);
  free(s);
}

static enum MHD_Result generate(struct MHD_Connection *c, tl_srv_engine *e, bool chat,
                                conn_ctx *cc) {
  stream *s = calloc(1, sizeof *s);
  tl_srv_gen *g = s != NULL ? &s->g : NULL;
  tl_srv_error err;
  tl_status st;
  enum MHD_Result ok;
  memset(&err, 0, sizeof err);
  if (s == NULL) return reply_json(c, 500, NULL, NULL, NULL);
  g->engine = e;
  g->chat = chat;
  tl_srv_engine_facts(e, &g->facts);
  st = tl_srv_request_parse(chat ? TL_SRV_CHAT : TL_SRV_COMPLETION, (const uint8_t *)cc->body.p,
                            cc->body.len, g->facts.vocab, &g->req, &err);
  if (st != TL_OK) {
    free(s);
    return reply_failed(c, &err, st);
  }
  /* No seed: a fresh one, returned in tinylm.choices[i].seed (and each
   * receipt), so a regenerate differs and sending it back reproduces. */
  if (!g->req.has_seed) {
    g->req.seed = tl_fresh_seed();
    g->req.has_seed = true;
  }
  st = tl_srv_grammar_compile(&g->req, &g->grammar, &err);
  if (st == TL_OK)
    st = chat ? tl_srv_prompt_chat(e, g->req.conversation, g->req.conversation_len, &g->prompt,
                                   &err)
              : tl_srv_prompt_text(e, g->req.prompt, g->req.prompt_len, &g->prompt, &err);
  for (uint32_t i = 0; st == TL_OK && i < g->req.n; i++) {
    tl_srv_job_params p = {&g->req, &g->prompt, i, g->grammar};
    st = tl_srv_submit(e, &p, &g->choices[i].job, &err);
    if (st == TL_OK) g->n = i + 1;
  }
  if (st != TL_OK) {
    ok = reply_failed(c, &err, st);
    stream_free(s);
    return ok;
  }
  snprintf(g->id, sizeof g->id, "%s", chat ? "chatcmpl-" : "cmpl-");
  tl_srv_random_hex(g->id + strlen(g->id), 12);
  g->created = (int64_t)time(NULL);
  s->fd = conn_fd(c);
  s->cc = cc;

  if (g->req.stream) {
    struct MHD_Response *r;
    (void)tl_srv_stream_begin(g, &s->out);
    s->last_sent = tl_now_s();
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
    if (r == NULL) {
      stream_free(s);
      return MHD_NO;
    }
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    return queue(c, 200, r, "text/event-stream");
  }
  while (!all_done(g))
    if (!gather(g, s->fd)) {
      bool stopping = atomic_load(&S.stopping);
      stream_free(s); /* cancels */
      return stopping ? fail(c, 503, "server_error", "shutting_down", "the server is stopping")
                      : MHD_NO; /* the client is gone: close */
    }
  for (uint32_t i = 0; i < g->n; i++) {
    const tl_srv_result *r = &g->choices[i].result;
    if (strcmp(r->finish, "error") == 0 || strcmp(r->finish, "cancelled") == 0) {
      tl_srv_error_set(&err, 500, "server_error", "", "internal", "choice %u: %s", i,
                       r->error[0] ? r->error : r->finish);
      stream_free(s);
      return reply_error(c, &err);
    }
  }
  count_tokens(cc, g);
  ok = reply_json(c, 200, tl_srv_response_body(g), NULL, NULL);
  stream_free(s);
  return ok;
}

/* ---- the other endpoints ---- */

static enum MHD_Result health(struct MHD_Connection *c, tl_srv_engine *e) {
  tl_srv_stats st;
  tl_srv_facts f;
  if (e == NULL) return reply_doc(c, 503, json_pack("{s:s}", "status", "loading"));
  tl_srv_engine_stats(e, &st);
  tl_srv_engine_facts(e, &f);
  return reply_doc(c, 200, json_pack("{s:s,s:I,s:I}", "status", "ok", "slots_idle",
                                     (json_int_t)(f.parallel - st.slots_busy),
                                     "slots_processing", (json_int_t)st.slots_busy));
}

/* The model as OpenAI's model object. */
static json_t *model_doc(tl_srv_engine *e) {
  tl_srv_facts f;
  struct stat sb;
  tl_srv_engine_facts(e, &f);
  if (stat(S.eo.model_path, &sb) != 0) sb.st_mtime = 0;
  return json_pack("{s:s,s:s,s:I,s:s,s:{s:s,s:I,s:I,s:s}}", "id", f.model_name, "object", "model",
                   "created", (json_int_t)sb.st_mtime, "owned_by", "tinylm", "tinylm",
                   "artifact_id", f.artifact_id, "context", (json_int_t)f.context, "parallel",
                   (json_int_t)f.parallel, "profile", f.profile);
}

static enum MHD_Result models(struct MHD_Connection *c, tl_srv_engine *e) {
  return reply_doc(c, 200, json_pack("{s:s,s:[o]}", "object", "list", "data", model_doc(e)));
}

/* GET /v1/models/{id}: the model named id, else 404 model_not_found. */
static enum MHD_Result model(struct MHD_Connection *c, tl_srv_engine *e, const char *url) {
  const char *id = url + strlen("/v1/models/");
  tl_srv_facts f;
  tl_srv_error err;
  tl_srv_engine_facts(e, &f);
  if (strcmp(id, f.model_name) == 0) return reply_doc(c, 200, model_doc(e));
  tl_srv_error_set(&err, 404, "invalid_request_error", "model", "model_not_found",
                   "the model '%.120s' does not exist (this server has '%s')", id, f.model_name);
  return reply_error(c, &err);
}

/* The artifact's sampling default for one value: null when it records
 * none. */
static json_t *default_or_null(bool has, double v) {
  return has ? json_real(v) : json_null();
}

/* GET /props: llama-server's shape, with what it means here
 * (docs/server.md, Props). */
static enum MHD_Result props(struct MHD_Connection *c, tl_srv_engine *e) {
  tl_srv_facts f;
  const tl_gen_defaults *d;
  tl_srv_engine_facts(e, &f);
  d = f.gen;
  return reply_doc(
      c, 200,
      json_pack("{s:{s:I,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:I}},s:I,s:s,s:s,s:s,s:{s:b,s:b},"
                "s:{s:s,s:s,s:I}}",
                "default_generation_settings", "n_ctx", (json_int_t)f.context, "params",
                "do_sample", d->has_do_sample ? json_boolean(d->do_sample) : json_null(),
                "temperature", default_or_null(d->has_temperature, d->temperature), "top_k",
                d->has_top_k ? json_integer(d->top_k) : json_null(), "top_p",
                default_or_null(d->has_top_p, d->top_p), "min_p",
                default_or_null(d->has_min_p, d->min_p), "repeat_penalty",
                default_or_null(d->has_repeat_penalty, d->repeat_penalty), "n_predict",
                (json_int_t)-1, "total_slots", (json_int_t)f.parallel, "model_path",
                S.eo.model_path, "model_alias", f.model_name, "build_info", f.build_id,
                "modalities", "vision", 0, "audio", 0, "tinylm", "artifact_id", f.artifact_id,
                "profile", f.profile, "queue", (json_int_t)f.queue));
}

/* A file of the chat page. */
static enum MHD_Result page(struct MHD_Connection *c, const tl_srv_page_file *p) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(p->len, (void *)p->data, MHD_RESPMEM_PERSISTENT);
  if (r != NULL) MHD_add_response_header(r, "Cache-Control", "no-cache");
  return queue(c, 200, r, p->type);
}

static enum MHD_Result metrics(struct MHD_Connection *c, tl_srv_engine *e) {
  tl_srv_stats st;
  tl_srv_http_counts n = {atomic_load(&S.requests), atomic_load(&S.rejected)};
  char *text;
  struct MHD_Response *r;
  tl_srv_engine_stats(e, &st);
  if ((text = tl_srv_metrics_text(&st, &n)) == NULL) return reply_json(c, 500, NULL, NULL, NULL);
  r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (r == NULL) free(text);
  return queue(c, 200, r, "text/plain; version=0.0.4");
}

/* A token's bytes: a string when they are UTF-8 alone, else the bytes. */
static json_t *piece(tl_srv_engine *e, uint32_t id) {
  const uint8_t *b = NULL;
  size_t n = 0;
  json_t *a;
  (void)tl_srv_token_bytes(e, id, &b, &n);
  if (tl_utf8_validate(b, n, NULL) == TL_OK) return json_stringn((const char *)b, n);
  a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++) json_array_append_new(a, json_integer(b[i]));
  return a;
}

static enum MHD_Result text_tool(struct MHD_Connection *c, tl_srv_engine *e, route_id id,
                                 const conn_ctx *cc) {
  static const tl_srv_kind kinds[] = {[R_TOKENIZE] = TL_SRV_TOKENIZE,
                                      [R_DETOKENIZE] = TL_SRV_DETOKENIZE,
                                      [R_TEMPLATE] = TL_SRV_APPLY_TEMPLATE};
  tl_srv_request q;
  tl_srv_prompt p;
  tl_srv_error err;
  tl_srv_facts f;
  tl_status st;
  json_t *doc = NULL;
  memset(&err, 0, sizeof err);
  memset(&p, 0, sizeof p);
  tl_srv_engine_facts(e, &f);
  st = tl_srv_request_parse(kinds[id], (const uint8_t *)cc->body.p, cc->body.len, f.vocab, &q,
                            &err);
  if (st != TL_OK) return reply_failed(c, &err, st);
  if (id == R_TOKENIZE) {
    st = tl_srv_prompt_text(e, q.prompt, q.prompt_len, &p, &err);
    if (st == TL_OK) {
      json_t *ids = json_array();
      for (size_t i = 0; ids != NULL && i < p.n_ids; i++)
        json_array_append_new(ids, q.with_pieces ? json_pack("{s:I,s:o}", "id",
                                                             (json_int_t)p.ids[i], "piece",
                                                             piece(e, p.ids[i]))
                                                 : json_integer((json_int_t)p.ids[i]));
      doc = json_pack("{s:o}", "tokens", ids);
    }
  } else if (id == R_DETOKENIZE) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    st = tl_srv_decode(e, q.ids, q.n_ids, TL_DECODE_RAW, &bytes, &len);
    if (st == TL_OK) {
      size_t n;
      char *text = tl_srv_utf8_clean(bytes, len, &n);
      doc = text != NULL ? json_pack("{s:s%}", "content", text, n) : NULL;
      free(text);
    }
    free(bytes);
  } else {
    st = tl_srv_prompt_chat(e, q.conversation, q.conversation_len, &p, &err);
    if (st == TL_OK) {
      size_t n;
      char *text = tl_srv_utf8_clean(p.bytes, p.len, &n);
      doc = text != NULL ? json_pack("{s:s%}", "prompt", text, n) : NULL;
      free(text);
    }
  }
  tl_srv_prompt_free(&p);
  tl_srv_request_free(&q);
  if (st != TL_OK) return reply_failed(c, &err, st);
  return reply_doc(c, 200, doc);
}

/* ---- the handler ---- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  conn_ctx *cc = *con_cls;
  tl_srv_engine *e = atomic_load(&S.engine);
  (void)cls;
  (void)version;
  current = cc;
  if (cc == NULL) { /* the headers are in: refuse early what can be */
    const char *len = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t n;
    if ((cc = calloc(1, sizeof *cc)) == NULL) return MHD_NO;
    *con_cls = cc;
    current = cc;
    cc->when = time(NULL);
    cc->t0 = tl_now_s();
    tl_srv_random_hex(cc->id, 12);
    snprintf(cc->method, sizeof cc->method, "%s", method);
    snprintf(cc->path, sizeof cc->path, "%s", url);
    atomic_fetch_add(&S.requests, 1);
    cc->answered = true;
    if (strcmp(method, "OPTIONS") == 0) return preflight(c);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
      if (strcmp(url, routes[i].path) == 0) cc->route = &routes[i];
    if (strncmp(url, "/v1/models/", 11) == 0 && url[11] != '\0') cc->route = &model_route;
    for (size_t i = 0; i < tl_srv_page_count; i++)
      if (strcmp(url, tl_srv_page_files[i].path) == 0) {
        cc->route = &page_route;
        cc->page = &tl_srv_page_files[i];
      }
    if (cc->route == NULL) {
      char msg[160];
      snprintf(msg, sizeof msg, "no endpoint %.120s", url);
      return fail(c, 404, "invalid_request_error", "not_found", msg);
    }
    if (strcmp(method, cc->route->method) != 0) {
      tl_srv_error err;
      tl_srv_error_set(&err, 405, "invalid_request_error", "", "method_not_allowed",
                       "%s takes %s, not %.16s", url, cc->route->method, method);
      return reply_json(c, 405, tl_srv_error_body(&err), NULL, cc->route->method);
    }
    /* the page holds no secret; its requests to the API carry the key */
    if (cc->route->id == R_PAGE) return page(c, cc->page);
    if (cc->route->id != R_HEALTH && !authorized(c))
      return fail(c, 401, "authentication_error", "invalid_api_key",
                  "a valid API key is required (Authorization: Bearer KEY or X-Api-Key)");
    if (atomic_load(&S.stopping))
      return fail(c, 503, "server_error", "shutting_down", "the server is stopping");
    if (cc->route->id != R_HEALTH && e == NULL)
      return fail(c, 503, "server_error", "loading", "the model is loading");
    if (len != NULL && (!tl_cli_parse_u64(len, &n) || n > S.max_body)) {
      char msg[128];
      snprintf(msg, sizeof msg, "the request body is over %zu bytes (--max-body-bytes)",
               S.max_body);
      return fail(c, 413, "invalid_request_error", "request_too_large", msg);
    }
    cc->answered = false;
    return MHD_YES;
  }
  if (*upload_size > 0) { /* a piece of the body */
    /* a chunked body past the cap is read and dropped (libmicrohttpd
     * answers only once the body is in), up to twice the cap: then the
     * connection is closed */
    cc->seen += *upload_size;
    if (cc->seen / 2 > S.max_body) return MHD_NO;
    if (!cc->answered && !cc->too_large) {
      if (cc->body.len + *upload_size > S.max_body) {
        cc->too_large = true; /* chunked past the cap: drop the rest */
        tl_srv_buf_free(&cc->body);
      } else if (!tl_srv_buf_add(&cc->body, upload, *upload_size)) {
        return MHD_NO;
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (cc->answered) return MHD_YES;
  cc->answered = true;
  if (cc->too_large) {
    char msg[128];
    snprintf(msg, sizeof msg, "the request body is over %zu bytes (--max-body-bytes)",
             S.max_body);
    return fail(c, 413, "invalid_request_error", "request_too_large", msg);
  }
  switch (cc->route->id) {
  case R_HEALTH: return health(c, e);
  case R_MODELS: return models(c, e);
  case R_MODEL: return model(c, e, url);
  case R_PROPS: return props(c, e);
  case R_METRICS: return metrics(c, e);
  case R_CHAT: return generate(c, e, true, cc);
  case R_COMPLETIONS: return generate(c, e, false, cc);
  default: return text_tool(c, e, cc->route->id, cc);
  }
}

/* The request's access-log line on stderr. */
static void log_access(const conn_ctx *cc) {
  tl_srv_access a = {cc->when,   cc->id,         cc->method,       cc->path,
                     cc->status ? cc->status : 499, (tl_now_s() - cc->t0) * 1e3,
                     cc->generation, cc->prompt_tokens, cc->completion_tokens};
  char *line = tl_srv_access_line(S.log_format, &a);
  if (line != NULL) fputs(line, stderr); /* one call: lines never interleave */
  free(line);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  conn_ctx *cc = *con_cls;
  (void)cls;
  (void)c;
  (void)toe;
  current = NULL;
  if (cc != NULL) {
    log_access(cc);
    tl_srv_buf_free(&cc->body);
    free(cc);
    *con_cls = NULL;
  }
}

/* ---- the command ---- */

static void *load(void *arg) {
  tl_srv_engine *e = NULL;
  (void)arg;
  S.load_status = tl_srv_engine_open(&S.eo, &e, S.load_error, sizeof S.load_error);
  if (S.load_status == TL_OK) {
    tl_srv_facts f;
    tl_srv_engine_facts(e, &f);
    atomic_store(&S.engine, e);
    printf("tinylm serve: ready (%s, %u slots x %u tokens, lane %s, plan %.1f MB)\n",
           f.model_name, f.parallel, f.context, f.profile, (double)f.plan_bytes / 1e6);
    fflush(stdout);
  } else {
    pthread_kill(S.main_thread, SIGUSR1); /* wake main: nothing to serve */
  }
  return NULL;
}

static bool loopback(const struct sockaddr *a) {
  if (a->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) {
    const struct in6_addr *x = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(x) ||
           (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
  }
  return false;
}

/* The first line of file f (without its line end) as the key. */
static int read_key_file(const char *f, char *key, size_t cap) {
  tl_file_view v;
  char err[512];
  size_t n = 0;
  if (tl_file_open_view(f, &v, err, sizeof err) != TL_OK)
    return tl_cli_fail(false, TL_ERR_IO, "--api-key-file: %s", err);
  while (n < v.len && v.data[n] != '\n' && v.data[n] != '\r') n++;
  if (n >= cap || memchr(v.data, '\0', n) != NULL) {
    tl_file_close_view(&v);
    return tl_cli_usage(false, "--api-key-file %s: the key is longer than %zu bytes or holds NUL",
                        f, cap - 1);
  }
  memcpy(key, v.data, n);
  key[n] = '\0';
  tl_file_close_view(&v);
  return -1;
}

int tl_cmd_serve(int argc, char **argv) {
  static char key_buf[4096];
  const char *host = "127.0.0.1", *key_file = NULL;
  uint32_t port = 8080;
  uint64_t mb = 0, max_body = 8u << 20;
  struct addrinfo hints, *ai = NULL;
  struct sockaddr_storage addr;
  const union MHD_DaemonInfo *info;
  pthread_t loader;
  sigset_t sigs;
  char port_text[8];
  int rc, sig = 0, gai;
  unsigned flags;

  memset(&S, 0, sizeof S);
  S.eo.lane = tl_lane_defaults();
  S.eo.parallel = 4;
  S.eo.queue = 64;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    }
    if ((rc = tl_lane_flag(false, argc, argv, &i, &S.eo.lane)) != 0) {
      if (rc > 0) return rc;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0') {
      if (strcmp(a, "--host") != 0 && strcmp(a, "--port") != 0 &&
          strcmp(a, "--parallel") != 0 && strcmp(a, "--queue") != 0 &&
          strcmp(a, "--ctx") != 0 && strcmp(a, "--api-key") != 0 &&
          strcmp(a, "--api-key-file") != 0 && strcmp(a, "--cors-origin") != 0 &&
          strcmp(a, "--max-body-bytes") != 0 && strcmp(a, "--receipt-dir") != 0 &&
          strcmp(a, "--mem-budget") != 0 && strcmp(a, "--log-format") != 0)
        return tl_cli_usage(false, "unknown option '%s'\n%s", a, usage_text);
      if ((rc = tl_cli_value(false, argc, argv, &i, &v)) >= 0) return rc;
      if (strcmp(a, "--host") == 0) host = v;
      else if (strcmp(a, "--port") == 0) rc = tl_cli_flag_u32(false, a, v, 0, 65535, &port);
      else if (strcmp(a, "--parallel") == 0)
        rc = tl_cli_flag_u32(false, a, v, 1, 64, &S.eo.parallel);
      else if (strcmp(a, "--queue") == 0) rc = tl_cli_flag_u32(false, a, v, 0, 4096, &S.eo.queue);
      else if (strcmp(a, "--ctx") == 0)
        rc = tl_cli_flag_u32(false, a, v, 1, UINT32_MAX, &S.eo.context);
      else if (strcmp(a, "--api-key") == 0) S.api_key = v;
      else if (strcmp(a, "--api-key-file") == 0) key_file = v;
      else if (strcmp(a, "--receipt-dir") == 0) S.eo.receipt_dir = v;
      else if (strcmp(a, "--log-format") == 0) {
        if (!tl_srv_log_format_parse(v, &S.log_format))
          return tl_cli_usage(false, "--log-format must be text or json, not '%s'", v);
      } else if (strcmp(a, "--mem-budget") == 0)
        rc = tl_cli_flag_u64(false, a, v, 1, UINT64_MAX >> 20, &mb);
      else if (strcmp(a, "--max-body-bytes") == 0)
        rc = tl_cli_flag_u64(false, a, v, 1, (uint64_t)1 << 30, &max_body);
      else if (S.n_origins == MAX_ORIGINS)
        return tl_cli_usage(false, "at most %d --cors-origin", MAX_ORIGINS);
      else S.origins[S.n_origins++] = v;
      if (rc >= 0) return rc;
      continue;
    }
    if (S.eo.model_path != NULL) return tl_cli_usage(false, "one model only\n%s", usage_text);
    S.eo.model_path = a;
  }
  if (S.eo.model_path == NULL) return tl_cli_usage(false, "no model given\n%s", usage_text);
  if (S.api_key != NULL && key_file != NULL)
    return tl_cli_usage(false, "--api-key and --api-key-file exclude each other");
  if (key_file != NULL) {
    if ((rc = read_key_file(key_file, key_buf, sizeof key_buf)) >= 0) return rc;
    S.api_key = key_buf;
  }
  if (S.api_key != NULL && S.api_key[0] == '\0')
    return tl_cli_usage(false, "the API key is empty");
  S.api_key_len = S.api_key != NULL ? strlen(S.api_key) : 0;
  S.eo.mem_budget = mb << 20;
  S.max_body = (size_t)max_body;

  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  snprintf(port_text, sizeof port_text, "%u", port);
  if ((gai = getaddrinfo(host, port_text, &hints, &ai)) != 0)
    return tl_cli_fail(false, TL_ERR_IO, "--host %s: %s", host, gai_strerror(gai));
  memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  if (S.api_key == NULL && !loopback((const struct sockaddr *)&addr))
    fprintf(stderr, "tinylm serve: warning: listening on %s without --api-key: anyone who "
                    "reaches this address can use the model\n", host);

  /* SIGINT/SIGTERM (and the loader's SIGUSR1) are taken by sigwait in
   * this thread only: every thread started from here on blocks them. */
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  S.main_thread = pthread_self();

  flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  S.daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)(S.eo.parallel + S.eo.queue + 16),
      MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
      MHD_OPTION_END);
  if (S.daemon == NULL)
    return tl_cli_fail(false, TL_ERR_IO, "cannot listen on %s port %u: %s", host, port,
                       errno ? strerror(errno) : "libmicrohttpd refused");
  info = MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_BIND_PORT);
  printf("tinylm serve: listening on http://%s%s%s:%u\n", addr.ss_family == AF_INET6 ? "[" : "",
         host, addr.ss_family == AF_INET6 ? "]" : "", info != NULL ? info->port : port);
  if (!tl_cli_flush(stdout)) { /* nobody can learn the port: main reports the io error */
    MHD_stop_daemon(S.daemon);
    return TL_EXIT_FAILURE;
  }

  if (pthread_create(&loader, NULL, load, NULL) != 0) {
    MHD_stop_daemon(S.daemon);
    return tl_cli_fail(false, TL_ERR_WORKER_FAILURE, "cannot start the loading thread");
  }
  while (sigwait(&sigs, &sig) != 0 || (sig != SIGINT && sig != SIGTERM && sig != SIGUSR1)) {
  }
  /* Stop: refuse new requests, end the running ones (their jobs are
   * cancelled as their responses go), then close the engine. */
  atomic_store(&S.stopping, true);
  MHD_stop_daemon(S.daemon);
  pthread_join(loader, NULL);
  if (S.load_status != TL_OK)
    return tl_cli_fail(false, S.load_status, "%s", S.load_error);
  tl_srv_engine_close(atomic_load(&S.engine));
  fprintf(stderr, "tinylm serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  return TL_EXIT_OK;
}
