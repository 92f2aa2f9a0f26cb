/* BLAKE3 (portable backend) against the official test vectors in all three
 * modes with their full 131-byte extended outputs, plus the streaming and
 * XOF contracts and typed errors. The SIMD backends are compared with this
 * one in src/native/blake3_dispatch_test.c; larger inputs are checked
 * differentially against b3sum in tests/diff/hash_diff.sh. */
#include "hash/blake3.h"

#include <string.h>

#include "hash/blake3_tv.h"
#include "tl_test.h"

static const char *const mode_names[MODE_COUNT] = {"hash", "keyed_hash",
                                                   "derive_key"};


/* The vectors' input: bytes j % 251. */
static uint8_t tv_input[102400];

static void fill_tv_input(void) {
  for (size_t j = 0; j < sizeof tv_input; j++) tv_input[j] = (uint8_t)(j % 251);
}

static void print_case(tl_test_ctx *t, int mode, size_t input_len) {
  tl_test_print(t, "  in case ");
  tl_test_print(t, mode_names[mode]);
  tl_test_print(t, " input_len ");
  tl_test_print_u64(t, input_len);
  tl_test_print(t, "\n");
}

/* One mode over every vector: the full extended output in one finalize, and
 * its 32-byte prefix as the default-length output. */
static void check_vectors(tl_test_ctx *t, int mode) {
  fill_tv_input();
  for (size_t i = 0; i < TL_BLAKE3_TV_COUNT; i++) {
    const tl_blake3_tv *tv = &tl_blake3_tvs[i];
    uint8_t want[TL_BLAKE3_TV_OUT_LEN], got[TL_BLAKE3_TV_OUT_LEN];
    uint8_t prefix[TL_BLAKE3_OUT_LEN];
    tl_blake3_hasher h;
    bool ok = true;
    if (!TL_EXPECT(t, tv->input_len <= sizeof tv_input)) return;
    TL_EXPECT_EQ_U64(t, tl_test_unhex(tv_hex(tv, mode), want, sizeof want),
                     sizeof want);
    init_mode(&h, mode);
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, tv_input, tv->input_len));
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, got, sizeof got));
    ok &= TL_EXPECT_MEM(t, got, want, sizeof want);
    ok &= TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, prefix, sizeof prefix));
    ok &= TL_EXPECT_MEM(t, prefix, want, sizeof prefix);
    if (mode == MODE_HASH) {
      ok &= TL_EXPECT_OK(t, tl_blake3(tv_input, tv->input_len, prefix));
      ok &= TL_EXPECT_MEM(t, prefix, want, sizeof prefix);
    }
    if (!ok) {
      print_case(t, mode, tv->input_len);
      return;
    }
  }
}

static void official_vectors_hash(tl_test_ctx *t) {
  check_vectors(t, MODE_HASH);
}

static void official_vectors_keyed_hash(tl_test_ctx *t) {
  check_vectors(t, MODE_KEYED);
}

static void official_vectors_derive_key(tl_test_ctx *t) {
  check_vectors(t, MODE_DERIVE);
}

/* Feeds msg[0, len) in pieces of random size below max_step + 1 (0
 * included) and returns the extended output. */
static void hash_in_pieces(tl_test_ctx *t, tl_test_rng *rng, int mode,
                           const uint8_t *msg, size_t len, size_t max_step,
                           uint8_t *out, size_t out_len) {
  tl_blake3_hasher h;
  size_t pos = 0;
  init_mode(&h, mode);
  while (pos < len) {
    size_t step = (size_t)(tl_test_rng_next(rng) % (max_step + 1));
    if (step > len - pos) step = len - pos;
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, msg + pos, step));
    pos += step;
  }
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, out, out_len));
}

/* The vectors again, fed in small pieces (never a whole chunk at once, so
 * the chunk-by-chunk path builds the tree) and in larger ones (whole runs
 * of chunks go through hash_many and the subtree reduction). */
