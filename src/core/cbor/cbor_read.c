/* The strict CBOR reader (RFC 8949 §3 well-formedness, §4.2.1 core
 * deterministic encoding, §5.4 validity; docs/cbor.md).
 *
 * Every head is checked before its argument is used: reserved additional
 * information, indefinite lengths, floats and simple values are refused
 * from the initial byte alone; the argument must be shortest; a string's
 * length, an array's count n and a map's 2n must not exceed the bytes left
 * (each item takes at least one byte), and the same holds for all items
 * announced by open containers together, so nothing derived from a hostile
 * length is ever added to a pointer, and the counts a schema decoder may
 * allocate for sum to less than the input's length. Containers are tracked on a
 * fixed stack, never by recursion. A map key's encoded bytes are compared with
 * the previous key's when the key completes, in the input itself, so the
 * order and uniqueness checks need no memory either. */
#include <string.h>

#include "cbor/cbor.h"
#include "utf8.h"

static const char *const fault_names[] = {
#define TL_CBOR_FAULT_NAME_(name, str) str,
    TL_CBOR_FAULT_LIST(TL_CBOR_FAULT_NAME_)
#undef TL_CBOR_FAULT_NAME_
};

const char *tl_cbor_fault_name(tl_cbor_fault_kind kind) {
  if ((unsigned)kind >= (unsigned)TL_CBOR_FAULT_COUNT_) return "unknown";
  return fault_names[kind];
}

tl_cbor_limits tl_cbor_limits_default(void) {
  tl_cbor_limits l;
  memset(&l, 0, sizeof l);
  l.max_depth = TL_CBOR_MAX_DEPTH;
  return l;
}

tl_status tl_cbor_reader_init(tl_cbor_reader *r, const uint8_t *buf, size_t len,
                              const tl_cbor_limits *limits) {
  if (r == NULL || (buf == NULL && len != 0)) return TL_ERR_INVALID_ARGUMENT;
  if (limits != NULL && (limits->max_depth > TL_CBOR_MAX_DEPTH ||
                         limits->n_allowed_tags > TL_CBOR_MAX_ALLOWED_TAGS))
    return TL_ERR_INVALID_ARGUMENT;
  memset(r, 0, sizeof *r);
  r->buf = buf;
  r->len = len;
  r->limits = limits != NULL ? *limits : tl_cbor_limits_default();
  r->owed = 1; /* the document's one item */
  r->fault.kind = TL_CBOR_FAULT_NONE;
  return TL_OK;
}

size_t tl_cbor_reader_depth(const tl_cbor_reader *r) {
  return r != NULL ? r->depth : 0;
}

static tl_status set_fault(tl_cbor_reader *r, tl_cbor_fault_kind kind,
                           size_t offset) {
  r->fault.kind = kind;
  r->fault.offset = offset;
  return TL_ERR_INVALID_CBOR;
}

static bool tag_allowed(const tl_cbor_limits *l, uint64_t tag) {
  for (size_t i = 0; i < l->n_allowed_tags; i++)
    if (l->allowed_tags[i] == tag) return true;
  return false;
}

/* Decodes and checks the head at r->pos without changing the reader. On
 * TL_OK *it is the item and *next the offset after its head (and payload,
 * for strings); otherwise *fault says why. */
