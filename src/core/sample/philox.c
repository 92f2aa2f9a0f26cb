#include "sample/philox.h"

/* One round: two 32x32 -> 64 products; the high halves are mixed with the
 * other counter words and the round key, the low halves move over
 * (Random123 philox4x32round). */
static void philox_round(uint32_t c[4], uint32_t k0, uint32_t k1) {
  uint64_t p0 = (uint64_t)TL_PHILOX_M0 * c[0];
  uint64_t p1 = (uint64_t)TL_PHILOX_M1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c[1] ^ k0;
  uint32_t n2 = hi0 ^ c[3] ^ k1;
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

void tl_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k0 = key[0], k1 = key[1];
  /* Round r uses the key bumped r times (the first round the key itself). */
  for (int r = 0; r < TL_PHILOX_ROUNDS; r++) {
    if (r > 0) {
      k0 += TL_PHILOX_W0;
      k1 += TL_PHILOX_W1;
    }
    philox_round(c, k0, k1);
  }
  out[0] = c[0];
  out[1] = c[1];
  out[2] = c[2];
  out[3] = c[3];
}

uint32_t tl_draw_word(const tl_draw_pos *pos) {
  uint32_t key[2] = {(uint32_t)pos->seed, (uint32_t)(pos->seed >> 32)};
  uint32_t ctr[4] = {pos->draw, pos->token, pos->turn, pos->stream};
  uint32_t out[4];
  tl_philox4x32_10(ctr, key, out);
  return out[0];
}
