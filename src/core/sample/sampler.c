/* The sampler (docs/sampler.md; docs/architecture.md §7). Every float operation below
 * is one IEEE binary64 operation in the order written (-ffp-contract=off),
 * so tools/oracle/sampler_ref.py, which performs the same operations in
 * Python floats, reproduces each value; only exp differs when the oracle
 * uses math.exp instead of its port of tl_exp. */
#include "sample/sampler.h"

#include <string.h>

#include "bytes.h"
#include "checked.h"
#include "math/detmath.h"

#define TWO_M128 0x1p-128
#define TWO_M64 0x1p-64
#define TWO_P64 0x1p64
#define DBL_MAX_ 0x1.fffffffffffffp1023

/* Per-id flags in the scratch arena. */
#define FLAG_MASKED 1u
#define FLAG_PENALISE 2u

typedef struct cand {
  double s; /* the working logit: penalised (S-4), then divided by T (S-5) */
  uint32_t id;
} cand;

const char *tl_sample_fault_name(tl_sample_fault fault) {
  switch (fault) {
#define TL_SAMPLE_FAULT_CASE_(name, text) \
  case name:                              \
    return text;
    TL_SAMPLE_FAULT_LIST(TL_SAMPLE_FAULT_CASE_)
#undef TL_SAMPLE_FAULT_CASE_
  }
  return "unknown";
}

tl_sampler_profile tl_sampler_profile_default(uint32_t defined_ids) {
  tl_sampler_profile p;
  memset(&p, 0, sizeof p);
  p.temperature = 1.0;
  p.top_p = 1.0;
  p.repeat_penalty = 1.0;
  p.defined_ids = defined_ids;
  return p;
}

/* NaN fails every comparison, so each range test rejects it. */
static bool in_range(double x, double lo, double hi) {
  return x >= lo && x <= hi;
}

static bool ascending(const uint32_t *ids, size_t n) {
  if (n > 0 && ids == NULL) return false;
  for (size_t i = 1; i < n; i++)
    if (ids[i - 1] >= ids[i]) return false;
  return true;
}

static bool biases_ok(const tl_sampler_profile *p) {
  if (!ascending(p->bias_ids, p->n_bias) || (p->n_bias > 0 && p->bias == NULL))
    return false;
  for (size_t i = 0; i < p->n_bias; i++)
    if (!in_range(p->bias[i], -100.0, 100.0)) return false;
  return true;
}

tl_status tl_sampler_profile_check(const tl_sampler_profile *p,
                                   tl_sampler_field *field) {
  tl_sampler_field f;
  if (p == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (!(p->temperature == 0 || in_range(p->temperature, TWO_M128, DBL_MAX_)))
    f = TL_SAMPLER_FIELD_TEMPERATURE;
  else if (!in_range(p->top_p, 0.0, 1.0))
    f = TL_SAMPLER_FIELD_TOP_P;
  else if (!in_range(p->min_p, 0.0, 1.0))
    f = TL_SAMPLER_FIELD_MIN_P;
  else if (!in_range(p->repeat_penalty, TWO_M64, TWO_P64))
    f = TL_SAMPLER_FIELD_REPEAT_PENALTY;
  else if (!ascending(p->eos, p->n_eos))
    f = TL_SAMPLER_FIELD_EOS;
  else if (!ascending(p->ban, p->n_ban))
    f = TL_SAMPLER_FIELD_BAN;
  else if (p->defined_ids == 0)
    f = TL_SAMPLER_FIELD_DEFINED_IDS;
  else if (!in_range(p->frequency_penalty, -2.0, 2.0))
    f = TL_SAMPLER_FIELD_FREQUENCY_PENALTY;
  else if (!in_range(p->presence_penalty, -2.0, 2.0))
    f = TL_SAMPLER_FIELD_PRESENCE_PENALTY;
  else if (!biases_ok(p))
    f = TL_SAMPLER_FIELD_BIAS;
  else
    return TL_OK;
  if (field) *field = f;
  return TL_ERR_INVALID_ARGUMENT;
}

/* --- identity ------------------------------------------------------------ */

typedef struct text_out {
  char *buf;
  size_t cap;
  size_t len;
} text_out;

static void put_str(text_out *o, const char *s) {
  for (; *s; s++) {
    if (o->len < o->cap) o->buf[o->len] = *s;
    o->len++;
  }
}

static void put_dec(text_out *o, uint64_t v) {
  char tmp[21];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) {
    char c[2] = {tmp[--n], 0};
    put_str(o, c);
  }
}

