#define _POSIX_C_SOURCE 200809L
#include "hub_http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "tool_msg.h"
#include "utf8.h"

/* A body that arrives slower than this on average (after the --timeout
 * grace) is cut: with the byte ceiling, it bounds every request's time. */
#define MIN_AVERAGE_RATE 4096.0
/* What is read of a non-2xx answer's body (it is never used). */
#define ERROR_BODY_MAX ((uint64_t)64 << 10)


/* The character at b[pos] as shown (esc, returned length) and how many
 * input bytes it covers (*k). */
static size_t shown_char(const uint8_t *b, size_t n, size_t pos, char esc[16],
                         size_t *k) {
  uint32_t cp;
  if (!tl_utf8_decode(b, n, pos, &cp, k)) {
    *k = 1; /* each byte of an ill-formed sequence on its own */
    return (size_t)snprintf(esc, 16, "\\x%02x", b[pos]);
  }
  if (cp < 0x20 || cp == 0x7F)
    return (size_t)snprintf(esc, 16, "\\x%02x", (unsigned)cp);
  if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
      (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
    return (size_t)snprintf(esc, 16, "\\u%04x", (unsigned)cp);
  memcpy(esc, b + pos, *k);
  return *k;
}

void tl_hub_printable(const char *s, size_t n, char *out, size_t cap) {
  const uint8_t *b = (const uint8_t *)s;
  size_t len = 0, total = 0, reserve, k;
  char esc[16];
  if (cap == 0) return;
  for (size_t pos = 0; pos < n; pos += k)
    total += shown_char(b, n, pos, esc, &k);
  reserve = total < cap ? 1 : 4; /* the NUL, and "..." when it is cut */
  for (size_t pos = 0; pos < n; pos += k) {
    size_t m = shown_char(b, n, pos, esc, &k);
    if (len + m + reserve > cap) {
      if (len + 4 <= cap) memcpy(out + len, "...", 3), len += 3;
      break;
    }
    memcpy(out + len, esc, m);
    len += m;
  }
  out[len] = '\0';
}

/* "scheme://host:port", lower-case, with the scheme's default port made
 * explicit; NULL for a URL curl does not parse. */
static char *origin_of(const char *url) {
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
  if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    size_t n = strlen(scheme) + strlen(host) + strlen(port) + 5;
    out = malloc(n);
    if (out != NULL) {
      snprintf(out, n, "%s://%s:%s", scheme, host, port);
      for (char *p = out; *p; p++) *p = (char)tolower((unsigned char)*p);
    }
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return out;
}

/* The URL as shown in messages: without its query (a CDN's signed URL
 * carries credentials there). */
static void shown_url(const char *url, char *out, size_t cap) {
  size_t n = strcspn(url, "?#");
  char safe[380];
  tl_hub_printable(url, n > 300 ? 300 : n, safe, sizeof safe);
  snprintf(out, cap, "%s%s", safe, url[n] ? "?..." : "");
}

tl_status tl_hub_open(tl_hub *h, const char *endpoint, const char *token,
                      long timeout_s, int max_redirects, char *err,
                      size_t cap) {
  size_t n = strlen(endpoint);
  memset(h, 0, sizeof *h);
  while (n > 0 && endpoint[n - 1] == '/') n--;
  if (n == 0 || n >= sizeof h->endpoint ||
      (strncmp(endpoint, "https://", 8) != 0 &&
       strncmp(endpoint, "http://", 7) != 0))
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "endpoint '%s' is not an http:// or https:// URL", endpoint);
  memcpy(h->endpoint, endpoint, n);
  h->endpoint[n] = '\0';
  /* The endpoint is recorded in receipts: it may carry no credentials
   * (the token comes from HF_TOKEN), no query and no fragment. */
  if (strpbrk(h->endpoint, "?#") != NULL ||
      memchr(h->endpoint, '@', strcspn(h->endpoint + 8, "/") + 8) != NULL)
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "endpoint '%s': no user, password, query or fragment (the "
                   "token comes from HF_TOKEN)",
                   endpoint);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return tl_fail(err, cap, TL_ERR_IO, "libcurl failed to initialise");
  h->origin = origin_of(h->endpoint);
  h->curl = curl_easy_init();
  if (h->origin == NULL || h->curl == NULL) {
    tl_hub_close(h);
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "endpoint '%s' is not a valid URL", endpoint);
  }
  h->token = token != NULL && token[0] != '\0' ? token : NULL;
  h->ca_bundle = getenv("CURL_CA_BUNDLE");
  if (h->ca_bundle != NULL && h->ca_bundle[0] == '\0') h->ca_bundle = NULL;
  h->timeout_s = timeout_s;
  h->max_redirects = max_redirects;
  return TL_OK;
}

