/* NFC with Hugging Face alignments (unicode.h, docs/unicode.md).
 *
 * The reference is a stream of three stages from the
 * unicode-normalization-alignments crate, fed to HF's
 * NormalizedString::transform:
 *
 *   decompose   every input character into its full canonical
 *               decomposition; first piece change 0, others +1
 *   reorder     stable sort of each run of non-starters by ccc
 *   recompose   the crate's Recompositions state machine; a composite
 *               gets change(composee) + change(mark) - 1
 *   align       output char with change <= 0: the input char under the
 *               cursor, cursor += 1 - change; change +1: the char the
 *               cursor last passed
 *
 * run_segment() is that pipeline, line for line. tl_uni_nfc() only adds a
 * quick check: a character with ccc 0 and NFC_QC=Yes (a "boundary" in the
 * tables) resets all three stages, so text between boundaries whose
 * characters all pass the quick check comes out unchanged with identity
 * alignment, and only the segments around a failing character (from the
 * boundary before it to the boundary after it) go through the pipeline.
 * The generator proves the boundary property for every such character. */
#include "tok/unicode.h"

#include <string.h>

#include "checked.h"
#include "utf8.h"

/* Record bits (tools/gen_unicode_tables.py). */
#define REC_CCC_MASK 0xFFu
#define REC_QUICK (1u << 8)
#define REC_BOUNDARY (1u << 9)
#define REC_COMP_FIRST (1u << 10)
#define REC_COMP_SECOND (1u << 11)
#define REC_DLEN(r) ((r) >> 12 & 7u)
#define REC_DOFF(r) ((r) >> 16)

extern const uint8_t tl_uni_nfc_s1[];
extern const uint8_t tl_uni_nfc_s2[];
extern const uint16_t tl_uni_nfc_s3[];
extern const uint32_t tl_uni_nfc_records[];
extern const uint32_t tl_uni_decomp[];
extern const uint64_t tl_uni_comp[];
extern const size_t tl_uni_comp_count;

/* Hangul (Unicode §3.12). */
#define S_BASE 0xAC00u
#define L_BASE 0x1100u
#define V_BASE 0x1161u
#define T_BASE 0x11A7u
#define L_COUNT 19u
#define V_COUNT 21u
#define T_COUNT 28u
#define N_COUNT (V_COUNT * T_COUNT)
#define S_COUNT (L_COUNT * N_COUNT)

/* Work entries: code point (21 bits) | ccc << 21 | PLUS (change +1). */
#define W_CCC_SHIFT 21
#define W_PLUS (1u << 29)
#define W_CP(w) ((w)&0x1FFFFFu)
#define W_CCC(w) ((w) >> W_CCC_SHIFT & 0xFFu)

static inline uint32_t nfc_rec(uint32_t cp) {
  size_t i2, i3;
  if (cp > 0x10FFFFu) return REC_QUICK | REC_BOUNDARY;
  i2 = (size_t)tl_uni_nfc_s1[cp >> (TL_UNI_NFC_B2 + TL_UNI_NFC_B3)]
           << TL_UNI_NFC_B2 |
       (cp >> TL_UNI_NFC_B3 & ((1u << TL_UNI_NFC_B2) - 1));
  i3 = (size_t)tl_uni_nfc_s2[i2] << TL_UNI_NFC_B3 |
       (cp & ((1u << TL_UNI_NFC_B3) - 1));
  return tl_uni_nfc_records[tl_uni_nfc_s3[i3]];
}

uint8_t tl_uni_ccc(uint32_t cp) { return (uint8_t)(nfc_rec(cp) & 0xFFu); }

