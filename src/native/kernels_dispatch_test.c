/* Every fast/4 kernel variant that this build compiles and this CPU runs
 * against the scalar twin, bit for bit: the golden vectors, then random
 * shapes of every weight type (lengths around the vector widths and the
 * block size, zero blocks, subnormal and wide-ranging values), each weight
 * tensor in a buffer of exactly its size so that an over-read shows under
 * ASan. A variant the CPU lacks is reported and skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cpu.h"
#include "kernels/fast_vectors.h"
#include "kernels/kernels.h"
#include "tl_test.h"

typedef struct prepared {
  float *f, *scales;
  int8_t *codes;
  int32_t *bias4, *bias8;
  tl_kern_x x;
} prepared;

/* v through F-3's scalar twin into buffers of exactly tl_kern_x's size. */
static bool prepare(const float *v, size_t n, prepared *p) {
  size_t ng = tl_kern_groups(n);
  p->f = malloc(n * sizeof(float));
  p->scales = malloc(16 * ng * sizeof(float));
  p->codes = malloc(TL_KERN_GROUP_CODES * ng);
  p->bias4 = malloc(16 * ng * sizeof(int32_t));
  p->bias8 = malloc(16 * ng * sizeof(int32_t));
  if (!p->f || !p->scales || !p->codes || !p->bias4 || !p->bias8) return false;
  memcpy(p->f, v, n * sizeof(float));
  tl_kern_quantize_x(p->f, n, p->codes, p->scales, p->bias8, p->bias4);
  p->x.f = p->f;
  p->x.codes = p->codes;
  p->x.scales = p->scales;
  p->x.q8_bias = p->bias8;
  p->x.q4_bias = p->bias4;
  return true;
}

static void release(prepared *p) {
  free(p->f);
  free(p->scales);
  free(p->codes);
  free(p->bias4);
  free(p->bias8);
}

/* The variants of the build, and the AVX-VNNI variant's test twin. */
#define MAX_VARIANTS (TL_KERN_ISA_COUNT + 1)

/* Variants to check: compiled and supported (by the CPU: supported), other
 * than the twin. */
static size_t variants_of(tl_test_ctx *t, const tl_kernels **out, bool (*supported)(tl_kern_isa)) {
  size_t n = 0;
  for (int i = TL_KERN_SCALAR + 1; i < TL_KERN_ISA_COUNT; i++) {
    const tl_kernels *k = tl_kernels_get((tl_kern_isa)i);
    if (k == NULL) continue;
    if (!supported((tl_kern_isa)i)) {
      char why[96];
      snprintf(why, sizeof why, "this CPU does not run kernel variant %s", k->name);
      tl_test_skip(t, why); /* counted as skipped, never as passed */
      continue;
    }
    out[n++] = k;
  }
  return n;
}

/* The variants this CPU runs, and the AVX-VNNI variant's EVEX twin where
 * the CPU runs that but not the VEX variant itself (whose own skip line
 * says so): the same code, checked here against the twins. */
static size_t variants(tl_test_ctx *t, const tl_kernels **out) {
  size_t n = variants_of(t, out, tl_native_kernels_supported);
  tl_cpu_features f = tl_native_cpu_features();
  if (tl_kernels_avx_vnni_twin() != NULL && !tl_native_kernels_supported(TL_KERN_AVX_VNNI) &&
      f.avx2 && f.f16c && f.avx512vnni && f.avx512vl)
    out[n++] = tl_kernels_avx_vnni_twin();
  return n;
}

/* ---- a variant the CPU lacks is a skip, never a pass --------------------- */

static bool no_variant(tl_kern_isa isa) { return isa == TL_KERN_SCALAR; }

/* A case as every case here starts, on a CPU that runs none of the variants
 * this build compiles: it checks nothing. */
static void on_a_cpu_lacking_every_variant(tl_test_ctx *t) {
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants_of(t, ks, no_variant);
  for (size_t v = 0; v < nk; v++) TL_EXPECT(t, ks[v] != NULL);
}

static char inner_out[4096];
static size_t inner_len;
static void inner_write(const char *text, size_t len) {
  if (len > sizeof inner_out - 1 - inner_len) len = sizeof inner_out - 1 - inner_len;
  memcpy(inner_out + inner_len, text, len);
  inner_len += len;
  inner_out[inner_len] = 0;
}

