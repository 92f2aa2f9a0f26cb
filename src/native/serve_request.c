/* The request bodies of `tinylm serve`: see serve_request.h and the wire
 * contract in docs/server.md. Order of the checks: UTF-8 (with the byte
 * offset), nesting depth (a pre-scan, before jansson allocates anything),
 * JSON syntax and duplicate keys (jansson, with line:column), then the
 * fields: unknown ones first, then each known one's type and range. */
#include "serve_request.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_compat.h"
#include "utf8.h"

#define MAX_DEPTH 64
/* Values (keys included) in one body: jansson spends up to ~250 bytes on
 * each ({} is an object with its hash table), so an 8 MiB body of [{},...]
 * would cost 700 MB; 2^18 values hold any real request (a detokenize list
 * of 262,143 ids, thousands of messages) in at most ~65 MB. */
#define MAX_VALUES (1 << 18)
#define MAX_TOKENS_MAX 2147483647LL
#define REPEAT_PENALTY_MAX 18446744073709551616.0 /* 2^64 */
/* What an integer literal past int64 at the top level of the body reads
 * as (jansson refuses such literals outright): below every field's range,
 * so it is refused by its field's own check. seed, whose range is uint64,
 * gets the literal's value from the pre-scan instead. */
#define BIG_INT_TEXT "-999"
#define BIG_INT_VALUE (-999)

typedef struct ctx {
  uint32_t vocab;
  tl_srv_error *e;
  bool big_seed; /* the top-level "seed" was a literal past int64 ... */
  uint64_t big_seed_value; /* ... that fits in uint64: its value */
} ctx;

/* Cuts s at its first byte that is not well-formed UTF-8: truncation
 * (snprintf, jansson's 160-byte error text) may split a character, and
 * the error goes out as JSON. */
static void utf8_cut(char *s) {
  size_t bad;
  if (tl_utf8_validate((const uint8_t *)s, strlen(s), &bad) != TL_OK) s[bad] = '\0';
}

void tl_srv_error_set(tl_srv_error *e, int status, const char *type, const char *param,
                      const char *code, const char *fmt, ...) {
  va_list ap;
  e->status = status;
  e->type = type != NULL        ? type
            : status == 401     ? "authentication_error"
            : status >= 500     ? "server_error"
                                : "invalid_request_error";
  snprintf(e->param, sizeof e->param, "%s", param != NULL ? param : "");
  snprintf(e->code, sizeof e->code, "%s", code != NULL ? code : "");
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  utf8_cut(e->param);
  utf8_cut(e->code);
  utf8_cut(e->message);
}

