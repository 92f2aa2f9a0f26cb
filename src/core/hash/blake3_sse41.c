/* BLAKE3 hash_many for SSE4.1: four inputs side by side, one input per
 * 32-bit lane of a 128-bit vector, the same scheme as blake3_avx2.c with
 * half the lanes. Compiled with -msse4.1 only (the byte shuffle is SSSE3,
 * which SSE4.1 implies); called only when the host has seen SSE4.1. A
 * remainder of three inputs runs as a part-filled group, a smaller one goes
 * to the portable code. */
#include <immintrin.h>
#include <string.h>

#include "hash/blake3_impl.h"

#define TL_B3_LANES 4
/* Each block load also asks for the cache line this many bytes further on
 * in its input stream. A prefetch past the end of an input never faults. */
#define TL_B3_PREFETCH 256
/* The fewest inputs worth a (part-filled) SIMD group: measured break-even
 * against the portable code, gcc and clang -O2 on an AVX-512 machine. */
#define TL_B3_MIN_GROUP 3

static inline __m128i add32(__m128i a, __m128i b) {
  return _mm_add_epi32(a, b);
}
static inline __m128i xorv(__m128i a, __m128i b) { return _mm_xor_si128(a, b); }
/* Rotations right by 16 and 8 move whole bytes: one byte shuffle. 12 and 7
 * take two shifts. */
static inline __m128i rotr16(__m128i x) {
  const __m128i m =
      _mm_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  return _mm_shuffle_epi8(x, m);
}
static inline __m128i rotr8(__m128i x) {
  const __m128i m =
      _mm_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12);
  return _mm_shuffle_epi8(x, m);
}
static inline __m128i rotr12(__m128i x) {
  return _mm_or_si128(_mm_srli_epi32(x, 12), _mm_slli_epi32(x, 20));
}
static inline __m128i rotr7(__m128i x) {
  return _mm_or_si128(_mm_srli_epi32(x, 7), _mm_slli_epi32(x, 25));
}

/* One round on four states at once: G on the four columns, then on the
 * four diagonals, each step done for all four before the next (they are
 * independent), reading the message through schedule row s. Forced inline
 * into each of its seven calls, so that the row's indices are constants
 * and the message words can stay in registers. */