/* Run through the harness, such a case is reported ("skip: ..." per
 * variant) and counted as skipped in the closing line, not as passed. */
static void a_variant_the_cpu_lacks_is_counted_as_skipped(tl_test_ctx *t) {
  static const tl_test_case inner_cases[] = {TL_CASE(on_a_cpu_lacking_every_variant)};
  static const tl_test_suite inner = {"inner", inner_cases, 1};
  const tl_test_suite *const suites[] = {&inner};
  static const char skip_line[] =
      "skip: inner.on_a_cpu_lacking_every_variant: this CPU does not run kernel variant ";
  char want[64];
  size_t compiled = 0;
  for (int i = TL_KERN_SCALAR + 1; i < TL_KERN_ISA_COUNT; i++)
    compiled += tl_kernels_get((tl_kern_isa)i) != NULL;
  if (compiled == 0) {
    tl_test_skip(t, "this build compiles no kernel variant");
    return;
  }
  inner_len = 0;
  inner_out[0] = 0;
  TL_EXPECT_EQ_U64(t, tl_test_run(suites, 1, NULL, inner_write), 0);
  snprintf(want, sizeof want, "\n0 passed, 0 failed, %zu skipped\n", compiled);
  if (!TL_EXPECT(t, strstr(inner_out, want) != NULL)) tl_test_print(t, inner_out);
  TL_EXPECT(t, strncmp(inner_out, skip_line, strlen(skip_line)) == 0);
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
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  for (size_t v = 0; v < nk; v++)
    for (size_t c = 0; c < sizeof fv_dots / sizeof fv_dots[0]; c++) {
      const fv_dot *d = &fv_dots[c];
      float xs[1120], y[3];
      size_t rb;
      prepared p;
      uint8_t *w = malloc(d->w_len);
      for (size_t i = 0; i < d->n; i++) xs[i] = tl_bits_to_f32(d->x[i]);
      if (!TL_EXPECT(t, w != NULL && d->n <= 1120 && prepare(xs, d->n, &p))) return;
      memcpy(w, d->w, d->w_len);
      (void)tl_quant_row_bytes((tl_qtype)d->type, d->n, &rb);
      tl_kern_pack((tl_qtype)d->type, w, w, rb, d->n, 0, d->rows);
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
  const tl_kernels *ks[MAX_VARIANTS];
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
        tl_kern_pack((tl_qtype)type, w, w, bytes / rows, n, 0, rows);
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

/* F-3 through each variant's own quantizer: the golden activations, then
 * random vectors (ordinary, wide with subnormals, exact halves that must
 * round to even), every output bit for bit against the scalar twin. */
static bool same_quantization(tl_test_ctx *t, const tl_kernels *k, const float *x, size_t n) {
  size_t ng = tl_kern_groups(n);
  float *s[2];
  int8_t *c[2];
  int32_t *b8[2], *b4[2];
  bool ok = true;
  for (int i = 0; i < 2; i++) {
    s[i] = malloc(16 * ng * sizeof(float));
    c[i] = malloc(TL_KERN_GROUP_CODES * ng);
    b8[i] = malloc(16 * ng * sizeof(int32_t));
    b4[i] = malloc(16 * ng * sizeof(int32_t));
    if (!TL_EXPECT(t, s[i] && c[i] && b8[i] && b4[i])) return false;
  }
  tl_kern_quantize_x(x, n, c[0], s[0], b8[0], b4[0]);
  tl_kern_quantize(k, x, n, c[1], s[1], b8[1], b4[1]);
  ok = TL_EXPECT_MEM(t, s[1], s[0], 16 * ng * sizeof(float)) &&
       TL_EXPECT_MEM(t, c[1], c[0], TL_KERN_GROUP_CODES * ng) &&
       TL_EXPECT_MEM(t, b8[1], b8[0], 16 * ng * sizeof(int32_t)) &&
       TL_EXPECT_MEM(t, b4[1], b4[0], 16 * ng * sizeof(int32_t));
  for (int i = 0; i < 2; i++) {
    free(s[i]);
    free(c[i]);
    free(b8[i]);
    free(b4[i]);
  }
  return ok;
}

static void quantizers(tl_test_ctx *t) {
  static const size_t lengths[] = {1, 5, 16, 17, 31, 32, 33, 64, 65, 100, 1029};
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261204};
  for (size_t v = 0; v < nk; v++) {
    for (size_t c = 0; c < sizeof fv_acts / sizeof fv_acts[0]; c++) {
      float xs[512];
      if (!TL_EXPECT(t, fv_acts[c].n <= 512)) return;
      for (size_t i = 0; i < fv_acts[c].n; i++) xs[i] = tl_bits_to_f32(fv_acts[c].x[i]);
      if (!same_quantization(t, ks[v], xs, fv_acts[c].n))
        print_case(t, ks[v]->name, fv_acts[c].name, 0, 1, fv_acts[c].n);
    }
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
      for (int trial = 0; trial < 3; trial++) {
        size_t n = lengths[li];
        float *x = malloc(n * sizeof(float));
        if (!TL_EXPECT(t, x != NULL)) return;
        for (size_t i = 0; i < n; i++)
          /* trial 2: a maximum of 127 per block, so the scale is 1 and
           * the values k + 0.5 are exact ties */
          x[i] = trial == 2 ? (i % 32 == 0 ? 127.0f
                                           : (float)((int)(tl_test_rng_next(&rng) % 253) - 126) + 0.5f)
                            : random_value(&rng, trial == 1 ? -140 : -4, trial == 1 ? 60 : 4);
        if (!same_quantization(t, ks[v], x, n)) print_case(t, ks[v]->name, "quantize", 0, 1, n);
        free(x);
      }
  }
}

/* The value of element i of weight row r (weights: true) or of token
 * r's activation, for check_tile_of. */
typedef float (*tile_value)(tl_test_rng *rng, bool weights, size_t r, size_t i);

static float random_entry(tl_test_rng *rng, bool weights, size_t r, size_t i) {
  (void)weights, (void)r, (void)i;
  return random_value(rng, -4, 4);
}

/* One shape through every variant's tile kernel (or its rows, token by
 * token): weights of the type and activations from value, every (token,
 * row) product bit for bit the twin's rows' (y stride rows + 3, the gaps
 * left alone). */
static void check_tile_of(tl_test_ctx *t, const tl_kernels *const *ks, size_t nk, size_t type,
                          size_t n, size_t rows, size_t tokens, tl_test_rng *rng,
                          tile_value value) {
  const tl_kernels *twin = tl_kernels_get(TL_KERN_SCALAR);
  size_t stride = rows + 3, bytes = 0;
  float *wf = malloc(rows * n * sizeof(float)), *xv = malloc(n * sizeof(float));
  float *want = calloc(tokens * stride, sizeof(float));
  float *got = malloc(tokens * stride * sizeof(float));
  tl_kern_x xs[17];
  prepared p[17];
  uint8_t *w;
  if (!TL_EXPECT(t, wf && xv && want && got && tokens <= 17)) return;
  for (size_t i = 0; i < rows * n; i++) wf[i] = value(rng, true, i / n, i % n);
  TL_EXPECT_OK(t, tl_quant_tensor_bytes((tl_qtype)type, rows, n, &bytes));
  w = malloc(bytes);
  if (!TL_EXPECT(t, w != NULL)) return;
  TL_EXPECT_OK(t, tl_quant_pack((tl_qtype)type, wf, rows, n, w, bytes, NULL));
  tl_kern_pack((tl_qtype)type, w, w, bytes / rows, n, 0, rows);
  for (size_t k = 0; k < tokens; k++) {
    for (size_t i = 0; i < n; i++) xv[i] = value(rng, false, k, i);
    if (!TL_EXPECT(t, prepare(xv, n, &p[k]))) return;
    xs[k] = p[k].x;
    twin->rows[type](w, bytes / rows, n, &xs[k], rows, want + k * stride);
  }
  for (size_t v = 0; v < nk; v++) {
    for (size_t i = 0; i < tokens * stride; i++) got[i] = 0.0f;
    tl_kern_tile(ks[v], (tl_qtype)type, w, bytes / rows, n, xs, tokens, rows, got, stride);
    if (!TL_EXPECT_MEM(t, got, want, tokens * stride * sizeof(float))) {
      print_case(t, ks[v]->name, "tile", type, rows, n);
      tl_test_print(t, "  tokens ");
      tl_test_print_u64(t, tokens);
      tl_test_print(t, "\n");
    }
  }
  for (size_t k = 0; k < tokens; k++) release(&p[k]);
  free(w);
  free(wf);
  free(xv);
  free(want);
  free(got);
}

/* check_tile_of with random weights and activations. */
static void check_tile(tl_test_ctx *t, const tl_kernels *const *ks, size_t nk, size_t type,
                       size_t n, size_t rows, size_t tokens, tl_test_rng *rng) {
  check_tile_of(t, ks, nk, type, n, rows, tokens, rng, random_entry);
}

/* Several tokens at once: random shapes, then 9 rows x 17 tokens, which
 * passes every variant's tiles of every width (AVX-512: 6, 4 and 1
 * tokens; 4 rows and 1), and 9 rows x every token count 1-9 (AVX-512
 * computes a q8/q4 call of at most four tokens token by token). */
static void tiles(tl_test_ctx *t) {
  static const size_t lengths[] = {17, 32, 64, 95, 1029};
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261205};
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
    for (size_t type = 0; type < 5; type++) {
      size_t rows = 1 + tl_test_rng_next(&rng) % 9, tokens = 1 + tl_test_rng_next(&rng) % 9;
      check_tile(t, ks, nk, type, lengths[li], rows, tokens, &rng);
      check_tile(t, ks, nk, type, lengths[li], 9, 17, &rng);
    }
  for (size_t type = 0; type < 5; type++)
    for (size_t tokens = 1; tokens <= 9; tokens++) check_tile(t, ks, nk, type, 95, 9, tokens, &rng);
}

