#define _DEFAULT_SOURCE /* getrandom */
#include "fresh_seed.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

size_t tl_os_random(void *buf, size_t n) {
  uint8_t *b = buf;
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(b + got, n - got, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

uint64_t tl_fresh_seed(void) {
  uint8_t b[8];
  uint64_t s;
  if (tl_os_random(b, sizeof b) < sizeof b) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  } else {
    memcpy(&s, b, sizeof s);
  }
  return s % TL_FRESH_SEED_LIMIT;
}
