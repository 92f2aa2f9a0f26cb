/* Every BLAKE3 backend that this build compiles and this CPU supports
 * against the portable one, byte for byte: the official vectors in all
 * modes, random inputs at awkward lengths up to several MiB, random split
 * points, unaligned inputs, backend switches mid-stream, and the hash_many
 * kernels on their own (including counters that carry into the high word,
 * which no hasher reaches below 4 TiB of input). A backend the CPU lacks is
 * reported and skipped. */
#include <string.h>

#include "cpu.h"
#include "hash/blake3.h"
#include "hash/blake3_impl.h"
#include "hash/blake3_tv.h"
#include "tl_test.h"

/* Room for the largest input below plus a few bytes of misalignment. */
#define BIG_LEN ((size_t)6 << 20)
static uint8_t big[BIG_LEN + 64];

static void print_case(tl_test_ctx *t, tl_blake3_backend b, int mode,
                       size_t len) {
  tl_test_print(t, "  in case backend ");
  tl_test_print(t, tl_blake3_backend_name(b));
  tl_test_print(t, " mode ");
  tl_test_print_u64(t, (uint64_t)mode);
  tl_test_print(t, " input_len ");
  tl_test_print_u64(t, len);
  tl_test_print(t, "\n");
}

/* Hashes msg with backend b (from the start, or switching from portable at
 * the first piece boundary past len / 2 when switch_midway), in pieces of
 * random size up to max_step (everything at once when max_step is 0). */
static bool hash_with(tl_test_ctx *t, tl_blake3_backend b, int mode,
                      const uint8_t *msg, size_t len, tl_test_rng *rng,
                      size_t max_step, bool switch_midway, uint8_t *out,
                      size_t out_len) {
  tl_blake3_hasher h;
  size_t pos = 0;
  bool ok = true;
  init_mode(&h, mode);
  if (!switch_midway)
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_set_backend(&h, b));
  while (pos < len) {
    size_t step = len - pos;
    if (max_step != 0 && rng != NULL) {
      size_t r = (size_t)(tl_test_rng_next(rng) % (max_step + 1));
      if (r < step) step = r;
    }
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, msg + pos, step));
    pos += step;
    if (switch_midway && pos > len / 2)
      ok &= TL_EXPECT_OK(t, tl_blake3_hasher_set_backend(&h, b));
  }
  ok &= TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, out, out_len));
  return ok;
}

/* Like hash_with, in pieces of whole chunks (1 to 100 of them, now and then
 * a byte more or less), which leave merges pending between updates. */
static bool hash_chunk_pieces(tl_test_ctx *t, tl_blake3_backend b, int mode,
                              const uint8_t *msg, size_t len, tl_test_rng *rng,
                              uint8_t *out, size_t out_len) {
  tl_blake3_hasher h;
  size_t pos = 0;
  bool ok = true;
  init_mode(&h, mode);
  ok &= TL_EXPECT_OK(t, tl_blake3_hasher_set_backend(&h, b));
  while (pos < len) {
    size_t step = (size_t)(1 + tl_test_rng_next(rng) % 100) * 1024;
    uint64_t r = tl_test_rng_next(rng) % 8;
    if (r == 0) step += 1;
    if (r == 1) step -= 1;
    if (step > len - pos) step = len - pos;
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, msg + pos, step));
    pos += step;
  }
  ok &= TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, out, out_len));
  return ok;
}

/* Returns false (after a note) when b cannot run here. */
static bool runnable(tl_test_ctx *t, tl_blake3_backend b) {
  if (!tl_blake3_backend_compiled(b)) {
    tl_test_print(t, "  note: blake3 backend ");
    tl_test_print(t, tl_blake3_backend_name(b));
    tl_test_print(t, " is not compiled into this build; skipped\n");
    return false;
  }
  if (!tl_native_blake3_backend_supported(b)) {
    tl_test_print(t, "  note: this CPU lacks blake3 backend ");
    tl_test_print(t, tl_blake3_backend_name(b));
    tl_test_print(t, "; skipped\n");
    return false;
  }
  return true;
}

static void check_vectors(tl_test_ctx *t, tl_blake3_backend b) {
  tl_test_rng rng = {17};
  for (size_t j = 0; j < 102400; j++) big[j] = (uint8_t)(j % 251);
  for (int mode = 0; mode < MODE_COUNT; mode++) {
    for (size_t i = 0; i < TL_BLAKE3_TV_COUNT; i++) {
      const tl_blake3_tv *tv = &tl_blake3_tvs[i];
      uint8_t want[TL_BLAKE3_TV_OUT_LEN], got[TL_BLAKE3_TV_OUT_LEN];
      bool ok = true;
      tl_test_unhex(tv_hex(tv, mode), want, sizeof want);
      ok &= hash_with(t, b, mode, big, tv->input_len, NULL, 0, false, got,
                      sizeof got);
      ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
      ok &= hash_with(t, b, mode, big, tv->input_len, &rng, 9000, false, got,
                      sizeof got);
      ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
      if (!ok) {
        print_case(t, b, mode, tv->input_len);
        return;
      }
    }
  }
}