/* Fixed ragged shapes around the variants' tile sizes (rows in 2s and 4s,
 * tokens in 3s and 4s): rows and tokens left over after whole tiles, a
 * short last q8/q4 group (33 elements: 2 blocks; 520: a whole group and
 * one block) and float tails (33, 520 mod 16 = 8), every type. */
static void ragged_tiles(tl_test_ctx *t) {
  static const size_t rows[] = {1, 2, 3, 5}, tokens[] = {2, 4, 5, 7, 9};
  static const size_t lengths[] = {33, 520, 1024};
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261207};
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
    for (size_t type = 0; type < 5; type++)
      for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++)
          check_tile(t, ks, nk, type, lengths[li], rows[r], tokens[k], &rng);
}

/* Every weight of a row +1 (even rows) or -1, every activation of a
 * token +1 (even tokens) or -1: q8 codes +-127 (stored 255 and 1), q4
 * codes +-7 (nibbles 15 and 1) and activation codes +-127, so every
 * block sum is at its largest magnitude, 32 x 127 x 127 (q8), the
 * bound every exact integer path must hold without wrapping or
 * saturating. */
static float bound_entry(tl_test_rng *rng, bool weights, size_t r, size_t i) {
  (void)rng, (void)weights, (void)i;
  return r % 2 ? -1.0f : 1.0f;
}

