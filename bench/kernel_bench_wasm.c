/* The wasm32 side of the kernel micro-benchmark (kernel_bench.c): the same
 * 1024-wide matrices and activation, through the SIMD128 variant (built
 * with -msimd128). JS times the calls (bench/wasm_kernel_bench.mjs). */
#include "kernels/kernels.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

#define WIDTH 1024
#define TL_WASM_EXPORT(name) __attribute__((export_name(#name)))

void *tl_wasm_alloc(size_t n);

#define GROUPS ((WIDTH + 511) / 512)
static float xf[WIDTH], scales[16 * GROUPS];
static int8_t codes[TL_KERN_GROUP_CODES * GROUPS];
static int32_t b8[16 * GROUPS], b4[16 * GROUPS];
static const tl_kern_x x = {xf, codes, scales, b8, b4};

size_t tl_kbench_row_bytes(int type);
uint8_t *tl_kbench_weights(int type, size_t rows);
int tl_kbench_run(int type, const uint8_t *w, size_t rows, size_t reps);
int tl_kbench_tile(int type, const uint8_t *w, size_t rows, size_t reps);

TL_WASM_EXPORT(tl_kbench_row_bytes) size_t tl_kbench_row_bytes(int type) {
  size_t rb = 0;
  return tl_quant_row_bytes((tl_qtype)type, WIDTH, &rb) == TL_OK ? rb : 0;
}

/* rows x WIDTH weights of type from kernel_bench.c's pattern (every row
 * the same), packed for the fast lane, or 0 when memory cannot grow. */
TL_WASM_EXPORT(tl_kbench_weights) uint8_t *tl_kbench_weights(int type, size_t rows) {
  static float src[WIDTH];
  size_t rb = tl_kbench_row_bytes(type);
  uint8_t *w = rb == 0 ? 0 : tl_wasm_alloc(rows * rb);
  for (size_t i = 0; i < WIDTH; i++) {
    src[i] = (float)((int)(i * 37 % 201) - 100) / 64.0f;
    xf[i] = (float)((int)(i * 53 % 97) - 48) / 16.0f;
  }
  tl_kern_quantize_x(xf, WIDTH, codes, scales, b8, b4);
  if (w != 0)
    for (size_t r = 0; r < rows; r++) {
      if (tl_quant_pack((tl_qtype)type, src, 1, WIDTH, w + r * rb, rb, 0) != TL_OK) return 0;
      tl_kern_pack((tl_qtype)type, w + r * rb, w + r * rb, rb, WIDTH, 0, 1);
    }
  return w;
}

/* reps passes of the SIMD128 variant over the rows; -1 when it is not
 * built in or y is too short. */
TL_WASM_EXPORT(tl_kbench_run)
int tl_kbench_run(int type, const uint8_t *w, size_t rows, size_t reps) {
  static float y[1u << 20];
  const tl_kernels *k = tl_kernels_get(TL_KERN_WASM_SIMD128);
  if (k == 0 || rows > sizeof y / sizeof y[0]) return -1;
  for (size_t r = 0; r < reps; r++) k->rows[type](w, tl_kbench_row_bytes(type), WIDTH, &x, rows, y);
  return 0;
}

/* reps products of the rows (at most 256) with 16 tokens at once
 * (tl_kern_tile: prefill's product, kernel_bench's tile column); -1 as
 * tl_kbench_run. */
TL_WASM_EXPORT(tl_kbench_tile)
int tl_kbench_tile(int type, const uint8_t *w, size_t rows, size_t reps) {
  static tl_kern_x xs[16];
  static float ys[16 * 256];
  const tl_kernels *k = tl_kernels_get(TL_KERN_WASM_SIMD128);
  if (k == 0 || rows > 256) return -1;
  for (size_t t = 0; t < 16; t++) xs[t] = x;
  for (size_t r = 0; r < reps; r++)
    tl_kern_tile(k, (tl_qtype)type, w, tl_kbench_row_bytes(type), WIDTH, xs, 16, rows, ys, 256);
  return 0;
}

/* The ceiling of the integer products: reps rounds of 8
 * i32x4.dot_i16x8_s (2 weight vectors times 4 activation vectors) each
 * added into one of 4 sums, every operand in a register (the q8 tile's
 * work per weight vector for its 4 tokens, less every load and split; 10
 * live vectors, as V8 on x86-64 spills past 15): 8 multiply-adds per dot.
 * Returns a lane of the sums so the work is kept. */
int tl_kbench_dot_peak(int seed, size_t reps);
TL_WASM_EXPORT(tl_kbench_dot_peak) int tl_kbench_dot_peak(int seed, size_t reps) {
#ifdef __wasm_simd128__
  v128_t w0 = wasm_i16x8_splat((int16_t)seed), w1 = wasm_i16x8_splat((int16_t)(seed + 1)), a[4], s[4];
  for (int i = 0; i < 4; i++) a[i] = wasm_i16x8_splat((int16_t)(seed + 2 + i)), s[i] = a[i];
  for (size_t r = 0; r < reps; r++) {
    for (int i = 0; i < 4; i++)
      s[i] = wasm_i32x4_add(wasm_i32x4_add(s[i], wasm_i32x4_dot_i16x8(w0, a[i])),
                            wasm_i32x4_dot_i16x8(w1, a[i]));
    __asm__("" : "+r"(w0), "+r"(w1)); /* new weights each round, as far as clang knows */
  }
  return wasm_i32x4_extract_lane(wasm_i32x4_add(wasm_i32x4_add(s[0], s[1]), wasm_i32x4_add(s[2], s[3])), 0);
#else
  (void)seed, (void)reps;
  return -1;
#endif
}
