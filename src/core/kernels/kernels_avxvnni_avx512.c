/* The AVX-VNNI variant's test twin (tl_kernels_avx_vnni_twin): the same
 * source with the EVEX encoding of the 256-bit vpdpbusd (AVX512-VNNI +
 * VL), which computes the same operation, so that a CPU with AVX-512 but
 * without VEX AVX-VNNI checks the variant's code against the scalar
 * twins. Never picked to run a model. */
#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_X86
#define TARGET __attribute__((target("avx2,f16c,avx512vnni,avx512vl")))
#define TL_AVX2_DPBUSD _mm256_dpbusd_epi32
#define TL_AVX2_TABLE tl_kernels_avx_vnni_evex
#define TL_AVX2_ISA TL_KERN_AVX_VNNI
#define TL_AVX2_NAME "avx-vnni-evex"
#include "kernels/kernels_avx2.c"
#endif