static void extreme_tiles(tl_test_ctx *t) {
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261208};
  for (size_t type = TL_QTYPE_Q8; type <= TL_QTYPE_Q4; type++)
    for (size_t tokens = 1; tokens <= 9; tokens += 4)
      check_tile_of(t, ks, nk, type, 1056, 5, tokens, &rng, bound_entry);
}

/* The two-query forms (heads sharing a KV head) against the twins: the
 * queries a and a reversed, the probabilities p and p reversed. */
static void pairs(tl_test_ctx *t, const tl_kernels *k, const float *a, const float *v,
                  const float *p, size_t stride, size_t count, size_t d) {
  float *b = malloc(d * sizeof(float)), *q = malloc(count * sizeof(float));
  float *s0 = malloc(count * sizeof(float)), *s1 = malloc(count * sizeof(float));
  float *o0 = malloc(d * sizeof(float)), *o1 = malloc(d * sizeof(float));
  float *w0 = malloc(d * sizeof(float)), *w1 = malloc(d * sizeof(float));
  if (!TL_EXPECT(t, b && q && s0 && s1 && o0 && o1 && w0 && w1)) return;
  for (size_t i = 0; i < d; i++) b[i] = a[d - 1 - i];
  for (size_t j = 0; j < count; j++) q[j] = p[count - 1 - j];
  tl_kern_dots2_k(k, a, b, v, stride, count, d, s0, s1);
  for (size_t j = 0; j < count; j++)
    if (!TL_EXPECT_EQ_U64(t, tl_f32_to_bits(s0[j]), tl_f32_to_bits(tl_kern_dot(a, v + j * stride, d))) ||
        !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(s1[j]), tl_f32_to_bits(tl_kern_dot(b, v + j * stride, d))))
      print_case(t, k->name, "dots2", 0, j, d);
  tl_kern_weighted(p, count, v, stride, d, w0);
  tl_kern_weighted(q, count, v, stride, d, w1);
  memset(o0, 0xA5, d * sizeof(float));
  memset(o1, 0xA5, d * sizeof(float));
  tl_kern_weighted2_k(k, p, q, count, v, stride, d, o0, o1);
  if (!TL_EXPECT_MEM(t, o0, w0, d * sizeof(float)) || !TL_EXPECT_MEM(t, o1, w1, d * sizeof(float)))
    print_case(t, k->name, "weighted2", 0, count, d);
  free(b), free(q), free(s0), free(s1), free(o0), free(o1), free(w0), free(w1);
}