/* Canonical bits: both zeros are +0 (they select the same behaviour). */
static uint64_t canon_bits(double x) {
  return x == 0 ? 0 : tl_f64_to_bits(x);
}

static void put_f64(text_out *o, double x) {
  static const char hex[] = "0123456789abcdef";
  uint64_t b = canon_bits(x);
  char c[17];
  for (int i = 0; i < 16; i++) c[i] = hex[(b >> (60 - 4 * i)) & 15];
  c[16] = 0;
  put_str(o, c);
}

static void put_ids(text_out *o, const uint32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) put_str(o, ",");
    put_dec(o, ids[i]);
  }
}

static void put_biases(text_out *o, const tl_sampler_profile *p) {
  for (size_t i = 0; i < p->n_bias; i++) {
    if (i) put_str(o, ",");
    put_dec(o, p->bias_ids[i]);
    put_str(o, ":");
    put_f64(o, p->bias[i]);
  }
}

/* Version line, then the fields in tl_sampler_field order (the later ones
 * only when not off: a profile without them keeps the identity it had
 * before they existed), then the fixed parts of the contract that a
 * future version could change. */
tl_status tl_sampler_profile_text(const tl_sampler_profile *p, char *buf,
                                  size_t cap, size_t *len) {
  text_out o = {buf, cap, 0};
  if (len == NULL || (buf == NULL && cap != 0)) return TL_ERR_INVALID_ARGUMENT;
  if (tl_sampler_profile_check(p, NULL) != TL_OK)
    return TL_ERR_INVALID_ARGUMENT;
  put_str(&o, "tinylm-sampler-profile-v1\n");
  put_str(&o, "temperature=");
  put_f64(&o, p->temperature);
  put_str(&o, "\ntop_k=");
  put_dec(&o, p->top_k);
  put_str(&o, "\ntop_p=");
  put_f64(&o, p->top_p);
  put_str(&o, "\nmin_p=");
  put_f64(&o, p->min_p);
  put_str(&o, "\nrepeat_penalty=");
  put_f64(&o, p->repeat_penalty);
  put_str(&o, "\nrepeat_window=");
  put_dec(&o, p->repeat_window);
  put_str(&o, "\nmin_new=");
  put_dec(&o, p->min_new);
  put_str(&o, "\neos=");
  put_ids(&o, p->eos, p->n_eos);
  put_str(&o, "\nban=");
  put_ids(&o, p->ban, p->n_ban);
  put_str(&o, "\ndefined_ids=");
  put_dec(&o, p->defined_ids);
  if (p->frequency_penalty != 0) {
    put_str(&o, "\nfrequency_penalty=");
    put_f64(&o, p->frequency_penalty);
  }
  if (p->presence_penalty != 0) {
    put_str(&o, "\npresence_penalty=");
    put_f64(&o, p->presence_penalty);
  }
  if (p->n_bias != 0) {
    put_str(&o, "\nlogit_bias=");
    put_biases(&o, p);
  }
  put_str(&o, "\nprng=philox4x32-10\norder=tinylm-sampler-v1\n"
              "deviation=padded-vocabulary-banned\n");
  *len = o.len;
  return o.len <= cap ? TL_OK : TL_ERR_BOUNDS;
}

static void cbor_key(tl_cbor_writer *w, const char *k) {
  tl_cbor_put_text(w, k, strlen(k));
}

static void cbor_ids(tl_cbor_writer *w, const uint32_t *ids, size_t n) {
  tl_cbor_begin_array(w, n);
  for (size_t i = 0; i < n; i++) tl_cbor_put_uint(w, ids[i]);
  tl_cbor_end_array(w);
}