/* Input lengths: tiny ones, 1..17 chunks and one byte either side, the
 * batch and SIMD-width boundaries, and a few MiB. */
static size_t awkward_lengths(size_t *lens, size_t cap) {
  static const size_t fixed[] = {0,   1,   63,   64,   65,  127,
                                 128, 129, 1023, 1024, 1025};
  static const size_t chunk_counts[] = {31,  32,  33,  63,  64,   65,   127,
                                        128, 129, 255, 256, 1023, 1024, 1025};
  size_t n = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < cap; i++)
    lens[n++] = fixed[i];
  for (size_t k = 1; k <= 17; k++)
    for (size_t d = 0; d < 3 && n < cap; d++) lens[n++] = k * 1024 + d - 1;
  for (size_t i = 0; i < sizeof chunk_counts / sizeof chunk_counts[0]; i++)
    for (size_t d = 0; d < 3 && n < cap; d++)
      lens[n++] = chunk_counts[i] * 1024 + d - 1;
  if (n + 3 <= cap) {
    lens[n++] = ((size_t)3 << 20) + 17;
    lens[n++] = (size_t)4 << 20;
    lens[n++] = BIG_LEN;
  }
  return n;
}

static void check_random_inputs(tl_test_ctx *t, tl_blake3_backend b) {
  size_t lens[128];
  size_t n = awkward_lengths(lens, sizeof lens / sizeof lens[0]);
  tl_test_rng rng = {23};
  tl_test_rng_fill(&rng, big, sizeof big);
  for (size_t i = 0; i < n; i++) {
    size_t len = lens[i];
    int mode = (int)(i % MODE_COUNT);
    size_t offset = i % 4; /* misaligned inputs too */
    uint8_t want[200], got[200];
    bool ok = true;
    ok &= hash_with(t, TL_BLAKE3_PORTABLE, mode, big + offset, len, NULL, 0,
                    false, want, sizeof want);
    ok &= hash_with(t, b, mode, big + offset, len, NULL, 0, false, got,
                    sizeof got);
    ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    if (len <= ((size_t)1 << 20)) {
      ok &= hash_with(t, b, mode, big + offset, len, &rng, 3 * 1024 + 1, false,
                      got, sizeof got);
      ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    }
    ok &= hash_with(t, b, mode, big + offset, len, &rng, 200000, false, got,
                    sizeof got);
    ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    ok &= hash_with(t, b, mode, big + offset, len, &rng, 70000, true, got,
                    sizeof got);
    ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    ok &=
        hash_chunk_pieces(t, b, mode, big + offset, len, &rng, got, sizeof got);
    ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    if (!ok) {
      print_case(t, b, mode, len);
      return;
    }
  }
}

/* The kernel on its own, against the portable kernel: every input count
 * up to 40 (full SIMD groups plus every remainder), chunks and parents and
 * odd block counts, counters that carry from the low into the high word
 * mid-group, and a counter that does not increment. */
static void check_hash_many(tl_test_ctx *t, tl_blake3_backend b) {
#if TL_B3_HAVE_X86
  static const uint64_t counters[] = {
      0, 5, UINT64_C(0xFFFFFFFA), UINT64_C(0x1FFFFFFFF) - 3, UINT64_MAX - 40};
  static const size_t block_counts[] = {1, 2, 16};
  static uint8_t want[40 * 32], got[40 * 32 + 1];
  tl_blake3_hash_many_fn *fn = b == TL_BLAKE3_SSE41 ? tl_blake3_hash_many_sse41
                               : b == TL_BLAKE3_AVX2
                                   ? tl_blake3_hash_many_avx2
                                   : tl_blake3_hash_many_avx512;
  tl_test_rng rng = {29};
  uint32_t key[8];
  tl_test_rng_fill(&rng, big, 40 * 1024 + 1);
  for (int i = 0; i < 8; i++) key[i] = (uint32_t)tl_test_rng_next(&rng);
  for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
    for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0];
         bc++) {
      for (size_t n = 0; n <= 40; n++) {
        size_t blocks = block_counts[bc];
        bool inc = (n + c) % 5 != 0;
        uint8_t flags = (uint8_t)(blocks == 1 ? TL_B3_PARENT : 0);
        memset(got, 0x5A, sizeof got);
        tl_blake3_hash_many_portable(big + 1, n, blocks, key, counters[c], inc,
                                     flags, TL_B3_CHUNK_START, TL_B3_CHUNK_END,
                                     want);
        fn(big + 1, n, blocks, key, counters[c], inc, flags, TL_B3_CHUNK_START,
           TL_B3_CHUNK_END, got);
        if (!TL_EXPECT_MEM(t, got, want, 32 * n) ||
            !TL_EXPECT_EQ_U64(t, got[32 * n], 0x5A)) {
          print_case(t, b, (int)blocks, n);
          return;
        }
      }
    }
  }
