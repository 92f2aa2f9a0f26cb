/* BLAKE3 internals shared by the portable code (blake3.c) and its SIMD
 * twins (blake3_<isa>.c). Not part of the public API. */
#ifndef TL_CORE_BLAKE3_IMPL_H
#define TL_CORE_BLAKE3_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/blake3.h"

/* Domain-separation flags (specification §2.2, Table 3). */
enum {
  TL_B3_CHUNK_START = 1 << 0,
  TL_B3_CHUNK_END = 1 << 1,
  TL_B3_PARENT = 1 << 2,
  TL_B3_ROOT = 1 << 3,
  TL_B3_KEYED_HASH = 1 << 4,
  TL_B3_DERIVE_KEY_CONTEXT = 1 << 5,
  TL_B3_DERIVE_KEY_MATERIAL = 1 << 6
};

/* The IV: the first 32 bits of the fractional parts of the square roots of
 * the first 8 primes (the SHA-256 IV). */
#define TL_B3_IV0 0x6A09E667u
#define TL_B3_IV1 0xBB67AE85u
#define TL_B3_IV2 0x3C6EF372u
#define TL_B3_IV3 0xA54FF53Au
#define TL_B3_IV4 0x510E527Fu
#define TL_B3_IV5 0x9B05688Cu
#define TL_B3_IV6 0x1F83D9ABu
#define TL_B3_IV7 0x5BE0CD19u

/* Message word schedule: round r reads word tl_b3_schedule[r][i] where the
 * specification reads its i-th word. Row 0 is the identity; row r + 1 is
 * row r permuted by the specification's fixed permutation
 * (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8), i.e.
 * row[r + 1][i] = row[r][perm[i]]. */
static const uint8_t tl_b3_schedule[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},
    {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},
    {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

/* Hashes n_inputs independent inputs of `blocks` whole blocks each and
 * writes each one's 32-byte chaining value (little-endian words).
 *   in    n_inputs * blocks * 64 bytes; input i is the bytes
 *         [i * blocks * 64, (i + 1) * blocks * 64). Any alignment.
 *   key   the starting chaining value of every input.
 *   counter, increment_counter
 *         input i uses counter + i when increment_counter, else counter.
 *   flags on every block; flags_start is added on each input's first block,
 *         flags_end on its last.
 *   out   n_inputs * 32 bytes; must not overlap in.
 * Whole chunks: blocks = 16, increment_counter, flags_start = CHUNK_START,
 * flags_end = CHUNK_END. Parents: blocks = 1, counter 0, flags | PARENT,
 * the input being the concatenated child chaining values.
 * Every backend has this signature and gives the portable one's bytes. */
typedef void tl_blake3_hash_many_fn(const uint8_t *in, size_t n_inputs,
                                    size_t blocks, const uint32_t key[8],
                                    uint64_t counter, bool increment_counter,
                                    uint8_t flags, uint8_t flags_start,
                                    uint8_t flags_end, uint8_t *out);

tl_blake3_hash_many_fn tl_blake3_hash_many_portable;

/* The ISA twins exist in x86-64 native builds only (the Makefile compiles
 * blake3_<isa>.c there and nowhere else). A build that compiles this file
 * for x86-64 without them defines TL_NO_X86_SIMD. */
#if defined(__x86_64__) && !defined(TL_NO_X86_SIMD)
#define TL_B3_HAVE_X86 1
tl_blake3_hash_many_fn tl_blake3_hash_many_sse41;
tl_blake3_hash_many_fn tl_blake3_hash_many_avx2;
tl_blake3_hash_many_fn tl_blake3_hash_many_avx512;
#else
#define TL_B3_HAVE_X86 0
#endif

#endif
