#define _DEFAULT_SOURCE /* getrandom */
#include "fresh_seed.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

uint64_t tl_fresh_seed(void) {
  uint8_t b[8];
  size_t got = 0;
  uint64_t s;
  while (got < sizeof b) {
    ssize_t r = getrandom(b + got, sizeof b - got, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got < sizeof b) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  } else {
    memcpy(&s, b, sizeof s);
  }
  return s % TL_FRESH_SEED_LIMIT;
}
