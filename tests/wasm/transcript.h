/* A deterministic transcript of core computations on seeded inputs. The
 * native, the wasm32 and the aarch64 builds each produce it;
 * tests/wasm/identity.sh and tests/neon/qemu.sh identity require them to be
 * byte-identical. */
#ifndef TL_TRANSCRIPT_H
#define TL_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/parallel.h"

/* Scratch the transcript needs for its inputs. */
#define TL_TRANSCRIPT_SCRATCH (5u << 20)

/* What the host lends the fast-lane records (docs/fast-profile.md): the
 * kernel variant it picks, and one parallel-for per thread count it can
 * run (an entry NULL: the caller alone). Every thread count must give the
 * same bits (F-7); the transcript holds them once, so hosts with
 * different variants and thread counts still produce the same bytes. */
typedef struct tl_transcript_host {
  const tl_kernels *kernels;
  const tl_parallel *const *pars;
  size_t n_pars; /* >= 1 */
} tl_transcript_host;

/* Writes the transcript into out (cap bytes) using scratch
 * (TL_TRANSCRIPT_SCRATCH bytes). Returns its length, or 0 when cap is too
 * small, a computation failed unexpectedly or two thread counts disagreed.
 * *records gets the number of results it holds. */
size_t tl_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                     const tl_transcript_host *host, size_t *records);

#endif
