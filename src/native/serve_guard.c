/* Deadlines, browser checks and the half-close probe (serve_guard.h). */
#define _GNU_SOURCE /* POLLRDHUP */
#include "serve_guard.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- deadlines ---- */

/* libmicrohttpd's own timeout is an idle timeout: a client trickling a
 * byte every few seconds never trips it. So the connections are listed
 * here and the server's main thread reaps the late ones. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tl_srv_deadline *head;

tl_srv_deadline *tl_srv_deadline_open(int fd, double now, double seconds) {
  tl_srv_deadline *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  d->fd = fd;
  d->until = seconds > 0 ? now + seconds : 0;
  pthread_mutex_lock(&lock);
  d->next = head;
  if (head != NULL) head->prev = d;
  head = d;
  pthread_mutex_unlock(&lock);
  return d;
}

void tl_srv_deadline_set(tl_srv_deadline *d, double now, double seconds) {
  if (d == NULL) return;
  pthread_mutex_lock(&lock);
  d->until = seconds > 0 ? now + seconds : 0;
  pthread_mutex_unlock(&lock);
}

void tl_srv_deadline_close(tl_srv_deadline *d) {
  if (d == NULL) return;
  pthread_mutex_lock(&lock);
  if (d->prev != NULL) d->prev->next = d->next;
  else head = d->next;
  if (d->next != NULL) d->next->prev = d->prev;
  pthread_mutex_unlock(&lock);
  free(d);
}

size_t tl_srv_deadline_reap(double now) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  /* under the lock: the fd is still open (it is closed after its entry
   * is removed), so it cannot be another connection's */
  for (tl_srv_deadline *d = head; d != NULL; d = d->next)
    if (d->until > 0 && now >= d->until) {
      (void)shutdown(d->fd, SHUT_RDWR);
      d->until = 0;
      n++;
    }
  pthread_mutex_unlock(&lock);
  return n;
}

/* ---- a keyless server's browser checks ---- */

/* Whether host (its port, if any, cut off) equals name. */
static bool host_is(const char *host, size_t len, const char *name) {
  return strlen(name) == len && strncasecmp(host, name, len) == 0;
}

bool tl_srv_host_allowed(const char *host, const char *listen_host, const char *const *allowed,
                         size_t n_allowed) {
  static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
  const char *colon;
  size_t len;
  if (host == NULL) return true;
  /* name[:port] or [v6]:port; a name has no colon of its own */
  if (host[0] == '[') {
    const char *end = strchr(host, ']');
    if (end == NULL) return false;
    len = (size_t)(end - host) + 1;
    if (host[len] != '\0' && host[len] != ':') return false;
  } else {
    colon = strchr(host, ':');
    len = colon != NULL ? (size_t)(colon - host) : strlen(host);
  }
  for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
    if (host_is(host, len, loopback[i])) return true;
  if (listen_host != NULL) {
    /* an IPv6 literal listens as "::1" and is named "[::1]" */
    if (host[0] == '[' ? len == strlen(listen_host) + 2 &&
                             strncasecmp(host + 1, listen_host, len - 2) == 0
                       : host_is(host, len, listen_host))
      return true;
  }
  for (size_t i = 0; i < n_allowed; i++)
    if (strcmp(allowed[i], "*") == 0 || host_is(host, len, allowed[i])) return true;
  return false;
}

bool tl_srv_json_content_type(const char *type) {
  static const char json[] = "application/json";
  size_t n = sizeof json - 1;
  if (type == NULL) return false;
  while (*type == ' ' || *type == '\t') type++;
  if (strncasecmp(type, json, n) != 0) return false;
  type += n;
  while (*type == ' ' || *type == '\t') type++;
  return *type == '\0' || *type == ';';
}

/* ---- half-close ---- */

tl_srv_peer tl_srv_peer_state(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  if (fd < 0 || poll(&p, 1, 0) <= 0) return TL_SRV_PEER_HERE;
  if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return TL_SRV_PEER_GONE;
  return (p.revents & POLLRDHUP) != 0 ? TL_SRV_PEER_HALF : TL_SRV_PEER_HERE;
}

bool tl_srv_probe_interim(int fd) {
  static const char interim[] = "HTTP/1.1 102 Processing\r\n\r\n";
  return send(fd, interim, sizeof interim - 1, MSG_NOSIGNAL | MSG_DONTWAIT) ==
         (ssize_t)(sizeof interim - 1);
}
