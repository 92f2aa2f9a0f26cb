/* CPU feature detection for the native host, and the choice of kernel
 * backends that follows from it. The core never looks at the CPU (it is
 * freestanding and also runs in wasm32); the host asks here and hands the
 * core a backend it has checked. */
#ifndef TL_NATIVE_CPU_H
#define TL_NATIVE_CPU_H

#include <stdbool.h>

#include "hash/blake3.h"
#include "hash/sha256.h"
#include "kernels/kernels.h"

/* What this CPU, with this operating system, can execute. The AVX and
 * AVX-512 entries are true only when the OS also saves the wider register
 * state; all false off x86-64. asimd (Advanced SIMD) and asimddp, from
 * the kernel's HWCAP, can be true only on aarch64. */
typedef struct tl_cpu_features {
  bool sse41;
  bool avx2;
  bool avx512f;
  bool avx512vl;
  bool avx512bw;
  bool avx512vnni;
  bool avxvnni; /* VEX-encoded AVX-VNNI (256-bit vpdpbusd) */
  bool f16c;
  bool sha; /* the SHA extensions (SHA-NI) */
  bool asimd;
  bool asimddp; /* the dot-product extension (sdot, udot) */
} tl_cpu_features;

tl_cpu_features tl_native_cpu_features(void);

/* True when this CPU can run backend b (the portable one always); says
 * nothing about whether b is compiled in (tl_blake3_backend_compiled). */
bool tl_native_blake3_backend_supported(tl_blake3_backend b);

/* The fastest backend that is both compiled in and supported by this CPU;
 * TL_BLAKE3_PORTABLE when there is none. */
tl_blake3_backend tl_native_blake3_backend(void);

/* The SHA-256 backend to use: SHA-NI when compiled in and the CPU has
 * the SHA extensions and SSE4.1, else the portable one. */
tl_sha256_backend tl_native_sha256_backend(void);

/* The same for the fast lane's kernel variants (src/core/kernels). */
bool tl_native_kernels_supported(tl_kern_isa isa);
const tl_kernels *tl_native_kernels(void);

#endif
