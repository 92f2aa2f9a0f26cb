/* What keeps a shared host's other users from holding or misusing a
 * `tinylm serve` (docs/server.md, Security): per-connection deadlines for
 * receiving a request, the Host and Content-Type checks of a keyless
 * server, and the half-close probe's interim response. */
#ifndef TL_SERVE_GUARD_H
#define TL_SERVE_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* ---- deadlines ---- */

/* One connection's deadline: the socket is shut down (its thread then
 * sees the end and closes it) when the clock passes `until`; 0: none. */
typedef struct tl_srv_deadline {
  int fd;
  double until;
  struct tl_srv_deadline *prev, *next;
} tl_srv_deadline;

/* Tracks a new connection (it must first send its headers within
 * `seconds`); NULL when out of memory (the connection is then left to the
 * idle timeout). */
tl_srv_deadline *tl_srv_deadline_open(int fd, double now, double seconds);
/* Sets (seconds > 0) or clears (0) the connection's deadline. */
void tl_srv_deadline_set(tl_srv_deadline *d, double now, double seconds);
/* The connection is closed: forget it (d may be NULL). */
void tl_srv_deadline_close(tl_srv_deadline *d);
/* Shuts down every connection past its deadline; the number shut. */
size_t tl_srv_deadline_reap(double now);

/* ---- a keyless server's browser checks ---- */

/* Whether the Host header names this server for a browser: absent (HTTP/1.0
 * and non-browser clients), a loopback name (localhost, 127.0.0.1, [::1])
 * or the listening host, with any port, or one of allowed[] ("*": any).
 * Compared without case. */
bool tl_srv_host_allowed(const char *host, const char *listen_host, const char *const *allowed,
                         size_t n_allowed);

/* Whether a Content-Type is application/json (parameters such as charset
 * allowed): the type a page cannot send without a CORS preflight. */
bool tl_srv_json_content_type(const char *type);

/* ---- half-close ---- */

typedef enum tl_srv_peer {
  TL_SRV_PEER_HERE,    /* nothing seen */
  TL_SRV_PEER_HALF,    /* it sent FIN: done sending, or gone with a plain close */
  TL_SRV_PEER_GONE     /* reset or hung up: it cannot read a reply */
} tl_srv_peer;

/* What the socket says of its peer now (fd < 0: here). */
tl_srv_peer tl_srv_peer_state(int fd);

/* Writes an HTTP/1.1 interim response (102 Processing) on fd: a peer that
 * only half-closed ignores it (RFC 9110 15.2), one that closed answers it
 * with a reset, which tl_srv_peer_state then reports as gone. Only
 * before the final response's first byte. */
bool tl_srv_probe_interim(int fd);

#endif