/* The many-query forms (a block of positions of heads sharing a KV head)
 * against the twins: 1 to 11 queries, each probability row over its own
 * count of value rows (equal, staggered as causal positions are, or
 * shuffled). */
static void many(tl_test_ctx *t, const tl_kernels *k, const float *v, size_t stride,
                 size_t count, size_t d, tl_test_rng *rng) {
  enum { NQ = 11 };
  float *q[NQ], *p[NQ], *got[NQ], *want = malloc((count + d) * sizeof(float));
  size_t counts[NQ];
  bool ok = want != NULL;
  for (size_t i = 0; i < NQ; i++) {
    q[i] = malloc(d * sizeof(float));
    p[i] = malloc(count * sizeof(float));
    got[i] = malloc((count + d) * sizeof(float));
    ok = ok && q[i] && p[i] && got[i];
  }
  if (!TL_EXPECT(t, ok)) return;
  for (size_t i = 0; i < NQ; i++) {
    for (size_t e = 0; e < d; e++) q[i][e] = random_value(rng, -6, 6);
    for (size_t j = 0; j < count; j++) p[i][j] = random_value(rng, -8, 0);
  }
  for (size_t nq = 1; nq <= NQ; nq++)
    for (int shape = 0; shape < 3; shape++) {
      for (size_t i = 0; i < nq; i++)
        counts[i] = shape == 0   ? count
                    : shape == 1 ? (count > nq ? count - nq + 1 + i : 1 + i % count)
                                 : 1 + tl_test_rng_next(rng) % count;
      tl_kern_dots_n(k, (const float *const *)q, nq, v, stride, count, d, got);
      for (size_t i = 0; i < nq; i++) {
        tl_kern_dots(q[i], v, stride, count, d, want);
        if (!TL_EXPECT_MEM(t, got[i], want, count * sizeof(float))) {
          print_case(t, k->name, "dots_n", nq, i, d);
          return;
        }
      }
      for (size_t i = 0; i < nq; i++) memset(got[i], 0xA5, d * sizeof(float));
      tl_kern_weighted_n(k, (const float *const *)p, counts, nq, v, stride, d, got);
      for (size_t i = 0; i < nq; i++) {
        tl_kern_weighted(p[i], counts[i], v, stride, d, want);
        if (!TL_EXPECT_MEM(t, got[i], want, d * sizeof(float))) {
          print_case(t, k->name, "weighted_n", nq, i, d);
          return;
        }
      }
    }
  for (size_t i = 0; i < NQ; i++) free(q[i]), free(p[i]), free(got[i]);
  free(want);
}

/* The attention kernels through each variant against the twins: scores
 * (F-6 dot) and probability-weighted values (each element's sequential
 * sum), head sizes around the vector widths, strides wider than a row. */
