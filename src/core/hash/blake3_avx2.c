/* BLAKE3 hash_many for AVX2: eight inputs side by side, one input per
 * 32-bit lane. Every state word and message word is a vector whose lane j
 * belongs to input j, so the compression function is the portable one
 * written with vector operations; the only extra work is transposing each
 * block's message words into that layout, and the chaining values out of
 * it. Compiled with -mavx2 only; called only when the host has seen AVX2.
 * A remainder of TL_B3_MIN_GROUP to seven inputs runs as a part-filled
 * group, a smaller one goes to the portable code. */
#include <immintrin.h>
#include <string.h>

#include "hash/blake3_impl.h"

#define TL_B3_LANES 8
/* Eight input streams 1 KiB apart are more than the hardware prefetcher
 * follows well, so each block load also asks for the cache line this many
 * bytes further on in its stream. A prefetch past the end of an input never
 * faults. */
#define TL_B3_PREFETCH 256
/* The fewest inputs worth a (part-filled) SIMD group: measured break-even
 * against the portable code, gcc and clang -O2 on an AVX-512 machine. */
#define TL_B3_MIN_GROUP 4

static inline __m256i add32(__m256i a, __m256i b) {
  return _mm256_add_epi32(a, b);
}
static inline __m256i xorv(__m256i a, __m256i b) {
  return _mm256_xor_si256(a, b);
}
/* Rotations right by 16 and 8 move whole bytes: one byte shuffle (the
 * pattern repeats in each 128-bit half). 12 and 7 take two shifts. */
static inline __m256i rotr16(__m256i x) {
  const __m256i m =
      _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2,
                       3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  return _mm256_shuffle_epi8(x, m);
}
static inline __m256i rotr8(__m256i x) {
  const __m256i m =
      _mm256_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12, 1,
                       2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12);
  return _mm256_shuffle_epi8(x, m);
}
static inline __m256i rotr12(__m256i x) {
  return _mm256_or_si256(_mm256_srli_epi32(x, 12), _mm256_slli_epi32(x, 20));
}
static inline __m256i rotr7(__m256i x) {
  return _mm256_or_si256(_mm256_srli_epi32(x, 7), _mm256_slli_epi32(x, 25));
}

/* One round on eight states at once: G on the four columns, then on the
 * four diagonals, each step done for all four before the next (they are
 * independent), reading the message through schedule row s. Forced inline
 * into each of its seven calls, so that the row's indices are constants
 * and the message words can stay in registers. */
static inline __attribute__((always_inline)) void round8(__m256i v[16],
                                                         const __m256i m[16],
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

/* In place: row r of the 8x8 matrix of 32-bit words becomes column r. */
static inline void transpose8(__m256i r[8]) {
  __m256i t[8], u[8];
  /* t[2k], t[2k+1]: rows 2k and 2k+1 interleaved word by word; per 128-bit
   * half h: t[2k] = (r2k[4h], r2k+1[4h], r2k[4h+1], r2k+1[4h+1]), t[2k+1]
   * likewise with words 4h+2 and 4h+3. */
  for (int k = 0; k < 4; k++) {
    t[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
  }
  /* u[4g + w]: word 4h + w of rows 4g..4g+3, in each half h. */
  for (int g = 0; g < 2; g++) {
    u[4 * g + 0] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  /* Column w takes rows 0..3 from u[w] and rows 4..7 from u[4 + w], low
   * halves for w < 4, high halves for w >= 4. */
  for (int w = 0; w < 4; w++) {
    r[w] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x20);
    r[w + 4] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x31);
  }
}

/* Message words of block b, lane j from input lane[j]. */
static inline void load_msg8(__m256i m[16], const uint8_t *const lane[8],
                             size_t b) {
  for (int j = 0; j < TL_B3_LANES; j++) {
    const uint8_t *p = lane[j] + 64 * b;
    _mm_prefetch((const char *)(p + TL_B3_PREFETCH), _MM_HINT_T0);
    m[j] = _mm256_loadu_si256((const __m256i *)p);
    m[8 + j] = _mm256_loadu_si256((const __m256i *)(p + 32));
  }
  transpose8(m);
  transpose8(m + 8);
}

/* Hashes inputs 0..used-1 (1 <= used <= 8) of hash_many's input; lanes
 * past used repeat the last input and their results are dropped. */
static void hash8(const uint8_t *in, size_t used, size_t blocks,
                  const uint32_t key[8], uint64_t counter,
                  bool increment_counter, uint8_t flags, uint8_t flags_start,
                  uint8_t flags_end, uint8_t *out) {
  const uint8_t *lane[TL_B3_LANES];
  uint32_t lo[TL_B3_LANES], hi[TL_B3_LANES];
  uint8_t cvs[TL_B3_LANES * 32];
  __m256i h[8], m[16], v[16], counter_lo, counter_hi;
  for (int j = 0; j < TL_B3_LANES; j++) {
    lane[j] = in + ((size_t)j < used ? (size_t)j : used - 1) * 64 * blocks;
    uint64_t c = counter + (increment_counter ? (uint64_t)j : 0);
    lo[j] = (uint32_t)c;
    hi[j] = (uint32_t)(c >> 32);
  }
  counter_lo = _mm256_loadu_si256((const __m256i *)lo);
  counter_hi = _mm256_loadu_si256((const __m256i *)hi);
  for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi32((int)key[i]);
  for (size_t b = 0; b < blocks; b++) {
    uint8_t f = flags;
    if (b == 0) f |= flags_start;
    if (b + 1 == blocks) f |= flags_end;
    load_msg8(m, lane, b);
    for (int i = 0; i < 8; i++) v[i] = h[i];
    v[8] = _mm256_set1_epi32((int)TL_B3_IV0);
    v[9] = _mm256_set1_epi32((int)TL_B3_IV1);
    v[10] = _mm256_set1_epi32((int)TL_B3_IV2);
    v[11] = _mm256_set1_epi32((int)TL_B3_IV3);
    v[12] = counter_lo;
    v[13] = counter_hi;
    v[14] = _mm256_set1_epi32(64);
    v[15] = _mm256_set1_epi32(f);
    round8(v, m, tl_b3_schedule[0]);
    round8(v, m, tl_b3_schedule[1]);
    round8(v, m, tl_b3_schedule[2]);
    round8(v, m, tl_b3_schedule[3]);
    round8(v, m, tl_b3_schedule[4]);
    round8(v, m, tl_b3_schedule[5]);
    round8(v, m, tl_b3_schedule[6]);
    for (int i = 0; i < 8; i++) h[i] = xorv(v[i], v[i + 8]);
  }
  /* h[i] lane j is word i of input j's chaining value. */
  transpose8(h);
  for (int j = 0; j < TL_B3_LANES; j++)
    _mm256_storeu_si256((__m256i *)(cvs + 32 * j), h[j]);
  memcpy(out, cvs, 32 * used);
}

void tl_blake3_hash_many_avx2(const uint8_t *in, size_t n_inputs, size_t blocks,
                              const uint32_t key[8], uint64_t counter,
                              bool increment_counter, uint8_t flags,
                              uint8_t flags_start, uint8_t flags_end,
                              uint8_t *out) {
  /* A part-filled group costs what a full one does; the portable code is
   * faster for fewer than TL_B3_MIN_GROUP inputs. */
  while (n_inputs >= TL_B3_MIN_GROUP) {
    size_t used = n_inputs < TL_B3_LANES ? n_inputs : TL_B3_LANES;
    hash8(in, used, blocks, key, counter, increment_counter, flags, flags_start,
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