static void official_vectors_streamed(tl_test_ctx *t) {
  tl_test_rng rng = {3};
  fill_tv_input();
  for (int mode = 0; mode < MODE_COUNT; mode++) {
    for (size_t i = 0; i < TL_BLAKE3_TV_COUNT; i++) {
      static const size_t max_steps[] = {1, 63, 65, 1023, 5000, 40000};
      const tl_blake3_tv *tv = &tl_blake3_tvs[i];
      uint8_t want[TL_BLAKE3_TV_OUT_LEN], got[TL_BLAKE3_TV_OUT_LEN];
      tl_test_unhex(tv_hex(tv, mode), want, sizeof want);
      for (size_t s = 0; s < sizeof max_steps / sizeof max_steps[0]; s++) {
        if (max_steps[s] == 1 && tv->input_len > 10000) continue;
        hash_in_pieces(t, &rng, mode, tv_input, tv->input_len, max_steps[s],
                       got, sizeof got);
        if (!TL_EXPECT_MEM(t, got, want, sizeof want)) {
          print_case(t, mode, tv->input_len);
          return;
        }
      }
    }
  }
}

static uint8_t big_msg[(1 << 20) + 3000];

/* Random splits agree with the one-shot hash. The reference side is fed in
 * pieces of at most one chunk, which never takes the batched path; the
 * other side gets everything in one update, which does. Lengths cover
 * every chunk count up to 40 and then grow to over a MiB, so subtrees of
 * every alignment occur. */
static void any_split_gives_the_one_shot_output(tl_test_ctx *t) {
  tl_test_rng rng = {1};
  tl_test_rng_fill(&rng, big_msg, sizeof big_msg);
  for (size_t len = 0; len <= sizeof big_msg;) {
    int mode = (int)(len % MODE_COUNT);
    uint8_t one_shot[80], small[80], mixed[80];
    tl_blake3_hasher h;
    init_mode(&h, mode);
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg, len));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, one_shot, sizeof one_shot));
    hash_in_pieces(t, &rng, mode, big_msg, len, TL_BLAKE3_CHUNK_LEN, small,
                   sizeof small);
    hash_in_pieces(t, &rng, mode, big_msg, len, 70000, mixed, sizeof mixed);
    if (!TL_EXPECT_MEM(t, small, one_shot, sizeof one_shot) ||
        !TL_EXPECT_MEM(t, mixed, one_shot, sizeof one_shot)) {
      print_case(t, mode, len);
      return;
    }
    if (len < 40 * TL_BLAKE3_CHUNK_LEN)
      len += 1 + (size_t)(tl_test_rng_next(&rng) % 300);
    else
      len += 1 + len / 3 + (size_t)(tl_test_rng_next(&rng) % 3000);
  }
}

/* Lengths at and around every block and chunk boundary of a few chunks,
 * streamed one piece per block against the one-shot output. */
static void boundary_lengths_stream_consistently(tl_test_ctx *t) {
  tl_test_rng rng = {5};
  tl_test_rng_fill(&rng, big_msg, 9 * TL_BLAKE3_CHUNK_LEN);
  for (size_t k = 0; k <= 9 * 16; k++) {
    for (size_t len = k == 0 ? 0 : k * 64 - 1; len <= k * 64 + 1; len++) {
      uint8_t want[32], got[32];
      tl_blake3_hasher h;
      TL_EXPECT_OK(t, tl_blake3(big_msg, len, want));
      tl_blake3_hasher_init(&h);
      for (size_t pos = 0; pos < len; pos += 64) {
        size_t step = len - pos < 64 ? len - pos : 64;
        TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg + pos, step));
      }
      TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, got, sizeof got));
      if (!TL_EXPECT_MEM(t, got, want, sizeof want)) {
        print_case(t, MODE_HASH, len);
        return;
      }
    }
  }
}

