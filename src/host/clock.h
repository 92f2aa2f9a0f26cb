/* The native host's monotonic clock, in seconds: for timings and
 * deadlines, never for anything a receipt's identity depends on. */
#ifndef TL_NATIVE_CLOCK_H
#define TL_NATIVE_CLOCK_H

#include <time.h>

static inline double tl_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