static inline __attribute__((always_inline)) void round4(__m128i v[16],
                                                         const __m128i m[16],
                                                         const uint8_t s[16]) {
  /* G on the columns */
  v[0] = add32(add32(v[0], v[4]), m[s[0]]);
  v[1] = add32(add32(v[1], v[5]), m[s[2]]);
  v[2] = add32(add32(v[2], v[6]), m[s[4]]);
  v[3] = add32(add32(v[3], v[7]), m[s[6]]);
  v[12] = rotr16(xorv(v[12], v[0]));
  v[13] = rotr16(xorv(v[13], v[1]));
  v[14] = rotr16(xorv(v[14], v[2]));
  v[15] = rotr16(xorv(v[15], v[3]));
  v[8] = add32(v[8], v[12]);
  v[9] = add32(v[9], v[13]);
  v[10] = add32(v[10], v[14]);
  v[11] = add32(v[11], v[15]);
  v[4] = rotr12(xorv(v[4], v[8]));
  v[5] = rotr12(xorv(v[5], v[9]));
  v[6] = rotr12(xorv(v[6], v[10]));
  v[7] = rotr12(xorv(v[7], v[11]));
  v[0] = add32(add32(v[0], v[4]), m[s[1]]);
  v[1] = add32(add32(v[1], v[5]), m[s[3]]);
  v[2] = add32(add32(v[2], v[6]), m[s[5]]);
  v[3] = add32(add32(v[3], v[7]), m[s[7]]);
  v[12] = rotr8(xorv(v[12], v[0]));
  v[13] = rotr8(xorv(v[13], v[1]));
  v[14] = rotr8(xorv(v[14], v[2]));
  v[15] = rotr8(xorv(v[15], v[3]));
  v[8] = add32(v[8], v[12]);
  v[9] = add32(v[9], v[13]);
  v[10] = add32(v[10], v[14]);
  v[11] = add32(v[11], v[15]);
  v[4] = rotr7(xorv(v[4], v[8]));
  v[5] = rotr7(xorv(v[5], v[9]));
  v[6] = rotr7(xorv(v[6], v[10]));
  v[7] = rotr7(xorv(v[7], v[11]));
  /* G on the diagonals */
  v[0] = add32(add32(v[0], v[5]), m[s[8]]);
  v[1] = add32(add32(v[1], v[6]), m[s[10]]);
  v[2] = add32(add32(v[2], v[7]), m[s[12]]);
  v[3] = add32(add32(v[3], v[4]), m[s[14]]);
  v[15] = rotr16(xorv(v[15], v[0]));
  v[12] = rotr16(xorv(v[12], v[1]));
  v[13] = rotr16(xorv(v[13], v[2]));
  v[14] = rotr16(xorv(v[14], v[3]));
  v[10] = add32(v[10], v[15]);
  v[11] = add32(v[11], v[12]);
  v[8] = add32(v[8], v[13]);
  v[9] = add32(v[9], v[14]);
  v[5] = rotr12(xorv(v[5], v[10]));
  v[6] = rotr12(xorv(v[6], v[11]));
  v[7] = rotr12(xorv(v[7], v[8]));
  v[4] = rotr12(xorv(v[4], v[9]));
  v[0] = add32(add32(v[0], v[5]), m[s[9]]);
  v[1] = add32(add32(v[1], v[6]), m[s[11]]);
  v[2] = add32(add32(v[2], v[7]), m[s[13]]);
  v[3] = add32(add32(v[3], v[4]), m[s[15]]);
  v[15] = rotr8(xorv(v[15], v[0]));
  v[12] = rotr8(xorv(v[12], v[1]));
  v[13] = rotr8(xorv(v[13], v[2]));
  v[14] = rotr8(xorv(v[14], v[3]));
  v[10] = add32(v[10], v[15]);
  v[11] = add32(v[11], v[12]);
  v[8] = add32(v[8], v[13]);
  v[9] = add32(v[9], v[14]);
  v[5] = rotr7(xorv(v[5], v[10]));
  v[6] = rotr7(xorv(v[6], v[11]));
  v[7] = rotr7(xorv(v[7], v[8]));
  v[4] = rotr7(xorv(v[4], v[9]));
}

/* In place: row r of the 4x4 matrix of 32-bit words becomes column r. */
static inline void transpose4(__m128i r[4]) {
  __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]); /* r0[0] r1[0] r0[1] r1[1] */
  __m128i t1 = _mm_unpackhi_epi32(r[0], r[1]); /* r0[2] r1[2] r0[3] r1[3] */
  __m128i t2 = _mm_unpacklo_epi32(r[2], r[3]);
  __m128i t3 = _mm_unpackhi_epi32(r[2], r[3]);
  r[0] = _mm_unpacklo_epi64(t0, t2);
  r[1] = _mm_unpackhi_epi64(t0, t2);
  r[2] = _mm_unpacklo_epi64(t1, t3);
  r[3] = _mm_unpackhi_epi64(t1, t3);
}

/* Hashes inputs 0..used-1 (1 <= used <= 4) of hash_many's input; lanes
 * past used repeat the last input and their results are dropped. */