/* Pieces that are whole chunks (1 to 70 of them, now and then with a byte
 * or two more or less) leave the stack with merges pending at the end of
 * an update. Finalizing there, and continuing afterwards, must agree with
 * a hasher fed the same bytes in pieces under a chunk, which never leaves
 * a merge pending. */
static void chunk_aligned_pieces_agree(tl_test_ctx *t) {
  tl_test_rng rng = {13};
  tl_test_rng_fill(&rng, big_msg, sizeof big_msg);
  for (int mode = 0; mode < MODE_COUNT; mode++) {
    tl_blake3_hasher aligned, small;
    size_t pos = 0, small_pos = 0;
    init_mode(&aligned, mode);
    init_mode(&small, mode);
    while (pos < (size_t)600 * 1024) {
      uint8_t a[40], b[40];
      size_t step = (size_t)(1 + tl_test_rng_next(&rng) % 70) * 1024;
      uint64_t r = tl_test_rng_next(&rng) % 8;
      if (r == 0) step += 1;
      if (r == 1) step -= 1;
      TL_EXPECT_OK(t, tl_blake3_hasher_update(&aligned, big_msg + pos, step));
      pos += step;
      while (small_pos < pos) {
        size_t s = 1 + (size_t)(tl_test_rng_next(&rng) % 1000);
        if (s > pos - small_pos) s = pos - small_pos;
        TL_EXPECT_OK(t,
                     tl_blake3_hasher_update(&small, big_msg + small_pos, s));
        small_pos += s;
      }
      TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&aligned, a, sizeof a));
      TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&small, b, sizeof b));
      if (!TL_EXPECT_MEM(t, a, b, sizeof a)) {
        print_case(t, mode, pos);
        return;
      }
    }
  }
}

/* finalize neither consumes nor changes the hasher: repeated calls agree,
 * the stream can continue afterwards, and a copy continues the same
 * stream. */
static void finalize_is_idempotent(tl_test_ctx *t) {
  tl_test_rng rng = {7};
  tl_test_rng_fill(&rng, big_msg, 5000);
  for (int mode = 0; mode < MODE_COUNT; mode++) {
    tl_blake3_hasher h, copy, straight;
    uint8_t a[100], b[100], c[100], d[100];
    init_mode(&h, mode);
    init_mode(&straight, mode);
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg, 3000));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, a, sizeof a));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, b, sizeof b));
    TL_EXPECT_MEM(t, a, b, sizeof a);
    copy = h;
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg + 3000, 2000));
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&copy, big_msg + 3000, 2000));
    TL_EXPECT_OK(t, tl_blake3_hasher_update(&straight, big_msg, 5000));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, a, sizeof a));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&copy, c, sizeof c));
    TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&straight, d, sizeof d));
    TL_EXPECT_MEM(t, a, d, sizeof a);
    TL_EXPECT_MEM(t, c, d, sizeof c);
  }
}

/* The first n bytes of a longer output are the output of length n, for
 * output lengths around every 64-byte output block. */
static void xof_prefixes_agree(tl_test_ctx *t) {
  static const size_t input_lens[] = {0, 1, 64, 1024, 1025, 5000};
  static uint8_t longest[2000], shorter[2000];
  tl_test_rng rng = {11};
  tl_test_rng_fill(&rng, big_msg, 5000);
  for (size_t i = 0; i < sizeof input_lens / sizeof input_lens[0]; i++) {
    for (int mode = 0; mode < MODE_COUNT; mode++) {
      tl_blake3_hasher h;
      init_mode(&h, mode);
      TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg, input_lens[i]));
      TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, longest, sizeof longest));
      for (size_t n = 0; n <= sizeof shorter; n += n < 260 ? 1 : 61) {
        memset(shorter, 0xA5, sizeof shorter);
        TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, shorter, n));
        if (!TL_EXPECT_MEM(t, shorter, longest, n) ||
            (n < sizeof shorter && !TL_EXPECT_EQ_U64(t, shorter[n], 0xA5))) {
          print_case(t, mode, input_lens[i]);
          return;
        }
      }
    }
  }
}