void tl_hub_close(tl_hub *h) {
  if (h->curl != NULL) curl_easy_cleanup(h->curl);
  free(h->origin);
  h->curl = NULL;
  h->origin = NULL;
}

typedef struct xfer {
  tl_hub_headers *hd;
  bool own_origin; /* this hop is served by the endpoint's origin */
  long hop_status; /* from the status line */
  bool started;    /* the body has begun */
  uint64_t skip;   /* bytes still to drop (a 200 answer to a Range) */
  uint64_t at;     /* body bytes so far, counting the resumed prefix */
  uint64_t offset, max_bytes;
  tl_hub_sink sink;
  void *arg;
  tl_status st;
  char *err;
  size_t cap;
  char error_text[256]; /* X-Error-Message, for non-2xx answers */
  long timeout_s;
  double deadline;     /* the hop is cut when it is not done by then */
  double body_start;   /* when a 2xx body began; 0: not yet */
  uint64_t received;   /* 2xx body bytes received, skipped ones too */
  uint64_t error_body; /* bytes of a non-2xx body read (and dropped) */
  bool cut_error_body; /* ERROR_BODY_MAX reached: the answer is complete */
  bool late;           /* the deadline passed */
} xfer;

/* A header value, trimmed, without W/ and quotes, made printable (the
 * server's bytes reach messages, receipts and conflict records). */
static void copy_value(char *dst, size_t cap, const char *v, size_t n) {
  while (n > 0 && isspace((unsigned char)*v)) v++, n--;
  while (n > 0 && isspace((unsigned char)v[n - 1])) n--;
  if (n >= 2 && v[0] == 'W' && v[1] == '/') v += 2, n -= 2;
  if (n >= 2 && v[0] == '"' && v[n - 1] == '"') v++, n -= 2;
  tl_hub_printable(v, n, dst, cap);
}

