/* tinylm serve: an OpenAI-compatible HTTP server (docs/server.md) on
 * libmicrohttpd, one thread per connection. This file is the command, the
 * daemon and the routing; the request bodies are read by serve_request.c,
 * the generations run in serve_engine.c, and the response bodies and
 * events are written by serve_http.c.
 *
 * The socket is bound first (the listening line tells a test the port),
 * then the default model loads in a thread (every endpoint answers 503
 * "loading" meanwhile), while the main thread waits for SIGINT/SIGTERM.
 * Further models load on first use (serve_models.c). */
#define _GNU_SOURCE /* POLLRDHUP */
#include <arpa/inet.h>
#include <dirent.h>
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
#include "serve_embed.h"
#include "serve_engine.h"
#include "serve_guard.h"
#include "serve_http.h"
#include "serve_log.h"
#include "serve_page.h"
#include "serve_models.h"
#include "serve_request.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: tinylm serve MODEL.slm... [--models DIR] [--host H] [--port P]\n"
    "                    [--parallel N] [--queue N] [--ctx N]\n"
    "                    [--api-key KEY | --api-key-file F]\n"
    "                    [--cors-origin ORIGIN]... [--max-body-bytes N]\n"
    "                    [--receipt-dir DIR] [--mem-budget MB] [--drain-timeout S]\n"
    "                    [--no-shared-cache] [--header-timeout S] [--body-timeout S]\n"
    "                    [--max-conns N] [--max-conns-per-ip N] [--allow-host NAME]...\n"
    "                    [--escape-special]\n"
    "                    [--log-format text|json] [--lane scalar|fast] [-t N] [--mmap]\n"
    "  an OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions,\n"
    "  /v1/embeddings, /v1/models[/ID], /health, /health/live, /health/ready,\n"
    "  /props, /tokenize, /detokenize, /apply-template, /metrics, and a chat page\n"
    "  at / (docs/server.md)\n"
    "  (docs/server.md); same request and seed, same reply bytes at any load\n"
    "  MODEL.slm...      the models, each called by its file name without .slm;\n"
    "                    a request's \"model\" picks one (absent: the first)\n"
    "  --models DIR      every *.slm in DIR, in name order, where the flag\n"
    "                    stands among the models; repeatable\n"
    "  --host H          address to listen on (default 127.0.0.1; another than\n"
    "                    loopback without an API key is warned about)\n"
    "  --port P          0..65535 (default 8080; 0: any free port, printed)\n"
    "  --parallel N      sequence slots decoded together, 1..64 (default 4)\n"
    "  --queue N         requests waiting for a slot, 0..4096 (default 64);\n"
    "                    more are answered 503 with Retry-After\n"
    "  --ctx N           context tokens per slot (default: the model's, at most\n"
    "                    4096)\n"
    "  --api-key KEY     require Authorization: Bearer KEY (or X-Api-Key: KEY)\n"
    "  --api-key-file F  the keys in F, one a line (# comments, blank lines\n"
    "                    skipped); each key's requests share a prompt cache\n"
    "                    with that key's only\n"
    "  --no-shared-cache no prompt prefix reused from one request to another\n"
    "  --escape-special  special-token text in messages (<|im_end|>) as text,\n"
    "                    not control tokens\n"
    "  --header-timeout S  a request's headers must be in within S seconds\n"
    "                    (default 10), --body-timeout S its body within S more\n"
    "                    (default 30); else the connection is closed\n"
    "  --max-conns N     open connections at most (default 512, or --parallel +\n"
    "                    --queue + 64 when more)\n"
    "  --max-conns-per-ip N  from one address at most (default 32; 0: no cap)\n"
    "  --allow-host NAME without a key, the Host header must be a loopback\n"
    "                    name or --host; also NAME (\"*\": any); repeatable\n"
    "  --cors-origin O   allow browser requests from origin O (\"*\": any);\n"
    "                    repeatable\n"
    "  --max-body-bytes N  largest request body (default 8388608); more: 413\n"
    "  --receipt-dir DIR keep every choice's run receipt in DIR\n"
    "  --mem-budget MB   the loaded models' memory plans together stay within MB\n"
    "                    megabytes (default: the memory available); a model\n"
    "                    loads on first use, unloading the least recently used\n"
    "                    idle ones when it does not fit\n"
    "  --log-format F    the access log on stderr, one line per request: text\n"
    "                    (key=value, the default) or json\n"
    "  --drain-timeout S on SIGTERM, refuse new generations and give the ones\n"
    "                    accepted up to S seconds to finish, 0..3600 (default\n"
    "                    30; 0: stop at once)\n" TL_LANE_USAGE
    "  SIGINT stops the server at once, SIGTERM drains it first (exit 0)\n";

#define MAX_ORIGINS 32
#define MAX_KEYS 64
#define MAX_HOSTS 32

/* The one server of the process (signal handling is per process). */
static struct {
  struct MHD_Daemon *daemon;
  tl_srv_models *models;
  const char *default_path; /* the first model's file (/props) */
  atomic_bool ready; /* the default model is loaded */
  tl_srv_stats retired[TL_SRV_MAX_MODELS]; /* counters of unloaded engines */
  atomic_bool stopping;
  atomic_bool draining; /* SIGTERM: ready is 503, new generations too */
  atomic_uint_fast64_t in_flight; /* generation requests past the gate, not done */
  uint32_t drain_timeout;         /* seconds */
  tl_srv_engine_options eo;
  const char *keys[MAX_KEYS]; /* a key's index + 1 is its cache partition */
  size_t n_keys;
  const char *origins[MAX_ORIGINS], *hosts[MAX_HOSTS], *listen_host;
  size_t n_origins, n_hosts;
  double header_timeout, body_timeout;
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
  R_LIVE,
  R_READY,
  R_TOKENIZE,
  R_DETOKENIZE,
  R_TEMPLATE,
  R_METRICS,
  R_MODEL, /* /v1/models/{id} */
  R_PROPS,
  R_EMBEDDINGS,
  R_PAGE /* a file of the chat page */
} route_id;