tl_status tl_sampler_profile_cbor(const tl_sampler_profile *p,
                                  tl_cbor_writer *w) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (tl_sampler_profile_check(p, NULL) != TL_OK)
    return TL_ERR_INVALID_ARGUMENT;
  tl_cbor_begin_map(w, 14 + (p->frequency_penalty != 0) + (p->presence_penalty != 0) +
                           2 * (p->n_bias != 0));
  cbor_key(w, "version");
  cbor_key(w, "tinylm-sampler-profile-v1");
  cbor_key(w, "temperature");
  tl_cbor_put_uint(w, canon_bits(p->temperature));
  cbor_key(w, "top_k");
  tl_cbor_put_uint(w, p->top_k);
  cbor_key(w, "top_p");
  tl_cbor_put_uint(w, canon_bits(p->top_p));
  cbor_key(w, "min_p");
  tl_cbor_put_uint(w, canon_bits(p->min_p));
  cbor_key(w, "repeat_penalty");
  tl_cbor_put_uint(w, canon_bits(p->repeat_penalty));
  cbor_key(w, "repeat_window");
  tl_cbor_put_uint(w, p->repeat_window);
  cbor_key(w, "min_new");
  tl_cbor_put_uint(w, p->min_new);
  cbor_key(w, "eos");
  cbor_ids(w, p->eos, p->n_eos);
  cbor_key(w, "ban");
  cbor_ids(w, p->ban, p->n_ban);
  cbor_key(w, "defined_ids");
  tl_cbor_put_uint(w, p->defined_ids);
  if (p->frequency_penalty != 0) {
    cbor_key(w, "frequency_penalty");
    tl_cbor_put_uint(w, canon_bits(p->frequency_penalty));
  }
  if (p->presence_penalty != 0) {
    cbor_key(w, "presence_penalty");
    tl_cbor_put_uint(w, canon_bits(p->presence_penalty));
  }
  if (p->n_bias != 0) {
    cbor_key(w, "bias_ids");
    cbor_ids(w, p->bias_ids, p->n_bias);
    cbor_key(w, "bias");
    tl_cbor_begin_array(w, p->n_bias);
    for (size_t i = 0; i < p->n_bias; i++) tl_cbor_put_uint(w, canon_bits(p->bias[i]));
    tl_cbor_end_array(w);
  }
  cbor_key(w, "prng");
  cbor_key(w, "philox4x32-10");
  cbor_key(w, "order");
  cbor_key(w, "tinylm-sampler-v1");
  cbor_key(w, "deviation");
  cbor_key(w, "padded-vocabulary-banned");
  return tl_cbor_end_map(w);
}

/* --- the steps ----------------------------------------------------------- */

size_t tl_sampler_scratch_bytes(size_t n) {
  size_t a, b, c, d, t;
  if (tl_mul_size(n, sizeof(cand), &b) != TL_OK ||
      tl_mul_size(n, sizeof(double), &c) != TL_OK ||
      tl_mul_size(n, sizeof(uint32_t), &d) != TL_OK)
    return SIZE_MAX;
  a = n;
  /* flags, the candidates and as many more for the sort, probabilities,
   * the generated ids' counts (S-4b) */
  if (tl_add_size(a, b, &t) != TL_OK || tl_add_size(t, b, &t) != TL_OK ||
      tl_add_size(t, c, &t) != TL_OK || tl_add_size(t, d, &t) != TL_OK ||
      tl_add_size(t, 5 * TL_ARENA_MIN_ALIGN, &t) != TL_OK)
    return SIZE_MAX;
  return t;
}

/* S-4a: the biases, on a candidate's working value. */
static double biased(const tl_sampler_profile *p, uint32_t id, double z) {
  size_t lo = 0, hi = p->n_bias;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->bias_ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < p->n_bias && p->bias_ids[lo] == id ? z + p->bias[lo] : z;
}

/* The candidate order (S-6): higher working logit first, then lower id.
 * -0 and +0 compare equal, so they tie and the id decides. */
static bool before(const cand *a, const cand *b) {
  return a->s > b->s || (a->s == b->s && a->id < b->id);
}

static void sift_down(cand *h, size_t i, size_t m) {
  for (;;) {
    size_t l = 2 * i + 1, top = i;
    cand tmp;
    if (l < m && before(&h[l], &h[top])) top = l;
    if (l + 1 < m && before(&h[l + 1], &h[top])) top = l + 1;
    if (top == i) return;
    tmp = h[i];
    h[i] = h[top];
    h[top] = tmp;
    i = top;
  }
}

/* The first k of h[0..m) in candidate order: a heap on `before`, k
 * extractions (O(m + k log m)). The order is total (ids are distinct), so
 * the result does not depend on the algorithm. Returns where the k
 * ordered entries start (inside h). */