/* derive_key's context is data: a context with a NUL in it, and an empty
 * one, are distinct from each other and from plain hashing. */
static void derive_key_contexts_are_distinct(tl_test_ctx *t) {
  tl_blake3_hasher h;
  uint8_t empty[32], nul[32], plain[32];
  TL_EXPECT_OK(t, tl_blake3_hasher_init_derive_key(&h, NULL, 0));
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, empty, 32));
  TL_EXPECT_OK(t, tl_blake3_hasher_init_derive_key(&h, "\0", 1));
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, nul, 32));
  TL_EXPECT_OK(t, tl_blake3(NULL, 0, plain));
  TL_EXPECT(t, memcmp(empty, nul, 32) != 0);
  TL_EXPECT(t, memcmp(empty, plain, 32) != 0);
}

static void backends_in_this_build(tl_test_ctx *t) {
  static const tl_blake3_backend simd[] = {TL_BLAKE3_SSE41, TL_BLAKE3_AVX2,
                                           TL_BLAKE3_AVX512};
  tl_blake3_hasher h;
  TL_EXPECT(t, tl_blake3_backend_compiled(TL_BLAKE3_PORTABLE));
  TL_EXPECT(t, !tl_blake3_backend_compiled((tl_blake3_backend)4));
  TL_EXPECT(t, !tl_blake3_backend_compiled((tl_blake3_backend)-1));
  TL_EXPECT_OK(t, tl_blake3_hasher_init_backend(&h, TL_BLAKE3_PORTABLE));
  TL_EXPECT_STR(t, tl_blake3_backend_name(TL_BLAKE3_PORTABLE), "portable");
  TL_EXPECT_STR(t, tl_blake3_backend_name(TL_BLAKE3_AVX512), "avx512");
  TL_EXPECT_STR(t, tl_blake3_backend_name((tl_blake3_backend)9), "unknown");
  /* Selecting a SIMD backend runs none of its code, so this is safe on any
   * CPU; it succeeds exactly when the backend is compiled in. */
  for (size_t i = 0; i < sizeof simd / sizeof simd[0]; i++) {
    tl_status want = tl_blake3_backend_compiled(simd[i])
                         ? TL_OK
                         : TL_ERR_UNSUPPORTED_FEATURE;
    TL_EXPECT_STATUS(t, tl_blake3_hasher_init_backend(&h, simd[i]), want);
    TL_EXPECT_EQ_U64(t, h.backend,
                     want == TL_OK ? simd[i] : TL_BLAKE3_PORTABLE);
  }
#if !defined(__x86_64__)
  for (size_t i = 0; i < sizeof simd / sizeof simd[0]; i++)
    TL_EXPECT(t, !tl_blake3_backend_compiled(simd[i]));
#endif
}

static void bad_arguments_are_typed(tl_test_ctx *t) {
  static const uint8_t key[32] = {1};
  tl_blake3_hasher h;
  uint8_t out[32];
  tl_blake3_hasher_init(NULL); /* no effect, no crash */
  tl_blake3_hasher_init(&h);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_update(&h, NULL, 1),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, NULL, 0));
  TL_EXPECT_STATUS(t, tl_blake3_hasher_update(NULL, "x", 1),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_finalize(&h, NULL, 1),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, NULL, 0));
  TL_EXPECT_STATUS(t, tl_blake3_hasher_finalize(NULL, out, 32),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3("x", 1, NULL), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3(NULL, 1, out), TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_OK(t, tl_blake3(NULL, 0, out));
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_keyed(NULL, key),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_keyed(&h, NULL),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_derive_key(NULL, "c", 1),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_derive_key(&h, NULL, 1),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_backend(NULL, TL_BLAKE3_PORTABLE),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_init_backend(&h, (tl_blake3_backend)7),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, h.backend, TL_BLAKE3_PORTABLE);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_set_backend(NULL, TL_BLAKE3_PORTABLE),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_STATUS(t, tl_blake3_hasher_set_backend(&h, (tl_blake3_backend)-3),
                   TL_ERR_INVALID_ARGUMENT);
  TL_EXPECT_EQ_U64(t, h.backend, TL_BLAKE3_PORTABLE);
}