static bool header_is(const char *line, size_t n, const char *name,
                      const char **value, size_t *vlen) {
  size_t k = strlen(name);
  if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0) return false;
  *value = line + k + 1;
  *vlen = n - k - 1;
  return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *arg) {
  xfer *x = arg;
  size_t n = size * nitems;
  const char *v;
  size_t vn;
  char tmp[2200];
  if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    /* The status code: the three digits after the first space (the line
     * is not NUL-terminated). */
    const char *sp = memchr(line, ' ', n);
    size_t at = sp != NULL ? (size_t)(sp - line) + 1 : n;
    x->hop_status = 0;
    for (size_t i = at; i < n && i < at + 3 && isdigit((unsigned char)line[i]);
         i++)
      x->hop_status = x->hop_status * 10 + (line[i] - '0');
    return n;
  }
  if (header_is(line, n, "X-Error-Message", &v, &vn))
    copy_value(x->error_text, sizeof x->error_text, v, vn);
  if (!x->own_origin) return n;
  if (header_is(line, n, "X-Repo-Commit", &v, &vn))
    copy_value(x->hd->repo_commit, sizeof x->hd->repo_commit, v, vn);
  else if (header_is(line, n, "X-Linked-Etag", &v, &vn))
    copy_value(x->hd->linked_etag, sizeof x->hd->linked_etag, v, vn);
  else if (header_is(line, n, "ETag", &v, &vn))
    copy_value(x->hd->etag, sizeof x->hd->etag, v, vn);
  else if (header_is(line, n, "X-Linked-Size", &v, &vn)) {
    copy_value(tmp, sizeof tmp, v, vn);
    x->hd->linked_size =
        tmp[0] >= '0' && tmp[0] <= '9' ? strtoll(tmp, NULL, 10) : -2;
  } else if (header_is(line, n, "Link", &v, &vn)) {
    /* <url>; rel="next" among comma-separated links. */
    copy_value(tmp, sizeof tmp, v, vn);
    for (char *p = tmp; (p = strchr(p, '<')) != NULL;) {
      char *end = strchr(p, '>');
      if (end == NULL) break;
      if (strstr(end, "rel=\"next\"") != NULL &&
          (strchr(end, ',') == NULL ||
           strstr(end, "rel=\"next\"") < strchr(end, ',')) &&
          (size_t)(end - p - 1) < sizeof x->hd->next) {
        memcpy(x->hd->next, p + 1, (size_t)(end - p - 1));
        x->hd->next[end - p - 1] = '\0';
        break;
      }
      p = end;
    }
  }
  return n;
}

/* The overall deadline: the answer's status line and headers (and any
 * non-2xx body) within --timeout of the hop's start; a 2xx body within
 * --timeout of its start plus the time its bytes take at MIN_AVERAGE_RATE.
 * With the byte ceiling this bounds every request. */
static bool past_deadline(xfer *x) {
  double now = tl_now_s();
  if (x->body_start > 0)
    x->deadline = x->body_start + (double)x->timeout_s +
                  (double)x->received / MIN_AVERAGE_RATE;
  x->late = now > x->deadline;
  return x->late;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow) {
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  return past_deadline(arg) ? 1 : 0;
}

static size_t on_body(char *p, size_t size, size_t nitems, void *arg) {
  xfer *x = arg;
  size_t n = size * nitems;
  const uint8_t *b = (const uint8_t *)p;
  if (x->hop_status < 200 || x->hop_status > 299) {
    /* Not the body: an error page or a redirect's, read up to a bound
     * within the hop's deadline, then dropped. */
    x->error_body += n;
    if (x->error_body <= ERROR_BODY_MAX) return n;
    x->cut_error_body = true;
    return 0;
  }
  x->received += n;
  if (!x->started) {
    x->body_start = tl_now_s();
    /* A server that ignores the Range answers 200 with the whole body:
     * the bytes this side already has are dropped. */
    x->started = true;
    if (x->hop_status == 200) x->skip = x->offset;
  }
  if (x->skip > 0) {
    size_t k = x->skip < n ? (size_t)x->skip : n;
    x->skip -= k;
    b += k;
    n -= k;
    if (n == 0) return size * nitems;
  }
  if (x->at + n > x->max_bytes) {
    x->st = tl_fail(x->err, x->cap, TL_ERR_BOUNDS,
                    "the body is longer than the %llu bytes declared",
                    (unsigned long long)x->max_bytes);
    return 0;
  }
  x->at += n;
  x->st = x->sink(x->arg, b, n, x->err, x->cap);
  return x->st == TL_OK ? size * nitems : 0;
}