static cand *order_first_k(cand *h, size_t m, size_t k) {
  size_t end = m;
  for (size_t i = m / 2; i-- > 0;) sift_down(h, i, m);
  for (size_t j = 0; j < k; j++) {
    cand tmp = h[0];
    h[0] = h[end - 1];
    h[end - 1] = tmp;
    end--;
    sift_down(h, 0, end);
  }
  /* h[m-1] is first, h[m-k] k-th: reverse the tail. */
  for (size_t lo = m - k, hi = m - 1; lo < hi; lo++, hi--) {
    cand tmp = h[lo];
    h[lo] = h[hi];
    h[hi] = tmp;
  }
  return h + (m - k);
}

/* The key of a working logit whose ascending unsigned order is the
 * descending order of the values, -0 and +0 one key (they tie: S-6). */
static uint64_t descending_key(double s) {
  uint64_t b;
  if (s == 0) s = 0.0;
  memcpy(&b, &s, sizeof b);
  b = (b >> 63) ? ~b : b | 0x8000000000000000u;
  return ~b;
}

/* All of h[0..m) in candidate order, by an LSD radix sort of the keys,
 * eight bits at a time (tmp: m more entries). Each pass is stable and h
 * starts in ascending id order (the candidates are made in id order), so
 * equal values stay in ascending id: the order order_first_k gives, in
 * O(m) instead of O(m log m) when every candidate is kept (temperature
 * sampling without top_k sorts the whole vocabulary each token). Passes
 * where every key has the same byte are skipped. Returns where the
 * ordered entries are (h or tmp). */
static cand *order_all(cand *h, cand *tmp, size_t m) {
  for (unsigned shift = 0; shift < 64; shift += 8) {
    size_t count[256] = {0}, at = 0;
    for (size_t i = 0; i < m; i++) count[(descending_key(h[i].s) >> shift) & 0xff]++;
    if (count[(descending_key(h[0].s) >> shift) & 0xff] == m) continue;
    for (size_t d = 0; d < 256; d++) {
      size_t c = count[d];
      count[d] = at;
      at += c;
    }
    for (size_t i = 0; i < m; i++) tmp[count[(descending_key(h[i].s) >> shift) & 0xff]++] = h[i];
    {
      cand *t = h;
      h = tmp;
      tmp = t;
    }
  }
  return h;
}

static bool f32_finite(float x) {
  return (tl_f32_to_bits(x) & 0x7f800000u) != 0x7f800000u;
}

static tl_status fail(tl_sample_result *res, tl_status st,
                      tl_sample_fault fault, size_t index) {
  res->fault = fault;
  res->fault_index = index;
  res->draws_used = 0;
  return st;
}

static void record(tl_sample_trace *tr, const cand *ord, const double *q,
                   size_t count, uint32_t draw_word, double u,
                   uint32_t chosen) {
  double b = 0;
  if (tr == NULL) return;
  for (size_t j = 0; j < count && j < tr->cap; j++) {
    b += q[j];
    if (tr->ids) tr->ids[j] = ord[j].id;
    if (tr->probs) tr->probs[j] = q[j];
    if (tr->bounds) tr->bounds[j] = b;
  }
  tr->count = count;
  tr->truncated = count > tr->cap;
  tr->draw_word = draw_word;
  tr->draw = u;
  tr->chosen = chosen;
}

