/* The deterministic CBOR writer (RFC 8949 §4.2.1; docs/cbor.md).
 *
 * Heads are always shortest (§4.2.1 "preferred serialization" for
 * integers, lengths and tags). Maps are written in the caller's order and
 * re-sorted in place when they close: begin_map records where each of the
 * 2n items starts, end_map orders the pairs by the encoded bytes of their
 * keys with a stable bottom-up merge sort over an index array (O(n log n)
 * compares), rejects equal keys, and rewrites the body once. Nested maps
 * are closed (and sorted) before their parent, and sorting a child never
 * changes its length, so the parent's recorded offsets stay valid. */
#include <string.h>

#include "cbor/cbor.h"
#include "checked.h"
#include "utf8.h"

static tl_status fail(tl_cbor_writer *w, tl_status st) {
  if (w->err == TL_OK) w->err = st;
  return w->err;
}

/* Length of the shortest head for argument v (CBOR-2). */
static size_t head_len(uint64_t v) {
  if (v < 24) return 1;
  if (v <= 0xFFu) return 2;
  if (v <= 0xFFFFu) return 3;
  if (v <= 0xFFFFFFFFu) return 5;
  return 9;
}

static void emit_head(tl_cbor_writer *w, unsigned major, uint64_t v) {
  uint8_t *p = w->buf + w->len;
  size_t n = head_len(v);
  uint8_t ib = (uint8_t)(major << 5);
  switch (n) {
    case 1:
      p[0] = (uint8_t)(ib | v);
      break;
    case 2:
      p[0] = (uint8_t)(ib | 24);
      break;
    case 3:
      p[0] = (uint8_t)(ib | 25);
      break;
    case 5:
      p[0] = (uint8_t)(ib | 26);
      break;
    default:
      p[0] = (uint8_t)(ib | 27);
      break;
  }
  /* The argument, big-endian, in the n - 1 bytes after the initial byte. */
  for (size_t i = n - 1; i >= 1; i--) {
    p[i] = (uint8_t)v;
    v >>= 8;
  }
  w->len += n;
}

static bool has_room(const tl_cbor_writer *w, size_t n) {
  return n <= w->cap - w->len;
}

/* May one more item begin where the writer stands? (CBOR-13: a container
 * holds exactly the items it declared; a document is one item.) */
static tl_status check_begin(const tl_cbor_writer *w) {
  if (w->depth == 0) return w->top_items == 0 ? TL_OK : TL_ERR_INVALID_ARGUMENT;
  {
    const tl_cbor_wframe *f = &w->stack[w->depth - 1];
    return f->written < f->expected ? TL_OK : TL_ERR_INVALID_ARGUMENT;
  }
}

static void note_begin(tl_cbor_writer *w) {
  tl_cbor_wframe *f;
  if (w->depth == 0) {
    w->top_items++;
    return;
  }
  f = &w->stack[w->depth - 1];
  if (f->offs != NULL) f->offs[f->written] = w->len;
  f->written++;
}

/* After a complete item: the tags it was the content of are complete too. */
static void note_end(tl_cbor_writer *w) {
  while (w->depth > 0 && w->stack[w->depth - 1].kind == TL_CBOR_TAG &&
         w->stack[w->depth - 1].written == 1)
    w->depth--;
}

tl_status tl_cbor_writer_init(tl_cbor_writer *w, uint8_t *buf, size_t cap,
                              tl_arena *scratch) {
  if (w == NULL || (buf == NULL && cap != 0)) return TL_ERR_INVALID_ARGUMENT;
  memset(w, 0, sizeof *w);
  w->buf = buf;
  w->cap = cap;
  w->err = TL_OK;
  w->scratch = scratch;
  return TL_OK;
}

/* One head plus an optional payload, as one complete item. */
static tl_status put_item(tl_cbor_writer *w, unsigned major, uint64_t arg,
                          const uint8_t *payload, size_t plen) {
  size_t hl = head_len(arg);
  tl_status st;
  if (w->err != TL_OK) return w->err;
  if (!has_room(w, plen) || hl > w->cap - w->len - plen)
    return fail(w, TL_ERR_BOUNDS);
  st = check_begin(w);
  if (st != TL_OK) return fail(w, st);
  note_begin(w);
  emit_head(w, major, arg);
  if (plen != 0) {
    memcpy(w->buf + w->len, payload, plen);
    w->len += plen;
  }
  note_end(w);
  return TL_OK;
}