static void attention(tl_test_ctx *t) {
  static const size_t dims[] = {1, 15, 16, 17, 63, 64, 65, 128, 130};
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261206};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    size_t d = dims[di], count = 1 + tl_test_rng_next(&rng) % 40, stride = d + 3;
    float *a = malloc(d * sizeof(float)), *v = malloc(count * stride * sizeof(float));
    float *p = malloc(count * sizeof(float)), *want = malloc(d * sizeof(float));
    float *got = malloc(d * sizeof(float));
    if (!TL_EXPECT(t, a && v && p && want && got)) return;
    for (size_t i = 0; i < d; i++) a[i] = random_value(&rng, -6, 6);
    for (size_t i = 0; i < count * stride; i++) v[i] = random_value(&rng, -6, 6);
    for (size_t j = 0; j < count; j++) p[j] = random_value(&rng, -8, 0);
    tl_kern_weighted(p, count, v, stride, d, want);
    for (size_t k = 0; k < nk; k++) {
      float *scores = malloc(count * sizeof(float));
      if (!TL_EXPECT(t, scores != NULL)) return;
      tl_kern_dots_k(ks[k], a, v, stride, count, d, scores);
      for (size_t j = 0; j < count; j++)
        if (!TL_EXPECT_EQ_U64(t, tl_f32_to_bits(scores[j]),
                              tl_f32_to_bits(tl_kern_dot(a, v + j * stride, d))))
          print_case(t, ks[k]->name, "dots", 0, j, d);
      free(scores);
      memset(got, 0xA5, d * sizeof(float));
      tl_kern_weighted_k(ks[k], p, count, v, stride, d, got);
      if (!TL_EXPECT_MEM(t, got, want, d * sizeof(float)))
        print_case(t, ks[k]->name, "weighted", 0, count, d);
      pairs(t, ks[k], a, v, p, stride, count, d);
      many(t, ks[k], v, stride, count, d, &rng);
    }
    free(a);
    free(v);
    free(p);
    free(want);
    free(got);
  }
}

/* A random finite binary16 pattern: any sign, exponent below 31
 * (subnormals and +-0 included), any fraction. */
static uint16_t random_finite_f16(tl_test_rng *rng) {
  uint16_t h;
  do h = (uint16_t)tl_test_rng_next(rng); while ((h & 0x7C00u) == 0x7C00u);
  return h;
}

/* Attention reading the fast lane's binary16 cache where it lies (F-11)
 * through the twins and each variant that has it: scores and
 * probability-weighted values of 1 to 9 queries (heads sharing a KV
 * head, a block of positions; each probability row over every value row,
 * or staggered as causal positions are) equal the f32 twins' on the rows converted first, bit for bit;
 * head sizes around the vector widths, strides wider than a row, the
 * rows in exact-size buffers (an over-read shows under ASan) and nothing
 * written past the outputs. */
static void attention_f16_rows(tl_test_ctx *t) {
  static const size_t dims[] = {1, 15, 16, 17, 63, 64, 65, 128, 130};
  enum { NQ = 9 };
  const tl_kernels *ks[MAX_VARIANTS + 1];
  size_t counts[NQ];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261204};
  ks[nk++] = tl_kernels_get(TL_KERN_SCALAR); /* the twins, as the scalar variant's entries */
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    size_t d = dims[di], count = 1 + tl_test_rng_next(&rng) % 40, stride = d + 3;
    size_t rows_len = (count - 1) * stride + d; /* the last row ends the buffer */
    uint16_t *h = malloc(rows_len * sizeof *h);
    float *f = malloc(rows_len * sizeof *f), *q[NQ], *p[NQ], *got[NQ];
    float *want = malloc((count > d ? count : d) * sizeof(float));
    bool ok = h && f && want;
    for (size_t i = 0; i < NQ; i++) {
      q[i] = malloc(d * sizeof(float));
      p[i] = malloc(count * sizeof(float));
      got[i] = malloc(((count > d ? count : d) + 1) * sizeof(float));
      ok = ok && q[i] && p[i] && got[i];
    }
    if (!TL_EXPECT(t, ok)) return;
    for (size_t i = 0; i < rows_len; i++) h[i] = random_finite_f16(&rng);
    tl_kern_f16_to_f32(h, rows_len, f);
    for (size_t i = 0; i < NQ; i++) {
      for (size_t e = 0; e < d; e++) q[i][e] = random_value(&rng, -6, 6);
      for (size_t j = 0; j < count; j++) p[i][j] = random_value(&rng, -8, 0);
    }
    for (size_t k = 0; k < nk; k++)
      for (size_t nq = 1; nq <= NQ; nq++) {
        for (size_t i = 0; i < nq; i++) memset(got[i], 0xA5, (count + 1) * sizeof(float));
        tl_kern_dots_h_k(ks[k], (const float *const *)q, nq, h, stride, count, d, got);
        for (size_t i = 0; i < nq; i++) {
          tl_kern_dots(q[i], f, stride, count, d, want);
          if (!TL_EXPECT_MEM(t, got[i], want, count * sizeof(float)) ||
              !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i][count]), 0xA5A5A5A5u))
            print_case(t, ks[k]->name, "dots_h", nq, i, d);
        }
        for (size_t i = 0; i < nq; i++) memset(got[i], 0xA5, (d + 1) * sizeof(float));
        for (size_t i = 0; i < nq; i++) /* equal, then staggered as causal positions */
          counts[i] = nq % 2 ? count : count > i ? count - i : 1;
        tl_kern_weighted_h_k(ks[k], (const float *const *)p, counts, nq, h, stride, d, got);
        for (size_t i = 0; i < nq; i++) {
          tl_kern_weighted(p[i], counts[i], f, stride, d, want);
          if (!TL_EXPECT_MEM(t, got[i], want, d * sizeof(float)) ||
              !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i][d]), 0xA5A5A5A5u))
            print_case(t, ks[k]->name, "weighted_h", nq, i, d);
        }
      }
    for (size_t i = 0; i < NQ; i++) free(q[i]), free(p[i]), free(got[i]);
    free(h), free(f), free(want);
  }
}

