/* A deterministic transcript of core computations on seeded inputs. The
 * native and the wasm32 builds each produce it; tests/wasm/identity.sh
 * requires the two to be byte-identical. */
#ifndef TL_TRANSCRIPT_H
#define TL_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

/* Scratch the transcript needs for its inputs. */
#define TL_TRANSCRIPT_SCRATCH (5u << 20)

/* Writes the transcript into out (cap bytes) using scratch
 * (TL_TRANSCRIPT_SCRATCH bytes). Returns its length, or 0 when cap is too
 * small or a computation failed unexpectedly. *records gets the number of
 * results it holds. */
size_t tl_transcript(uint8_t *out, size_t cap, uint8_t *scratch,
                     size_t *records);

#endif