#else
  (void)t;
  (void)b;
#endif
}

static void check_backend(tl_test_ctx *t, tl_blake3_backend b) {
  if (!runnable(t, b)) return;
  check_hash_many(t, b);
  check_vectors(t, b);
  check_random_inputs(t, b);
}

static void sse41_matches_portable(tl_test_ctx *t) {
  check_backend(t, TL_BLAKE3_SSE41);
}

static void avx2_matches_portable(tl_test_ctx *t) {
  check_backend(t, TL_BLAKE3_AVX2);
}

static void avx512_matches_portable(tl_test_ctx *t) {
  check_backend(t, TL_BLAKE3_AVX512);
}

/* The host's choice is compiled, supported, and no slower a backend than
 * any other that is: the list is ordered by width. */
static void native_choice_is_runnable(tl_test_ctx *t) {
  tl_blake3_backend chosen = tl_native_blake3_backend();
  tl_cpu_features f = tl_native_cpu_features();
  tl_blake3_hasher h;
  TL_EXPECT(t, tl_blake3_backend_compiled(chosen));
  TL_EXPECT(t, tl_native_blake3_backend_supported(chosen));
  TL_EXPECT(t, tl_native_blake3_backend_supported(TL_BLAKE3_PORTABLE));
  TL_EXPECT(t, !tl_native_blake3_backend_supported((tl_blake3_backend)42));
  for (int b = (int)chosen + 1; b <= (int)TL_BLAKE3_AVX512; b++)
    TL_EXPECT(t, !(tl_blake3_backend_compiled((tl_blake3_backend)b) &&
                   tl_native_blake3_backend_supported((tl_blake3_backend)b)));
  TL_EXPECT_OK(t, tl_blake3_hasher_init_backend(&h, chosen));
#if !defined(__x86_64__)
  TL_EXPECT(t, !f.sse41 && !f.avx2 && !f.avx512f && !f.avx512vl);
#endif
  tl_test_print(t, "  note: cpu sse4.1=");
  tl_test_print_u64(t, f.sse41);
  tl_test_print(t, " avx2=");
  tl_test_print_u64(t, f.avx2);
  tl_test_print(t, " avx512f=");
  tl_test_print_u64(t, f.avx512f);
  tl_test_print(t, " avx512vl=");
  tl_test_print_u64(t, f.avx512vl);
  tl_test_print(t, "; blake3 backend: ");
  tl_test_print(t, tl_blake3_backend_name(chosen));
  tl_test_print(t, "\n");
}

/* The default backend (what tl_blake3 and tl_slm verification use) can be
 * the host's choice; the digest stays the portable one's. */
static void default_backend_gives_the_same_digest(tl_test_ctx *t) {
  static uint8_t data[70000];
  uint8_t want[32], got[32];
  tl_blake3_hasher h;
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i % 251);
  TL_EXPECT_OK(t, tl_blake3(data, sizeof data, want));
  TL_EXPECT_OK(t, tl_blake3_set_default_backend(tl_native_blake3_backend()));
  tl_blake3_hasher_init(&h);
  TL_EXPECT_EQ_U64(t, h.backend, tl_native_blake3_backend());
  TL_EXPECT_OK(t, tl_blake3(data, sizeof data, got));
  TL_EXPECT_MEM(t, got, want, 32);
  TL_EXPECT_STATUS(t, tl_blake3_set_default_backend((tl_blake3_backend)42),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_blake3_set_default_backend(TL_BLAKE3_PORTABLE));
}

static const tl_test_case cases[] = {
    TL_CASE(native_choice_is_runnable),
    TL_CASE(default_backend_gives_the_same_digest),
    TL_CASE(sse41_matches_portable),
    TL_CASE(avx2_matches_portable),
    TL_CASE(avx512_matches_portable),
};
TL_SUITE(blake3_dispatch, cases);
