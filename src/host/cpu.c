/* CPU features through the compiler's __builtin_cpu_supports, which reads
 * CPUID once at start-up (in libgcc or compiler-rt) and checks XCR0 for the
 * OS side of AVX and AVX-512; on aarch64 Linux through the kernel's HWCAP
 * (getauxval). Nothing is cached here: the builtin already
 * is, and the host stays free of mutable globals. */
#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define TL_CPU_X86 1
#else
#define TL_CPU_X86 0
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define TL_CPU_ARM64_LINUX 1
#else
#define TL_CPU_ARM64_LINUX 0
#endif

tl_cpu_features tl_native_cpu_features(void) {
  tl_cpu_features f = {false, false, false, false, false, false, false, false, false, false, false};
#if TL_CPU_X86
  unsigned a, b, c, d;
  __builtin_cpu_init();
  /* clang's builtin does not know F16C: CPUID leaf 1, ECX bit 29 (the
   * AVX check above covers the OS side of the ymm state). */
  f.f16c = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
  /* nor SHA: CPUID leaf 7, EBX bit 29 (SSE state only, always saved) */
  f.sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1u);
  /* nor, in older compilers, AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4
   * (ymm state: the AVX check) */
  f.avxvnni = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
  f.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
  f.avx512vnni = __builtin_cpu_supports("avx512vnni") != 0;
  f.sse41 = __builtin_cpu_supports("sse4.1") != 0;
  f.avx2 = __builtin_cpu_supports("avx2") != 0;
  f.avx512f = __builtin_cpu_supports("avx512f") != 0;
  f.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
#endif
#if TL_CPU_ARM64_LINUX
  unsigned long hwcap = getauxval(AT_HWCAP);
  f.asimd = (hwcap & HWCAP_ASIMD) != 0;
  f.asimddp = (hwcap & HWCAP_ASIMDDP) != 0;
#endif
  return f;
}

bool tl_native_blake3_backend_supported(tl_blake3_backend b) {
  tl_cpu_features f = tl_native_cpu_features();
  switch (b) {
    case TL_BLAKE3_PORTABLE:
      return true;
    case TL_BLAKE3_SSE41:
      return f.sse41;
    case TL_BLAKE3_AVX2:
      return f.avx2;
    case TL_BLAKE3_AVX512:
      /* The 16-way code hands remainders of 8..15 inputs to the AVX2 code,
       * and is compiled with -mavx512vl. */
      return f.avx512f && f.avx512vl && f.avx2;
  }
  return false;
}

tl_blake3_backend tl_native_blake3_backend(void) {
  static const tl_blake3_backend fastest_first[] = {
      TL_BLAKE3_AVX512, TL_BLAKE3_AVX2, TL_BLAKE3_SSE41};
  for (size_t i = 0; i < sizeof fastest_first / sizeof fastest_first[0]; i++)
    if (tl_blake3_backend_compiled(fastest_first[i]) &&
        tl_native_blake3_backend_supported(fastest_first[i]))
      return fastest_first[i];
  return TL_BLAKE3_PORTABLE;
}

tl_sha256_backend tl_native_sha256_backend(void) {
  tl_cpu_features f = tl_native_cpu_features();
  return f.sha && f.sse41 && tl_sha256_backend_compiled(TL_SHA256_SHANI) ? TL_SHA256_SHANI
                                                                         : TL_SHA256_PORTABLE;
}

bool tl_native_kernels_supported(tl_kern_isa isa) {
  tl_cpu_features f = tl_native_cpu_features();
  switch (isa) {
    case TL_KERN_SCALAR:
      return true;
    case TL_KERN_AVX2:
      return f.avx2 && f.f16c;
    case TL_KERN_AVX_VNNI:
      return f.avx2 && f.f16c && f.avxvnni;
    case TL_KERN_AVX512:
      return f.avx2 && f.avx512f && f.avx512vl && f.avx512bw && f.avx512vnni && f.f16c;
    case TL_KERN_NEON:
      return f.asimd;
    case TL_KERN_NEON_DOTPROD:
      return f.asimd && f.asimddp;
    default:
      return false;
  }
}

const tl_kernels *tl_native_kernels(void) {
  static const tl_kern_isa fastest_first[] = {TL_KERN_AVX512, TL_KERN_AVX_VNNI, TL_KERN_AVX2,
                                              TL_KERN_NEON_DOTPROD, TL_KERN_NEON,
                                              TL_KERN_WASM_SIMD128};
  for (size_t i = 0; i < sizeof fastest_first / sizeof fastest_first[0]; i++) {
    const tl_kernels *k = tl_kernels_get(fastest_first[i]);
    if (k != NULL && tl_native_kernels_supported(fastest_first[i])) return k;
  }
  return tl_kernels_get(TL_KERN_SCALAR);
}
