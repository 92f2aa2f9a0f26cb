/* BLAKE3 hash_many for AVX-512: sixteen inputs side by side, one input per
 * 32-bit lane of a 512-bit vector, the same scheme as blake3_avx2.c with
 * twice the lanes and native rotations (vprord). Compiled with -mavx512f
 * -mavx512vl; called only when the host has seen AVX-512F, AVX-512VL and
 * AVX2. A remainder of TL_B3_MIN_GROUP to fifteen inputs runs as a
 * part-filled group, a smaller one goes to the portable code. */
#include <immintrin.h>
#include <string.h>

#include "hash/blake3_impl.h"

#define TL_B3_LANES 16
/* Sixteen input streams 1 KiB apart are more than the hardware prefetcher
 * follows well, so each block load also asks for the cache line this many
 * bytes further on in its stream. A prefetch past the end of an input never
 * faults. */
#define TL_B3_PREFETCH 256
/* The fewest inputs worth a (part-filled) SIMD group: measured break-even
 * against the portable code, gcc and clang -O2 on an AVX-512 machine. */
#define TL_B3_MIN_GROUP 3

static inline __m512i add32(__m512i a, __m512i b) {
  return _mm512_add_epi32(a, b);
}
static inline __m512i xorv(__m512i a, __m512i b) {
  return _mm512_xor_si512(a, b);
}
static inline __m512i rotr16(__m512i x) { return _mm512_ror_epi32(x, 16); }
static inline __m512i rotr12(__m512i x) { return _mm512_ror_epi32(x, 12); }
static inline __m512i rotr8(__m512i x) { return _mm512_ror_epi32(x, 8); }
static inline __m512i rotr7(__m512i x) { return _mm512_ror_epi32(x, 7); }

/* One round on sixteen states at once: G on the four columns, then on the
 * four diagonals, each step done for all four before the next (they are
 * independent), reading the message through schedule row s. Forced inline
 * into each of its seven calls, so that the row's indices are constants
 * and the message words can stay in registers. */