static inline size_t utf8_len(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Writes cp (a scalar value from the tables or the input) at out. */
static inline size_t put_utf8(uint8_t *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (uint8_t)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (uint8_t)(0xC0 | cp >> 6);
    out[1] = (uint8_t)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (uint8_t)(0xE0 | cp >> 12);
    out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (uint8_t)(0xF0 | cp >> 18);
  out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

/* --- the quick check: finding the segments that need work ------------- */

/* Scans forward from pos, a point where the pipeline's state is fresh
 * (the start, or a boundary character). Returns true and the next segment
 * [*seg_start, *seg_end) that needs the pipeline, or false when the rest
 * is NFC. *fast_cp counts the code points of [pos, *seg_start) (of
 * [pos, len) when false). TL_ERR_INVALID_UTF8 via *st on malformed input
 * (then the return value is false). */
static bool next_segment(const uint8_t *in, size_t len, size_t pos,
                         size_t *seg_start, size_t *seg_end, size_t *fast_cp,
                         tl_status *st) {
  size_t last_boundary = pos, n_cp = 0;
  uint32_t last_ccc = 0;
  *st = TL_OK;
  while (pos < len) {
    uint8_t b = in[pos];
    uint32_t cp, rec, ccc;
    size_t n;
    if (b < 0x80) {
      /* ASCII: eight bytes at a time while eight remain. */
      uint64_t w;
      while (len - pos >= 8) {
        memcpy(&w, in + pos, 8);
        if (w & 0x8080808080808080u) break;
        pos += 8;
        n_cp += 8;
      }
      while (pos < len && in[pos] < 0x80) {
        pos++;
        n_cp++;
      }
      last_boundary = pos - 1;
      last_ccc = 0;
      continue;
    }
    if (b >= 0xC2 && b < 0xCC) {
      /* U+0080..U+02FF: below TL_UNI_NFC_QUICK_BELOW. */
      if (len - pos < 2 || (in[pos + 1] & 0xC0) != 0x80) break;
      last_boundary = pos;
      last_ccc = 0;
      pos += 2;
      n_cp++;
      continue;
    }
    if (!tl_utf8_decode(in, len, pos, &cp, &n)) break;
    rec = nfc_rec(cp);
    ccc = rec & REC_CCC_MASK;
    if (rec & REC_BOUNDARY) {
      last_boundary = pos;
      last_ccc = 0;
    } else if ((rec & REC_QUICK) && ccc >= last_ccc) {
      last_ccc = ccc; /* a non-starter in canonical order */
    } else {
      /* Needs the pipeline: from the last boundary to the next one. */
      size_t end = pos + n;
      while (end < len) {
        if (in[end] < 0x80 || (in[end] >= 0xC2 && in[end] < 0xCC))
          break; /* ASCII or U+0080..U+02FF: a boundary */
        if (!tl_utf8_decode(in, len, end, &cp, &n)) {
          *st = TL_ERR_INVALID_UTF8;
          return false;
        }
        if (nfc_rec(cp) & REC_BOUNDARY) break;
        end += n;
      }
      /* The fast part ends where the segment starts; characters between
       * last_boundary and pos were counted, take them back. */
      for (size_t p = last_boundary; p < pos; p++)
        if ((in[p] & 0xC0) != 0x80) n_cp--;
      *seg_start = last_boundary;
      *seg_end = end;
      *fast_cp = n_cp;
      return true;
    }
    pos += n;
    n_cp++;
  }
  *fast_cp = n_cp;
  if (pos < len) *st = TL_ERR_INVALID_UTF8;
  return false;
}

/* NFD size of in[a, b): code points and UTF-8 bytes. */
static tl_status nfd_size(const uint8_t *in, size_t a, size_t b, size_t *cps,
                          size_t *bytes) {
  size_t c = 0, y = 0;
  while (a < b) {
    uint32_t cp, rec, dl;
    size_t n;
    if (!tl_utf8_decode(in, b, a, &cp, &n)) return TL_ERR_INVALID_UTF8;
    a += n;
    if (cp - S_BASE < S_COUNT) {
      dl = (cp - S_BASE) % T_COUNT ? 3 : 2;
      c += dl;
      y += 3 * dl;
      continue;
    }
    rec = nfc_rec(cp);
    dl = REC_DLEN(rec);
    if (dl == 0) {
      c++;
      y += n;
      continue;
    }
    c += dl;
    for (uint32_t k = 0; k < dl; k++)
      y += utf8_len(tl_uni_decomp[REC_DOFF(rec) + k]);
  }
  *cps = c;
  *bytes = y;
  return TL_OK;
}

/* --- the pipeline ------------------------------------------------------ */

/* Stable sort of a run of non-starters by ccc: insertion sort for short
 * runs, counting sort (tmp, n entries) for long ones, so adversarial
 * input stays O(n). */
static void sort_run(uint32_t *d, size_t n, uint32_t *tmp) {
  if (n <= 16) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = d[i];
      size_t j = i;
      while (j > 0 && W_CCC(d[j - 1]) > W_CCC(x)) {
        d[j] = d[j - 1];
        j--;
      }
      d[j] = x;
    }
    return;
  }
  size_t count[256];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; i++) count[W_CCC(d[i])]++;
  size_t sum = 0;
  for (size_t c = 0; c < 256; c++) {
    size_t k = count[c];
    count[c] = sum;
    sum += k;
  }
  for (size_t i = 0; i < n; i++) tmp[count[W_CCC(d[i])]++] = d[i];
  memcpy(d, tmp, n * sizeof *d);
}