/* The softmax's exponentials through each variant against tl_expf, bit
 * for bit: ordinary scores, the whole range down to underflow (subnormal
 * and zero results, 2^k subnormal), overflow, -inf, NaN, and tails of
 * every length. */
static void exponentials(tl_test_ctx *t) {
  enum { N = 4099 };
  static float x[N], want[N], got[N];
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  tl_test_rng rng = {20261207};
  for (size_t i = 0; i < N; i++) {
    uint64_t r = tl_test_rng_next(&rng);
    x[i] = i % 3 == 0 ? -(float)(r % 1000000) / 1000.0f            /* [-1000, 0] */
           : i % 3 == 1 ? -(float)(r % 200000) / 10000.0f          /* [-20, 0] */
                        : (float)((int64_t)(r % 2000001) - 1000000) / 1000.0f;
  }
  x[0] = 0.0f, x[1] = -0.0f, x[2] = -__builtin_inff(), x[3] = __builtin_nanf("");
  x[4] = 88.7f, x[5] = 89.0f, x[6] = -103.9f, x[7] = -745.2f, x[8] = -708.5f, x[9] = 1e-30f;
  for (size_t v = 0; v < nk; v++)
    for (size_t n = 0; n <= N; n += n < 40 ? 1 : 1021) {
      float sub = n % 2 ? 0.0f : 3.5f;
      tl_kern_exps(x, sub, n, want);
      memset(got, 0xA5, sizeof got);
      tl_kern_exps_k(ks[v], x, sub, n, got);
      for (size_t i = 0; i < n; i++)
        if (!(want[i] != want[i] && got[i] != got[i]) &&
            !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[i]))) {
          print_case(t, ks[v]->name, "exps", 0, i, n);
          return;
        }
      TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[n < N ? n : 0]),
                       n < N ? 0xA5A5A5A5u : tl_f32_to_bits(want[0])); /* nothing past n */
    }
}

/* The KV cache's f16 rows read back (F-11) through each variant against
 * the twin, bit for bit: all 65536 values (subnormals, +-0, inf; NaN: any
 * NaN) from every offset 0..16, so each lands in every vector lane and in
 * the tails, then every length 0..40 from a buffer of exactly that size
 * (an over-read shows under ASan) with nothing written past it. */
static bool same_f16_value(float got, float want) {
  return (got != got && want != want) || tl_f32_to_bits(got) == tl_f32_to_bits(want);
}

static void f16_rows(tl_test_ctx *t) {
  enum { N = 65536 + 16 };
  static uint16_t h[N];
  static float want[N], got[N + 1];
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks);
  for (size_t i = 0; i < N; i++) h[i] = (uint16_t)(i * 40503u); /* odd: a permutation */
  tl_kern_f16_to_f32(h, N, want);
  for (size_t v = 0; v < nk; v++) {
    for (size_t off = 0; off <= 16; off++) {
      tl_kern_f16_to_f32_k(ks[v], h + off, N - off, got);
      for (size_t i = 0; i < N - off; i++)
        if (!same_f16_value(got[i], want[off + i]) &&
            !TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[i]), tl_f32_to_bits(want[off + i]))) {
          print_case(t, ks[v]->name, "f16_to_f32", off, i, N - off);
          return;
        }
    }
    for (size_t n = 0; n <= 40; n++) {
      uint16_t *e = malloc(n ? n * sizeof *e : 1);
      if (!TL_EXPECT(t, e != NULL)) return;
      memcpy(e, h + 1000 * n, n * sizeof *e);
      memset(got, 0xA5, (n + 1) * sizeof(float));
      tl_kern_f16_to_f32_k(ks[v], e, n, got);
      for (size_t i = 0; i < n; i++)
        if (!TL_EXPECT(t, same_f16_value(got[i], want[1000 * n + i])))
          print_case(t, ks[v]->name, "f16_to_f32 length", 0, i, n);
      TL_EXPECT_EQ_U64(t, tl_f32_to_bits(got[n]), 0xA5A5A5A5u); /* nothing past n */
      free(e);
    }
  }
}