static inline __attribute__((always_inline)) void round16(__m512i v[16],
                                                          const __m512i m[16],
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

/* Transposes the 4x4 matrix of 128-bit lanes held by a, b, c, d: output k
 * is (a.k, b.k, c.k, d.k). _mm512_shuffle_i32x4(x, y, imm) takes its low
 * two lanes from x and its high two from y, each chosen by two bits. */
static inline void lanes4x4(__m512i a, __m512i b, __m512i c, __m512i d,
                            __m512i *o0, __m512i *o1, __m512i *o2,
                            __m512i *o3) {
  __m512i ab01 = _mm512_shuffle_i32x4(a, b, 0x44); /* a.0 a.1 b.0 b.1 */
  __m512i ab23 = _mm512_shuffle_i32x4(a, b, 0xEE); /* a.2 a.3 b.2 b.3 */
  __m512i cd01 = _mm512_shuffle_i32x4(c, d, 0x44);
  __m512i cd23 = _mm512_shuffle_i32x4(c, d, 0xEE);
  *o0 = _mm512_shuffle_i32x4(ab01, cd01, 0x88); /* a.0 b.0 c.0 d.0 */
  *o1 = _mm512_shuffle_i32x4(ab01, cd01, 0xDD); /* a.1 b.1 c.1 d.1 */
  *o2 = _mm512_shuffle_i32x4(ab23, cd23, 0x88);
  *o3 = _mm512_shuffle_i32x4(ab23, cd23, 0xDD);
}

/* The first two steps of a 4x4 word transpose inside every 128-bit lane,
 * for rows r[0..3]: afterwards u[w] holds, in lane l, word 4l + w of rows
 * 0, 1, 2, 3. */
static inline void words4x4(const __m512i r[4], __m512i u[4]) {
  __m512i t0 = _mm512_unpacklo_epi32(r[0], r[1]); /* r0[4l] r1[4l] ... */
  __m512i t1 = _mm512_unpackhi_epi32(r[0], r[1]); /* r0[4l+2] r1[4l+2] ... */
  __m512i t2 = _mm512_unpacklo_epi32(r[2], r[3]);
  __m512i t3 = _mm512_unpackhi_epi32(r[2], r[3]);
  u[0] = _mm512_unpacklo_epi64(t0, t2);
  u[1] = _mm512_unpackhi_epi64(t0, t2);
  u[2] = _mm512_unpacklo_epi64(t1, t3);
  u[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* In place: row r of the 16x16 matrix of 32-bit words becomes column r. */
static inline void transpose16(__m512i r[16]) {
  __m512i u[16];
  for (int g = 0; g < 4; g++) words4x4(r + 4 * g, u + 4 * g);
  /* Column 4l + w: lane l of u[w], u[4 + w], u[8 + w], u[12 + w]. */
  for (int w = 0; w < 4; w++)
    lanes4x4(u[w], u[4 + w], u[8 + w], u[12 + w], &r[w], &r[4 + w], &r[8 + w],
             &r[12 + w]);
}

/* Chaining values out: h[i] lane j is word i of input j. Writes the 16
 * CVs (512 contiguous bytes) as 8 vectors of two CVs each. */
static inline void store_cvs16(const __m512i h[8], uint8_t *out) {
  __m512i a[4], b[4], pair[8];
  words4x4(h, a);     /* a[w] lane l: words 0..3 of input 4l + w */
  words4x4(h + 4, b); /* b[w] lane l: words 4..7 of input 4l + w */
  /* pair[k] = CVs of inputs 2k and 2k + 1 = (a, b of 2k; a, b of 2k + 1). */
  lanes4x4(a[0], b[0], a[1], b[1], &pair[0], &pair[2], &pair[4], &pair[6]);
  lanes4x4(a[2], b[2], a[3], b[3], &pair[1], &pair[3], &pair[5], &pair[7]);
  for (int k = 0; k < 8; k++)
    _mm512_storeu_si512((void *)(out + 64 * k), pair[k]);
}

/* Hashes inputs 0..used-1 (1 <= used <= 16) of hash_many's input; lanes
 * past used repeat the last input and their results are dropped. */
static void hash16(const uint8_t *in, size_t used, size_t blocks,
                   const uint32_t key[8], uint64_t counter,
                   bool increment_counter, uint8_t flags, uint8_t flags_start,
                   uint8_t flags_end, uint8_t *out) {
  const uint8_t *lane[TL_B3_LANES];
  uint32_t lo[TL_B3_LANES], hi[TL_B3_LANES];
  uint8_t cvs[TL_B3_LANES * 32];
  __m512i h[8], m[16], v[16], counter_lo, counter_hi;
  for (int j = 0; j < TL_B3_LANES; j++) {
    lane[j] = in + ((size_t)j < used ? (size_t)j : used - 1) * 64 * blocks;
    uint64_t c = counter + (increment_counter ? (uint64_t)j : 0);
    lo[j] = (uint32_t)c;
    hi[j] = (uint32_t)(c >> 32);
  }
  counter_lo = _mm512_loadu_si512((const void *)lo);
  counter_hi = _mm512_loadu_si512((const void *)hi);
  for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi32((int)key[i]);
  for (size_t b = 0; b < blocks; b++) {
    uint8_t f = flags;
    if (b == 0) f |= flags_start;
    if (b + 1 == blocks) f |= flags_end;
    for (int j = 0; j < TL_B3_LANES; j++) {
      const uint8_t *p = lane[j] + 64 * b;
      _mm_prefetch((const char *)(p + TL_B3_PREFETCH), _MM_HINT_T0);
      m[j] = _mm512_loadu_si512((const void *)p);
    }
    transpose16(m);
    for (int i = 0; i < 8; i++) v[i] = h[i];
    v[8] = _mm512_set1_epi32((int)TL_B3_IV0);
    v[9] = _mm512_set1_epi32((int)TL_B3_IV1);
    v[10] = _mm512_set1_epi32((int)TL_B3_IV2);
    v[11] = _mm512_set1_epi32((int)TL_B3_IV3);
    v[12] = counter_lo;
    v[13] = counter_hi;
    v[14] = _mm512_set1_epi32(64);
    v[15] = _mm512_set1_epi32(f);
    round16(v, m, tl_b3_schedule[0]);
    round16(v, m, tl_b3_schedule[1]);
    round16(v, m, tl_b3_schedule[2]);
    round16(v, m, tl_b3_schedule[3]);
    round16(v, m, tl_b3_schedule[4]);
    round16(v, m, tl_b3_schedule[5]);
    round16(v, m, tl_b3_schedule[6]);
    for (int i = 0; i < 8; i++) h[i] = xorv(v[i], v[i + 8]);
  }
  store_cvs16(h, cvs);
  memcpy(out, cvs, 32 * used);
}

void tl_blake3_hash_many_avx512(const uint8_t *in, size_t n_inputs,
                                size_t blocks, const uint32_t key[8],
                                uint64_t counter, bool increment_counter,
                                uint8_t flags, uint8_t flags_start,
                                uint8_t flags_end, uint8_t *out) {
  /* A part-filled group costs what a full one does; the portable code is
   * faster for fewer than TL_B3_MIN_GROUP inputs. */
  while (n_inputs >= TL_B3_MIN_GROUP) {
    size_t used = n_inputs < TL_B3_LANES ? n_inputs : TL_B3_LANES;
    hash16(in, used, blocks, key, counter, increment_counter, flags,
           flags_start, flags_end, out);
    in += used * 64 * blocks;
    out += used * 32;
    n_inputs -= used;
    if (increment_counter) counter += used;
  }
  tl_blake3_hash_many_portable(in, n_inputs, blocks, key, counter,
                               increment_counter, flags, flags_start, flags_end,
                               out);
}