static tl_status sample_steps(const tl_sampler_profile *p,
                              const tl_sample_input *in, uint32_t draw_word,
                              tl_arena *scratch, tl_sample_trace *trace,
                              tl_sample_result *res) {
  const size_t n = in->n;
  const double u = tl_draw_to_unit(draw_word);
  uint8_t *flags;
  uint32_t *counts = NULL;
  const bool counted = p->frequency_penalty != 0 || p->presence_penalty != 0;
  cand *cands, *spare, *ord;
  double *q;
  size_t m = 0, k, cut;
  tl_sampler_field field;

  /* Arguments, before any step. */
  if (tl_sampler_profile_check(p, &field) != TL_OK)
    return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_PROFILE,
                (size_t)field);
  if (in->logits == NULL || n == 0 || (uint64_t)n > UINT32_MAX ||
      p->defined_ids > n)
    return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_VOCAB, 0);
  if (in->n_history > 0 && in->history == NULL)
    return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_HISTORY, 0);
  for (size_t i = 0; i < in->n_history; i++)
    if (in->history[i] >= n)
      return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_HISTORY, i);

  /* S-1: every logit, masked or not, is finite. */
  for (size_t i = 0; i < n; i++)
    if (!f32_finite(in->logits[i]))
      return fail(res, TL_ERR_NUMERICAL_FAILURE, TL_SAMPLE_FAULT_NON_FINITE,
                  i);

  if (tl_arena_alloc(scratch, n, 1, (void **)&flags) != TL_OK ||
      tl_arena_alloc_array(scratch, n, sizeof(cand), _Alignof(cand),
                           (void **)&cands) != TL_OK ||
      tl_arena_alloc_array(scratch, n, sizeof(cand), _Alignof(cand),
                           (void **)&spare) != TL_OK ||
      tl_arena_alloc_array(scratch, n, sizeof(double), _Alignof(double),
                           (void **)&q) != TL_OK)
    return fail(res, TL_ERR_OUT_OF_MEMORY, TL_SAMPLE_FAULT_SCRATCH, 0);
  if (counted && tl_arena_alloc_array(scratch, n, sizeof(uint32_t), _Alignof(uint32_t),
                                      (void **)&counts) != TL_OK)
    return fail(res, TL_ERR_OUT_OF_MEMORY, TL_SAMPLE_FAULT_SCRATCH, 0);
  memset(flags, 0, n);

  /* S-2: the ban list and the padded rows. */
  for (size_t i = p->defined_ids; i < n; i++) flags[i] = FLAG_MASKED;
  for (size_t i = 0; i < p->n_ban; i++)
    if (p->ban[i] < n) flags[p->ban[i]] = FLAG_MASKED;
  /* A bias of exactly -100 is a ban (OpenAI: "should result in a ban"). */
  for (size_t i = 0; i < p->n_bias; i++)
    if (p->bias_ids[i] < n && p->bias[i] == -100.0) flags[p->bias_ids[i]] = FLAG_MASKED;
  /* S-2a: the allow mask (a grammar's), applied like the bans: before
   * every other step, and without touching the draw (S-12). */
  if (in->allow != NULL)
    for (size_t i = 0; i < n; i++)
      if (!((in->allow[i / 64] >> (i % 64)) & 1u)) flags[i] = FLAG_MASKED;
  /* S-3: EOS while fewer than min_new tokens were generated. */
  if (in->n_generated < p->min_new)
    for (size_t i = 0; i < p->n_eos; i++)
      if (p->eos[i] < n) flags[p->eos[i]] |= FLAG_MASKED;
  /* S-4: the distinct ids of the window, each penalised once. */
  if (p->repeat_penalty != 1.0 && p->repeat_window > 0) {
    size_t w = p->repeat_window;
    size_t start = in->n_history > w ? in->n_history - w : 0;
    for (size_t i = start; i < in->n_history; i++)
      flags[in->history[i]] |= FLAG_PENALISE;
  }
  /* S-4b: how often each id was generated in this turn (the history's
   * last n_generated ids). */
  if (counted) {
    size_t g = in->n_generated < in->n_history ? in->n_generated : in->n_history;
    memset(counts, 0, n * sizeof *counts);
    for (size_t i = in->n_history - g; i < in->n_history; i++) counts[in->history[i]]++;
  }
  for (size_t i = 0; i < n; i++) {
    double s;
    if (flags[i] & FLAG_MASKED) continue;
    s = biased(p, (uint32_t)i, (double)in->logits[i]);
    if (flags[i] & FLAG_PENALISE) {
      if (s > 0)
        s = s / p->repeat_penalty;
      else if (s < 0)
        s = s * p->repeat_penalty;
    }
    if (counted && counts[i] > 0) {
      double t = (double)counts[i] * p->frequency_penalty;
      t = t + p->presence_penalty;
      s = s - t;
    }
    cands[m].s = s;
    cands[m].id = (uint32_t)i;
    m++;
  }
  res->n_candidates = m;
  if (m == 0)
    return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_ALL_MASKED, 0);

  /* S-5: temperature 0 is the first candidate in candidate order, which
   * every filter would keep; the draw is still taken (S-12). */
  if (p->temperature == 0) {
    size_t best = 0;
    for (size_t j = 1; j < m; j++)
      if (before(&cands[j], &cands[best])) best = j;
    ord = &cands[best];
    q[0] = 1.0;
    res->id = ord->id;
    res->n_survivors = 1;
    record(trace, ord, q, 1, draw_word, u, ord->id);
    return TL_OK;
  }
  for (size_t j = 0; j < m; j++) cands[j].s = cands[j].s / p->temperature;

  /* S-6: order, keep the first top_k. */
  k = (p->top_k == 0 || p->top_k >= m) ? m : p->top_k;
  /* a few first ones: the heap; most or all of them: the radix sort */
  ord = k <= m / 64 ? order_first_k(cands, m, k) : order_all(cands, spare, m);

  /* S-7: softmax from the first (largest) value, summed in order. */
  {
    double sum = 0;
    for (size_t j = 0; j < k; j++) {
      q[j] = tl_exp(ord[j].s - ord[0].s);
      sum += q[j];
    }
    for (size_t j = 0; j < k; j++) q[j] = q[j] / sum;
  }

  /* S-8: the shortest prefix whose running sum reaches top_p (>=); the
   * token that crosses is kept. No prefix reaches it: all stay. */
  cut = k;
  if (p->top_p < 1.0) {
    double c = 0;
    for (size_t j = 0; j < k; j++) {
      c += q[j];
      if (c >= p->top_p) {
        cut = j + 1;
        break;
      }
    }
  }

  /* S-9: keep q >= min_p * q_first (a filter, order kept). */
  if (p->min_p > 0) {
    double thr = p->min_p * q[0];
    size_t w = 0;
    for (size_t j = 0; j < cut; j++)
      if (q[j] >= thr) {
        ord[w] = ord[j];
        q[w] = q[j];
        w++;
      }
    cut = w;
  }

  /* S-10: renormalise, summed in order. */
  {
    double tot = 0;
    for (size_t j = 0; j < cut; j++) tot += q[j];
    for (size_t j = 0; j < cut; j++) q[j] = q[j] / tot;
  }

  /* S-11: the first survivor whose running bound exceeds the draw; when
   * rounding leaves the last bound <= the draw, the last survivor with a
   * non-zero probability. */
  {
    double b = 0;
    size_t chosen = SIZE_MAX, last_nz = 0;
    for (size_t j = 0; j < cut; j++) {
      b += q[j];
      if (q[j] > 0) last_nz = j;
      if (b > u) {
        chosen = j;
        break;
      }
    }
    if (chosen == SIZE_MAX) chosen = last_nz;
    res->id = ord[chosen].id;
  }
  res->n_survivors = cut;
  record(trace, ord, q, cut, draw_word, u, res->id);
  return TL_OK;
}