static const struct route {
  const char *path, *method;
  route_id id;
} routes[] = {
    {"/v1/chat/completions", "POST", R_CHAT}, {"/v1/completions", "POST", R_COMPLETIONS},
    {"/v1/models", "GET", R_MODELS},          {"/health", "GET", R_HEALTH},
    {"/health/live", "GET", R_LIVE},          {"/health/ready", "GET", R_READY},
    {"/tokenize", "POST", R_TOKENIZE},        {"/detokenize", "POST", R_DETOKENIZE},
    {"/apply-template", "POST", R_TEMPLATE},  {"/metrics", "GET", R_METRICS},
    {"/props", "GET", R_PROPS},               {"/v1/embeddings", "POST", R_EMBEDDINGS},
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
  bool in_flight; /* counted in S.in_flight until completed */
  char id[25];      /* X-Request-Id */
  char method[16];
  char path[257];   /* at most 256 bytes of it */
  time_t when;
  double t0;
  unsigned status;  /* 0 until answered */
  bool has_tokens; /* a generation's or an embedding's counts below */
  uint32_t prompt_tokens, completion_tokens;
  uint32_t partition; /* the key's prompt cache partition (0: no key) */
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
  /* a draining server's clients reconnect (through a balancer: elsewhere) */
  if (atomic_load(&S.draining)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
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

/* The partition of the key given (its index + 1), else 0: every key is
 * compared whole, in time that depends on the keys' lengths only. */
static uint32_t key_partition(const char *given) {
  size_t n = strlen(given);
  uint32_t found = 0;
  for (size_t k = 0; k < S.n_keys; k++) {
    size_t len = strlen(S.keys[k]);
    unsigned char diff = (unsigned char)(n != len);
    for (size_t i = 0; i < len; i++) diff |= (unsigned char)(S.keys[k][i] ^ (i < n ? given[i] : 0));
    found |= (uint32_t)(k + 1) & (uint32_t)-(int32_t)(diff == 0);
  }
  return found;
}

/* Whether the request may go on; *partition its key's (0 without keys). */
static bool authorized(struct MHD_Connection *c, uint32_t *partition) {
  const char *a = header(c, MHD_HTTP_HEADER_AUTHORIZATION), *x = header(c, "X-Api-Key");
  *partition = 0;
  if (S.n_keys == 0) return true;
  if (a != NULL && strncasecmp(a, "Bearer ", 7) == 0) *partition = key_partition(a + 7);
  if (*partition == 0 && x != NULL) *partition = key_partition(x);
  return *partition != 0;
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

/* ---- the models (serve_models.h) ---- */

static tl_status engine_open(void *ctx, size_t i, const char *path, uint64_t budget,
                             void **out, uint64_t *bytes, char *err, size_t err_cap) {
  tl_srv_engine_options o = S.eo;
  tl_srv_engine *e = NULL;
  tl_srv_facts f;
  tl_status st;
  (void)ctx;
  (void)i;
  o.model_path = path;
  o.mem_budget = budget;
  if ((st = tl_srv_engine_open(&o, &e, err, err_cap)) != TL_OK) return st;
  tl_srv_engine_facts(e, &f);
  *out = e;
  *bytes = f.plan_bytes;
  return TL_OK;
}

static void stats_add(tl_srv_stats *a, const tl_srv_stats *b) {
  a->prompt_tokens += b->prompt_tokens;
  a->cached_tokens += b->cached_tokens;
  a->generated_tokens += b->generated_tokens;
  a->prompt_seconds += b->prompt_seconds;
  a->decode_seconds += b->decode_seconds;
  a->requests_done += b->requests_done;
  a->requests_cancelled += b->requests_cancelled;
  a->requests_failed += b->requests_failed;
  a->processing += b->processing;
  a->queued += b->queued;
  a->slots_busy += b->slots_busy;
  a->forward_batches += b->forward_batches;
  a->batched_tokens += b->batched_tokens;
  a->decode_step_seconds += b->decode_step_seconds;
  a->prefill_chunk_seconds += b->prefill_chunk_seconds;
  a->kv_used += b->kv_used;
  a->kv_capacity += b->kv_capacity;
}

/* An idle engine's counters live on in S.retired (/metrics never goes
 * back). */
static void engine_close(void *ctx, size_t i, void *handle) {
  tl_srv_stats st;
  (void)ctx;
  tl_srv_engine_stats(handle, &st);
  st.kv_used = st.kv_capacity = 0; /* a gauge of the engine, gone with it */
  stats_add(&S.retired[i], &st);
  tl_srv_engine_close(handle);
}

/* The model the body's "model" names (absent, or only one model: the
 * first), held for the request in *model. False: answered (404 for a
 * name no model has, 503 with Retry-After when it cannot fit beside the
 * models in use, 500 when it does not load). */
static bool take_model(struct MHD_Connection *c, const conn_ctx *cc, size_t *model,
                       tl_srv_engine **e, enum MHD_Result *answered) {
  json_t *doc = NULL, *v;
  tl_srv_error err;
  char msg[1024];
  bool busy;
  void *h;
  tl_status st;
  int i = 0;
  if (tl_srv_models_count(S.models) > 1 &&
      (doc = json_loadb(cc->body.p, cc->body.len, 0, NULL)) != NULL &&
      json_is_string(v = json_object_get(doc, "model"))) /* else the parse's 400 or the default */
    i = tl_srv_models_find(S.models, json_string_value(v));
  if (i < 0) {
    tl_srv_error_set(&err, 404, "invalid_request_error", "model", "model_not_found",
                     "The model '%.200s' does not exist (GET /v1/models lists them)",
                     json_string_value(json_object_get(doc, "model")));
    json_decref(doc);
    *answered = reply_error(c, &err);
    return false;
  }
  json_decref(doc);
  st = tl_srv_models_acquire(S.models, (size_t)i, &h, &busy, msg, sizeof msg);
  if (st != TL_OK) {
    if (busy)
      tl_srv_error_set(&err, 503, "server_error", "model", "model_busy", "%s", msg);
    else
      tl_srv_error_set(&err, 500, "server_error", "model", "model_load_failed", "%s",
                       msg[0] ? msg : tl_status_name(st));
    *answered = reply_json(c, (unsigned)err.status, tl_srv_error_body(&err), busy ? "1" : NULL, NULL);
    return false;
  }
  *model = (size_t)i;
  *e = h;
  return true;
}

/* ---- generation ---- */

/* Whether the client can still read its reply. A FIN alone comes both from
 * a client that half-closed after its request and from one that closed:
 * the caller then writes once (*probe_due), which a closed socket answers
 * with a reset, and a reset shows as a hang-up at the next look. */
static bool client_there(int fd, bool *probed, bool *probe_due) {
  tl_srv_peer p = tl_srv_peer_state(fd);
  *probe_due = p == TL_SRV_PEER_HALF && !*probed;
  *probed = *probed || *probe_due;
  return p != TL_SRV_PEER_GONE;
}

static int conn_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return i != NULL ? i->connect_fd : -1;
}

/* Waits (about 100 ms at most) for news of the unfinished choices and
 * takes it in. False when the server stops. */
static bool gather(tl_srv_gen *g) {
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
  return !atomic_load(&S.stopping);
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
  bool ended, held, probed; /* held: model is the registry's model S.models holds for it */
  size_t model;
  double last_sent;
} stream;

/* The token counts of a generation, for the access log. */
static void count_tokens(conn_ctx *cc, const tl_srv_gen *g) {
  cc->has_tokens = true;
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
    bool probe;
    if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
    if (!gather(&s->g) || !client_there(s->fd, &s->probed, &probe))
      return MHD_CONTENT_READER_END_WITH_ERROR;
    for (uint32_t i = 0; i < s->g.n; i++) {
      (void)tl_srv_stream_choice(&s->g, i, &s->out);
      finished = finished && s->g.choices[i].finished;
    }
    if (finished) {
      (void)tl_srv_stream_end(&s->g, &s->out);
      s->ended = true;
      count_tokens(s->cc, &s->g);
    }
    if (s->out.len == 0 && (probe || tl_now_s() - s->last_sent >= 2.0))
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
 * runs, release the jobs, then the model. */
static void stream_free(void *cls) {
  stream *s = cls;
  tl_srv_gen_free(&s->g);
  if (s->held) tl_srv_models_release(S.models, s->model);
  tl_srv_buf_free(&s->out);
  free(s);
}

static enum MHD_Result generate(struct MHD_Connection *c, bool chat, conn_ctx *cc, bool http11) {
  stream *s = calloc(1, sizeof *s);
  tl_srv_gen *g = s != NULL ? &s->g : NULL;
  tl_srv_engine *e;
  tl_srv_error err;
  tl_status st;
  enum MHD_Result ok;
  memset(&err, 0, sizeof err);
  if (s == NULL) return reply_json(c, 500, NULL, NULL, NULL);
  if (!take_model(c, cc, &s->model, &e, &ok)) {
    free(s);
    return ok;
  }
  s->held = true;
  g->engine = e;
  g->chat = chat;
  tl_srv_engine_facts(e, &g->facts);
  st = tl_srv_request_parse(chat ? TL_SRV_CHAT : TL_SRV_COMPLETION, (const uint8_t *)cc->body.p,
                            cc->body.len, g->facts.vocab, &g->req, &err);
  if (st != TL_OK) {
    stream_free(s);
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
    tl_srv_job_params p = {&g->req, &g->prompt, i, g->grammar, cc->partition};
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
  while (!all_done(g)) {
    bool stopping = !gather(g), probe, there = client_there(s->fd, &s->probed, &probe);
    /* nothing of the reply is sent yet: an interim response is the probe
     * (HTTP/1.0 has none: such a client's close is not seen) */
    if (probe && http11) (void)tl_srv_probe_interim(s->fd);
    if (stopping || !there) {
      stream_free(s); /* cancels */
      return stopping ? fail(c, 503, "server_error", "shutting_down", "the server is stopping")
                      : MHD_NO; /* the client is gone: close */
    }
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

/* Each model's entry of /v1/models, /health's models and /metrics, made
 * while the registry holds its engine open. */
typedef struct listing {
  json_t *list;
  tl_srv_stats total;
  uint32_t slots_idle;
  tl_srv_model_sample samples[TL_SRV_MAX_MODELS];
} listing;

/* ---- health and drain (docs/deploy.md) ---- */

static bool is_health(route_id id) { return id == R_HEALTH || id == R_LIVE || id == R_READY; }

/* The requests a drain refuses when new and waits for when accepted. */
static bool drains(route_id id) {
  return id == R_CHAT || id == R_COMPLETIONS || id == R_EMBEDDINGS;
}

/* Liveness: the process answers, loading, serving or draining. */
static enum MHD_Result live(struct MHD_Connection *c) {
  return reply_doc(c, 200, json_pack("{s:s}", "status", "live"));
}

/* Readiness: a new generation would be taken. */
static enum MHD_Result ready(struct MHD_Connection *c) {
  const char *why = !atomic_load(&S.ready)      ? "loading"
                    : atomic_load(&S.draining) ? "draining"
                                               : NULL;
  return reply_doc(c, why != NULL ? 503 : 200,
                   json_pack("{s:s}", "status", why != NULL ? why : "ready"));
}

/* SIGTERM with a drain timeout: readiness turns 503 and new generations
 * are refused, while the accepted ones (queued or running) finish, until
 * none is left, the timeout passes or another signal comes; then the
 * server stops as on SIGINT (what still runs is cancelled). Returns the
 * stop message's detail. */
static const char *drain(const sigset_t *sigs, char *detail, size_t cap) {
  const struct timespec tick = {0, 50 * 1000000L};
  double until = tl_now_s() + S.drain_timeout;
  uint64_t left;
  int sig = 0;
  atomic_store(&S.draining, true);
  fprintf(stderr, "tinylm serve: draining (SIGTERM): %llu requests to finish, at most %u s\n",
          (unsigned long long)atomic_load(&S.in_flight), S.drain_timeout);
  while ((left = atomic_load(&S.in_flight)) > 0 && tl_now_s() < until &&
         (sig = sigtimedwait(sigs, NULL, &tick)) <= 0) {
    (void)tl_srv_deadline_reap(tl_now_s()); /* slow clients are cut off meanwhile too */
  }
  if (left == 0) snprintf(detail, cap, "SIGTERM, drained");
  else if (sig > 0) snprintf(detail, cap, "SIGTERM, then %s: %llu requests cancelled",
                             sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "load failure",
                             (unsigned long long)left);
  else snprintf(detail, cap, "SIGTERM, drain timeout: %llu requests cancelled",
                (unsigned long long)left);
  return detail;
}

static void list_model(void *ctx, size_t i, const tl_srv_model_info *m) {
  listing *l = ctx;
  tl_srv_engine *e = m->handle;
  tl_srv_model_sample *x = &l->samples[i];
  tl_srv_facts f;
  struct stat sb;
  json_t *ext;
  x->name = m->name;
  x->loaded = e != NULL;
  x->loads = m->loads;
  x->unloads = m->unloads;
  x->stats = S.retired[i];
  if (stat(m->path, &sb) != 0) sb.st_mtime = 0;
  if (e != NULL) {
    tl_srv_stats st;
    tl_srv_engine_stats(e, &st);
    tl_srv_engine_facts(e, &f);
    stats_add(&x->stats, &st);
    l->slots_idle += f.parallel - st.slots_busy;
    ext = json_pack("{s:b,s:s,s:s,s:I,s:I,s:s,s:I}", "loaded", 1, "kind",
                    f.embedding ? "embedding" : "chat", "artifact_id", f.artifact_id,
                    "context", (json_int_t)f.context, "parallel", (json_int_t)f.parallel,
                    "profile", f.profile, "plan_bytes", (json_int_t)m->bytes);
  } else {
    ext = json_pack("{s:b}", "loaded", 0);
  }
  stats_add(&l->total, &x->stats);
  json_array_append_new(l->list, json_pack("{s:s,s:s,s:I,s:s,s:o}", "id", m->name, "object",
                                           "model", "created", (json_int_t)sb.st_mtime,
                                           "owned_by", "tinylm", "tinylm", ext));
}

/* l filled (its list NULL when out of memory). */
static void list_models(listing *l) {
  memset(l, 0, sizeof *l);
  if ((l->list = json_array()) != NULL) tl_srv_models_visit(S.models, list_model, l);
}

static enum MHD_Result health(struct MHD_Connection *c) {
  listing l;
  json_t *doc = NULL;
  if (!atomic_load(&S.ready)) return reply_doc(c, 503, json_pack("{s:s}", "status", "loading"));
  list_models(&l);
  if (l.list != NULL)
    doc = json_pack("{s:s,s:I,s:I,s:o}", "status", "ok", "slots_idle", (json_int_t)l.slots_idle,
                    "slots_processing", (json_int_t)l.total.slots_busy, "models", l.list);
  return reply_doc(c, 200, doc);
}

static enum MHD_Result models(struct MHD_Connection *c) {
  listing l;
  list_models(&l);
  return reply_doc(c, 200, l.list != NULL ? json_pack("{s:s,s:o}", "object", "list", "data",
                                                      l.list)
                                          : NULL);
}

/* GET /v1/models/{id}: that model's entry of /v1/models, else 404
 * model_not_found. */
static enum MHD_Result model(struct MHD_Connection *c, const char *url) {
  const char *id = url + strlen("/v1/models/");
  json_t *entry = NULL, *m;
  tl_srv_error err;
  listing l;
  size_t i;
  list_models(&l);
  if (l.list == NULL) return reply_json(c, 500, NULL, NULL, NULL);
  json_array_foreach(l.list, i, m) {
    if (strcmp(json_string_value(json_object_get(m, "id")), id) == 0) entry = json_incref(m);
  }
  json_decref(l.list);
  if (entry != NULL) return reply_doc(c, 200, entry);
  tl_srv_error_set(&err, 404, "invalid_request_error", "model", "model_not_found",
                   "the model '%.120s' does not exist (GET /v1/models lists them)", id);
  return reply_error(c, &err);
}

/* The artifact's sampling default for one value: null when it records
 * none. */
static json_t *default_or_null(bool has, double v) {
  return has ? json_real(v) : json_null();
}

/* GET /props: llama-server's shape, with what it means here, for the
 * default model (docs/server.md, Props). */
static enum MHD_Result props(struct MHD_Connection *c) {
  tl_srv_facts f;
  const tl_gen_defaults *d;
  tl_srv_engine *e;
  json_t *doc;
  char msg[1024];
  bool busy;
  void *h;
  tl_status st = tl_srv_models_acquire(S.models, 0, &h, &busy, msg, sizeof msg);
  if (st != TL_OK) {
    tl_srv_error err;
    tl_srv_error_set(&err, busy ? 503 : 500, "server_error", "model",
                     busy ? "model_busy" : "model_load_failed", "%s",
                     msg[0] ? msg : tl_status_name(st));
    return reply_json(c, (unsigned)err.status, tl_srv_error_body(&err), busy ? "1" : NULL, NULL);
  }
  e = h;
  tl_srv_engine_facts(e, &f);
  d = f.gen;
  doc = json_pack("{s:{s:I,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:I}},s:I,s:s,s:s,s:s,s:{s:b,s:b},"
                  "s:{s:s,s:s,s:I}}",
                  "default_generation_settings", "n_ctx", (json_int_t)f.context, "params",
                  "do_sample", d->has_do_sample ? json_boolean(d->do_sample) : json_null(),
                  "temperature", default_or_null(d->has_temperature, d->temperature), "top_k",
                  d->has_top_k ? json_integer(d->top_k) : json_null(), "top_p",
                  default_or_null(d->has_top_p, d->top_p), "min_p",
                  default_or_null(d->has_min_p, d->min_p), "repeat_penalty",
                  default_or_null(d->has_repeat_penalty, d->repeat_penalty), "n_predict",
                  (json_int_t)-1, "total_slots", (json_int_t)f.parallel, "model_path",
                  S.default_path, "model_alias", f.model_name, "build_info",
                  f.build_id, "modalities", "vision", 0, "audio", 0, "tinylm", "artifact_id",
                  f.artifact_id, "profile", f.profile, "queue", (json_int_t)f.queue);
  tl_srv_models_release(S.models, 0);
  return reply_doc(c, 200, doc);
}

/* A file of the chat page. */
static enum MHD_Result page(struct MHD_Connection *c, const tl_srv_page_file *p) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(p->len, (void *)p->data, MHD_RESPMEM_PERSISTENT);
  if (r != NULL) MHD_add_response_header(r, "Cache-Control", "no-cache");
  return queue(c, 200, r, p->type);
}

static enum MHD_Result metrics(struct MHD_Connection *c) {
  listing l;
  tl_srv_http_counts n = {atomic_load(&S.requests), atomic_load(&S.rejected)};
  char *text, *per_model, *all = NULL;
  struct MHD_Response *r;
  list_models(&l);
  json_decref(l.list);
  text = tl_srv_metrics_text(&l.total, &n);
  per_model = tl_srv_model_metrics_text(l.samples, tl_srv_models_count(S.models));
  if (text != NULL && per_model != NULL &&
      (all = realloc(text, strlen(text) + strlen(per_model) + 1)) != NULL) {
    strcat(all, per_model);
    text = NULL;
  }
  free(text);
  free(per_model);
  if ((text = all) == NULL) return reply_json(c, 500, NULL, NULL, NULL);
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

static enum MHD_Result text_tool(struct MHD_Connection *c, route_id id, const conn_ctx *cc) {
  static const tl_srv_kind kinds[] = {[R_TOKENIZE] = TL_SRV_TOKENIZE,
                                      [R_DETOKENIZE] = TL_SRV_DETOKENIZE,
                                      [R_TEMPLATE] = TL_SRV_APPLY_TEMPLATE};
  tl_srv_request q;
  tl_srv_prompt p;
  tl_srv_error err;
  tl_srv_facts f;
  tl_srv_engine *e;
  tl_status st;
  json_t *doc = NULL;
  size_t model;
  enum MHD_Result ok;
  memset(&err, 0, sizeof err);
  memset(&p, 0, sizeof p);
  if (!take_model(c, cc, &model, &e, &ok)) return ok;
  tl_srv_engine_facts(e, &f);
  st = tl_srv_request_parse(kinds[id], (const uint8_t *)cc->body.p, cc->body.len, f.vocab, &q,
                            &err);
  if (st != TL_OK) {
    tl_srv_models_release(S.models, model);
    return reply_failed(c, &err, st);
  }
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
  tl_srv_models_release(S.models, model);
  if (st != TL_OK) return reply_failed(c, &err, st);
  return reply_doc(c, 200, doc);
}

/* ---- embeddings ---- */

/* POST /v1/embeddings on an embedding model (serve_embed.h); any other
 * model is 400 invalid_value naming "model". */
static enum MHD_Result embeddings(struct MHD_Connection *c, conn_ctx *cc) {
  tl_srv_embed_request q;
  tl_srv_error err;
  tl_srv_facts f;
  tl_srv_engine *e;
  tl_status st = TL_OK;
  json_t *data = NULL, *doc = NULL;
  float *v = NULL;
  size_t model, tokens = 0;
  enum MHD_Result ok;
  memset(&err, 0, sizeof err);
  if (!take_model(c, cc, &model, &e, &ok)) return ok;
  tl_srv_engine_facts(e, &f);
  if (!f.embedding) {
    tl_srv_models_release(S.models, model);
    tl_srv_error_set(&err, 400, NULL, "model", "invalid_value",
                     "The model '%.120s' is not an embedding model (a Qwen3-Embedding "
                     "checkpoint converted by tinylm convert)",
                     f.model_name);
    return reply_error(c, &err);
  }
  st = tl_srv_embed_parse((const uint8_t *)cc->body.p, cc->body.len, f.vocab, f.hidden, &q, &err);
  if (st != TL_OK) {
    tl_srv_models_release(S.models, model);
    return reply_failed(c, &err, st);
  }
  data = json_array();
  v = malloc((size_t)f.hidden * sizeof *v);
  if (data == NULL || v == NULL) st = TL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == TL_OK && i < q.n; i++) {
    const tl_srv_embed_input *in = &q.inputs[i];
    tl_srv_prompt p;
    memset(&p, 0, sizeof p);
    if (in->text != NULL) st = tl_srv_prompt_text(e, in->text, in->len, &p, &err);
    if (st == TL_OK) {
      const uint32_t *ids = in->text != NULL ? p.ids : in->ids;
      size_t n = in->text != NULL ? p.n_ids : in->n_ids;
      st = tl_srv_embed(e, ids, n, q.dims, v, &err);
      tokens += n + 1;
    }
    if (st == TL_OK && json_array_append_new(data, tl_srv_embed_item(i, v, q.dims, q.base64)) != 0)
      st = TL_ERR_OUT_OF_MEMORY;
    tl_srv_prompt_free(&p);
  }
  if (st == TL_OK)
    doc = json_pack("{s:s,s:O,s:s,s:{s:I,s:I}}", "object", "list", "data", data, "model",
                    f.model_name, "usage", "prompt_tokens", (json_int_t)tokens, "total_tokens",
                    (json_int_t)tokens);
  /* the inputs embedded (all, or those before a failure): no completion */
  cc->has_tokens = true;
  cc->prompt_tokens = (uint32_t)tokens;
  json_decref(data);
  free(v);
  tl_srv_embed_request_free(&q);
  tl_srv_models_release(S.models, model);
  if (st == TL_ERR_OUT_OF_MEMORY && err.status == 0)
    tl_srv_error_set(&err, 500, "server_error", "", "internal", "out of memory");
  if (st != TL_OK) return reply_failed(c, &err, st);
  return reply_doc(c, 200, doc);
}

/* ---- the handler ---- */

/* The connection's receive deadline (serve_guard.h). */
static tl_srv_deadline *deadline_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i != NULL ? i->socket_context : NULL;
}

/* A keyless server's refusals of what a web page could send it (a key
 * already stops them: a page cannot send one without a preflight). */
static enum MHD_Result browser_check(struct MHD_Connection *c, const char *method, bool *refused) {
  char msg[200];
  const char *host = header(c, MHD_HTTP_HEADER_HOST);
  *refused = true;
  if (!tl_srv_host_allowed(host, S.listen_host, S.hosts, S.n_hosts)) {
    snprintf(msg, sizeof msg, "Host %.64s is not this server's name (a loopback name, --host, "
             "or --allow-host)", host);
    return fail(c, 403, "permission_error", "host_not_allowed", msg);
  }
  if (strcmp(method, "POST") == 0 &&
      !tl_srv_json_content_type(header(c, MHD_HTTP_HEADER_CONTENT_TYPE)))
    return fail(c, 415, "invalid_request_error", "unsupported_media_type",
                "the request body must be sent as Content-Type: application/json");
  *refused = false;
  return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  conn_ctx *cc = *con_cls;
  (void)cls;
  current = cc;
  if (cc == NULL) { /* the headers are in: refuse early what can be */
    const char *len = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t n;
    bool refused;
    enum MHD_Result r;
    tl_srv_deadline_set(deadline_of(c), tl_now_s(), S.body_timeout);
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
    if (!is_health(cc->route->id) && !authorized(c, &cc->partition))
      return fail(c, 401, "authentication_error", "invalid_api_key",
                  "a valid API key is required (Authorization: Bearer KEY or X-Api-Key)");
    if (S.n_keys == 0 && (r = browser_check(c, method, &refused), refused)) return r;
    if (atomic_load(&S.stopping))
      return fail(c, 503, "server_error", "shutting_down", "the server is stopping");
    if (!is_health(cc->route->id) && !atomic_load(&S.ready))
      return fail(c, 503, "server_error", "loading", "the model is loading");
    if (drains(cc->route->id)) {
      /* counted before the flag is read: a drain that saw none in flight
       * refuses this one (both atomics sequentially consistent) */
      atomic_fetch_add(&S.in_flight, 1);
      cc->in_flight = true;
      if (atomic_load(&S.draining))
        return fail(c, 503, "server_error", "shutting_down",
                    "the server is draining: send the request to another replica");
    }
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
  /* the request is in: what follows (its generation) has no deadline */
  tl_srv_deadline_set(deadline_of(c), 0, 0);
  if (cc->answered) return MHD_YES;
  cc->answered = true;
  if (cc->too_large) {
    char msg[128];
    snprintf(msg, sizeof msg, "the request body is over %zu bytes (--max-body-bytes)",
             S.max_body);
    return fail(c, 413, "invalid_request_error", "request_too_large", msg);
  }
  switch (cc->route->id) {
  case R_HEALTH: return health(c);
  case R_LIVE: return live(c);
  case R_READY: return ready(c);
  case R_MODELS: return models(c);
  case R_MODEL: return model(c, url);
  case R_PROPS: return props(c);
  case R_METRICS: return metrics(c);
  case R_CHAT: return generate(c, true, cc, strcmp(version, MHD_HTTP_VERSION_1_1) == 0);
  case R_COMPLETIONS:
    return generate(c, false, cc, strcmp(version, MHD_HTTP_VERSION_1_1) == 0);
  case R_EMBEDDINGS: return embeddings(c, cc);
  default: return text_tool(c, cc->route->id, cc);
  }
}

/* The request's access-log line on stderr. */
static void log_access(const conn_ctx *cc) {
  tl_srv_access a = {cc->when,   cc->id,         cc->method,       cc->path,
                     cc->status ? cc->status : 499, (tl_now_s() - cc->t0) * 1e3,
                     cc->has_tokens, cc->prompt_tokens, cc->completion_tokens};
  char *line = tl_srv_access_line(S.log_format, &a);
  if (line != NULL) fputs(line, stderr); /* one call: lines never interleave */
  free(line);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  conn_ctx *cc = *con_cls;
  (void)cls;
  (void)toe;
  current = NULL;
  /* a kept-alive connection's next request: its headers from now on */
  tl_srv_deadline_set(deadline_of(c), tl_now_s(), S.header_timeout);
  if (cc != NULL) {
    if (cc->in_flight) atomic_fetch_sub(&S.in_flight, 1);
    log_access(cc);
    tl_srv_buf_free(&cc->body);
    free(cc);
    *con_cls = NULL;
  }
}

static void connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                       enum MHD_ConnectionNotificationCode code) {
  (void)cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    *socket_ctx = tl_srv_deadline_open(conn_fd(c), tl_now_s(), S.header_timeout);
  else tl_srv_deadline_close(*socket_ctx);
}

/* ---- the command ---- */

static void print_name(void *ctx, size_t i, const tl_srv_model_info *m) {
  (void)ctx;
  printf("%s%s%s", i == 0 ? "tinylm serve: models " : ", ", m->name, i == 0 ? " (default)" : "");
}

/* The default model loads at start; the others on first use. */
static void *load(void *arg) {
  void *h = NULL;
  bool busy;
  (void)arg;
  S.load_status =
      tl_srv_models_acquire(S.models, 0, &h, &busy, S.load_error, sizeof S.load_error);
  if (S.load_status == TL_OK) {
    tl_srv_facts f;
    tl_srv_engine_facts(h, &f);
    atomic_store(&S.ready, true); /* before the line a client waits for */
    if (tl_srv_models_count(S.models) > 1) {
      tl_srv_models_visit(S.models, print_name, NULL);
      printf(" (the others load on first use)\n");
    }
    printf("tinylm serve: ready (%s, %u slots x %u tokens, lane %s, plan %.1f MB)\n",
           f.model_name, f.parallel, f.context, f.profile, (double)f.plan_bytes / 1e6);
    fflush(stdout);
    tl_srv_models_release(S.models, 0); /* f's strings were the engine's */
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

/* The keys of file f, one a line (its line end dropped; blank lines and
 * lines starting with '#' skipped), copied into buf as S.keys. */
static int read_key_file(const char *f, char *buf, size_t cap) {
  tl_file_view v;
  char err[512];
  size_t used = 0;
  int rc = -1;
  if (tl_file_open_view(f, &v, err, sizeof err) != TL_OK)
    return tl_cli_fail(false, TL_ERR_IO, "--api-key-file: %s", err);
  for (size_t at = 0, n; at < v.len && rc < 0; at += n + 1) {
    const char *line = (const char *)v.data + at;
    for (n = 0; at + n < v.len && line[n] != '\n'; n++) {
    }
    size_t len = n > 0 && line[n - 1] == '\r' ? n - 1 : n;
    if (len == 0 || line[0] == '#') continue;
    if (memchr(line, '\0', len) != NULL || len + 1 > cap - used || S.n_keys == MAX_KEYS)
      rc = tl_cli_usage(false, "--api-key-file %s: a key holds NUL, or more than %d keys or %zu "
                        "bytes in all", f, MAX_KEYS, cap);
    else {
      memcpy(buf + used, line, len);
      buf[used + len] = '\0';
      S.keys[S.n_keys++] = buf + used;
      used += len + 1;
    }
  }
  tl_file_close_view(&v);
  if (rc < 0 && S.n_keys == 0) rc = tl_cli_usage(false, "--api-key-file %s: no key in it", f);
  return rc;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every DIR/NAME.slm after paths[*n] (in name order; malloc'd, kept until
 * exit). -1, or the exit status of a failure. */
static int scan_models(const char *dir, const char **paths, size_t *n) {
  DIR *d = opendir(dir);
  struct dirent *de;
  size_t first = *n;
  if (d == NULL) return tl_cli_fail(false, TL_ERR_IO, "--models %s: %s", dir, strerror(errno));
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    char *p;
    if (len <= 4 || strcmp(de->d_name + len - 4, ".slm") != 0) continue;
    if (*n == TL_SRV_MAX_MODELS) {
      closedir(d);
      return tl_cli_usage(false, "at most %d models", TL_SRV_MAX_MODELS);
    }
    if ((p = malloc(strlen(dir) + len + 2)) == NULL) {
      closedir(d);
      return tl_cli_fail(false, TL_ERR_OUT_OF_MEMORY, "out of memory");
    }
    sprintf(p, "%s/%s", dir, de->d_name);
    paths[(*n)++] = p;
  }
  closedir(d);
  qsort(paths + first, *n - first, sizeof *paths, by_name);
  return -1;
}

int tl_cmd_serve(int argc, char **argv) {
  static char key_buf[65536];
  const char *key = NULL;
  uint32_t per_ip = 32, max_conns = 0, header_s = 10, body_s = 30;
  static const char *paths[TL_SRV_MAX_MODELS];
  const char *host = "127.0.0.1", *key_file = NULL;
  bool scanned = false;
  size_t n_paths = 0;
  tl_srv_loader engines = {engine_open, engine_close, NULL};
  char err[1024];
  uint32_t port = 8080;
  uint64_t mb = 0, max_body = 8u << 20;
  struct addrinfo hints, *ai = NULL;
  struct sockaddr_storage addr;
  const union MHD_DaemonInfo *info;
  pthread_t loader;
  sigset_t sigs;
  char port_text[8], detail[128];
  const char *how;
  int rc, sig = 0, gai;
  unsigned flags;

  memset(&S, 0, sizeof S);
  S.eo.lane = tl_lane_defaults();
  S.eo.parallel = 4;
  S.eo.queue = 64;
  S.drain_timeout = 30;
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
    if (strcmp(a, "--no-shared-cache") == 0) {
      S.eo.no_shared_cache = true;
      continue;
    }
    if (strcmp(a, "--escape-special") == 0) {
      S.eo.escape_special = true;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0') {
      if (strcmp(a, "--host") != 0 && strcmp(a, "--port") != 0 &&
          strcmp(a, "--parallel") != 0 && strcmp(a, "--queue") != 0 &&
          strcmp(a, "--ctx") != 0 && strcmp(a, "--api-key") != 0 &&
          strcmp(a, "--api-key-file") != 0 && strcmp(a, "--cors-origin") != 0 &&
          strcmp(a, "--max-body-bytes") != 0 && strcmp(a, "--receipt-dir") != 0 &&
          strcmp(a, "--mem-budget") != 0 && strcmp(a, "--models") != 0 &&
          strcmp(a, "--log-format") != 0 && strcmp(a, "--drain-timeout") != 0 &&
          strcmp(a, "--header-timeout") != 0 && strcmp(a, "--body-timeout") != 0 &&
          strcmp(a, "--max-conns") != 0 && strcmp(a, "--max-conns-per-ip") != 0 &&
          strcmp(a, "--allow-host") != 0)
        return tl_cli_usage(false, "unknown option '%s'\n%s", a, usage_text);
      if ((rc = tl_cli_value(false, argc, argv, &i, &v)) >= 0) return rc;
      if (strcmp(a, "--host") == 0) host = v;
      else if (strcmp(a, "--models") == 0) {
        scanned = true;
        rc = scan_models(v, paths, &n_paths);
      }
      else if (strcmp(a, "--port") == 0) rc = tl_cli_flag_u32(false, a, v, 0, 65535, &port);
      else if (strcmp(a, "--parallel") == 0)
        rc = tl_cli_flag_u32(false, a, v, 1, 64, &S.eo.parallel);
      else if (strcmp(a, "--queue") == 0) rc = tl_cli_flag_u32(false, a, v, 0, 4096, &S.eo.queue);
      else if (strcmp(a, "--ctx") == 0)
        rc = tl_cli_flag_u32(false, a, v, 1, UINT32_MAX, &S.eo.context);
      else if (strcmp(a, "--api-key") == 0) key = v;
      else if (strcmp(a, "--api-key-file") == 0) key_file = v;
      else if (strcmp(a, "--receipt-dir") == 0) S.eo.receipt_dir = v;
      else if (strcmp(a, "--log-format") == 0) {
        if (!tl_srv_log_format_parse(v, &S.log_format))
          return tl_cli_usage(false, "--log-format must be text or json, not '%s'", v);
      } else if (strcmp(a, "--mem-budget") == 0)
        rc = tl_cli_flag_u64(false, a, v, 1, UINT64_MAX >> 20, &mb);
      else if (strcmp(a, "--drain-timeout") == 0)
        rc = tl_cli_flag_u32(false, a, v, 0, 3600, &S.drain_timeout);
      else if (strcmp(a, "--max-body-bytes") == 0)
        rc = tl_cli_flag_u64(false, a, v, 1, (uint64_t)1 << 30, &max_body);
      else if (strcmp(a, "--header-timeout") == 0)
        rc = tl_cli_flag_u32(false, a, v, 1, 3600, &header_s);
      else if (strcmp(a, "--body-timeout") == 0) rc = tl_cli_flag_u32(false, a, v, 1, 3600, &body_s);
      else if (strcmp(a, "--max-conns") == 0) rc = tl_cli_flag_u32(false, a, v, 1, 65536, &max_conns);
      else if (strcmp(a, "--max-conns-per-ip") == 0)
        rc = tl_cli_flag_u32(false, a, v, 0, 65536, &per_ip);
      else if (strcmp(a, "--allow-host") == 0) {
        if (S.n_hosts == MAX_HOSTS) return tl_cli_usage(false, "at most %d --allow-host", MAX_HOSTS);
        S.hosts[S.n_hosts++] = v;
      }
      else if (S.n_origins == MAX_ORIGINS)
        return tl_cli_usage(false, "at most %d --cors-origin", MAX_ORIGINS);
      else S.origins[S.n_origins++] = v;
      if (rc >= 0) return rc;
      continue;
    }
    if (n_paths == TL_SRV_MAX_MODELS)
      return tl_cli_usage(false, "at most %d models", TL_SRV_MAX_MODELS);
    paths[n_paths++] = a;
  }
  if (n_paths == 0)
    return tl_cli_usage(false, "no model given%s\n%s", scanned ? " (no *.slm in --models)" : "",
                        usage_text);
  if (key != NULL && key_file != NULL)
    return tl_cli_usage(false, "--api-key and --api-key-file exclude each other");
  if (key_file != NULL && (rc = read_key_file(key_file, key_buf, sizeof key_buf)) >= 0) return rc;
  if (key != NULL && key[0] == '\0') return tl_cli_usage(false, "the API key is empty");
  if (key != NULL) S.keys[S.n_keys++] = key;
  if (max_conns == 0) /* well above what slots and queue hold */
    max_conns = S.eo.parallel + S.eo.queue + 64 > 512 ? S.eo.parallel + S.eo.queue + 64 : 512;
  else if (max_conns <= S.eo.parallel + S.eo.queue)
    return tl_cli_usage(false, "--max-conns %u leaves no room beside --parallel + --queue (%u)",
                        max_conns, S.eo.parallel + S.eo.queue);
  S.header_timeout = header_s;
  S.body_timeout = body_s;
  S.listen_host = host;
  if (tl_srv_models_create(paths, n_paths, mb << 20, &engines, &S.models, err, sizeof err) != TL_OK)
    return tl_cli_usage(false, "%s", err);
  S.default_path = paths[0];
  S.max_body = (size_t)max_body;

  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  snprintf(port_text, sizeof port_text, "%u", port);
  if ((gai = getaddrinfo(host, port_text, &hints, &ai)) != 0) {
    tl_srv_models_destroy(S.models);
    return tl_cli_fail(false, TL_ERR_IO, "--host %s: %s", host, gai_strerror(gai));
  }
  memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  if (S.n_keys == 0 && !loopback((const struct sockaddr *)&addr))
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
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      (unsigned)per_ip, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_NOTIFY_COMPLETED,
      completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, connection, NULL, MHD_OPTION_END);
  if (S.daemon == NULL) {
    tl_srv_models_destroy(S.models);
    return tl_cli_fail(false, TL_ERR_IO, "cannot listen on %s port %u: %s", host, port,
                       errno ? strerror(errno) : "libmicrohttpd refused");
  }
  info = MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_BIND_PORT);
  printf("tinylm serve: listening on http://%s%s%s:%u\n", addr.ss_family == AF_INET6 ? "[" : "",
         host, addr.ss_family == AF_INET6 ? "]" : "", info != NULL ? info->port : port);
  if (!tl_cli_flush(stdout)) { /* nobody can learn the port: main reports the io error */
    MHD_stop_daemon(S.daemon);
    tl_srv_models_destroy(S.models);
    return TL_EXIT_FAILURE;
  }

  if (pthread_create(&loader, NULL, load, NULL) != 0) {
    MHD_stop_daemon(S.daemon);
    tl_srv_models_destroy(S.models);
    return tl_cli_fail(false, TL_ERR_WORKER_FAILURE, "cannot start the loading thread");
  }
  /* between signals, every quarter second, the late connections go */
  for (;;) {
    struct timespec quarter = {0, 250000000L};
    sig = sigtimedwait(&sigs, NULL, &quarter);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGUSR1) break;
    (void)tl_srv_deadline_reap(tl_now_s());
  }
  how = sig == SIGINT ? "SIGINT" : "SIGTERM";
  if (sig == SIGTERM && S.drain_timeout > 0) how = drain(&sigs, detail, sizeof detail);
  /* Stop: refuse new requests, end the running ones (their jobs are
   * cancelled as their responses go), then close the engine. */
  atomic_store(&S.stopping, true);
  MHD_stop_daemon(S.daemon);
  pthread_join(loader, NULL);
  tl_srv_models_destroy(S.models);
  if (S.load_status != TL_OK) return tl_cli_fail(false, S.load_status, "%s", S.load_error);
  fprintf(stderr, "tinylm serve: stopped (%s)\n", how);
  return TL_EXIT_OK;
}
