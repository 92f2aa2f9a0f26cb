/* The <time.h> of the wasm32 API modules: a monotonic clock from the JS
 * host (performance.now()), for the timings receipts keep outside their
 * identity. */
#ifndef TL_WASM_TIME_H
#define TL_WASM_TIME_H

typedef long long time_t;
struct timespec {
  time_t tv_sec;
  long tv_nsec;
};
typedef int clockid_t;
#define CLOCK_MONOTONIC 1

int clock_gettime(clockid_t clock, struct timespec *ts);

#endif
