/* SHA-256 compression with the x86 SHA extensions (SHA-NI: sha256rnds2,
 * sha256msg1, sha256msg2; SSSE3/SSE4.1 for the byte and word shuffles).
 * Named *_sse41.c for the build's ISA file rule; the SHA instructions are
 * enabled per function. The state lives as the two registers the
 * instructions want: ABEF and CDGH (most significant word first). */
#include <immintrin.h>

#include "hash/sha256_impl.h"

#if TL_SHA256_HAVE_X86

#define TARGET __attribute__((target("sha,sse4.1,ssse3")))

TARGET void tl_sha256_compress_shani(uint32_t s[8], const uint8_t *p, size_t blocks) {
  /* big-endian words: reverse the bytes of each 32-bit lane */
  const __m128i bswap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)s), 0xB1);      /* CDAB */
  __m128i st1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(s + 4)), 0x1B); /* EFGH */
  __m128i st0 = _mm_alignr_epi8(t, st1, 8);                                      /* ABEF */
  st1 = _mm_blend_epi16(st1, t, 0xF0);                                           /* CDGH */
  for (size_t blk = 0; blk < blocks; blk++, p += 64) {
    __m128i save0 = st0, save1 = st1, w[4];
    for (int i = 0; i < 16; i++) {
      __m128i msg;
      if (i < 4) {
        w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
      } else {
        /* w[t] = s1(w[t-2]) + w[t-7] + s0(w[t-15]) + w[t-16] for the four
         * words of group i, from groups i-4 .. i-1 */
        __m128i x = _mm_sha256msg1_epu32(w[i % 4], w[(i - 3) % 4]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(i - 1) % 4], w[(i - 2) % 4], 4));
        w[i % 4] = _mm_sha256msg2_epu32(x, w[(i - 1) % 4]);
      }
      msg = _mm_add_epi32(w[i % 4], _mm_loadu_si128((const __m128i *)(tl_sha256_k + 4 * i)));
      st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
      st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(msg, 0x0E));
    }
    st0 = _mm_add_epi32(st0, save0);
    st1 = _mm_add_epi32(st1, save1);
  }
  t = _mm_shuffle_epi32(st0, 0x1B);   /* FEBA */
  st1 = _mm_shuffle_epi32(st1, 0xB1); /* DCHG */
  _mm_storeu_si128((__m128i *)s, _mm_blend_epi16(t, st1, 0xF0));        /* DCBA */
  _mm_storeu_si128((__m128i *)(s + 4), _mm_alignr_epi8(st1, t, 8));     /* HGFE */
}

#endif
