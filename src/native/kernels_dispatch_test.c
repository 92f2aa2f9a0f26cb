/* Every fast/1 kernel variant that this build compiles and this CPU runs
 * against the scalar twin, bit for bit: the golden vectors, then random
 * shapes of every weight type (lengths around the vector widths and the
 * block size, zero blocks, subnormal and wide-ranging values), each weight
 * tensor in a buffer of exactly its size so that an over-read shows under
 * ASan. A variant the CPU lacks is reported and skipped. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cpu.h"
#include "kernels/fast_vectors.h"
#include "kernels/kernels.h"
#include "tl_test.h"

typedef struct prepared {
  float *f, *scales;
  int8_t *q8, *q4;
  int32_t *bias, *bias8;
  tl_kern_x x;
} prepared;

static bool prepare(const float *v, size_t n, prepared *p) {
  size_t nb = (n + 31) / 32;
  p->f = malloc(n * sizeof(float));
  p->scales = malloc(nb * sizeof(float));
  p->q8 = malloc(nb * 32);
  p->q4 = malloc(nb * 32);
  p->bias = malloc(nb * 8 * sizeof(int32_t));
  p->bias8 = malloc(nb * 8 * sizeof(int32_t));
  if (!p->f || !p->scales || !p->q8 || !p->q4 || !p->bias || !p->bias8) return false;
  memcpy(p->f, v, n * sizeof(float));
  tl_kern_quantize_x(p->f, n, p->scales, p->q8, p->bias8, p->q4, p->bias);
  p->x.f = p->f;
  p->x.q8 = p->q8;
  p->x.q4 = p->q4;
  p->x.scales = p->scales;
  p->x.q8_bias = p->bias8;
  p->x.q4_bias = p->bias;
  return true;
}

static void release(prepared *p) {
  free(p->f);
  free(p->scales);
  free(p->q8);
  free(p->q4);
  free(p->bias);
  free(p->bias8);
}

/* Variants to check: compiled and supported, other than the twin. */
static size_t variants(tl_test_ctx *t, const tl_kernels **out) {
  size_t n = 0;
  for (int i = TL_KERN_SCALAR + 1; i < TL_KERN_ISA_COUNT; i++) {
    const tl_kernels *k = tl_kernels_get((tl_kern_isa)i);
    if (k == NULL) continue;
    if (!tl_native_kernels_supported((tl_kern_isa)i)) {
      tl_test_print(t, "note: this CPU does not run kernel variant ");
      tl_test_print(t, k->name);
      tl_test_print(t, "; skipped\n");
      continue;
    }
    out[n++] = k;
  }
  return n;
}

static void print_case(tl_test_ctx *t, const char *variant, const char *what,
                       size_t type, size_t rows, size_t n) {
  tl_test_print(t, "  in variant ");
  tl_test_print(t, variant);
  tl_test_print(t, " ");
  tl_test_print(t, what);
  tl_test_print(t, " type ");
  tl_test_print_u64(t, type);
  tl_test_print(t, " rows ");
  tl_test_print_u64(t, rows);
  tl_test_print(t, " n ");
  tl_test_print_u64(t, n);
  tl_test_print(t, "\n");
}

static void golden_all_variants(tl_test_ctx *t) {
  const tl_kernels *ks[TL_KERN_ISA_COUNT];
  size_t nk = variants(t, ks);
  for (size_t v = 0; v < nk; v++)
    for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
      const fv_dot *d = &fv_dots[c];
      float xs[512], y[3];
      size_t rb;
      prepared p;
      uint8_t *w = malloc(d->w_len);
      for (size_t i = 0; i < d->n; i++) xs[i] = tl_bits_to_f32(d->x[i]);
      if (!TL_EXPECT(t, w != NULL && d->n <= 512 && prepare(xs, d->n, &p))) return;
      memcpy(w, d->w, d->w_len);
      (void)tl_quant_row_bytes((tl_qtype)d->type, d->n, &rb);
      ks[v]->rows[d->type](w, rb, d->n, &p.x, d->rows, y);
      for (size_t r = 0; r < d->rows; r++)
        if (!TL_EXPECT_EQ_U64(t, tl_f32_to_bits(y[r]), d->y[r]))
          print_case(t, ks[v]->name, d->name, (size_t)d->type, d->rows, d->n);
      free(w);
      release(&p);
    }
}

