/* Deterministic CBOR (RFC 8949 §4.2.1 core deterministic encoding) for
 * receipts, node ids and .slm metadata: a writer that can only produce the
 * profile, and a strict pull reader that accepts only the profile. The
 * profile itself is docs/cbor.md (requirement ids CBOR-n).
 *
 * Profile in one breath: definite lengths only; every head (integer, length,
 * count, tag) in its shortest form; no floats; of the simple values only
 * false, true and null; text is well-formed UTF-8; map keys unique and in
 * bytewise order of their encoded bytes; tags only when the reader's
 * allowlist names them; nesting bounded by TL_CBOR_MAX_DEPTH. */
#ifndef TL_CORE_CBOR_H
#define TL_CORE_CBOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "tinylm.h"

/* The most containers (arrays, maps and tags; a tag encloses its content)
 * open at once, for the writer and for every reader (CBOR-12). */
#define TL_CBOR_MAX_DEPTH 32

/* ------------------------------------------------------------------------ */
/* Items                                                                    */

typedef enum tl_cbor_type {
  TL_CBOR_UINT = 0,   /* value: the integer */
  TL_CBOR_NEGINT = 1, /* value: n, meaning the integer -1 - n */
  TL_CBOR_BYTES = 2,  /* value = len: payload length; data: payload */
  TL_CBOR_TEXT = 3,   /* like BYTES; the payload is well-formed UTF-8 */
  TL_CBOR_ARRAY = 4,  /* value = len: number of items that follow */
  TL_CBOR_MAP = 5,    /* value = len: number of key/value pairs */
  TL_CBOR_TAG = 6,    /* value: tag number; exactly one item follows */
  TL_CBOR_BOOL = 7,   /* value: 0 or 1 */
  TL_CBOR_NULL = 8
} tl_cbor_type;

typedef struct tl_cbor_item {
  tl_cbor_type type;
  uint64_t value;
  size_t len;          /* value as a size (payload bytes, item/pair count) */
  const uint8_t *data; /* BYTES/TEXT: points into the input; else NULL */
  size_t offset;       /* offset of the item's head in the input */
} tl_cbor_item;

/* ------------------------------------------------------------------------ */
/* Writer                                                                   */

typedef struct tl_cbor_wframe {
  uint8_t kind;      /* TL_CBOR_ARRAY, TL_CBOR_MAP or TL_CBOR_TAG */
  size_t expected;   /* items this container holds (2n for a map) */
  size_t written;    /* items begun so far */
  size_t *offs;      /* maps with >= 2 pairs: start of each item (2n + 1) */
  size_t arena_mark; /* scratch `used` before offs was taken */
  size_t arena_top;  /* scratch `used` right after */
} tl_cbor_wframe;

/* Encodes into a caller buffer. Every failure is sticky: the first error is
 * returned by that call, by every later call, and by tl_cbor_writer_finish,
 * so a sequence of puts can be checked once at the end. Errors:
 *   TL_ERR_BOUNDS            the buffer is full, or nesting would pass
 *                            TL_CBOR_MAX_DEPTH
 *   TL_ERR_INVALID_UTF8      put_text with ill-formed UTF-8
 *   TL_ERR_CONFLICT          end_map found two equal keys
 *   TL_ERR_INVALID_ARGUMENT  more or fewer items than the container
 *                            declared, end_* that does not match, NULL data
 *                            with a non-zero length, a map of >= 2 pairs
 *                            without a scratch arena
 *   TL_ERR_OUT_OF_MEMORY     the scratch arena ran out (maps only)
 *   TL_ERR_INTEGER_OVERFLOW  a declared map size that cannot be indexed
 * Integer heads are always shortest; only definite lengths are emitted; no
 * floats (CBOR-2, CBOR-3, CBOR-5).
 *
 * Map order (CBOR-8): end_map sorts the map's pairs by the bytewise order
 * of each key's encoded bytes, whatever order they were put in. It uses
 * the scratch arena: begin_map(n >= 2) takes (2n + 1) size_t, end_map
 * takes 2n size_t more and, when the pairs were out of order, a copy of the
 * map body; all of it is released when the map closes. While a map is open
 * the writer owns the top of the scratch arena: allocations the caller
 * makes in between are never released by the writer, but the caller must
 * not rewind below them either. After an error the writer may leave
 * scratch memory allocated; reset or rewind the arena. */
typedef struct tl_cbor_writer {
  uint8_t *buf;
  size_t cap;
  size_t len;
  tl_status err;
  tl_arena *scratch;
  size_t depth;
  size_t top_items; /* items begun at the top level */
  tl_cbor_wframe stack[TL_CBOR_MAX_DEPTH];
} tl_cbor_writer;

/* buf may be NULL only when cap is 0; scratch may be NULL when no map with
 * two or more pairs is written. */
tl_status tl_cbor_writer_init(tl_cbor_writer *w, uint8_t *buf, size_t cap,
                              tl_arena *scratch);