static tl_status parse_head(const tl_cbor_reader *r, tl_cbor_item *it,
                            size_t *next, tl_cbor_fault *fault) {
  size_t pos = r->pos, hl = 1, rem, room;
  uint64_t arg;
  uint8_t ib;
  unsigned major, ai;
  fault->offset = pos;
  if (pos >= r->len) { /* CBOR-1: an item was due here */
    fault->kind = TL_CBOR_FAULT_TRUNCATED;
    fault->offset = r->len;
    return TL_ERR_INVALID_CBOR;
  }
  ib = r->buf[pos];
  major = ib >> 5;
  ai = ib & 31u;
  memset(it, 0, sizeof *it);
  it->offset = pos;
  if (ai >= 28 && ai <= 30) { /* CBOR-4; RFC 8949 §3: not well-formed */
    fault->kind = TL_CBOR_FAULT_RESERVED;
    return TL_ERR_INVALID_CBOR;
  }
  if (ai == 31) { /* CBOR-3: indefinite length, or a break */
    fault->kind = TL_CBOR_FAULT_INDEFINITE;
    return TL_ERR_INVALID_CBOR;
  }
  if (major == 7) { /* CBOR-5, CBOR-6: only false, true, null */
    if (ai == 20 || ai == 21) {
      it->type = TL_CBOR_BOOL;
      it->value = ai == 21;
    } else if (ai == 22) {
      it->type = TL_CBOR_NULL;
    } else {
      fault->kind = TL_CBOR_FAULT_SIMPLE;
      return TL_ERR_INVALID_CBOR;
    }
    *next = pos + 1;
    return TL_OK;
  }
  if (ai < 24) {
    arg = ai;
  } else {
    /* 24..27: the argument follows in 1, 2, 4 or 8 bytes, big-endian. */
    static const uint64_t min_arg[4] = {24, 0x100u, 0x10000u,
                                        UINT64_C(0x100000000)};
    size_t nb = (size_t)1 << (ai - 24);
    if (r->len - pos - 1 < nb) {
      fault->kind = TL_CBOR_FAULT_TRUNCATED;
      return TL_ERR_INVALID_CBOR;
    }
    arg = 0;
    for (size_t i = 1; i <= nb; i++) arg = arg << 8 | r->buf[pos + i];
    if (arg < min_arg[ai - 24]) { /* CBOR-2 */
      fault->kind = TL_CBOR_FAULT_NON_SHORTEST;
      return TL_ERR_INVALID_CBOR;
    }
    hl = 1 + nb;
  }
  /* CBOR-10: what this item may declare. Every item announced and not yet
   * started (r->owed - 1 besides this one) needs at least one byte of its
   * own, so a length or count n must satisfy others + n <= bytes left. */
  rem = r->len - pos - hl;
  room = r->owed - 1 <= (uint64_t)rem ? rem - (size_t)(r->owed - 1) : 0;
  if (r->owed - 1 > (uint64_t)rem &&
      (major == 2 || major == 3 || major == 4 || major == 5)) {
    fault->kind = TL_CBOR_FAULT_LENGTH;
    return TL_ERR_INVALID_CBOR;
  }
  it->type = (tl_cbor_type)major;
  it->value = arg;
  *next = pos + hl;
  switch (major) {
    case 0:
    case 1:
      break;
    case 2:
    case 3:
      /* CBOR-10: the length is checked against the input before use. */
      if (arg > (uint64_t)room) {
        fault->kind = TL_CBOR_FAULT_LENGTH;
        return TL_ERR_INVALID_CBOR;
      }
      it->len = (size_t)arg;
      it->data = r->buf + pos + hl;
      if (major == 3) { /* CBOR-7 */
        size_t bad = 0;
        if (tl_utf8_validate(it->data, it->len, &bad) != TL_OK) {
          fault->kind = TL_CBOR_FAULT_UTF8;
          fault->offset = pos + hl + bad;
          return TL_ERR_INVALID_CBOR;
        }
      }
      *next = pos + hl + it->len;
      break;
    case 4:
      if (arg > (uint64_t)room) { /* CBOR-10: n items need n bytes */
        fault->kind = TL_CBOR_FAULT_LENGTH;
        return TL_ERR_INVALID_CBOR;
      }
      it->len = (size_t)arg;
      break;
    case 5:
      if (arg > (uint64_t)(room / 2)) { /* CBOR-10: 2n items, 2n bytes */
        fault->kind = TL_CBOR_FAULT_LENGTH;
        return TL_ERR_INVALID_CBOR;
      }
      it->len = (size_t)arg;
      break;
    default:                               /* 6 */
      if (!tag_allowed(&r->limits, arg)) { /* CBOR-9 */
        fault->kind = TL_CBOR_FAULT_TAG;
        return TL_ERR_INVALID_CBOR;
      }
      break;
  }
  return TL_OK;
}

/* An item ended at r->pos: count it in its container, check a map key's
 * order against the previous key (CBOR-8), and close every container this
 * completes. */
static tl_status complete_item(tl_cbor_reader *r) {
  while (r->depth > 0) {
    tl_cbor_rframe *f = &r->stack[r->depth - 1];
    f->remaining--;
    if (f->kind == TL_CBOR_MAP && (f->remaining & 1u) == 1) {
      size_t klen = r->pos - f->key_start;
      if (f->has_prev_key) {
        size_t plen = f->prev_key_len;
        int c = memcmp(r->buf + f->prev_key_start, r->buf + f->key_start,
                       plen < klen ? plen : klen);
        if (c == 0) c = plen < klen ? -1 : plen > klen ? 1 : 0;
        if (c == 0)
          return set_fault(r, TL_CBOR_FAULT_DUPLICATE_KEY, f->key_start);
        if (c > 0) return set_fault(r, TL_CBOR_FAULT_KEY_ORDER, f->key_start);
      }
      f->prev_key_start = f->key_start;
      f->prev_key_len = klen;
      f->has_prev_key = true;
    }
    if (f->remaining != 0) return TL_OK;
    r->depth--;
  }
  r->done = true;
  return TL_OK;
}