tl_status tl_hub_get(tl_hub *h, const char *url, uint64_t offset,
                     uint64_t max_bytes, tl_hub_sink sink, void *arg,
                     tl_hub_headers *hd, bool *transport, char *err,
                     size_t cap) {
  CURL *c = h->curl;
  char *cur = strdup(url), shown[400], range[64], auth[4200], ua[64];
  tl_status st = TL_OK;
  memset(hd, 0, sizeof *hd);
  hd->linked_size = -1;
  *transport = false;
  if (cur == NULL)
    return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
  snprintf(ua, sizeof ua, "tinylm/%s", TL_VERSION_STRING);
  for (;;) {
    struct curl_slist *headers = NULL;
    char *origin = origin_of(cur);
    xfer x;
    CURLcode res;
    long code = 0;
    memset(&x, 0, sizeof x);
    x.hd = hd;
    x.own_origin = origin != NULL && strcmp(origin, h->origin) == 0;
    x.offset = offset;
    x.at = offset;
    x.max_bytes = max_bytes;
    x.sink = sink;
    x.arg = arg;
    x.err = err;
    x.cap = cap;
    x.timeout_s = h->timeout_s;
    x.deadline = tl_now_s() + (double)h->timeout_s;
    free(origin);
    shown_url(cur, shown, sizeof shown);
    /* The token never leaves the endpoint's origin (a redirect to a CDN
     * or any other host gets no Authorization header). */
    if (x.own_origin && h->token != NULL) {
      snprintf(auth, sizeof auth, "Authorization: Bearer %s", h->token);
      headers = curl_slist_append(headers, auth);
    }
    if (offset > 0) {
      snprintf(range, sizeof range, "Range: bytes=%llu-",
               (unsigned long long)offset);
      headers = curl_slist_append(headers, range);
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, cur);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->ca_bundle != NULL) curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_bundle);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->timeout_s);
    curl_easy_setopt(c, CURLOPT_USERAGENT, ua);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    res = curl_easy_perform(c);
    if (res == CURLE_WRITE_ERROR && x.cut_error_body)
      res = CURLE_OK; /* enough of an answer that is an error anyway */
    curl_slist_free_all(headers);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    hd->status = code;
    if (res == CURLE_WRITE_ERROR && x.st != TL_OK) {
      st = x.st; /* the sink's or the ceiling's message is in err */
      break;
    }
    if (res == CURLE_ABORTED_BY_CALLBACK && x.late) {
      *transport = true;
      st = tl_fail(err, cap, TL_ERR_IO,
                   x.body_start > 0
                       ? "%s: Timeout: the body came slower than 4 KiB/s on "
                         "average after the first %ld s (--timeout)"
                       : "%s: Timeout: no complete answer within %ld s "
                         "(--timeout)",
                   shown, h->timeout_s);
      break;
    }
    if (res != CURLE_OK) {
      *transport = res != CURLE_PEER_FAILED_VERIFICATION &&
                   res != CURLE_SSL_CACERT_BADFILE &&
                   res != CURLE_UNSUPPORTED_PROTOCOL &&
                   res != CURLE_URL_MALFORMAT;
      st = tl_fail(err, cap, TL_ERR_IO, "%s: %s", shown,
                   curl_easy_strerror(res));
      break;
    }
    if (code >= 300 && code <= 399) {
      char *next = NULL;
      curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next);
      if (next == NULL) {
        st = tl_fail(err, cap, TL_ERR_IO, "%s: HTTP %ld without a Location",
                     shown, code);
        break;
      }
      /* The bytes are verified anyway; the request (and what it reveals)
       * still never drops from TLS to plain text. */
      if (strncmp(h->origin, "https:", 6) == 0 &&
          strncasecmp(next, "https:", 6) != 0) {
        char to[40];
        tl_hub_printable(next, strnlen(next, 8), to, sizeof to);
        st =
            tl_fail(err, cap, TL_ERR_IO,
                    "%s: refusing a redirect from https to '%s...'", shown, to);
        break;
      }
      if (++hd->redirects > h->max_redirects) {
        st = tl_fail(err, cap, TL_ERR_IO, "%s: more than %d redirects", shown,
                     h->max_redirects);
        break;
      }
      free(cur);
      cur = strdup(next);
      if (cur == NULL)
        return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
      continue;
    }
    if (code < 200 || code > 299) {
      *transport = code == 429 || code >= 500;
      /* 401/403/404 from the Hub: a private or gated repository, a wrong
       * name or revision; say what a user can do about each. */
      const char *hint =
          code == 401 || code == 403
              ? (h->token == NULL ? " (a private or gated repository: set HF_TOKEN to a token "
                                    "that may read it, after accepting its terms on the Hub)"
                                  : " (HF_TOKEN was sent: the token may not read this "
                                    "repository; gated ones need their terms accepted)")
          : code == 404 ? (h->token == NULL ? " (no such repository, revision or file; a private "
                                              "repository also answers 404 without HF_TOKEN)"
                                            : " (no such repository, revision or file)")
                        : "";
      st = tl_fail(err, cap, TL_ERR_IO, "%s: HTTP %ld%s%s%s", shown, code,
                   x.error_text[0] ? ": " : "", x.error_text, hint);
      break;
    }
    break;
  }
  free(cur);
  return st;
}

