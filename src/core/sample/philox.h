/* Philox-4x32-10, the counter-based generator of Random123 (Salmon, Moraes,
 * Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11), and
 * the sampler's draw built on it (docs/architecture.md §7, docs/sampler.md §Draws).
 *
 * A bijection of a 128-bit counter under a 64-bit key: no state, so the
 * draw for any (seed, position) is computed directly and the same on every
 * host (integer arithmetic only, plus one exact u32 -> f64 conversion). */
#ifndef TL_CORE_SAMPLE_PHILOX_H
#define TL_CORE_SAMPLE_PHILOX_H

#include <stdint.h>

/* Random123's constants for the 4x32 variant. */
#define TL_PHILOX_M0 0xD2511F53u /* round multipliers */
#define TL_PHILOX_M1 0xCD9E8D57u
#define TL_PHILOX_W0 0x9E3779B9u /* key schedule (Weyl) increments */
#define TL_PHILOX_W1 0xBB67AE85u
#define TL_PHILOX_ROUNDS 10

/* out = philox4x32_10(ctr, key), word order as Random123 (ctr.v[0..3],
 * key.v[0..1]). out may alias ctr. */
void tl_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]);

/* Where a draw comes from: the key is the 64-bit seed (k0 = its low 32
 * bits, k1 = its high 32 bits: the little-endian word order), the counter
 * is (draw, token, turn, stream) as (c0, c1, c2, c3). */
typedef struct tl_draw_pos {
  uint64_t seed;
  uint32_t draw;   /* c0: draw index within one token step (0 for the first) */
  uint32_t token;  /* c1: token index within the turn */
  uint32_t turn;   /* c2: turn index within the conversation */
  uint32_t stream; /* c3: stream id (parallel samples of one request) */
} tl_draw_pos;

/* Output word 0 of philox4x32_10 at that position. */
uint32_t tl_draw_word(const tl_draw_pos *pos);

/* A draw: word 0 as u32 times 2^-32, exactly, in [0, 1). */
static inline double tl_draw_to_unit(uint32_t word) {
  return (double)word * (1.0 / 4294967296.0);
}

#endif