tl_status tl_cbor_put_uint(tl_cbor_writer *w, uint64_t v) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  return put_item(w, 0, v, NULL, 0);
}

tl_status tl_cbor_put_negative(tl_cbor_writer *w, uint64_t n) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  return put_item(w, 1, n, NULL, 0);
}

tl_status tl_cbor_put_int(tl_cbor_writer *w, int64_t v) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (v >= 0) return put_item(w, 0, (uint64_t)v, NULL, 0);
  /* -1 - v without overflow: v = -1 - n  =>  n = -(v + 1) >= 0. */
  return put_item(w, 1, (uint64_t)(-(v + 1)), NULL, 0);
}

tl_status tl_cbor_put_bytes(tl_cbor_writer *w, const uint8_t *data,
                            size_t len) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (data == NULL && len != 0) return fail(w, TL_ERR_INVALID_ARGUMENT);
  return put_item(w, 2, (uint64_t)len, data, len);
}

tl_status tl_cbor_put_text(tl_cbor_writer *w, const char *s, size_t len) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (s == NULL && len != 0) return fail(w, TL_ERR_INVALID_ARGUMENT);
  if (w->err != TL_OK) return w->err;
  /* CBOR-7: text is well-formed UTF-8. */
  if (tl_utf8_validate((const uint8_t *)s, len, NULL) != TL_OK)
    return fail(w, TL_ERR_INVALID_UTF8);
  return put_item(w, 3, (uint64_t)len, (const uint8_t *)s, len);
}

tl_status tl_cbor_put_bool(tl_cbor_writer *w, bool v) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  return put_item(w, 7, v ? 21 : 20, NULL, 0);
}

tl_status tl_cbor_put_null(tl_cbor_writer *w) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  return put_item(w, 7, 22, NULL, 0);
}

/* May a container with head argument arg open here? (CBOR-12) */
static tl_status check_open(tl_cbor_writer *w, uint64_t arg) {
  tl_status st;
  if (w->err != TL_OK) return w->err;
  if (w->depth >= TL_CBOR_MAX_DEPTH) return fail(w, TL_ERR_BOUNDS);
  if (!has_room(w, head_len(arg))) return fail(w, TL_ERR_BOUNDS);
  st = check_begin(w);
  if (st != TL_OK) return fail(w, st);
  return TL_OK;
}

/* Writes the container's head and opens its frame. */
static void push_frame(tl_cbor_writer *w, unsigned major, uint64_t arg,
                       uint8_t kind, size_t expected) {
  tl_cbor_wframe *f;
  note_begin(w);
  emit_head(w, major, arg);
  f = &w->stack[w->depth++];
  memset(f, 0, sizeof *f);
  f->kind = kind;
  f->expected = expected;
}

tl_status tl_cbor_put_tag(tl_cbor_writer *w, uint64_t tag) {
  tl_status st;
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_open(w, tag);
  if (st != TL_OK) return st;
  push_frame(w, 6, tag, TL_CBOR_TAG, 1);
  return TL_OK;
}

tl_status tl_cbor_begin_array(tl_cbor_writer *w, size_t n) {
  tl_status st;
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_open(w, (uint64_t)n);
  if (st != TL_OK) return st;
  push_frame(w, 4, (uint64_t)n, TL_CBOR_ARRAY, n);
  return TL_OK;
}

tl_status tl_cbor_begin_map(tl_cbor_writer *w, size_t n_pairs) {
  size_t items, slots, mark = 0, top = 0;
  size_t *offs = NULL;
  tl_status st;
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (tl_mul_size(n_pairs, 2, &items) != TL_OK ||
      tl_add_size(items, 1, &slots) != TL_OK)
    return fail(w, TL_ERR_INTEGER_OVERFLOW);
  st = check_open(w, (uint64_t)n_pairs);
  if (st != TL_OK) return st;
  if (n_pairs >= 2) { /* only then is there anything to sort */
    void *mem;
    if (w->scratch == NULL) return fail(w, TL_ERR_INVALID_ARGUMENT);
    mark = w->scratch->used;
    st = tl_arena_alloc_array(w->scratch, slots, sizeof(size_t),
                              _Alignof(size_t), &mem);
    if (st != TL_OK) return fail(w, st);
    offs = (size_t *)mem;
    top = w->scratch->used;
  }
  push_frame(w, 5, (uint64_t)n_pairs, TL_CBOR_MAP, items);
  w->stack[w->depth - 1].offs = offs;
  w->stack[w->depth - 1].arena_mark = mark;
  w->stack[w->depth - 1].arena_top = top;
  return TL_OK;
}