/* The KV cache's rows stored (F-11) through each variant against the
 * twin, bit for bit: every finite binary16 value (both signs) as f32, the
 * midpoint to the next one (a tie) and the f32 values either side of it,
 * f32 subnormals, the range's end (65504 .. 65520 and past it: inf) and
 * random finite f32 bit patterns, from every offset 0..16 (each in every
 * lane and in the tails), then lengths 0..40 in exact-size buffers with
 * nothing written past them. */
static void f32_to_f16_rows(tl_test_ctx *t) {
  enum { N = 2 * 0x7C00 * 4 + 65536 };
  static float x[N];
  static uint16_t want[N], got[N + 1];
  const tl_kernels *ks[MAX_VARIANTS];
  size_t nk = variants(t, ks), m = 0;
  tl_test_rng rng = {20261208};
  for (uint32_t sign = 0; sign < 2; sign++)
    for (uint32_t h = 0; h < 0x7C00; h++) {
      float v = tl_f16_to_f32((uint16_t)(h | sign << 15));
      float next = tl_f16_to_f32((uint16_t)((h + 1) | sign << 15)); /* 0x7C00: inf */
      float mid = h + 1 < 0x7C00 ? (v + next) / 2.0f : (sign ? -65520.0f : 65520.0f);
      x[m++] = v;
      x[m++] = mid;
      x[m++] = tl_bits_to_f32(tl_f32_to_bits(mid) - 1);
      x[m++] = tl_bits_to_f32(tl_f32_to_bits(mid) + 1);
    }
  while (m < N) {
    uint32_t b = (uint32_t)tl_test_rng_next(&rng);
    if ((b & 0x7F800000u) == 0x7F800000u) continue; /* the cache holds finite values */
    x[m++] = tl_bits_to_f32(b);
  }
  x[0] = 1e-45f, x[1] = -1e-40f, x[2] = 3e38f, x[3] = 2.98e-8f, x[4] = 2.99e-8f;
  tl_kern_f32_to_f16(x, N, want);
  for (size_t v = 0; v < nk; v++) {
    for (size_t off = 0; off <= 16; off++) {
      tl_kern_f32_to_f16_k(ks[v], x + off, N - off, got);
      for (size_t i = 0; i < N - off; i++)
        if (!TL_EXPECT_EQ_U64(t, got[i], want[off + i])) {
          print_case(t, ks[v]->name, "f32_to_f16", off, i, N - off);
          return;
        }
    }
    for (size_t n = 0; n <= 40; n++) {
      float *e = malloc(n ? n * sizeof *e : 1);
      if (!TL_EXPECT(t, e != NULL)) return;
      memcpy(e, x + 1000 * n, n * sizeof *e);
      memset(got, 0xA5, (n + 1) * sizeof *got);
      tl_kern_f32_to_f16_k(ks[v], e, n, got);
      if (!TL_EXPECT_MEM(t, got, want + 1000 * n, n * sizeof *got))
        print_case(t, ks[v]->name, "f32_to_f16 length", 0, 0, n);
      TL_EXPECT_EQ_U64(t, got[n], 0xA5A5u); /* nothing past n */
      free(e);
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(golden_all_variants),
    TL_CASE(random_shapes),
    TL_CASE(quantizers),
    TL_CASE(exponentials),
    TL_CASE(tiles),
    TL_CASE(ragged_tiles),
    TL_CASE(extreme_tiles),
    TL_CASE(attention),
    TL_CASE(attention_f16_rows),
    TL_CASE(f16_rows),
    TL_CASE(f32_to_f16_rows),
    TL_CASE(a_variant_the_cpu_lacks_is_counted_as_skipped),
};
TL_SUITE(kernels_dispatch, cases);
