/* Shared by the SHA-256 compression backends only. */
#ifndef TL_CORE_SHA256_IMPL_H
#define TL_CORE_SHA256_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* FIPS 180-4 §4.2.2 */
extern const uint32_t tl_sha256_k[64];

/* Compresses blocks 64-byte blocks at p into the state s. */
typedef void tl_sha256_compress_fn(uint32_t s[8], const uint8_t *p, size_t blocks);

/* The SHA-NI backend exists in x86-64 native builds only (the Makefile
 * compiles *_sse41.c there); TL_NO_X86_SIMD turns it off. */
#if defined(__x86_64__) && !defined(TL_NO_X86_SIMD)
#define TL_SHA256_HAVE_X86 1
tl_sha256_compress_fn tl_sha256_compress_shani;
#else
#define TL_SHA256_HAVE_X86 0
#endif

#endif