/* Closes the innermost frame, which must be of the given kind and full. */
static tl_status check_close(tl_cbor_writer *w, uint8_t kind) {
  const tl_cbor_wframe *f;
  if (w->err != TL_OK) return w->err;
  if (w->depth == 0) return fail(w, TL_ERR_INVALID_ARGUMENT);
  f = &w->stack[w->depth - 1];
  if (f->kind != kind || f->written != f->expected)
    return fail(w, TL_ERR_INVALID_ARGUMENT);
  return TL_OK;
}

tl_status tl_cbor_end_array(tl_cbor_writer *w) {
  tl_status st;
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_close(w, TL_CBOR_ARRAY);
  if (st != TL_OK) return st;
  w->depth--;
  note_end(w);
  return TL_OK;
}

/* Bytewise order of the encoded keys of pairs a and b (CBOR-8): memcmp on
 * the common prefix, then the shorter first. */
static int key_cmp(const uint8_t *buf, const size_t *offs, size_t a, size_t b) {
  size_t la = offs[2 * a + 1] - offs[2 * a];
  size_t lb = offs[2 * b + 1] - offs[2 * b];
  int c = memcmp(buf + offs[2 * a], buf + offs[2 * b], la < lb ? la : lb);
  if (c != 0) return c;
  return la < lb ? -1 : la > lb ? 1 : 0;
}

/* Stable bottom-up merge sort of idx[0..n) by key; tmp has n slots. */
static void sort_pairs(const uint8_t *buf, const size_t *offs, size_t *idx,
                       size_t *tmp, size_t n) {
  size_t *src = idx, *dst = tmp;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = n - lo > width ? lo + width : n;
      size_t hi = n - mid > width ? mid + width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        dst[k++] =
            key_cmp(buf, offs, src[i], src[j]) <= 0 ? src[i++] : src[j++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    {
      size_t *t = src;
      src = dst;
      dst = t;
    }
  }
  if (src != idx) memcpy(idx, src, n * sizeof *idx);
}

/* Puts the pairs of a closing map (offs complete, offs[2n] = end) in key
 * order; TL_ERR_CONFLICT on equal keys. */
static tl_status order_map(tl_cbor_writer *w, const size_t *offs, size_t n) {
  size_t *idx, *tmp, start = offs[0], body = offs[2 * n] - offs[0], at;
  uint8_t *copy;
  void *mem;
  tl_status st;
  bool sorted = true;
  /* Common case first: strictly increasing keys need no memory. */
  for (size_t i = 1; i < n && sorted; i++)
    sorted = key_cmp(w->buf, offs, i - 1, i) < 0;
  if (sorted) return TL_OK;
  st = tl_arena_alloc_array(w->scratch, n, 2 * sizeof(size_t), _Alignof(size_t),
                            &mem);
  if (st != TL_OK) return st;
  idx = (size_t *)mem;
  tmp = idx + n;
  for (size_t i = 0; i < n; i++) idx[i] = i;
  sort_pairs(w->buf, offs, idx, tmp, n);
  for (size_t i = 1; i < n; i++)
    if (key_cmp(w->buf, offs, idx[i - 1], idx[i]) == 0) return TL_ERR_CONFLICT;
  st = tl_arena_alloc(w->scratch, body, 1, &mem);
  if (st != TL_OK) return st;
  copy = (uint8_t *)mem;
  memcpy(copy, w->buf + start, body);
  at = start;
  for (size_t i = 0; i < n; i++) {
    size_t s = offs[2 * idx[i]], e = offs[2 * idx[i] + 2];
    memcpy(w->buf + at, copy + (s - start), e - s);
    at += e - s;
  }
  return TL_OK;
}