/* A 400 invalid_request_error. */
static tl_status fail(ctx *c, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tl_status fail(ctx *c, const char *param, const char *code, const char *fmt, ...) {
  char msg[sizeof c->e->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tl_srv_error_set(c->e, 400, NULL, param, code, "%s", msg);
  return TL_ERR_INVALID_ARGUMENT;
}

static tl_status oom(ctx *c) {
  tl_srv_error_set(c->e, 500, NULL, NULL, "internal", "out of memory reading the request");
  return TL_ERR_OUT_OF_MEMORY;
}

/* A parameter path ("messages[2].content[0].type"); va_list keeps the
 * compiler from judging the (intended) truncation of long client keys. */
typedef struct path {
  char s[sizeof ((tl_srv_error *)0)->param];
} path;
static path at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static path at(const char *fmt, ...) {
  path p;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p.s, sizeof p.s, fmt, ap);
  va_end(ap);
  return p;
}

/* The field, or NULL when absent or JSON null (OpenAI's "not given"). */
static json_t *field(const json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

/* Every key of obj must be one of names; prefix is obj's path ("" for the
 * body). A key holding NUL is never a known one. */
static tl_status only_keys(ctx *c, json_t *obj, const char *const *names, const char *prefix) {
  const char *key;
  size_t key_len;
  json_t *v;
  json_object_keylen_foreach(obj, key, key_len, v) {
    size_t i = 0;
    while (names[i] != NULL && !(strlen(names[i]) == key_len && memcmp(names[i], key, key_len) == 0))
      i++;
    if (names[i] == NULL) {
      path p = *prefix ? at("%s.%s", prefix, key) : at("%s", key);
      return fail(c, p.s, "unknown_parameter", "unknown field '%s'", p.s);
    }
  }
  return TL_OK;
}

static tl_status missing(ctx *c, const char *param) {
  return fail(c, param, "missing_required_parameter", "%s is required", param);
}

static tl_status want_type(ctx *c, const char *param, const char *what) {
  return fail(c, param, "invalid_type", "%s must be %s", param, what);
}

/* An optional integer in lo..hi (JSON integers only: 1.0 is refused). */
static tl_status get_int(ctx *c, const json_t *v, const char *param, long long lo, long long hi,
                         long long *out) {
  long long x;
  if (!json_is_integer(v)) return want_type(c, param, "an integer");
  x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail(c, param, "invalid_value", "%s must be an integer in %lld..%lld", param, lo, hi);
  *out = x;
  return TL_OK;
}

/* A number (integer or real) in the range range names: [lo, hi], or
 * (lo, hi] when lo_open. */
static tl_status get_num(ctx *c, const json_t *v, const char *param, double lo, double hi,
                         bool lo_open, const char *range, double *out) {
  double x;
  if (!json_is_number(v)) return want_type(c, param, "a number");
  x = json_number_value(v);
  if (x < lo || (lo_open && x == lo) || x > hi)
    return fail(c, param, "invalid_value", "%s must be a number in %s", param, range);
  *out = x;
  return TL_OK;
}

static tl_status get_bool(ctx *c, const json_t *root, const char *key, bool *out) {
  json_t *v = field(root, key);
  if (v == NULL) return TL_OK;
  if (!json_is_boolean(v)) return want_type(c, key, "a boolean");
  *out = json_is_true(v);
  return TL_OK;
}

/* Fields accepted for their type only (OpenAI's, harmless here). */
static tl_status ignored(ctx *c, const json_t *root, const char *key, json_type type,
                         const char *what) {
  json_t *v = field(root, key);
  if (v == NULL || json_typeof(v) == type ||
      (type == JSON_TRUE && json_typeof(v) == JSON_FALSE))
    return TL_OK;
  return want_type(c, key, what);
}

static char *copy_bytes(const char *s, size_t len) {
  char *d = malloc(len + 1);
  if (d != NULL) {
    memcpy(d, s, len);
    d[len] = '\0';
  }
  return d;
}

/* ---- the pre-scan ---- */

/* Whether t[0..n) is a JSON integer literal past int64; a positive one
 * that fits in uint64 also gives *u. */
static bool big_integer(const uint8_t *t, size_t n, bool *fits_u64, uint64_t *u) {
  bool neg = n > 0 && t[0] == '-';
  size_t i = neg;
  uint64_t v = 0;
  bool over = false;
  if (i == n || (t[i] == '0' && n - i > 1)) return false; /* not one: jansson says why */
  for (; i < n; i++) {
    if (t[i] < '0' || t[i] > '9') return false;
    if (v > (UINT64_MAX - (t[i] - '0')) / 10) over = true;
    else v = v * 10 + (t[i] - '0');
  }
  *fits_u64 = !neg && !over;
  *u = v;
  if (over) return true;
  return neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX;
}

/* Refuses nesting deeper than MAX_DEPTH and more than MAX_VALUES values
 * (skipping strings, so brackets in text do not count) before jansson
 * allocates anything, and rewrites top-level integer literals past int64
 * (see BIG_INT_TEXT) in a copy (*copy, NULL when none was needed). The
 * rewrite keeps every byte offset, so jansson's line:column still points
 * into the client's body. */
static tl_status prescan(ctx *c, const uint8_t *b, size_t len, uint8_t **copy) {
  size_t depth = 0, values = 0, key = 0, key_len = 0, i;
  *copy = NULL;
  for (i = 0; i < len && depth <= MAX_DEPTH && values <= MAX_VALUES; i++) {
    uint8_t ch = b[i];
    if (ch == '"') {
      size_t start = ++i;
      while (i < len && b[i] != '"') i += b[i] == '\\' ? 2 : 1;
      if (depth == 1 && i <= len) {
        key = start; /* in a valid body, the last string before a top-level value is its key */
        key_len = (i < len ? i : len) - start;
      }
      values++; /* a key or a value: each costs jansson an allocation */
    } else if (ch == '[' || ch == '{') {
      depth++;
      values++;
    } else if (ch == ']' || ch == '}') {
      if (depth > 0) depth--;
    } else if (ch == 't' || ch == 'f' || ch == 'n') { /* true, false, null */
      values++;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      size_t j = i;
      bool fits;
      uint64_t u;
      values++;
      while (j < len && strchr("+-.eE0123456789", b[j]) != NULL && b[j] != '\0') j++;
      if (depth == 1 && big_integer(b + i, j - i, &fits, &u)) {
        if (*copy == NULL) {
          *copy = malloc(len);
          if (*copy == NULL) return oom(c);
          memcpy(*copy, b, len);
        }
        memset(*copy + i, ' ', j - i);
        memcpy(*copy + i, BIG_INT_TEXT, strlen(BIG_INT_TEXT));
        if (fits && key_len == 4 && memcmp(b + key, "seed", 4) == 0) {
          c->big_seed = true;
          c->big_seed_value = u;
        }
      }
      i = j - 1;
    }
  }
  if (depth <= MAX_DEPTH && values <= MAX_VALUES) return TL_OK;
  free(*copy); /* a rewrite before the fault */
  *copy = NULL;
  if (depth > MAX_DEPTH)
    return fail(c, "", "invalid_json", "the JSON nests deeper than %d levels (byte offset %zu)",
                MAX_DEPTH, i - 1);
  tl_srv_error_set(c->e, 413, NULL, "", "request_too_large",
                   "the body holds more than %d JSON values (byte offset %zu)", MAX_VALUES, i - 1);
  return TL_ERR_INVALID_ARGUMENT;
}

/* ---- the conversation (chat, apply-template) ---- */

static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
enum { ROLE_SYSTEM, ROLE_DEVELOPER, ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL };

/* content: a string, or an array of {"type": "text", "text": ...} parts,
 * joined in order. A new string. */
static tl_status read_content(ctx *c, json_t *v, const char *param, json_t **out) {
  static const char *const part_keys[] = {"type", "text", NULL};
  size_t total = 0, i, n;
  json_t *part;
  char *buf;
  if (json_is_string(v)) {
    *out = json_stringn(json_string_value(v), json_string_length(v));
    return *out != NULL ? TL_OK : oom(c);
  }
  if (!json_is_array(v))
    return want_type(c, param, "a string, an array of text parts or null");
  json_array_foreach(v, i, part) {
    path p = at("%s[%zu]", param, i);
    path pt = at("%s.type", p.s), px = at("%s.text", p.s);
    json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
    tl_status st;
    if (!json_is_object(part)) return want_type(c, p.s, "an object {\"type\": \"text\", \"text\": ...}");
    if (type == NULL) return missing(c, pt.s);
    if (!json_is_string(type)) return want_type(c, pt.s, "a string");
    if (strcmp(json_string_value(type), "text") != 0 || json_string_length(type) != 4)
      return fail(c, pt.s, "unsupported_value", "%s: only \"text\" parts are supported", pt.s);
    if ((st = only_keys(c, part, part_keys, p.s)) != TL_OK) return st;
    if (text == NULL) return missing(c, px.s);
    if (!json_is_string(text)) return want_type(c, px.s, "a string");
    total += json_string_length(text);
  }
  buf = malloc(total + 1);
  if (buf == NULL) return oom(c);
  n = 0;
  json_array_foreach(v, i, part) {
    json_t *text = json_object_get(part, "text");
    memcpy(buf + n, json_string_value(text), json_string_length(text));
    n += json_string_length(text);
  }
  *out = json_stringn(buf, n);
  free(buf);
  return *out != NULL ? TL_OK : oom(c);
}

/* An assistant's tool_calls: [{"id"?, "type"?: "function", "function":
 * {"name", "arguments" (a string, or an object)}}], kept as given. */
static tl_status read_tool_calls(ctx *c, json_t *calls, const char *param) {
  static const char *const call_keys[] = {"id", "type", "function", NULL};
  static const char *const fn_keys[] = {"name", "arguments", NULL};
  size_t i;
  json_t *call;
  if (!json_is_array(calls)) return want_type(c, param, "an array");
  json_array_foreach(calls, i, call) {
    path p = at("%s[%zu]", param, i);
    path pid = at("%s.id", p.s), pt = at("%s.type", p.s), pf = at("%s.function", p.s);
    path pn = at("%s.name", pf.s), pa = at("%s.arguments", pf.s);
    json_t *fn, *v;
    tl_status st;
    if (!json_is_object(call)) return want_type(c, p.s, "an object");
    if ((st = only_keys(c, call, call_keys, p.s)) != TL_OK) return st;
    if ((v = field(call, "id")) != NULL && !json_is_string(v)) return want_type(c, pid.s, "a string");
    if ((v = field(call, "type")) != NULL) {
      if (!json_is_string(v)) return want_type(c, pt.s, "a string");
      if (strcmp(json_string_value(v), "function") != 0 || json_string_length(v) != 8)
        return fail(c, pt.s, "unsupported_value", "%s: only \"function\" tool calls are supported",
                    pt.s);
    }
    if ((fn = field(call, "function")) == NULL) return missing(c, pf.s);
    if (!json_is_object(fn)) return want_type(c, pf.s, "an object {\"name\", \"arguments\"}");
    if ((st = only_keys(c, fn, fn_keys, pf.s)) != TL_OK) return st;
    if ((v = field(fn, "name")) == NULL) return missing(c, pn.s);
    if (!json_is_string(v)) return want_type(c, pn.s, "a string");
    if ((v = field(fn, "arguments")) == NULL) return missing(c, pa.s);
    if (!json_is_string(v) && !json_is_object(v))
      return want_type(c, pa.s, "a string (JSON text) or an object");
  }
  return TL_OK;
}

/* One message, appended to msgs as the template reads it: role
 * (developer becomes system), content (a string; an assistant's null
 * beside tool_calls becomes ""), then name, tool_calls, tool_call_id. */
static tl_status read_message(ctx *c, json_t *m, size_t i, json_t *msgs) {
  static const char *const keys[] = {"role", "content", "name", "tool_calls", "tool_call_id", NULL};
  path p = at("messages[%zu]", i);
  path pr = at("%s.role", p.s), pc = at("%s.content", p.s), pn = at("%s.name", p.s);
  path ptc = at("%s.tool_calls", p.s), pid = at("%s.tool_call_id", p.s);
  json_t *role, *content, *name, *calls, *call_id, *msg, *text = NULL;
  size_t r = 0;
  tl_status st;
  if (!json_is_object(m)) return want_type(c, p.s, "an object {\"role\", \"content\"}");
  if ((st = only_keys(c, m, keys, p.s)) != TL_OK) return st;
  if ((role = field(m, "role")) == NULL) return missing(c, pr.s);
  if (!json_is_string(role)) return want_type(c, pr.s, "a string");
  while (roles[r] != NULL && !(strcmp(roles[r], json_string_value(role)) == 0 &&
                               strlen(roles[r]) == json_string_length(role)))
    r++;
  if (roles[r] == NULL)
    return fail(c, pr.s, "invalid_value",
                "%s must be one of system, developer, user, assistant, tool", pr.s);
  if ((name = field(m, "name")) != NULL && !json_is_string(name))
    return want_type(c, pn.s, "a string");
  if ((call_id = field(m, "tool_call_id")) != NULL && !json_is_string(call_id))
    return want_type(c, pid.s, "a string");
  if ((calls = field(m, "tool_calls")) != NULL) {
    if (r != ROLE_ASSISTANT)
      return fail(c, ptc.s, "invalid_value", "%s: only an assistant message has tool_calls", ptc.s);
    if ((st = read_tool_calls(c, calls, ptc.s)) != TL_OK) return st;
  }
  content = field(m, "content");
  if (content == NULL) {
    if (r != ROLE_ASSISTANT || calls == NULL || json_array_size(calls) == 0) {
      if (json_object_get(m, "content") == NULL) return missing(c, pc.s);
      return fail(c, pc.s, "invalid_value",
                  "%s may be null only in an assistant message with tool_calls", pc.s);
    }
    text = json_string("");
    if (text == NULL) return oom(c);
  } else if ((st = read_content(c, content, pc.s, &text)) != TL_OK) {
    return st;
  }
  msg = json_object();
  if (msg == NULL || json_array_append_new(msgs, msg) != 0 ||
      json_object_set_new(msg, "role", json_string(roles[r == ROLE_DEVELOPER ? ROLE_SYSTEM : r])) !=
          0) {
    json_decref(text);
    return oom(c);
  }
  if (json_object_set_new(msg, "content", text) != 0 || /* takes text even when it fails */
      (name != NULL && json_object_set(msg, "name", name) != 0) ||
      (calls != NULL && json_object_set(msg, "tool_calls", calls) != 0) ||
      (call_id != NULL && json_object_set(msg, "tool_call_id", call_id) != 0))
    return oom(c);
  return TL_OK;
}

/* tools: [{"type": "function", "function": {"name", "description"?,
 * "parameters"?, "strict"?}}], kept as given (the template prints them);
 * names unique, so a call names one tool. */
static tl_status read_tools(ctx *c, json_t *tools) {
  static const char *const tool_keys[] = {"type", "function", NULL};
  static const char *const fn_keys[] = {"name", "description", "parameters", "strict", NULL};
  size_t i;
  json_t *tool;
  if (!json_is_array(tools)) return want_type(c, "tools", "an array");
  json_array_foreach(tools, i, tool) {
    path p = at("tools[%zu]", i);
    path pt = at("%s.type", p.s), pf = at("%s.function", p.s);
    path pn = at("%s.name", pf.s), pd = at("%s.description", pf.s), pp = at("%s.parameters", pf.s);
    path ps = at("%s.strict", pf.s);
    json_t *type, *fn, *v;
    tl_status st;
    if (!json_is_object(tool)) return want_type(c, p.s, "an object");
    if ((type = field(tool, "type")) == NULL) return missing(c, pt.s);
    if (!json_is_string(type)) return want_type(c, pt.s, "a string");
    if (strcmp(json_string_value(type), "function") != 0 || json_string_length(type) != 8)
      return fail(c, pt.s, "unsupported_value", "%s: only \"function\" tools are supported", pt.s);
    if ((st = only_keys(c, tool, tool_keys, p.s)) != TL_OK) return st;
    if ((fn = field(tool, "function")) == NULL) return missing(c, pf.s);
    if (!json_is_object(fn)) return want_type(c, pf.s, "an object {\"name\", ...}");
    if ((st = only_keys(c, fn, fn_keys, pf.s)) != TL_OK) return st;
    if ((v = field(fn, "name")) == NULL) return missing(c, pn.s);
    if (!json_is_string(v)) return want_type(c, pn.s, "a string");
    if (json_string_length(v) == 0) return fail(c, pn.s, "invalid_value", "%s is empty", pn.s);
    for (size_t k = 0; k < i; k++) {
      json_t *other = json_object_get(json_object_get(json_array_get(tools, k), "function"), "name");
      if (json_equal(other, v))
        return fail(c, pn.s, "invalid_value", "%s: tools[%zu] has the same name", pn.s, k);
    }
    if ((v = field(fn, "description")) != NULL && !json_is_string(v))
      return want_type(c, pd.s, "a string");
    if ((v = field(fn, "parameters")) != NULL && !json_is_object(v))
      return want_type(c, pp.s, "an object (a JSON schema)");
    if ((v = field(fn, "strict")) != NULL && !json_is_boolean(v))
      return want_type(c, ps.s, "a boolean");
  }
  return TL_OK;
}

/* tool_choice: "none", "auto", "required" or {"type": "function",
 * "function": {"name": N}} naming one of tools (checked by read_tools). */
static tl_status read_tool_choice(ctx *c, json_t *choice, json_t *tools, tl_srv_request *r) {
  static const char *const choice_keys[] = {"type", "function", NULL};
  static const char *const fn_keys[] = {"name", NULL};
  static const char *const words[] = {"auto", "none", "required"};
  json_t *type, *fn, *name;
  size_t n_tools = json_array_size(tools), i;
  tl_status st;
  if (json_is_string(choice)) {
    for (i = 0; i < 3; i++)
      if (strcmp(json_string_value(choice), words[i]) == 0 &&
          json_string_length(choice) == strlen(words[i]))
        break;
    if (i == 3)
      return fail(c, "tool_choice", "invalid_value",
                  "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": "
                  "\"function\", \"function\": {\"name\": ...}}");
    r->tool_choice = i == 0 ? TL_SRV_TOOLS_AUTO : i == 1 ? TL_SRV_TOOLS_NONE : TL_SRV_TOOLS_REQUIRED;
    if (r->tool_choice == TL_SRV_TOOLS_REQUIRED && n_tools == 0)
      return fail(c, "tool_choice", "invalid_value",
                  "tool_choice \"required\" needs at least one tool in tools");
    return TL_OK;
  }
  if (!json_is_object(choice))
    return want_type(c, "tool_choice", "a string or an object {\"type\": \"function\", ...}");
  if ((type = field(choice, "type")) == NULL) return missing(c, "tool_choice.type");
  if (!json_is_string(type)) return want_type(c, "tool_choice.type", "a string");
  if (strcmp(json_string_value(type), "function") != 0 || json_string_length(type) != 8)
    return fail(c, "tool_choice.type", "unsupported_value",
                "tool_choice.type: only \"function\" is supported");
  if ((st = only_keys(c, choice, choice_keys, "tool_choice")) != TL_OK) return st;
  if ((fn = field(choice, "function")) == NULL) return missing(c, "tool_choice.function");
  if (!json_is_object(fn)) return want_type(c, "tool_choice.function", "an object {\"name\"}");
  if ((st = only_keys(c, fn, fn_keys, "tool_choice.function")) != TL_OK) return st;
  if ((name = field(fn, "name")) == NULL) return missing(c, "tool_choice.function.name");
  if (!json_is_string(name)) return want_type(c, "tool_choice.function.name", "a string");
  for (i = 0; i < n_tools; i++)
    if (json_equal(json_object_get(json_object_get(json_array_get(tools, i), "function"), "name"),
                   name))
      break;
  if (i == n_tools)
    return fail(c, "tool_choice.function.name", "invalid_value",
                "tool_choice names the function '%.64s', which is not in tools",
                json_string_value(name));
  r->tool_choice = TL_SRV_TOOLS_NAMED;
  r->forced_tool = (uint32_t)i;
  return TL_OK;
}

/* reasoning_effort (OpenAI's) as Qwen3's switch: "none" and "minimal"
 * think not, the others do (Qwen3 has no degrees of effort). *on: the
 * switch, or NULL when the field is absent. */
static tl_status read_effort(ctx *c, json_t *root, json_t *thinking, json_t **on) {
  static const char *const off[] = {"none", "minimal"}, *const yes[] = {"low", "medium", "high"};
  json_t *v = field(root, "reasoning_effort");
  const char *e;
  int want = -1;
  *on = NULL;
  if (v == NULL) return TL_OK;
  if (!json_is_string(v)) return want_type(c, "reasoning_effort", "a string");
  e = json_string_value(v);
  for (size_t i = 0; i < 2; i++) if (strcmp(e, off[i]) == 0) want = 0;
  for (size_t i = 0; i < 3; i++) if (strcmp(e, yes[i]) == 0) want = 1;
  if (want < 0 || strlen(e) != json_string_length(v))
    return fail(c, "reasoning_effort", "invalid_value",
                "reasoning_effort must be \"none\", \"minimal\" (thinking off), \"low\", "
                "\"medium\" or \"high\" (thinking on)");
  if (thinking != NULL && json_is_true(thinking) != (want == 1))
    return fail(c, "reasoning_effort", "invalid_value",
                "reasoning_effort \"%s\" turns thinking %s, chat_template_kwargs.enable_thinking "
                "says %s: give one, or make them agree", e, want ? "on" : "off",
                json_is_true(thinking) ? "true" : "false");
  *on = json_boolean(want == 1);
  return *on != NULL ? TL_OK : oom(c);
}

/* messages, tools, tool_choice, chat_template_kwargs, reasoning_effort ->
 * r->conversation (and r->tools). */
static tl_status read_conversation(ctx *c, json_t *root, tl_srv_request *r) {
  static const char *const kwargs_keys[] = {"enable_thinking", NULL};
  json_t *msgs = field(root, "messages"), *tools = field(root, "tools");
  json_t *choice = field(root, "tool_choice"), *kwargs = field(root, "chat_template_kwargs");
  json_t *conv = NULL, *out_msgs, *m, *thinking = NULL, *effort = NULL;
  size_t i;
  tl_status st = TL_OK;
  if (msgs == NULL) return missing(c, "messages");
  if (!json_is_array(msgs)) return want_type(c, "messages", "an array");
  if (json_array_size(msgs) == 0)
    return fail(c, "messages", "invalid_value", "messages must hold at least one message");
  if (tools != NULL && (st = read_tools(c, tools)) != TL_OK) return st;
  if (choice != NULL && (st = read_tool_choice(c, choice, tools, r)) != TL_OK) return st;
  if (kwargs != NULL) {
    if (!json_is_object(kwargs)) return want_type(c, "chat_template_kwargs", "an object");
    if ((st = only_keys(c, kwargs, kwargs_keys, "chat_template_kwargs")) != TL_OK) return st;
    thinking = field(kwargs, "enable_thinking");
    if (thinking != NULL && !json_is_boolean(thinking))
      return want_type(c, "chat_template_kwargs.enable_thinking", "a boolean");
  }
  if ((st = read_effort(c, root, thinking, &effort)) != TL_OK) return st;
  if (effort != NULL) thinking = effort;
  if ((conv = json_object()) == NULL || (out_msgs = json_array()) == NULL ||
      json_object_set_new(conv, "messages", out_msgs) != 0) {
    json_decref(conv);
    json_decref(effort);
    return oom(c);
  }
  json_array_foreach(msgs, i, m) {
    if ((st = read_message(c, m, i, out_msgs)) != TL_OK) break;
  }
  r->has_tools = json_array_size(tools) > 0 && r->tool_choice != TL_SRV_TOOLS_NONE;
  if (st == TL_OK && ((r->has_tools && json_object_set(conv, "tools", tools) != 0) ||
                      (thinking != NULL && json_object_set(conv, "enable_thinking", thinking) != 0)))
    st = oom(c);
  if (st == TL_OK) {
    r->conversation = json_dumps(conv, JSON_COMPACT);
    if (r->conversation == NULL) st = oom(c);
    else r->conversation_len = strlen(r->conversation);
  }
  if (st == TL_OK && r->has_tools) {
    r->tools = json_dumps(tools, JSON_COMPACT);
    if (r->tools == NULL) st = oom(c);
    else r->tools_len = strlen(r->tools);
  }
  json_decref(conv);
  json_decref(effort);
  return st;
}

/* ---- generation fields (chat, completion) ---- */

static tl_status read_stop(ctx *c, json_t *v, tl_srv_request *r) {
  size_t n = json_is_string(v) ? 1 : json_array_size(v);
  if (!json_is_string(v) && !json_is_array(v))
    return want_type(c, "stop", "a string or an array of strings");
  if (n < 1 || n > TL_SRV_MAX_STOPS)
    return fail(c, "stop", "invalid_value", "stop must hold 1..%d strings", TL_SRV_MAX_STOPS);
  for (size_t i = 0; i < n; i++) {
    json_t *s = json_is_string(v) ? v : json_array_get(v, i);
    path p = json_is_string(v) ? at("stop") : at("stop[%zu]", i);
    if (!json_is_string(s)) return want_type(c, p.s, "a string");
    if (json_string_length(s) < 1 || json_string_length(s) > TL_SRV_MAX_STOP_BYTES)
      return fail(c, p.s, "invalid_value", "%s must be a non-empty string of at most %d bytes", p.s,
                  TL_SRV_MAX_STOP_BYTES);
    r->stops[i] = copy_bytes(json_string_value(s), json_string_length(s));
    if (r->stops[i] == NULL) return oom(c);
    r->stop_lens[i] = json_string_length(s);
    r->n_stops = i + 1;
  }
  return TL_OK;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The bias entries of ids, in id order. */
static void sort_biases(uint32_t *ids, double *bias, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
      uint32_t t = ids[j];
      double b = bias[j];
      ids[j] = ids[j - 1];
      bias[j] = bias[j - 1];
      ids[j - 1] = t;
      bias[j - 1] = b;
    }
}

/* logit_bias {"id": bias}: -100 bans the id (docs/sampler.md S-2), 0 does
 * nothing, any other value in [-100, 100] is added to its logit (S-4a). */
static tl_status read_logit_bias(ctx *c, json_t *v, tl_srv_request *r) {
  const char *key;
  size_t key_len, n = 0, nb = 0;
  json_t *bias;
  if (!json_is_object(v)) return want_type(c, "logit_bias", "an object {\"token id\": bias}");
  if (json_object_size(v) > TL_SRV_MAX_BANS)
    return fail(c, "logit_bias", "invalid_value", "logit_bias holds at most %d entries",
                TL_SRV_MAX_BANS);
  r->ban = malloc((json_object_size(v) + 1) * sizeof *r->ban);
  r->bias_ids = malloc((json_object_size(v) + 1) * sizeof *r->bias_ids);
  r->bias = malloc((json_object_size(v) + 1) * sizeof *r->bias);
  if (r->ban == NULL || r->bias_ids == NULL || r->bias == NULL) return oom(c);
  json_object_keylen_foreach(v, key, key_len, bias) {
    uint64_t id = 0;
    double x;
    bool canonical = key_len >= 1 && key_len <= 10 && !(key[0] == '0' && key_len > 1);
    for (size_t i = 0; canonical && i < key_len; i++) {
      canonical = key[i] >= '0' && key[i] <= '9';
      id = id * 10 + (uint64_t)(key[i] - '0');
    }
    if (!canonical || id >= c->vocab)
      return fail(c, "logit_bias", "invalid_value",
                  "logit_bias keys must be token ids in decimal below the vocabulary size %u "
                  "(got \"%.40s\")",
                  c->vocab, key);
    if (!json_is_number(bias)) return want_type(c, "logit_bias", "an object of numbers");
    x = json_number_value(bias);
    if (x < -100 || x > 100)
      return fail(c, "logit_bias", "invalid_value", "logit_bias values must be in [-100, 100]");
    if (x == -100) {
      r->ban[n++] = (uint32_t)id;
    } else if (x != 0) {
      r->bias_ids[nb] = (uint32_t)id;
      r->bias[nb++] = x;
    }
  }
  /* unique already: keys are canonical decimals and duplicate keys were
   * refused, so one id has one key */
  qsort(r->ban, n, sizeof *r->ban, cmp_u32);
  r->n_ban = n;
  sort_biases(r->bias_ids, r->bias, nb);
  r->n_bias = nb;
  return TL_OK;
}

/* The sampling and stopping fields chat and completion share. */
static tl_status read_generation(ctx *c, json_t *root, tl_srv_request *r) {
  static const char *const stream_keys[] = {"include_usage", NULL};
  json_t *v;
  long long x;
  tl_status st = TL_OK;
  if ((v = field(root, "temperature")) != NULL) {
    if ((st = get_num(c, v, "temperature", 0, 2, false, "[0, 2]", &r->temperature)) != TL_OK) return st;
    r->given |= TL_GIVEN_TEMPERATURE;
  }
  if ((v = field(root, "top_p")) != NULL) {
    if ((st = get_num(c, v, "top_p", 0, 1, false, "[0, 1]", &r->top_p)) != TL_OK) return st;
    r->given |= TL_GIVEN_TOP_P;
  }
  if ((v = field(root, "top_k")) != NULL) {
    if ((st = get_int(c, v, "top_k", 0, c->vocab, &x)) != TL_OK) return st;
    r->top_k = (uint32_t)x;
    r->given |= TL_GIVEN_TOP_K;
  }
  if ((v = field(root, "min_p")) != NULL) {
    if ((st = get_num(c, v, "min_p", 0, 1, false, "[0, 1]", &r->min_p)) != TL_OK) return st;
    r->given |= TL_GIVEN_MIN_P;
  }
  if ((v = field(root, "repeat_penalty")) != NULL) {
    if ((st = get_num(c, v, "repeat_penalty", 0, REPEAT_PENALTY_MAX, true, "(0, 2^64]",
                      &r->repeat_penalty)) != TL_OK)
      return st;
    r->given |= TL_GIVEN_REPEAT_PENALTY;
  }
  /* llama-server's default window (its repeat_last_n 64), so a
   * repeat_penalty alone does something. */
  r->repeat_window = r->given & TL_GIVEN_REPEAT_PENALTY ? 64 : 0;
  if ((v = field(root, "repeat_last_n")) != NULL) {
    if ((st = get_int(c, v, "repeat_last_n", -1, UINT32_MAX, &x)) != TL_OK) return st;
    r->repeat_window = x < 0 ? UINT32_MAX : (uint32_t)x;
  }
  if ((v = field(root, "frequency_penalty")) != NULL &&
      (st = get_num(c, v, "frequency_penalty", -2, 2, false, "[-2, 2]",
                    &r->frequency_penalty)) != TL_OK)
    return st;
  if ((v = field(root, "presence_penalty")) != NULL &&
      (st = get_num(c, v, "presence_penalty", -2, 2, false, "[-2, 2]",
                    &r->presence_penalty)) != TL_OK)
    return st;
  if ((v = field(root, "seed")) != NULL) {
    if (!json_is_integer(v)) return want_type(c, "seed", "an integer");
    if (c->big_seed && json_integer_value(v) == BIG_INT_VALUE) {
      r->seed = c->big_seed_value;
    } else if (json_integer_value(v) < 0) {
      return fail(c, "seed", "invalid_value", "seed must be an integer in 0..%llu",
                  (unsigned long long)UINT64_MAX);
    } else {
      r->seed = (uint64_t)json_integer_value(v);
    }
    r->has_seed = true;
  }
  if ((v = field(root, "stop")) != NULL && (st = read_stop(c, v, r)) != TL_OK) return st;
  r->n = 1;
  if ((v = field(root, "n")) != NULL) {
    if ((st = get_int(c, v, "n", 1, TL_SRV_MAX_N, &x)) != TL_OK) return st;
    r->n = (uint32_t)x;
  }
  if ((v = field(root, "logit_bias")) != NULL && (st = read_logit_bias(c, v, r)) != TL_OK) return st;
  if ((st = get_bool(c, root, "stream", &r->stream)) != TL_OK) return st;
  if ((v = field(root, "stream_options")) != NULL) {
    json_t *u;
    if (!json_is_object(v)) return want_type(c, "stream_options", "an object");
    if ((st = only_keys(c, v, stream_keys, "stream_options")) != TL_OK) return st;
    if (!r->stream)
      return fail(c, "stream_options", "invalid_value", "stream_options needs stream: true");
    if ((u = field(v, "include_usage")) != NULL) {
      if (!json_is_boolean(u)) return want_type(c, "stream_options.include_usage", "a boolean");
      r->include_usage = json_is_true(u);
    }
  }
  return TL_OK;
}

static tl_status read_max_tokens(ctx *c, json_t *v, const char *param, uint32_t *out) {
  long long x;
  tl_status st = get_int(c, v, param, 1, MAX_TOKENS_MAX, &x);
  if (st == TL_OK) *out = (uint32_t)x;
  return st;
}

/* ---- structured output (docs/server.md, Structured output) ---- */

/* r's format: kind with text (a schema, dumped compact; or a grammar's
 * text), param the field it came from. */
static tl_status set_format(ctx *c, tl_srv_request *r, tl_srv_format kind, json_t *v,
                            const char *param) {
  r->format = kind;
  snprintf(r->format_param, sizeof r->format_param, "%s", param);
  if (v == NULL) return TL_OK;
  if (json_is_string(v)) {
    r->format_text = copy_bytes(json_string_value(v), json_string_length(v));
    r->format_len = json_string_length(v);
  } else if ((r->format_text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL) {
    r->format_len = strlen(r->format_text);
  }
  return r->format_text != NULL ? TL_OK : oom(c);
}

/* A JSON schema: an object, or true / false (JSON Schema's boolean
 * schemas); the grammar compiler judges its keywords. */
static tl_status read_schema(ctx *c, tl_srv_request *r, json_t *v, const char *param) {
  if (!json_is_object(v) && !json_is_boolean(v))
    return want_type(c, param, "a JSON schema (an object or a boolean)");
  return set_format(c, r, TL_SRV_FORMAT_JSON_SCHEMA, v, param);
}

/* response_format: {"type": "text"}, {"type": "json_object"} or
 * {"type": "json_schema", "json_schema": {"name", "description"?,
 * "schema", "strict"?}}. */
static tl_status read_response_format(ctx *c, json_t *v, tl_srv_request *r) {
  static const char *const plain_keys[] = {"type", NULL};
  static const char *const schema_keys[] = {"type", "json_schema", NULL};
  static const char *const inner_keys[] = {"name", "description", "schema", "strict", NULL};
  json_t *type, *js, *x;
  const char *t;
  tl_status st;
  if (!json_is_object(v))
    return want_type(c, "response_format", "an object {\"type\": \"text\" | \"json_object\" | "
                                           "\"json_schema\", ...}");
  if ((type = field(v, "type")) == NULL) return missing(c, "response_format.type");
  if (!json_is_string(type)) return want_type(c, "response_format.type", "a string");
  t = json_string_value(type);
  if (strlen(t) == json_string_length(type) && (strcmp(t, "text") == 0 || strcmp(t, "json_object") == 0)) {
    if ((st = only_keys(c, v, plain_keys, "response_format")) != TL_OK) return st;
    return t[0] == 't' ? TL_OK : set_format(c, r, TL_SRV_FORMAT_JSON_OBJECT, NULL, "response_format");
  }
  if (strlen(t) != json_string_length(type) || strcmp(t, "json_schema") != 0)
    return fail(c, "response_format.type", "unsupported_value",
                "response_format.type must be \"text\", \"json_object\" or \"json_schema\"");
  if ((st = only_keys(c, v, schema_keys, "response_format")) != TL_OK) return st;
  if ((js = field(v, "json_schema")) == NULL) return missing(c, "response_format.json_schema");
  if (!json_is_object(js))
    return want_type(c, "response_format.json_schema", "an object {\"name\", \"schema\", ...}");
  if ((st = only_keys(c, js, inner_keys, "response_format.json_schema")) != TL_OK) return st;
  if ((x = field(js, "name")) == NULL) return missing(c, "response_format.json_schema.name");
  if (!json_is_string(x)) return want_type(c, "response_format.json_schema.name", "a string");
  if ((x = field(js, "description")) != NULL && !json_is_string(x))
    return want_type(c, "response_format.json_schema.description", "a string");
  /* strict true or false: the reply keeps to the schema either way */
  if ((x = field(js, "strict")) != NULL && !json_is_boolean(x))
    return want_type(c, "response_format.json_schema.strict", "a boolean");
  if ((x = field(js, "schema")) == NULL) return missing(c, "response_format.json_schema.schema");
  return read_schema(c, r, x, "response_format.json_schema.schema");
}

/* grammar (GBNF; "" as not given): exclusive of every other format and of
 * required tool calls, which are grammars too. */
static tl_status read_grammar(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v = field(root, "grammar");
  if (v == NULL) return TL_OK;
  if (!json_is_string(v)) return want_type(c, "grammar", "a string (a GBNF grammar)");
  if (json_string_length(v) == 0) return TL_OK;
  if (r->format != TL_SRV_FORMAT_TEXT)
    return fail(c, "grammar", "invalid_value", "grammar and %s exclude each other: give one",
                strncmp(r->format_param, "response_format", 15) == 0 ? "response_format"
                                                                    : r->format_param);
  if (r->tool_choice == TL_SRV_TOOLS_REQUIRED || r->tool_choice == TL_SRV_TOOLS_NAMED)
    return fail(c, "grammar", "invalid_value",
                "grammar and a tool_choice that requires tool calls exclude each other");
  return set_format(c, r, TL_SRV_FORMAT_GRAMMAR, v, "grammar");
}

bool tl_srv_request_constrained(const tl_srv_request *r) {
  return r->format != TL_SRV_FORMAT_TEXT || r->tool_choice == TL_SRV_TOOLS_REQUIRED ||
         r->tool_choice == TL_SRV_TOOLS_NAMED;
}

/* ---- the kinds ---- */

static const char *const chat_fields[] = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "repeat_penalty", "repeat_last_n", "seed", "stop", "n", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "response_format", "stream", "stream_options",
    "chat_template_kwargs", "tools", "tool_choice", "user", "store", "metadata", "service_tier",
    "parallel_tool_calls", "grammar", "reasoning_format", "reasoning_effort", NULL};
static const char *const completion_fields[] = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty",
    "repeat_last_n", "seed", "stop", "n", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
    "stream", "stream_options", "echo", "best_of", "suffix", "user", "grammar", "json_schema", NULL};
/* "model" everywhere: it picks one of several models (docs/server.md) */
static const char *const tokenize_fields[] = {"model", "content", "with_pieces", NULL};
static const char *const detokenize_fields[] = {"model", "tokens", NULL};
static const char *const template_fields[] = {"model", "messages", "tools",
                                              "chat_template_kwargs", NULL};

static tl_status read_model(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v = field(root, "model");
  if (v == NULL) return TL_OK;
  if (!json_is_string(v)) return want_type(c, "model", "a string");
  if (json_string_length(v) >= sizeof r->model || strlen(json_string_value(v)) != json_string_length(v))
    return fail(c, "model", "invalid_value", "model must be at most %zu bytes, without NUL",
                sizeof r->model - 1);
  memcpy(r->model, json_string_value(v), json_string_length(v) + 1);
  return TL_OK;
}

/* reasoning_format (llama-server's): "none" keeps the think block in the
 * content; "deepseek" and "auto" (and absent) report it apart. */
static tl_status read_reasoning_format(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v = field(root, "reasoning_format");
  const char *f;
  if (v == NULL) return TL_OK;
  if (!json_is_string(v)) return want_type(c, "reasoning_format", "a string");
  f = json_string_value(v);
  if (strlen(f) != json_string_length(v) ||
      (strcmp(f, "none") != 0 && strcmp(f, "deepseek") != 0 && strcmp(f, "auto") != 0))
    return fail(c, "reasoning_format", "invalid_value",
                "reasoning_format must be \"none\" (the think block in content), \"deepseek\" "
                "or \"auto\" (apart, as reasoning_content)");
  r->raw_reasoning = strcmp(f, "none") == 0;
  return TL_OK;
}

static tl_status read_chat(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v, *mt = field(root, "max_tokens"), *mct = field(root, "max_completion_tokens");
  long long x;
  tl_status st;
  if ((st = read_conversation(c, root, r)) != TL_OK)
    return st;
  if (mt != NULL && (st = read_max_tokens(c, mt, "max_tokens", &r->max_tokens)) != TL_OK) return st;
  if (mct != NULL) {
    uint32_t m;
    if ((st = read_max_tokens(c, mct, "max_completion_tokens", &m)) != TL_OK) return st;
    if (mt != NULL && m != r->max_tokens)
      return fail(c, "max_completion_tokens", "invalid_value",
                  "max_tokens and max_completion_tokens differ (give one)");
    r->max_tokens = m;
  }
  if ((st = read_generation(c, root, r)) != TL_OK) return st;
  if ((st = get_bool(c, root, "logprobs", &r->logprobs)) != TL_OK) return st;
  if ((v = field(root, "top_logprobs")) != NULL) {
    if ((st = get_int(c, v, "top_logprobs", 0, TL_SRV_MAX_TOP_LOGPROBS, &x)) != TL_OK) return st;
    if (!r->logprobs)
      return fail(c, "top_logprobs", "invalid_value", "top_logprobs needs logprobs: true");
    r->top_logprobs = (uint32_t)x;
  }
  if ((v = field(root, "response_format")) != NULL && (st = read_response_format(c, v, r)) != TL_OK)
    return st;
  if ((st = read_grammar(c, root, r)) != TL_OK) return st;
  if ((st = read_reasoning_format(c, root, r)) != TL_OK) return st;
  r->parallel_tool_calls = true; /* OpenAI's default */
  if ((st = get_bool(c, root, "parallel_tool_calls", &r->parallel_tool_calls)) != TL_OK) return st;
  if ((st = ignored(c, root, "user", JSON_STRING, "a string")) != TL_OK ||
      (st = ignored(c, root, "store", JSON_TRUE, "a boolean")) != TL_OK ||
      (st = ignored(c, root, "metadata", JSON_OBJECT, "an object")) != TL_OK ||
      (st = ignored(c, root, "service_tier", JSON_STRING, "a string")) != TL_OK)
    return st;
  return TL_OK;
}

static tl_status read_completion(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v, *prompt = field(root, "prompt");
  long long x;
  bool echo = false;
  tl_status st;
  if (prompt == NULL) return missing(c, "prompt");
  if (json_is_array(prompt)) {
    if (json_array_size(prompt) != 1)
      return fail(c, "prompt", "unsupported_value", "prompt: a list must hold exactly one string");
    prompt = json_array_get(prompt, 0);
    if (!json_is_string(prompt))
      return fail(c, "prompt[0]", "unsupported_value", "prompt[0]: only a string is supported");
  } else if (!json_is_string(prompt)) {
    return want_type(c, "prompt", "a string or a list of one string");
  }
  if (json_string_length(prompt) == 0)
    return fail(c, "prompt", "invalid_value", "prompt is empty");
  r->prompt = copy_bytes(json_string_value(prompt), json_string_length(prompt));
  if (r->prompt == NULL) return oom(c);
  r->prompt_len = json_string_length(prompt);
  r->max_tokens = 16; /* OpenAI's default for completions */
  if ((v = field(root, "max_tokens")) != NULL &&
      (st = read_max_tokens(c, v, "max_tokens", &r->max_tokens)) != TL_OK)
    return st;
  if ((st = read_generation(c, root, r)) != TL_OK) return st;
  if ((v = field(root, "logprobs")) != NULL) {
    if ((st = get_int(c, v, "logprobs", 0, 5, &x)) != TL_OK) return st;
    r->logprobs = true;
    r->top_logprobs = (uint32_t)x;
  }
  if ((st = get_bool(c, root, "echo", &echo)) != TL_OK) return st;
  if (echo) return fail(c, "echo", "unsupported_value", "echo: only false is supported");
  if ((v = field(root, "best_of")) != NULL) {
    if (!json_is_integer(v)) return want_type(c, "best_of", "an integer");
    if (json_integer_value(v) != 1)
      return fail(c, "best_of", "unsupported_value", "best_of: only 1 is supported (use n)");
  }
  if ((v = field(root, "suffix")) != NULL)
    return fail(c, "suffix", "unsupported_value", "suffix: only null is supported");
  /* llama-server's json_schema: a schema the text keeps to */
  if ((v = field(root, "json_schema")) != NULL && (st = read_schema(c, r, v, "json_schema")) != TL_OK)
    return st;
  if ((st = read_grammar(c, root, r)) != TL_OK) return st;
  return ignored(c, root, "user", JSON_STRING, "a string");
}

static tl_status read_tokenize(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v = field(root, "content");
  tl_status st;
  if (v == NULL) return missing(c, "content");
  if (!json_is_string(v)) return want_type(c, "content", "a string");
  if ((st = get_bool(c, root, "with_pieces", &r->with_pieces)) != TL_OK) return st;
  r->prompt = copy_bytes(json_string_value(v), json_string_length(v));
  if (r->prompt == NULL) return oom(c);
  r->prompt_len = json_string_length(v);
  return TL_OK;
}

static tl_status read_detokenize(ctx *c, json_t *root, tl_srv_request *r) {
  json_t *v = field(root, "tokens"), *id;
  size_t i;
  if (v == NULL) return missing(c, "tokens");
  if (!json_is_array(v)) return want_type(c, "tokens", "an array of token ids");
  r->ids = malloc((json_array_size(v) + 1) * sizeof *r->ids);
  if (r->ids == NULL) return oom(c);
  json_array_foreach(v, i, id) {
    path p = at("tokens[%zu]", i);
    long long x;
    tl_status st = get_int(c, id, p.s, 0, (long long)c->vocab - 1, &x);
    if (st != TL_OK) return st;
    r->ids[i] = (uint32_t)x;
    r->n_ids = i + 1;
  }
  return TL_OK;
}

static tl_status read_request(ctx *c, tl_srv_kind kind, json_t *root, tl_srv_request *r) {
  static const char *const *const fields[] = {chat_fields, completion_fields, tokenize_fields,
                                              detokenize_fields, template_fields};
  tl_status st;
  if ((st = only_keys(c, root, fields[kind], "")) != TL_OK ||
      (st = read_model(c, root, r)) != TL_OK)
    return st;
  switch (kind) {
  case TL_SRV_CHAT: return read_chat(c, root, r);
  case TL_SRV_COMPLETION: return read_completion(c, root, r);
  case TL_SRV_TOKENIZE: return read_tokenize(c, root, r);
  case TL_SRV_DETOKENIZE: return read_detokenize(c, root, r);
  case TL_SRV_APPLY_TEMPLATE: return read_conversation(c, root, r);
  }
  return TL_ERR_INTERNAL_INVARIANT;
}

/* tl_srv_json_object with c (prescan notes a seed past int64 there). */
static tl_status load_object(ctx *c, const uint8_t *body, size_t len, json_t **root) {
  uint8_t *copy = NULL;
  json_error_t je;
  size_t bad;
  tl_status st;
  *root = NULL;
  if (body == NULL) body = (const uint8_t *)"";
  if (tl_utf8_validate(body, len, &bad) != TL_OK)
    return fail(c, "", "invalid_utf8", "the body is not valid UTF-8 (byte offset %zu)", bad);
  if ((st = prescan(c, body, len, &copy)) != TL_OK) return st;
  *root = json_loadb((const char *)(copy != NULL ? copy : body), len,
                     JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
  free(copy);
  if (*root == NULL) {
    if (json_error_code(&je) == json_error_out_of_memory) return oom(c);
    return fail(c, "", "invalid_json", "invalid JSON at line %d, column %d: %s", je.line,
                je.column, je.text);
  }
  if (!json_is_object(*root)) {
    json_decref(*root);
    *root = NULL;
    return fail(c, "", "invalid_type", "the body must be a JSON object");
  }
  return TL_OK;
}

tl_status tl_srv_json_object(const uint8_t *body, size_t len, json_t **root, tl_srv_error *err) {
  ctx c = {0, err, false, 0};
  return load_object(&c, body, len, root);
}

tl_status tl_srv_request_parse(tl_srv_kind kind, const uint8_t *body, size_t len,
                               uint32_t vocab, tl_srv_request *out, tl_srv_error *err) {
  ctx c = {vocab, err, false, 0};
  tl_srv_compat cx;
  tl_srv_request r;
  json_t *root = NULL;
  tl_status st;
  memset(out, 0, sizeof *out);
  memset(err, 0, sizeof *err);
  memset(&r, 0, sizeof r);
  r.kind = kind;
  if ((unsigned)kind > TL_SRV_APPLY_TEMPLATE || (body == NULL && len > 0)) {
    tl_srv_error_set(err, 500, NULL, NULL, "internal", "tl_srv_request_parse: bad arguments");
    return TL_ERR_INVALID_ARGUMENT;
  }
  if ((st = load_object(&c, body, len, &root)) != TL_OK) return st;
  if ((st = tl_srv_compat_apply(kind, root, &cx, err)) == TL_OK) {
    st = read_request(&c, kind, root, &r);
    if (st == TL_OK) tl_srv_compat_finish(&cx, &r);
    else tl_srv_compat_blame(&cx, err);
  }
  json_decref(root);
  if (st != TL_OK) {
    tl_srv_request_free(&r);
    return st;
  }
  *out = r;
  return TL_OK;
}

void tl_srv_request_free(tl_srv_request *r) {
  free(r->conversation);
  free(r->prompt);
  free(r->ids);
  free(r->ban);
  free(r->bias_ids);
  free(r->bias);
  free(r->format_text);
  free(r->tools);
  for (size_t i = 0; i < r->n_stops; i++) free(r->stops[i]);
  memset(r, 0, sizeof *r);
}