tl_status tl_sample_with_draw(const tl_sampler_profile *p,
                              const tl_sample_input *in, uint32_t draw_word,
                              tl_arena *scratch, tl_sample_trace *trace,
                              tl_sample_result *res) {
  tl_arena_mark mark;
  tl_status st;
  if (res == NULL) return TL_ERR_INVALID_ARGUMENT;
  memset(res, 0, sizeof *res);
  res->draw_word = draw_word;
  res->draw = tl_draw_to_unit(draw_word);
  if (p == NULL || in == NULL || scratch == NULL)
    return fail(res, TL_ERR_INVALID_ARGUMENT, TL_SAMPLE_FAULT_NONE, 0);
  mark = tl_arena_mark_now(scratch);
  st = sample_steps(p, in, draw_word, scratch, trace, res);
  tl_arena_rewind(scratch, mark);
  if (st == TL_OK) {
    res->draws_used = 1;
    res->fault = TL_SAMPLE_FAULT_NONE;
  }
  return st;
}

tl_status tl_sample(const tl_sampler_profile *p, const tl_sample_input *in,
                    tl_arena *scratch, tl_sample_trace *trace,
                    tl_sample_result *res) {
  if (in == NULL) {
    if (res) memset(res, 0, sizeof *res);
    return TL_ERR_INVALID_ARGUMENT;
  }
  return tl_sample_with_draw(p, in, tl_draw_word(&in->pos), scratch, trace,
                             res);
}