tl_status tl_cbor_put_uint(tl_cbor_writer *w, uint64_t v);
tl_status tl_cbor_put_int(tl_cbor_writer *w, int64_t v);
/* The integer -1 - n, so -2^64 is put_negative(UINT64_MAX). */
tl_status tl_cbor_put_negative(tl_cbor_writer *w, uint64_t n);
tl_status tl_cbor_put_bytes(tl_cbor_writer *w, const uint8_t *data, size_t len);
/* s must be well-formed UTF-8 (U+0000 allowed); len is in bytes. */
tl_status tl_cbor_put_text(tl_cbor_writer *w, const char *s, size_t len);
tl_status tl_cbor_put_bool(tl_cbor_writer *w, bool v);
tl_status tl_cbor_put_null(tl_cbor_writer *w);
/* The next item written is the tag's content. */
tl_status tl_cbor_put_tag(tl_cbor_writer *w, uint64_t tag);
/* Exactly n items (arrays) or n key/value pairs (maps, key first) follow,
 * then the matching end call. */
tl_status tl_cbor_begin_array(tl_cbor_writer *w, size_t n);
tl_status tl_cbor_end_array(tl_cbor_writer *w);
tl_status tl_cbor_begin_map(tl_cbor_writer *w, size_t n_pairs);
tl_status tl_cbor_end_map(tl_cbor_writer *w);
/* The sticky status; then TL_ERR_INVALID_ARGUMENT unless every container is
 * closed and exactly one top-level item was written. On TL_OK *len (may be
 * NULL) is the document's length in buf. */
tl_status tl_cbor_writer_finish(const tl_cbor_writer *w, size_t *len);

/* ------------------------------------------------------------------------ */
/* Reader                                                                   */

#define TL_CBOR_FAULT_LIST(X)                           \
  X(TL_CBOR_FAULT_NONE, "none")                         \
  X(TL_CBOR_FAULT_TRUNCATED, "truncated")               \
  X(TL_CBOR_FAULT_RESERVED, "reserved_additional_info") \
  X(TL_CBOR_FAULT_INDEFINITE, "indefinite_length")      \
  X(TL_CBOR_FAULT_NON_SHORTEST, "non_shortest_head")    \
  X(TL_CBOR_FAULT_SIMPLE, "float_or_simple")            \
  X(TL_CBOR_FAULT_TAG, "disallowed_tag")                \
  X(TL_CBOR_FAULT_KEY_ORDER, "key_order")               \
  X(TL_CBOR_FAULT_DUPLICATE_KEY, "duplicate_key")       \
  X(TL_CBOR_FAULT_UTF8, "invalid_utf8")                 \
  X(TL_CBOR_FAULT_DEPTH, "depth_exceeded")              \
  X(TL_CBOR_FAULT_LENGTH, "length_exceeds_input")       \
  X(TL_CBOR_FAULT_TRAILING, "trailing_bytes")           \
  X(TL_CBOR_FAULT_INT_RANGE, "integer_out_of_range")    \
  X(TL_CBOR_FAULT_TYPE, "unexpected_type")

/* Why a document was rejected (docs/cbor.md §Faults gives each kind's
 * offset rule). */
typedef enum tl_cbor_fault_kind {
#define TL_CBOR_FAULT_ENUM_(name, str) name,
  TL_CBOR_FAULT_LIST(TL_CBOR_FAULT_ENUM_)
#undef TL_CBOR_FAULT_ENUM_
      TL_CBOR_FAULT_COUNT_
} tl_cbor_fault_kind;

typedef struct tl_cbor_fault {
  tl_cbor_fault_kind kind;
  size_t offset; /* byte offset into the document */
} tl_cbor_fault;

/* "key_order" for TL_CBOR_FAULT_KEY_ORDER; "unknown" outside the enum. */
const char *tl_cbor_fault_name(tl_cbor_fault_kind kind);

#define TL_CBOR_MAX_ALLOWED_TAGS 16

typedef struct tl_cbor_limits {
  /* Containers open at once, 0..TL_CBOR_MAX_DEPTH. */
  uint32_t max_depth;
  /* Tag numbers the document may use (CBOR-9); none by default. */
  size_t n_allowed_tags; /* <= TL_CBOR_MAX_ALLOWED_TAGS */
  uint64_t allowed_tags[TL_CBOR_MAX_ALLOWED_TAGS];
} tl_cbor_limits;

/* max_depth TL_CBOR_MAX_DEPTH, no tags. */
tl_cbor_limits tl_cbor_limits_default(void);

typedef struct tl_cbor_rframe {
  uint8_t kind;          /* TL_CBOR_ARRAY, TL_CBOR_MAP or TL_CBOR_TAG */
  uint64_t remaining;    /* items still to come (2n for a map) */
  size_t key_start;      /* maps: offset of the key being read */
  size_t prev_key_start; /* maps: the previous key's encoded bytes */
  size_t prev_key_len;
  bool has_prev_key;
} tl_cbor_rframe;

