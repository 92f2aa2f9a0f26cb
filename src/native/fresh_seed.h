/* A fresh sampling seed from the OS, for a generation whose caller gave
 * none (serve, run, chat: docs/generation.md, Seeds). Native only: the
 * core never draws entropy; the C API takes the caller's seed. */
#ifndef TL_NATIVE_FRESH_SEED_H
#define TL_NATIVE_FRESH_SEED_H

#include <stddef.h>
#include <stdint.h>

/* Up to n bytes from getrandom(2) into buf; the number it gave (n, except
 * without entropy, never on Linux >= 3.17). */
size_t tl_os_random(void *buf, size_t n);

/* Below 2^53: a JSON number that JavaScript clients (doubles) read back
 * exactly, so a returned seed sent back reproduces the reply. */
#define TL_FRESH_SEED_LIMIT (UINT64_C(1) << 53)

/* A uniformly drawn seed in [0, TL_FRESH_SEED_LIMIT) from getrandom(2);
 * without entropy (never on Linux >= 3.17) the clock's nanoseconds. */
uint64_t tl_fresh_seed(void);

#endif