/* A value of random sign and magnitude 2^[lo, hi), sometimes zero. */
static float random_value(tl_test_rng *rng, int lo, int hi) {
  uint64_t r = tl_test_rng_next(rng);
  float m = 1.0f + (float)(r & 0xFFFFF) / (float)(1 << 20);
  int e = lo + (int)((r >> 20) % (uint64_t)(hi - lo));
  float v = m;
  if ((r >> 40) % 16 == 0) return 0.0f;
  for (; e > 0; e--) v *= 2.0f;
  for (; e < 0; e++) v *= 0.5f;
  return (r >> 50) & 1 ? -v : v;
}

static void random_shapes(tl_test_ctx *t) {
  static const size_t lengths[] = {1,  2,  3,  7,  8,  9,  15,  16,  17,  31,  32,  33,
                                   47, 48, 63, 64, 65, 95, 96, 100, 127, 255, 257, 1029};
  const tl_kernels *ks[TL_KERN_ISA_COUNT];
  const tl_kernels *twin = tl_kernels_get(TL_KERN_SCALAR);
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261203};
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
    for (size_t type = 0; type < 5; type++)
      for (int trial = 0; trial < 3; trial++) {
        size_t n = lengths[li], rows = 1 + tl_test_rng_next(&rng) % 7, bytes = 0;
        /* trial 0: ordinary ranges; 1: a wide range (within f16's for
         * f16 weights); 2: zero blocks */
        bool f16 = type == TL_QTYPE_F16;
        int lo = trial == 1 ? (f16 ? -20 : -60) : -4, hi = trial == 1 ? (f16 ? 14 : 40) : 4;
        float *wf = malloc(rows * n * sizeof(float)), *xv = malloc(n * sizeof(float));
        float *want = malloc(rows * sizeof(float)), *got = malloc(rows * sizeof(float));
        uint8_t *w;
        prepared p;
        if (!TL_EXPECT(t, wf && xv && want && got)) return;
        for (size_t i = 0; i < rows * n; i++) wf[i] = random_value(&rng, lo, hi);
        for (size_t i = 0; i < n; i++)
          xv[i] = trial == 2 && (i / 32) % 2 == 0 ? 0.0f : random_value(&rng, lo, hi);
        if (trial == 2 && n > 40)
          for (size_t i = 0; i < n; i++) wf[i] = 0.0f; /* a zero row */
        TL_EXPECT_OK(t, tl_quant_tensor_bytes((tl_qtype)type, rows, n, &bytes));
        w = malloc(bytes); /* exactly the tensor: over-reads show under ASan */
        if (!TL_EXPECT(t, w != NULL && prepare(xv, n, &p))) return;
        TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, wf, rows, n, w, bytes, NULL));
        twin->rows[type](w, bytes / rows, n, &p.x, rows, want);
        for (size_t v = 0; v < nk; v++) {
          memset(got, 0xA5, rows * sizeof(float));
          ks[v]->rows[type](w, bytes / rows, n, &p.x, rows, got);
          if (!TL_EXPECT_MEM(t, got, want, rows * sizeof(float)))
            print_case(t, ks[v]->name, "random", type, rows, n);
        }
        free(w);
        free(wf);
        free(xv);
        free(want);
        free(got);
        release(&p);
      }
}

static const tl_test_case cases[] = {
    TL_CASE(golden_all_variants),
    TL_CASE(random_shapes),
};
TL_SUITE(kernels_dispatch, cases);
