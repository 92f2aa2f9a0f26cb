/* BLAKE3 (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020), streaming, with
 * the three modes of the specification (hash, keyed_hash, derive_key) and
 * extendable output.
 *
 * One portable reference backend is always present. On x86-64 native builds
 * SIMD backends that hash several chunks side by side may be compiled in as
 * well; they give the same bytes as the portable one. The core cannot see
 * the CPU: a host picks a backend it has checked (src/host/cpu.h) and
 * hands it to tl_blake3_hasher_init_backend or tl_blake3_hasher_set_backend.
 *
 * The hasher is a plain value: it may be copied (a copy continues the same
 * stream), and finalizing does not consume it. */
#ifndef TL_CORE_BLAKE3_H
#define TL_CORE_BLAKE3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_BLAKE3_OUT_LEN 32 /* default output length */
#define TL_BLAKE3_KEY_LEN 32
#define TL_BLAKE3_BLOCK_LEN 64
#define TL_BLAKE3_CHUNK_LEN 1024
/* Inputs are at most 2^64 - 1 bytes, so fewer than 2^54 whole chunks: a
 * tree at most 54 levels deep. */
#define TL_BLAKE3_MAX_DEPTH 54

/* The numeric values are stable (hosts may store or print them). */
typedef enum tl_blake3_backend {
  TL_BLAKE3_PORTABLE = 0, /* scalar C, every build */
  TL_BLAKE3_SSE41 = 1,    /* 4 chunks at a time, x86-64 native builds */
  TL_BLAKE3_AVX2 = 2,     /* 8 chunks at a time, x86-64 native builds */
  TL_BLAKE3_AVX512 = 3    /* 16 chunks at a time (AVX-512F + VL; the host
                             also checks AVX2), x86-64 native builds */
} tl_blake3_backend;

/* Internals are public only so that the hasher can live on the stack; use
 * the functions below. Each update and finalize checks that the fields are
 * consistent and refuses (TL_ERR_INVALID_ARGUMENT) a hasher that is not,
 * so a corrupted value cannot make the code read or write out of bounds. */
typedef struct tl_blake3_hasher {
  uint32_t key[8];        /* key words: the IV, the key, or the context key */
  uint32_t cv[8];         /* chaining value of the chunk in progress */
  uint64_t chunk_counter; /* whole chunks already pushed onto cv_stack */
  uint8_t block[64];      /* the chunk's newest block, not yet compressed */
  uint8_t block_len;      /* bytes in block: 0..64 */
  uint8_t blocks_compressed; /* blocks of this chunk already in cv: 0..15 */
  uint8_t flags;             /* mode flags (blake3_impl.h) */
  uint8_t backend;           /* a tl_blake3_backend */
  uint8_t cv_stack_len;      /* entries in cv_stack */
  /* Chaining values (32 bytes each, little-endian words) of complete
   * subtrees, oldest first. Merges are lazy: one subtree per set bit of
   * chunk_counter, plus pushed subtrees not merged yet (at most one more
   * entry than the depth). */
  uint8_t cv_stack[(TL_BLAKE3_MAX_DEPTH + 1) * 32];
} tl_blake3_hasher;

/* Plain hashing, portable backend. Does nothing when h is NULL. */
void tl_blake3_hasher_init(tl_blake3_hasher *h);
/* keyed_hash mode; key holds TL_BLAKE3_KEY_LEN bytes. Portable backend. */
tl_status tl_blake3_hasher_init_keyed(tl_blake3_hasher *h,
                                      const uint8_t key[TL_BLAKE3_KEY_LEN]);
/* derive_key mode: context is the application's context string (the
 * specification asks for a hardcoded, globally unique one); context may be
 * NULL only when context_len is 0. The key material is then fed with
 * update. Portable backend. */
tl_status tl_blake3_hasher_init_derive_key(tl_blake3_hasher *h,
                                           const char *context,
                                           size_t context_len);

/* Plain hashing with backend b. TL_ERR_INVALID_ARGUMENT for a NULL h or a
 * value that names no backend; TL_ERR_UNSUPPORTED_FEATURE when b is not
 * compiled into this build (every SIMD backend in wasm32 and non-x86
 * builds). Whether the CPU can run b is the caller's check. Unless h is
 * NULL, *h is initialised in every case, with the portable backend when
 * the call fails. */
tl_status tl_blake3_hasher_init_backend(tl_blake3_hasher *h,
                                        tl_blake3_backend b);
/* Switches an initialised hasher, in any mode and at any point of the
 * stream, to backend b; the output does not depend on the backend. Errors
 * as for init_backend; on failure *h is unchanged. */
tl_status tl_blake3_hasher_set_backend(tl_blake3_hasher *h,
                                       tl_blake3_backend b);
/* True when b is compiled into this build. */
bool tl_blake3_backend_compiled(tl_blake3_backend b);
/* "portable", "sse4.1", "avx2", "avx512"; "unknown" for any other value. */
const char *tl_blake3_backend_name(tl_blake3_backend b);

/* data may be NULL only when len is 0. TL_ERR_INTEGER_OVERFLOW when the
 * input would exceed 2^64 - 1 bytes (nothing is absorbed then). */
tl_status tl_blake3_hasher_update(tl_blake3_hasher *h, const void *data,
                                  size_t len);
/* Extendable output: writes the first out_len bytes of the output stream
 * (TL_BLAKE3_OUT_LEN is the default length; any length is valid, and a
 * shorter output is a prefix of a longer one). Does not modify the hasher:
 * it can be called again, and updated further. out may be NULL only when
 * out_len is 0. */
tl_status tl_blake3_hasher_finalize(const tl_blake3_hasher *h, uint8_t *out,
                                    size_t out_len);

/* The backend every hasher starts with (and tl_blake3 uses): portable by
 * default; a host that has checked its CPU may name a faster one once at
 * start-up (every backend gives the same bytes). TL_ERR_UNSUPPORTED_FEATURE
 * when b is not compiled in. */
tl_status tl_blake3_set_default_backend(tl_blake3_backend b);

/* One-shot plain hash, with the default backend. */
tl_status tl_blake3(const void *data, size_t len,
                    uint8_t out[TL_BLAKE3_OUT_LEN]);

#endif