/* The crate's compose(): Hangul LV and LVT algorithmically, then the
 * primary composite table. Returns 0 when a and b do not compose. */
static uint32_t compose(uint32_t a, uint32_t b) {
  if (a - L_BASE < L_COUNT && b - V_BASE < V_COUNT)
    return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
  if (a - S_BASE < S_COUNT && (a - S_BASE) % T_COUNT == 0 &&
      b - (T_BASE + 1) < T_COUNT - 1)
    return a + (b - T_BASE);
  if (!(nfc_rec(a) & REC_COMP_FIRST) || !(nfc_rec(b) & REC_COMP_SECOND))
    return 0;
  uint64_t key = (uint64_t)a << 21 | b;
  size_t lo = 0, hi = tl_uni_comp_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t k = tl_uni_comp[mid] >> 21;
    if (k == key) return (uint32_t)(tl_uni_comp[mid] & 0x1FFFFFu);
    if (k < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* Output side of one segment: UTF-8 bytes, spans, and HF's cursor. */
typedef struct nfc_out {
  const uint8_t *in;
  size_t seg_end;
  uint8_t *text;
  size_t len, cap_bytes;
  tl_uni_span *align;
  size_t n_cp, cap_cp;
  size_t cursor;    /* next input character not yet consumed */
  tl_uni_span last; /* the input character the cursor last moved past */
} nfc_out;

static inline size_t char_len_at(const uint8_t *s, size_t pos) {
  uint8_t b = s[pos];
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* transform_range's per-character step. */
static tl_status emit(nfc_out *o, uint32_t cp, ptrdiff_t change) {
  tl_uni_span span = o->last;
  if (change <= 0) {
    /* Consumes 1 - change input characters; aligned with the first. */
    for (ptrdiff_t k = 0; k <= -change; k++) {
      size_t n;
      if (o->cursor >= o->seg_end) return TL_ERR_INTERNAL_INVARIANT;
      n = char_len_at(o->in, o->cursor);
      o->last.start = (uint32_t)o->cursor;
      o->last.end = (uint32_t)(o->cursor + n);
      if (k == 0) span = o->last;
      o->cursor += n;
    }
  }
  /* Pass 1's bounds hold by construction; checked anyway. */
  if (o->cap_bytes - o->len < utf8_len(cp)) return TL_ERR_INTERNAL_INVARIANT;
  if (o->n_cp >= o->cap_cp) return TL_ERR_INTERNAL_INVARIANT;
  o->len += put_utf8(o->text + o->len, cp);
  o->align[o->n_cp++] = span;
  return TL_OK;
}

#define EMIT(cp, change)                          \
  do {                                            \
    tl_status emit_st_ = emit(o, (cp), (change)); \
    if (emit_st_ != TL_OK) return emit_st_;       \
  } while (0)

/* Runs in[a, b) through decompose / reorder / recompose / align, writing
 * to o. work and tmp hold at least the NFD length of the segment. */
static tl_status run_segment(nfc_out *o, size_t a, size_t b, uint32_t *work,
                             uint32_t *tmp) {
  const uint8_t *in = o->in;
  size_t m = 0;

  /* Decompose. */
  for (size_t pos = a; pos < b;) {
    uint32_t cp, rec, dl;
    size_t n;
    if (!tl_utf8_decode(in, b, pos, &cp, &n)) return TL_ERR_INVALID_UTF8;
    pos += n;
    if (cp - S_BASE < S_COUNT) {
      uint32_t s = cp - S_BASE;
      work[m++] = L_BASE + s / N_COUNT;
      work[m++] = (V_BASE + s % N_COUNT / T_COUNT) | W_PLUS;
      if (s % T_COUNT) work[m++] = (T_BASE + s % T_COUNT) | W_PLUS;
      continue;
    }
    rec = nfc_rec(cp);
    dl = REC_DLEN(rec);
    if (dl == 0) {
      work[m++] = cp | (rec & REC_CCC_MASK) << W_CCC_SHIFT;
      continue;
    }
    for (uint32_t k = 0; k < dl; k++) {
      uint32_t d = tl_uni_decomp[REC_DOFF(rec) + k];
      work[m++] =
          d | (nfc_rec(d) & REC_CCC_MASK) << W_CCC_SHIFT | (k ? W_PLUS : 0);
    }
  }

  /* Canonical ordering. */
  for (size_t i = 0; i < m;) {
    size_t j = i;
    while (j < m && W_CCC(work[j]) != 0) j++;
    if (j - i > 1) sort_run(work + i, j - i, tmp);
    i = j + 1;
  }

  /* Recompose: the crate's Recompositions::next, states Composing /
   * Purging / Finished flattened into one pass. The buffer of blocked
   * marks is kept in place at work[buf_start, buf_end) (buf_end <= r). */
  bool have_composee = false;
  uint32_t k_cp = 0;
  ptrdiff_t k_change = 0;
  int last_ccc = -1; /* None */
  size_t buf_start = 0, buf_end = 0;
  for (size_t r = 0; r < m; r++) {
    uint32_t w = work[r], ch = W_CP(w), ch_class = W_CCC(w), c;
    ptrdiff_t change = (w & W_PLUS) ? 1 : 0;
    if (!have_composee) {
      if (ch_class != 0) {
        EMIT(ch, change);
        continue;
      }
      have_composee = true;
      k_cp = ch;
      k_change = change;
      buf_start = buf_end = r + 1;
      continue;
    }
    if (last_ccc < 0) {
      c = compose(k_cp, ch);
      if (c != 0) {
        k_cp = c;
        k_change = k_change + change - 1;
        continue;
      }
      if (ch_class == 0) {
        EMIT(k_cp, k_change);
        k_cp = ch;
        k_change = change;
        buf_start = buf_end = r + 1;
        continue;
      }
      work[buf_end++] = w;
      last_ccc = (int)ch_class;
      continue;
    }
    if ((uint32_t)last_ccc >= ch_class) {
      /* ch is blocked from the composee. */
      if (ch_class == 0) {
        EMIT(k_cp, k_change);
        for (size_t i = buf_start; i < buf_end; i++)
          EMIT(W_CP(work[i]), (work[i] & W_PLUS) ? 1 : 0);
        k_cp = ch;
        k_change = change;
        last_ccc = -1;
        buf_start = buf_end = r + 1;
        continue;
      }
      work[buf_end++] = w;
      last_ccc = (int)ch_class;
      continue;
    }
    c = compose(k_cp, ch);
    if (c != 0) {
      k_cp = c;
      k_change = k_change + change - 1;
      continue;
    }
    work[buf_end++] = w;
    last_ccc = (int)ch_class;
  }
  if (have_composee) {
    EMIT(k_cp, k_change);
    for (size_t i = buf_start; i < buf_end; i++)
      EMIT(W_CP(work[i]), (work[i] & W_PLUS) ? 1 : 0);
  }
  /* Every input character of the segment is consumed exactly once. */
  if (o->cursor != b) return TL_ERR_INTERNAL_INVARIANT;
  return TL_OK;
}

/* Identity output for in[a, b): copy and one span per character. */
static tl_status copy_identity(nfc_out *o, size_t a, size_t b) {
  if (o->cap_bytes - o->len < b - a) return TL_ERR_INTERNAL_INVARIANT;
  memcpy(o->text + o->len, o->in + a, b - a);
  o->len += b - a;
  while (a < b) {
    size_t n = char_len_at(o->in, a);
    if (o->n_cp >= o->cap_cp) return TL_ERR_INTERNAL_INVARIANT;
    o->align[o->n_cp].start = (uint32_t)a;
    o->align[o->n_cp].end = (uint32_t)(a + n);
    o->n_cp++;
    a += n;
  }
  if (b > 0) {
    size_t p = b - 1;
    while (p > 0 && (o->in[p] & 0xC0) == 0x80) p--;
    o->last.start = (uint32_t)p;
    o->last.end = (uint32_t)b;
  }
  o->cursor = b;
  return TL_OK;
}

tl_status tl_uni_nfc(const uint8_t *in, size_t len, unsigned flags,
                     tl_arena *scratch, tl_uni_nfc_result *res) {
  tl_status st;
  size_t pos, seg_a, seg_b, fast_cp, n_seg = 0;
  size_t out_bytes = 0, out_cps = 0, max_seg = 0;
  tl_arena_mark mark;
  nfc_out o;
  uint32_t *work = NULL, *tmp = NULL;
  bool force = (flags & TL_UNI_NFC_FORCE_SLOW) != 0;

  if (res == NULL || scratch == NULL || (in == NULL && len != 0) ||
      (flags & ~(unsigned)(TL_UNI_NFC_ALWAYS_ALIGN | TL_UNI_NFC_FORCE_SLOW)))
    return TL_ERR_INVALID_ARGUMENT;
  if ((uint64_t)len > UINT32_MAX) return TL_ERR_BOUNDS;
  memset(res, 0, sizeof *res);

  /* Pass 1: find the segments and bound the output. */
  pos = 0;
  for (;;) {
    bool found;
    if (force) {
      found = n_seg == 0 && len > 0;
      seg_a = 0;
      seg_b = len;
      fast_cp = 0;
      st = TL_OK;
    } else {
      found = next_segment(in, len, pos, &seg_a, &seg_b, &fast_cp, &st);
    }
    if (st != TL_OK) return st;
    if (!found) {
      if ((st = tl_add_size(out_bytes, len - pos, &out_bytes)) != TL_OK ||
          (st = tl_add_size(out_cps, fast_cp, &out_cps)) != TL_OK)
        return st;
      break;
    }
    size_t c, y;
    if ((st = nfd_size(in, seg_a, seg_b, &c, &y)) != TL_OK) return st;
    /* Sums below are bounded by 3 * len and 1.5 * len: no overflow for
     * len < 2^32 on 64-bit, but wasm32 size_t is 32 bits: check. */
    if ((st = tl_add_size(out_bytes, seg_a - pos, &out_bytes)) != TL_OK ||
        (st = tl_add_size(out_bytes, y, &out_bytes)) != TL_OK ||
        (st = tl_add_size(out_cps, fast_cp, &out_cps)) != TL_OK ||
        (st = tl_add_size(out_cps, c, &out_cps)) != TL_OK)
      return st;
    if (c > max_seg) max_seg = c;
    n_seg++;
    pos = seg_b;
  }

  mark = tl_arena_mark_now(scratch);
  if (n_seg == 0) {
    res->text = in;
    res->len = len;
    res->n_cp = out_cps;
    res->identity = true;
    if (flags & TL_UNI_NFC_ALWAYS_ALIGN) {
      void *p;
      tl_uni_span *al;
      size_t i = 0;
      st = tl_arena_alloc_array(scratch, out_cps, sizeof(tl_uni_span),
                                _Alignof(tl_uni_span), &p);
      if (st != TL_OK) return st;
      al = p;
      for (size_t a = 0; a < len; i++) {
        size_t n = char_len_at(in, a);
        al[i].start = (uint32_t)a;
        al[i].end = (uint32_t)(a + n);
        a += n;
      }
      res->align = al;
    }
    return TL_OK;
  }

  /* Pass 2: allocate, then copy and normalize. */
  {
    void *t, *al, *wk;
    tl_arena_mark work_mark;
    st = tl_arena_alloc(scratch, out_bytes, 1, &t);
    if (st == TL_OK)
      st = tl_arena_alloc_array(scratch, out_cps, sizeof(tl_uni_span),
                                _Alignof(tl_uni_span), &al);
    if (st != TL_OK) {
      tl_arena_rewind(scratch, mark);
      return st;
    }
    work_mark = tl_arena_mark_now(scratch);
    st = tl_arena_alloc_array(scratch, max_seg, 2 * sizeof(uint32_t),
                              _Alignof(uint32_t), &wk);
    if (st != TL_OK) {
      tl_arena_rewind(scratch, mark);
      return st;
    }
    work = wk;
    tmp = work + max_seg;
    memset(&o, 0, sizeof o);
    o.in = in;
    o.text = t;
    o.cap_bytes = out_bytes;
    o.align = al;
    o.cap_cp = out_cps;

    pos = 0;
    for (size_t s = 0; s < n_seg; s++) {
      if (force) {
        seg_a = 0;
        seg_b = len;
      } else {
        (void)next_segment(in, len, pos, &seg_a, &seg_b, &fast_cp, &st);
      }
      st = TL_OK;
      if (seg_a > pos) st = copy_identity(&o, pos, seg_a);
      o.seg_end = seg_b;
      o.cursor = seg_a;
      if (st == TL_OK) st = run_segment(&o, seg_a, seg_b, work, tmp);
      if (st != TL_OK) {
        tl_arena_rewind(scratch, mark);
        return st;
      }
      pos = seg_b;
    }
    if (pos < len && (st = copy_identity(&o, pos, len)) != TL_OK) {
      tl_arena_rewind(scratch, mark);
      return st;
    }
    (void)tl_arena_rewind(scratch, work_mark); /* release the work buffer */
    res->text = o.text;
    res->len = o.len;
    res->align = o.align;
    res->n_cp = o.n_cp;
    res->identity = false;
  }
  return TL_OK;
}