/* A hasher whose fields contradict each other is refused before any of
 * them is used as an index. */
static void corrupted_hasher_is_refused(tl_test_ctx *t) {
  tl_blake3_hasher good, h;
  uint8_t out[32];
  tl_blake3_hasher_init(&good);
  TL_EXPECT_OK(t, tl_blake3_hasher_update(&good, big_msg, 3 * 1024 + 5));
  for (int which = 0; which < 9; which++) {
    h = good;
    switch (which) {
      case 0:
        h.block_len = 65;
        break;
      case 1:
        h.blocks_compressed = 16;
        break;
      case 2:
        h.cv_stack_len = 56;
        break; /* more than the stack holds */
      case 3:
        h.cv_stack_len = 1;
        break; /* popcount(3) is 2 */
      case 4:
        h.backend = 200;
        break;
      case 5:
        h.flags = 0xFF;
        break;
      case 6:
        h.chunk_counter = UINT64_MAX;
        break;
      case 7:
        h.cv_stack_len = 3;
        break; /* unmerged beside a partial chunk */
      default: /* an empty chunk after chunks needs two subtrees waiting */
        h.block_len = 0;
        h.blocks_compressed = 0;
        h.chunk_counter = 2;
        h.cv_stack_len = 1;
        break;
    }
    TL_EXPECT_STATUS(t, tl_blake3_hasher_update(&h, "x", 1),
                     TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_STATUS(t, tl_blake3_hasher_finalize(&h, out, sizeof out),
                     TL_ERR_INVALID_ARGUMENT);
    TL_EXPECT_STATUS(t, tl_blake3_hasher_set_backend(&h, TL_BLAKE3_PORTABLE),
                     TL_ERR_INVALID_ARGUMENT);
  }
}

/* The specification limits the input to 2^64 - 1 bytes. A hasher that has
 * (nominally) absorbed 2^64 - 1023 bytes takes 1022 more and no others; a
 * refused update absorbs nothing. */
static void input_length_limit(tl_test_ctx *t) {
  tl_blake3_hasher h;
  uint8_t before[32], after[32];
  tl_blake3_hasher_init(&h);
  TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, "a", 1));
  h.chunk_counter = (UINT64_C(1) << 54) - 1;
  h.cv_stack_len = 54;
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, before, sizeof before));
  TL_EXPECT_STATUS(t, tl_blake3_hasher_update(&h, big_msg, 1023),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_OK(t, tl_blake3_hasher_finalize(&h, after, sizeof after));
  TL_EXPECT_MEM(t, after, before, sizeof after);
  TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg, 1022));
  TL_EXPECT_STATUS(t, tl_blake3_hasher_update(&h, big_msg, 1),
                   TL_ERR_INTEGER_OVERFLOW);
  TL_EXPECT_OK(t, tl_blake3_hasher_update(&h, big_msg, 0));
}

static const tl_test_case cases[] = {
    TL_CASE(official_vectors_hash),
    TL_CASE(official_vectors_keyed_hash),
    TL_CASE(official_vectors_derive_key),
    TL_CASE(official_vectors_streamed),
    TL_CASE(any_split_gives_the_one_shot_output),
    TL_CASE(boundary_lengths_stream_consistently),
    TL_CASE(chunk_aligned_pieces_agree),
    TL_CASE(finalize_is_idempotent),
    TL_CASE(xof_prefixes_agree),
    TL_CASE(derive_key_contexts_are_distinct),
    TL_CASE(backends_in_this_build),
    TL_CASE(bad_arguments_are_typed),
    TL_CASE(corrupted_hasher_is_refused),
    TL_CASE(input_length_limit),
};
TL_SUITE(blake3, cases);
