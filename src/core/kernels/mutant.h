/* The fast lane's mutation proof (tests/kernels/mutants.sh): a unit-test
 * binary built with -DTL_KERN_MUTANT=n carries fault n, which a named test
 * must catch. The library, the CLI and the ordinary unit tests never
 * define it, and every macro here is then the identity. */
#ifndef TL_CORE_KERNELS_MUTANT_H
#define TL_CORE_KERNELS_MUTANT_H

#ifndef TL_KERN_MUTANT
#define TL_KERN_MUTANT 0
#endif

/* 1, a wrong tail: the scalar twin's float rows drop their last
 * n mod 16 elements (caught by kernels.dot_golden). */
#define TL_MUTANT_FLOAT_LEN(n) (TL_KERN_MUTANT == 1 ? (n) / 16 * 16 : (n))

/* 2, a wrong partition: every task but the last stops one unit short, so
 * a row at each thread boundary is never computed (caught by
 * fast_forward.every_variant_and_thread_count). */
#define TL_MUTANT_RANGE_END(begin, end, i, n) \
  (TL_KERN_MUTANT == 2 && (i) + 1 < (n) && (end) > (begin) ? (end) - 1 : (end))

/* 3, a wrong block scale: the scalar twin scales q8/q4 block b by the
 * activation scale of block b - 1 (caught by kernels.dot_golden). */
#define TL_MUTANT_BLOCK(b) (TL_KERN_MUTANT == 3 && (b) > 0 ? (b) - 1 : (b))

/* 20, a wrong token: the AVX2 q8/q4 tiles scale token t's block sums by
 * token t - 1's activation scales (caught by
 * kernels_dispatch.ragged_tiles). */
#define TL_MUTANT_TOKEN(t) (TL_KERN_MUTANT == 20 && (t) > 0 ? (t) - 1 : (t))

/* 21, a wrong rounding: the AVX2 quantizer truncates its codes instead of
 * rounding them to nearest even (caught by kernels_dispatch.quantizers). */
#define TL_MUTANT_TRUNCATE (TL_KERN_MUTANT == 21)

/* 22, a missing bias: the AVX-VNNI tiles start their block sums from 0,
 * not the activation's bias, so q8's weight offset stays in (caught by
 * kernels_dispatch.ragged_tiles through the variant or its EVEX twin). */
#define TL_MUTANT_NO_BIAS (TL_KERN_MUTANT == 22)

/* 23, an overflow: the AVX2 q8 tile multiplies its high nibbles' step
 * products by 16 before their i16 sum instead of after it, which wraps
 * for large codes (caught by kernels_dispatch.extreme_tiles). */
#define TL_MUTANT_HIGH_FIRST (TL_KERN_MUTANT == 23)

/* 24, a dropped tail: the AVX2 float tiles skip the elements past the
 * last whole step of 16 (caught by kernels_dispatch.tiles). */
#define TL_MUTANT_NO_TILE_TAIL (TL_KERN_MUTANT == 24)

/* 40, a wrong widening: the AVX-512 bf16 kernels put element 1 of each
 * 16 in lane 0 too (caught by kernels_dispatch.golden_all_variants). */
#define TL_MUTANT_BF16_LANE0 (TL_KERN_MUTANT == 40 ? 1 : 0)

/* 41, a wrong token: the AVX-512 float tiles' last token of a full block
 * reads the one before's activation (caught by kernels_dispatch.tiles,
 * which passes blocks of every tile's width). */
#define TL_MUTANT_TILE_TOKEN(t, T) (TL_KERN_MUTANT == 41 && (T) > 1 && (t) == (T) - 1 ? (t) - 1 : (t))

/* 42, a wrong row: the AVX-512 four-row (and four-score) reduction takes row
 * 1's upper half for row 0's lower (caught by kernels_dispatch.tiles). */
#define TL_MUTANT_TREE4_LO (TL_KERN_MUTANT == 42 ? 0x22 : 0x88)

#endif