/* The reader is usable (faults are sticky, CBOR-14) and not past its
 * document. */
static tl_status check_state(tl_cbor_reader *r) {
  if (r->fault.kind != TL_CBOR_FAULT_NONE) return TL_ERR_INVALID_CBOR;
  if (r->done) {
    if (r->pos < r->len) return set_fault(r, TL_CBOR_FAULT_TRAILING, r->pos);
    return TL_ERR_BOUNDS;
  }
  return TL_OK;
}

tl_status tl_cbor_peek(tl_cbor_reader *r, tl_cbor_item *item) {
  size_t next;
  tl_status st;
  tl_cbor_fault fault;
  if (r == NULL || item == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_state(r);
  if (st != TL_OK) return st;
  if (parse_head(r, item, &next, &fault) != TL_OK)
    return set_fault(r, fault.kind, fault.offset);
  return TL_OK;
}

tl_status tl_cbor_read(tl_cbor_reader *r, tl_cbor_item *item) {
  tl_cbor_item it;
  size_t next;
  uint64_t count = 0;
  bool container;
  tl_cbor_fault fault;
  tl_status st;
  if (r == NULL || item == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = check_state(r);
  if (st != TL_OK) return st;
  if (parse_head(r, &it, &next, &fault) != TL_OK)
    return set_fault(r, fault.kind, fault.offset);
  container = it.type == TL_CBOR_ARRAY || it.type == TL_CBOR_MAP ||
              it.type == TL_CBOR_TAG;
  if (container && r->depth >= r->limits.max_depth) /* CBOR-12 */
    return set_fault(r, TL_CBOR_FAULT_DEPTH, it.offset);
  if (r->depth > 0) {
    tl_cbor_rframe *parent = &r->stack[r->depth - 1];
    if (parent->kind == TL_CBOR_MAP && (parent->remaining & 1u) == 0)
      parent->key_start = it.offset; /* this item is a key */
  }
  r->pos = next;
  /* This item has started; a container announces its items. The checks
   * above keep owed below the input length, so it cannot overflow. */
  r->owed--;
  if (container) {
    /* n <= bytes left (checked), so 2n cannot overflow. */
    count = it.type == TL_CBOR_TAG   ? 1
            : it.type == TL_CBOR_MAP ? 2 * it.value
                                     : it.value;
  }
  r->owed += count;
  if (count != 0) {
    tl_cbor_rframe *f = &r->stack[r->depth++];
    memset(f, 0, sizeof *f);
    f->kind = (uint8_t)it.type;
    f->remaining = count;
  } else {
    st = complete_item(r);
    if (st != TL_OK) return st;
  }
  *item = it;
  return TL_OK;
}

static tl_status type_fault(tl_cbor_reader *r, const tl_cbor_item *it) {
  return set_fault(r, TL_CBOR_FAULT_TYPE, it->offset);
}

tl_status tl_cbor_expect_uint(tl_cbor_reader *r, uint64_t *v) {
  tl_cbor_item it;
  tl_status st;
  if (v == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_cbor_read(r, &it);
  if (st != TL_OK) return st;
  if (it.type == TL_CBOR_NEGINT)
    return set_fault(r, TL_CBOR_FAULT_INT_RANGE, it.offset);
  if (it.type != TL_CBOR_UINT) return type_fault(r, &it);
  *v = it.value;
  return TL_OK;
}

tl_status tl_cbor_expect_int(tl_cbor_reader *r, int64_t *v) {
  tl_cbor_item it;
  tl_status st;
  if (v == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_cbor_read(r, &it);
  if (st != TL_OK) return st;
  if (it.type != TL_CBOR_UINT && it.type != TL_CBOR_NEGINT)
    return type_fault(r, &it);
  if (it.value > (uint64_t)INT64_MAX)
    return set_fault(r, TL_CBOR_FAULT_INT_RANGE, it.offset);
  *v = it.type == TL_CBOR_UINT ? (int64_t)it.value : -1 - (int64_t)it.value;
  return TL_OK;
}

static tl_status expect_string(tl_cbor_reader *r, tl_cbor_type type,
                               const uint8_t **data, size_t *len) {
  tl_cbor_item it;
  tl_status st;
  if (data == NULL || len == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_cbor_read(r, &it);
  if (st != TL_OK) return st;
  if (it.type != type) return type_fault(r, &it);
  *data = it.data;
  *len = it.len;
  return TL_OK;
}

tl_status tl_cbor_expect_bytes(tl_cbor_reader *r, const uint8_t **data,
                               size_t *len) {
  return expect_string(r, TL_CBOR_BYTES, data, len);
}

tl_status tl_cbor_expect_text(tl_cbor_reader *r, const char **s, size_t *len) {
  const uint8_t *data = NULL;
  tl_status st;
  if (s == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = expect_string(r, TL_CBOR_TEXT, &data, len);
  if (st == TL_OK) *s = (const char *)data;
  return st;
}

static tl_status expect_head(tl_cbor_reader *r, tl_cbor_type type,
                             tl_cbor_item *it) {
  tl_status st = tl_cbor_read(r, it);
  if (st != TL_OK) return st;
  if (it->type != type) return type_fault(r, it);
  return TL_OK;
}

tl_status tl_cbor_expect_array(tl_cbor_reader *r, size_t *n) {
  tl_cbor_item it;
  tl_status st;
  if (n == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = expect_head(r, TL_CBOR_ARRAY, &it);
  if (st == TL_OK) *n = it.len;
  return st;
}

tl_status tl_cbor_expect_map(tl_cbor_reader *r, size_t *n_pairs) {
  tl_cbor_item it;
  tl_status st;
  if (n_pairs == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = expect_head(r, TL_CBOR_MAP, &it);
  if (st == TL_OK) *n_pairs = it.len;
  return st;
}

tl_status tl_cbor_expect_tag(tl_cbor_reader *r, uint64_t *tag) {
  tl_cbor_item it;
  tl_status st;
  if (tag == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = expect_head(r, TL_CBOR_TAG, &it);
  if (st == TL_OK) *tag = it.value;
  return st;
}

tl_status tl_cbor_expect_bool(tl_cbor_reader *r, bool *v) {
  tl_cbor_item it;
  tl_status st;
  if (v == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = expect_head(r, TL_CBOR_BOOL, &it);
  if (st == TL_OK) *v = it.value != 0;
  return st;
}

tl_status tl_cbor_expect_null(tl_cbor_reader *r) {
  tl_cbor_item it;
  return expect_head(r, TL_CBOR_NULL, &it);
}

tl_status tl_cbor_skip(tl_cbor_reader *r) {
  tl_cbor_item it;
  size_t depth;
  tl_status st;
  if (r == NULL) return TL_ERR_INVALID_ARGUMENT;
  depth = r->depth;
  /* Each read consumes at least one byte, so this ends within len reads. */
  do {
    st = tl_cbor_read(r, &it);
    if (st != TL_OK) return st;
  } while (r->depth > depth);
  return TL_OK;
}

tl_status tl_cbor_reader_finish(tl_cbor_reader *r) {
  if (r == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (r->fault.kind != TL_CBOR_FAULT_NONE) return TL_ERR_INVALID_CBOR;
  if (!r->done) {
    if (r->pos >= r->len) return set_fault(r, TL_CBOR_FAULT_TRUNCATED, r->len);
    return set_fault(r, TL_CBOR_FAULT_TRAILING, r->pos);
  }
  if (r->pos < r->len) return set_fault(r, TL_CBOR_FAULT_TRAILING, r->pos);
  return TL_OK;
}

tl_status tl_cbor_validate(const uint8_t *buf, size_t len,
                           const tl_cbor_limits *limits, tl_cbor_fault *fault) {
  tl_cbor_reader r;
  tl_status st = tl_cbor_reader_init(&r, buf, len, limits);
  if (fault != NULL) {
    fault->kind = TL_CBOR_FAULT_NONE;
    fault->offset = 0;
  }
  if (st != TL_OK) return st;
  st = tl_cbor_skip(&r);
  if (st == TL_OK) st = tl_cbor_reader_finish(&r);
  if (fault != NULL) *fault = r.fault;
  return st;
}

tl_status tl_cbor_map_find(tl_cbor_reader *r, const char *key) {
  size_t n, key_len = strlen(key);
  tl_status st = tl_cbor_expect_map(r, &n);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < n; i++) {
    tl_cbor_item k;
    st = tl_cbor_read(r, &k);
    if (st != TL_OK) return st;
    if (k.type == TL_CBOR_TEXT && k.len == key_len &&
        memcmp(k.data, key, key_len) == 0)
      return TL_OK;
    st = tl_cbor_skip(r);
    if (st != TL_OK) return st;
  }
  return TL_ERR_BOUNDS;
}
