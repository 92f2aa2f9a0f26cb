/* HTTP for tinylm pull (docs/acquisition.md §Transport), over libcurl:
 * TLS verification on, http/https only, redirects followed here (not by
 * curl) so that their number is bounded and the token goes only to the
 * endpoint's own origin, a connect timeout and a stall timeout, bodies
 * streamed to a sink with a byte ceiling. */
#ifndef TL_NATIVE_HUB_HTTP_H
#define TL_NATIVE_HUB_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_hub {
  void *curl;          /* CURL * */
  char endpoint[1024]; /* no trailing '/' */
  char *origin;        /* "scheme://host:port" of the endpoint (malloc) */
  const char *token; /* sent as a bearer token to the origin only; NULL: none */
  long timeout_s;    /* connect timeout, and no byte for this long aborts */
  int max_redirects;
  const char *ca_bundle; /* $CURL_CA_BUNDLE: the CA certificates trusted
                            instead of the system's; NULL: the system's */
} tl_hub;

/* The response headers the protocol reads, from the hops served by the
 * endpoint's origin (a CDN's own ETag never overrides the Hub's). */
typedef struct tl_hub_headers {
  long status;           /* of the last hop */
  char repo_commit[96];  /* X-Repo-Commit */
  char linked_etag[160]; /* X-Linked-Etag, quotes and W/ removed */
  char etag[160];        /* ETag, likewise */
  int64_t linked_size;   /* X-Linked-Size; -1 when absent */
  char next[2048];       /* Link: <...>; rel="next" */
  int redirects;
} tl_hub_headers;

/* Receives body bytes; a non-OK status aborts the transfer with it. */
typedef tl_status (*tl_hub_sink)(void *arg, const uint8_t *p, size_t n,
                                 char *err, size_t cap);

tl_status tl_hub_open(tl_hub *h, const char *endpoint, const char *token,
                      long timeout_s, int max_redirects, char *err, size_t cap);
void tl_hub_close(tl_hub *h);

/* GET url, each hop within an overall deadline: the status line and the
 * headers (and a non-2xx body, of which at most 64 KiB is read) within
 * timeout_s of the hop's start; a 2xx body within timeout_s of its first
 * byte plus the time its bytes take at 4 KiB/s. When offset > 0 a Range request
 * resumes there; a server that answers 200 instead of 206 has its first offset
 * bytes dropped. The body (offset + bytes received) may not exceed max_bytes:
 * TL_ERR_BOUNDS. A non-2xx answer, a transport failure or a timeout: TL_ERR_IO,
 * with *transport set for failures a rerun may get past (dropped connection,
 * timeout, 429, 5xx). */
tl_status tl_hub_get(tl_hub *h, const char *url, uint64_t offset,
                     uint64_t max_bytes, tl_hub_sink sink, void *arg,
                     tl_hub_headers *hd, bool *transport, char *err,
                     size_t cap);

/* GET url as a JSON document of at most max_bytes (TL_ERR_BOUNDS beyond,
 * as tl_hub_get) holding at most max_values values (tl_hub_parse_json); an
 * answer that is not JSON is TL_ERR_IO. The caller sizes both by what the
 * answer can justify. */
tl_status tl_hub_get_json(tl_hub *h, const char *url, uint64_t max_bytes,
                          size_t max_values, json_t **out, tl_hub_headers *hd,
                          bool *transport, char *err, size_t cap);

/* An upper bound on the values and keys in the JSON text p[0..n): one plus
 * its '{', '[', ',' and ':' outside strings, counted without allocating;
 * the count stops past limit. */
size_t tl_hub_json_values(const uint8_t *p, size_t n, size_t limit);

/* p[0..n) as JSON when it holds at most max_values values (else
 * TL_ERR_BOUNDS, before anything is allocated): memory in proportion to
 * what the caller allows, whatever the bytes. Not JSON: TL_ERR_IO. what
 * names the answer in messages. */
tl_status tl_hub_parse_json(const uint8_t *p, size_t n, size_t max_values,
                            const char *what, json_t **out, char *err,
                            size_t cap);

/* s[0..n) made safe to print and to serialize as JSON: control
 * characters (C0, DEL, C1), line/paragraph separators and bidirectional
 * overrides are escaped (\xNN, \uNNNN), each byte that is not part of
 * well-formed UTF-8 is written \xNN; the rest is kept. Truncated at a
 * character boundary with "..." to fit cap (cap > 0). */
void tl_hub_printable(const char *s, size_t n, char *out, size_t cap);

/* Percent-encodes s into out (RFC 3986 unreserved characters kept; with
 * keep_slash, '/' too). False when out is too small. */
bool tl_hub_quote(const char *s, bool keep_slash, char *out, size_t cap);

#endif