typedef struct buffer {
  uint8_t *p;
  size_t len, cap;
} buffer;

static tl_status to_buffer(void *arg, const uint8_t *p, size_t n, char *err,
                           size_t cap) {
  buffer *b = arg;
  if (b->len + n > b->cap) {
    size_t want = b->cap ? b->cap : 1 << 16;
    uint8_t *q;
    while (want < b->len + n) want *= 2;
    q = realloc(b->p, want);
    if (q == NULL)
      return tl_fail(err, cap, TL_ERR_OUT_OF_MEMORY, "out of memory");
    b->p = q;
    b->cap = want;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return TL_OK;
}

size_t tl_hub_json_values(const uint8_t *p, size_t n, size_t limit) {
  size_t count = 1;
  bool in_string = false;
  for (size_t i = 0; i < n && count <= limit; i++) {
    uint8_t ch = p[i];
    if (in_string) {
      if (ch == '\\')
        i++; /* the escaped byte */
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[' || ch == ',' || ch == ':') {
      count++;
    }
  }
  return count;
}

tl_status tl_hub_parse_json(const uint8_t *p, size_t n, size_t max_values,
                            const char *what, json_t **out, char *err,
                            size_t cap) {
  json_error_t je;
  *out = NULL;
  /* Counted before jansson allocates anything: its values cost ~100-250
   * bytes each, 80 times the 3 bytes of a '{},' (issue 23.5). */
  if (tl_hub_json_values(p, n, max_values) > max_values)
    return tl_fail(err, cap, TL_ERR_BOUNDS,
                   "%s: the answer holds more than %zu JSON values", what,
                   max_values);
  *out = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &je);
  if (*out == NULL)
    return tl_fail(err, cap, TL_ERR_IO, "%s: the answer is not JSON (%s)",
                   what, je.text);
  return TL_OK;
}

tl_status tl_hub_get_json(tl_hub *h, const char *url, uint64_t max_bytes,
                          size_t max_values, json_t **out, tl_hub_headers *hd,
                          bool *transport, char *err, size_t cap) {
  buffer b = {NULL, 0, 0};
  char shown[400];
  tl_status st = tl_hub_get(h, url, 0, max_bytes, to_buffer, &b, hd,
                            transport, err, cap);
  *out = NULL;
  if (st == TL_OK) {
    shown_url(url, shown, sizeof shown);
    st = tl_hub_parse_json(b.p, b.len, max_values, shown, out, err, cap);
  }
  free(b.p);
  return st;
}

bool tl_hub_quote(const char *s, bool keep_slash, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    bool keep = isalnum(ch) || ch == '-' || ch == '.' || ch == '_' ||
                ch == '~' || (keep_slash && ch == '/');
    if (n + (keep ? 1 : 3) >= cap) return false;
    if (keep) {
      out[n++] = (char)ch;
    } else {
      out[n++] = '%';
      out[n++] = hex[ch >> 4];
      out[n++] = hex[ch & 15];
    }
  }
  out[n] = '\0';
  return true;
}
