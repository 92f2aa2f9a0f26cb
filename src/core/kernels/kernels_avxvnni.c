/* The AVX-VNNI variant of fast/4 (Intel Alder Lake and later, AMD Zen 5
 * client parts): kernels_avx2.c compiled again with the VEX-encoded
 * 256-bit vpdpbusd doing the q8/q4 block sums. */
#include "kernels/kernels_impl.h"

#if TL_KERN_HAVE_X86
#define TARGET __attribute__((target("avx2,f16c,avxvnni")))
#define TL_AVX2_DPBUSD _mm256_dpbusd_avx_epi32
#define TL_AVX2_TABLE tl_kernels_avx_vnni
#define TL_AVX2_ISA TL_KERN_AVX_VNNI
#define TL_AVX2_NAME "avx-vnni"
#include "kernels/kernels_avx2.c"
#endif