/* A strict pull reader over one document (exactly one top-level item). It
 * never allocates. Items come in document order (a container's head, then
 * its items); a container closes by itself after its last item. Every
 * profile check happens before the item is returned, and before any
 * length is used for pointer arithmetic. The first fault is sticky: that
 * call and every later one return TL_ERR_INVALID_CBOR, and `fault` says
 * what and where. */
typedef struct tl_cbor_reader {
  const uint8_t *buf;
  size_t len;
  size_t pos;
  tl_cbor_limits limits;
  bool done;     /* the top-level item is complete */
  uint64_t owed; /* items announced and not yet started */
  size_t depth;
  tl_cbor_fault fault;
  tl_cbor_rframe stack[TL_CBOR_MAX_DEPTH];
} tl_cbor_reader;

/* limits NULL means tl_cbor_limits_default(). TL_ERR_INVALID_ARGUMENT for
 * buf NULL with len > 0 or limits out of range. */
tl_status tl_cbor_reader_init(tl_cbor_reader *r, const uint8_t *buf, size_t len,
                              const tl_cbor_limits *limits);
/* The next item. TL_ERR_INVALID_CBOR on a fault; TL_ERR_BOUNDS (not a
 * fault) when the document is complete and no bytes follow. */
tl_status tl_cbor_read(tl_cbor_reader *r, tl_cbor_item *item);
/* The next item's head without consuming it: the head checks only (the
 * depth, key order and uniqueness checks happen when it is read). A fault
 * found here is recorded like one found by tl_cbor_read. */
tl_status tl_cbor_peek(tl_cbor_reader *r, tl_cbor_item *item);
/* Open containers (arrays, maps, tags) around the next item. */
size_t tl_cbor_reader_depth(const tl_cbor_reader *r);

/* Schema helpers: read one item and require its type, else the fault
 * TL_CBOR_FAULT_TYPE at the item's offset. Integers that do not fit the
 * requested type (a negative integer for a uint, anything outside int64
 * for an int) are TL_CBOR_FAULT_INT_RANGE. */
tl_status tl_cbor_expect_uint(tl_cbor_reader *r, uint64_t *v);
tl_status tl_cbor_expect_int(tl_cbor_reader *r, int64_t *v);
tl_status tl_cbor_expect_bytes(tl_cbor_reader *r, const uint8_t **data,
                               size_t *len);
tl_status tl_cbor_expect_text(tl_cbor_reader *r, const char **s, size_t *len);
tl_status tl_cbor_expect_array(tl_cbor_reader *r, size_t *n);
tl_status tl_cbor_expect_map(tl_cbor_reader *r, size_t *n_pairs);
tl_status tl_cbor_expect_tag(tl_cbor_reader *r, uint64_t *tag);
tl_status tl_cbor_expect_bool(tl_cbor_reader *r, bool *v);
tl_status tl_cbor_expect_null(tl_cbor_reader *r);
/* Does the text s[0..len) (a key or value just read) equal the C string
 * z? */
static inline bool tl_cbor_text_is(const char *s, size_t len, const char *z) {
  size_t n = strlen(z);
  return len == n && memcmp(s, z, n) == 0;
}

/* Reads a map head and the pairs before key's, leaving r at key's value
 * (the rest of the map stays unread). TL_ERR_BOUNDS when the map has no
 * such text key (r is then past the whole map), TL_ERR_INVALID_CBOR when
 * the next item is not a map or is malformed. */
tl_status tl_cbor_map_find(tl_cbor_reader *r, const char *key);

/* Reads one whole item, containers and tag content included. */
tl_status tl_cbor_skip(tl_cbor_reader *r);
/* TL_OK when the one top-level item has been read completely and nothing
 * follows; else TL_ERR_INVALID_CBOR with TL_CBOR_FAULT_TRUNCATED (the input
 * ended inside the document) or TL_CBOR_FAULT_TRAILING (bytes or items
 * left unread). */
tl_status tl_cbor_reader_finish(tl_cbor_reader *r);

/* Reads the next whole item from r and writes it to w (the reader checks
 * it, the writer re-encodes it): the way to embed a checked sub-document,
 * and, since both sides hold the profile, an identity on valid input.
 * Returns the reader's status (TL_ERR_INVALID_CBOR, see r->fault) or the
 * writer's (sticky in w). */
tl_status tl_cbor_copy_item(tl_cbor_reader *r, tl_cbor_writer *w);

/* The one encoded item p[0..len) written to w (tl_cbor_copy_item from a
 * reader over it): embedding a sub-document encoded earlier. */
tl_status tl_cbor_put_item(tl_cbor_writer *w, const uint8_t *p, size_t len);

/* Walks a whole document under limits (NULL: defaults). TL_OK, or
 * TL_ERR_INVALID_CBOR with *fault set (fault may be NULL; on TL_OK it is
 * {TL_CBOR_FAULT_NONE, 0}), or TL_ERR_INVALID_ARGUMENT. */
tl_status tl_cbor_validate(const uint8_t *buf, size_t len,
                           const tl_cbor_limits *limits, tl_cbor_fault *fault);

#endif