static void hash4(const uint8_t *in, size_t used, size_t blocks,
                  const uint32_t key[8], uint64_t counter,
                  bool increment_counter, uint8_t flags, uint8_t flags_start,
                  uint8_t flags_end, uint8_t *out) {
  const uint8_t *lane[TL_B3_LANES];
  uint32_t lo[TL_B3_LANES], hi[TL_B3_LANES];
  uint8_t cvs[TL_B3_LANES * 32];
  __m128i h[8], m[16], v[16], counter_lo, counter_hi;
  for (int j = 0; j < TL_B3_LANES; j++) {
    lane[j] = in + ((size_t)j < used ? (size_t)j : used - 1) * 64 * blocks;
    uint64_t c = counter + (increment_counter ? (uint64_t)j : 0);
    lo[j] = (uint32_t)c;
    hi[j] = (uint32_t)(c >> 32);
  }
  counter_lo = _mm_loadu_si128((const __m128i *)lo);
  counter_hi = _mm_loadu_si128((const __m128i *)hi);
  for (int i = 0; i < 8; i++) h[i] = _mm_set1_epi32((int)key[i]);
  for (size_t b = 0; b < blocks; b++) {
    uint8_t f = flags;
    if (b == 0) f |= flags_start;
    if (b + 1 == blocks) f |= flags_end;
    /* m[4q + w] lane j: message word 4q + w of input j. */
    for (int j = 0; j < TL_B3_LANES; j++)
      _mm_prefetch((const char *)(lane[j] + 64 * b + TL_B3_PREFETCH),
                   _MM_HINT_T0);
    for (int q = 0; q < 4; q++) {
      for (int j = 0; j < TL_B3_LANES; j++)
        m[4 * q + j] =
            _mm_loadu_si128((const __m128i *)(lane[j] + 64 * b + 16 * q));
      transpose4(m + 4 * q);
    }
    for (int i = 0; i < 8; i++) v[i] = h[i];
    v[8] = _mm_set1_epi32((int)TL_B3_IV0);
    v[9] = _mm_set1_epi32((int)TL_B3_IV1);
    v[10] = _mm_set1_epi32((int)TL_B3_IV2);
    v[11] = _mm_set1_epi32((int)TL_B3_IV3);
    v[12] = counter_lo;
    v[13] = counter_hi;
    v[14] = _mm_set1_epi32(64);
    v[15] = _mm_set1_epi32(f);
    round4(v, m, tl_b3_schedule[0]);
    round4(v, m, tl_b3_schedule[1]);
    round4(v, m, tl_b3_schedule[2]);
    round4(v, m, tl_b3_schedule[3]);
    round4(v, m, tl_b3_schedule[4]);
    round4(v, m, tl_b3_schedule[5]);
    round4(v, m, tl_b3_schedule[6]);
    for (int i = 0; i < 8; i++) h[i] = xorv(v[i], v[i + 8]);
  }
  /* h[i] lane j is word i of input j's chaining value. */
  transpose4(h);
  transpose4(h + 4);
  for (int j = 0; j < TL_B3_LANES; j++) {
    _mm_storeu_si128((__m128i *)(cvs + 32 * j), h[j]);
    _mm_storeu_si128((__m128i *)(cvs + 32 * j + 16), h[4 + j]);
  }
  memcpy(out, cvs, 32 * used);
}

void tl_blake3_hash_many_sse41(const uint8_t *in, size_t n_inputs,
                               size_t blocks, const uint32_t key[8],
                               uint64_t counter, bool increment_counter,
                               uint8_t flags, uint8_t flags_start,
                               uint8_t flags_end, uint8_t *out) {
  /* A part-filled group costs what a full one does; the portable code is
   * faster for fewer than TL_B3_MIN_GROUP inputs. */
  while (n_inputs >= TL_B3_MIN_GROUP) {
    size_t used = n_inputs < TL_B3_LANES ? n_inputs : TL_B3_LANES;
    hash4(in, used, blocks, key, counter, increment_counter, flags, flags_start,
          flags_end, out);
    in += used * 64 * blocks;
    out += used * 32;
    n_inputs -= used;
    if (increment_counter) counter += used;
  }
  tl_blake3_hash_many_portable(in, n_inputs, blocks, key, counter,
                               increment_counter, flags, flags_start, flags_end,
                               out);
}
