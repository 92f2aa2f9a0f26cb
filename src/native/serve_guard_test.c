/* What a keyless server lets a browser do, how late requests are cut off,
 * and how a half-closed client is told from a gone one (serve_guard.h).
 * The half-close cases run real TCP sockets on loopback, so the kernel's
 * own answers (FIN, reset) are what is judged. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve_guard.h"
#include "tl_test.h"

static void hosts(tl_test_ctx *t) {
  static const char *const allow[] = {"box.lan"};
  static const struct {
    const char *host, *listen;
    bool ok;
  } cases[] = {
      {NULL, "127.0.0.1", true}, /* HTTP/1.0 or a tool: no browser sends none */
      {"localhost", "127.0.0.1", true},
      {"LOCALHOST:8080", "127.0.0.1", true},
      {"127.0.0.1:1", "127.0.0.1", true},
      {"[::1]:8080", "127.0.0.1", true},
      {"[::1]", "::1", true},
      {"evil.example", "127.0.0.1", false}, /* DNS rebinding: a page's own name */
      {"evil.example:8080", "127.0.0.1", false},
      {"localhost.evil.example", "127.0.0.1", false},
      {"127.0.0.1.evil.example", "127.0.0.1", false},
      {"[::1]x", "127.0.0.1", false},
      {"[::1", "127.0.0.1", false},
      {"", "127.0.0.1", false},
      {"10.0.0.5:80", "10.0.0.5", true}, /* the listening literal */
      {"[fe80::1]:80", "fe80::1", true},
      {"box.lan:8080", "127.0.0.1", true}, /* --allow-host */
      {"box.lan.evil", "127.0.0.1", false},
  };
  static const char *const any[] = {"*"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!TL_EXPECT(t, tl_srv_host_allowed(cases[i].host, cases[i].listen, allow, 1) ==
                          cases[i].ok)) {
      tl_test_print(t, cases[i].host ? cases[i].host : "(none)");
      tl_test_print(t, "\n");
    }
  TL_EXPECT(t, tl_srv_host_allowed("evil.example", "127.0.0.1", any, 1));
}

static void json_types(tl_test_ctx *t) {
  TL_EXPECT(t, tl_srv_json_content_type("application/json"));
  TL_EXPECT(t, tl_srv_json_content_type("Application/JSON; charset=utf-8"));
  TL_EXPECT(t, tl_srv_json_content_type("application/json ;charset=UTF-8"));
  /* the three types a page may POST with no preflight */
  TL_EXPECT(t, !tl_srv_json_content_type("text/plain"));
  TL_EXPECT(t, !tl_srv_json_content_type("application/x-www-form-urlencoded"));
  TL_EXPECT(t, !tl_srv_json_content_type("multipart/form-data; boundary=x"));
  TL_EXPECT(t, !tl_srv_json_content_type("application/jsonx"));
  TL_EXPECT(t, !tl_srv_json_content_type("text/plain; a=application/json"));
  TL_EXPECT(t, !tl_srv_json_content_type(NULL));
}

/* A connection past its deadline is shut down: its peer reads the end. */
static void deadlines(tl_test_ctx *t) {
  int a[2], b[2];
  char byte;
  tl_srv_deadline *da, *db;
  if (!TL_EXPECT(t, socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0 &&
                        socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0))
    return;
  da = tl_srv_deadline_open(a[0], 100.0, 10.0);
  db = tl_srv_deadline_open(b[0], 100.0, 10.0);
  tl_srv_deadline_set(db, 105.0, 0); /* its request is in: no deadline */
  TL_EXPECT_EQ_U64(t, tl_srv_deadline_reap(109.9), 0);
  TL_EXPECT_EQ_U64(t, tl_srv_deadline_reap(110.0), 1);
  TL_EXPECT_EQ_U64(t, tl_srv_deadline_reap(200.0), 0); /* once only */
  TL_EXPECT(t, read(a[1], &byte, 1) == 0);
  TL_EXPECT(t, write(b[1], "x", 1) == 1 && read(b[0], &byte, 1) == 1);
  tl_srv_deadline_set(db, 200.0, 1.0); /* the next request's headers */
  TL_EXPECT_EQ_U64(t, tl_srv_deadline_reap(201.0), 1);
  tl_srv_deadline_close(da);
  tl_srv_deadline_close(db);
  TL_EXPECT_EQ_U64(t, tl_srv_deadline_reap(1e9), 0);
  for (int i = 0; i < 2; i++) {
    close(a[i]);
    close(b[i]);
  }
}

/* server and client ends of a loopback TCP connection. */
static bool tcp_pair(int *server, int *client) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  int l = socket(AF_INET, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *server = *client = -1;
  if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&sa, &len) != 0 ||
      (*client = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
      connect(*client, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      (*server = accept(l, NULL, NULL)) < 0) {
    if (l >= 0) close(l);
    return false;
  }
  close(l);
  return true;
}

/* Until the state settles (the kernel's reset is not instant). */
static tl_srv_peer settled(int fd, tl_srv_peer want) {
  tl_srv_peer p = tl_srv_peer_state(fd);
  for (int i = 0; i < 200 && p != want; i++) {
    usleep(1000);
    p = tl_srv_peer_state(fd);
  }
  return p;
}

static void half_close_told_from_close(tl_test_ctx *t) {
  int s, c;
  char buf[64];
  ssize_t n;
  /* half-closed: the probe reaches it, it stays "half", and it reads */
  if (!TL_EXPECT(t, tcp_pair(&s, &c))) return;
  TL_EXPECT(t, tl_srv_peer_state(s) == TL_SRV_PEER_HERE);
  TL_EXPECT(t, shutdown(c, SHUT_WR) == 0);
  TL_EXPECT(t, settled(s, TL_SRV_PEER_HALF) == TL_SRV_PEER_HALF);
  TL_EXPECT(t, tl_srv_probe_interim(s));
  usleep(20000);
  TL_EXPECT(t, tl_srv_peer_state(s) == TL_SRV_PEER_HALF);
  n = read(c, buf, sizeof buf - 1);
  TL_EXPECT(t, n > 0 && memcmp(buf, "HTTP/1.1 102 ", 13) == 0);
  close(s);
  close(c);
  /* closed: the same FIN, then the probe is answered with a reset */
  if (!TL_EXPECT(t, tcp_pair(&s, &c))) return;
  close(c);
  TL_EXPECT(t, settled(s, TL_SRV_PEER_HALF) == TL_SRV_PEER_HALF);
  (void)tl_srv_probe_interim(s);
  TL_EXPECT(t, settled(s, TL_SRV_PEER_GONE) == TL_SRV_PEER_GONE);
  close(s);
}

static const tl_test_case cases[] = {
    TL_CASE(hosts),
    TL_CASE(json_types),
    TL_CASE(deadlines),
    TL_CASE(half_close_told_from_close),
};
TL_SUITE(serve_guard, cases);