tl_status tl_cbor_end_map(tl_cbor_writer *w) {
  tl_cbor_wframe *f;
  tl_status st;
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_close(w, TL_CBOR_MAP);
  if (st != TL_OK) return st;
  f = &w->stack[w->depth - 1];
  if (f->offs != NULL) {
    tl_arena_mark before = tl_arena_mark_now(w->scratch);
    f->offs[f->expected] = w->len;
    st = order_map(w, f->offs, f->expected / 2);
    (void)tl_arena_rewind(w->scratch, before);
    if (st != TL_OK) return fail(w, st);
    /* Release offs unless the caller allocated above it meanwhile. */
    if (w->scratch->used == f->arena_top) {
      tl_arena_mark m;
      m.used = f->arena_mark;
      (void)tl_arena_rewind(w->scratch, m);
    }
  }
  w->depth--;
  note_end(w);
  return TL_OK;
}

tl_status tl_cbor_writer_finish(const tl_cbor_writer *w, size_t *len) {
  if (w == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (w->err != TL_OK) return w->err;
  if (w->depth != 0 || w->top_items != 1) return TL_ERR_INVALID_ARGUMENT;
  if (len != NULL) *len = w->len;
  return TL_OK;
}

/* Writes the head of item it (read from a reader) to w. */
static tl_status put_read_item(tl_cbor_writer *w, const tl_cbor_item *it) {
  switch (it->type) {
    case TL_CBOR_UINT:
      return tl_cbor_put_uint(w, it->value);
    case TL_CBOR_NEGINT:
      return tl_cbor_put_negative(w, it->value);
    case TL_CBOR_BYTES:
      return tl_cbor_put_bytes(w, it->data, it->len);
    case TL_CBOR_TEXT:
      return tl_cbor_put_text(w, (const char *)it->data, it->len);
    case TL_CBOR_ARRAY:
      return tl_cbor_begin_array(w, it->len);
    case TL_CBOR_MAP:
      return tl_cbor_begin_map(w, it->len);
    case TL_CBOR_TAG:
      return tl_cbor_put_tag(w, it->value);
    case TL_CBOR_BOOL:
      return tl_cbor_put_bool(w, it->value != 0);
    case TL_CBOR_NULL:
      return tl_cbor_put_null(w);
  }
  return fail(w, TL_ERR_INTERNAL_INVARIANT);
}

tl_status tl_cbor_copy_item(tl_cbor_reader *r, tl_cbor_writer *w) {
  /* Containers still open in this copy, innermost last. */
  struct {
    uint8_t kind;
    uint64_t remaining;
  } open[TL_CBOR_MAX_DEPTH];
  size_t depth = 0;
  if (r == NULL || w == NULL) return TL_ERR_INVALID_ARGUMENT;
  do {
    tl_cbor_item it;
    uint64_t count = 0;
    tl_status st = tl_cbor_read(r, &it);
    if (st != TL_OK) return st;
    st = put_read_item(w, &it);
    if (st != TL_OK) return st;
    if (it.type == TL_CBOR_TAG) count = 1;
    if (it.type == TL_CBOR_ARRAY) count = it.value;
    if (it.type == TL_CBOR_MAP) count = 2 * it.value; /* n <= input len */
    if (count != 0) {
      /* The reader holds at most TL_CBOR_MAX_DEPTH open containers. */
      if (depth == TL_CBOR_MAX_DEPTH) return fail(w, TL_ERR_INTERNAL_INVARIANT);
      open[depth].kind = (uint8_t)it.type;
      open[depth].remaining = count;
      depth++;
      continue;
    }
    if (it.type == TL_CBOR_ARRAY) st = tl_cbor_end_array(w);
    if (it.type == TL_CBOR_MAP) st = tl_cbor_end_map(w);
    /* The item is complete: close what it completes. */
    while (st == TL_OK && depth > 0 && --open[depth - 1].remaining == 0) {
      depth--;
      if (open[depth].kind == TL_CBOR_ARRAY) st = tl_cbor_end_array(w);
      if (open[depth].kind == TL_CBOR_MAP) st = tl_cbor_end_map(w);
    }
    if (st != TL_OK) return st;
  } while (depth > 0);
  return TL_OK;
}

tl_status tl_cbor_put_item(tl_cbor_writer *w, const uint8_t *p, size_t len) {
  tl_cbor_reader r;
  tl_status st = tl_cbor_reader_init(&r, p, len, NULL);
  return st != TL_OK ? st : tl_cbor_copy_item(&r, w);
}
