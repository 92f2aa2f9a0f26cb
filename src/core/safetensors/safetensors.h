/* safetensors intake (docs/safetensors.md): the defensive parser of one
 * safetensors file held in memory. Freestanding: bytes in, arena out; the
 * native side (src/tools/st_checkpoint.h) owns files, shards and hashing.
 *
 * Layout of a file: u64 little-endian N, N bytes of header JSON, then the
 * data region. The header maps tensor names to {"dtype", "shape",
 * "data_offsets"} (offsets relative to the data region) plus an optional
 * "__metadata__" string->string map. Everything is validated before a
 * tensor is exposed: header bounds, JSON, dtype allowlist, shapes with
 * overflow checks, byte counts, and byte ranges that tile the data region
 * exactly (no overlap, no gap, no trailing bytes).
 *
 * Failures (each with a message naming the file, the tensor and the field):
 *   TL_ERR_INVALID_MODEL            malformed file or header (ST-1..ST-12)
 *   TL_ERR_INTEGER_OVERFLOW         shape product or byte count overflows
 *                                   64 bits (ST-7)
 *   TL_ERR_UNSUPPORTED_QUANTIZATION a dtype safetensors defines but tinylm
 *                                   does not accept, e.g. I8, F64 (ST-5)
 *   TL_ERR_OUT_OF_MEMORY            the arena is too small (nothing kept)
 *   TL_ERR_INVALID_ARGUMENT         NULL arguments */
#ifndef TL_CORE_SAFETENSORS_H
#define TL_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "tinylm.h"

/* ST-2: the largest header accepted (the reference implementation's
 * MAX_HEADER_SIZE). */
#define TL_ST_MAX_HEADER_LEN 100000000u

typedef enum tl_st_dtype {
  TL_ST_F32 = 1,
  TL_ST_F16 = 2,
  TL_ST_BF16 = 3
} tl_st_dtype;

/* "F32", "F16", "BF16". */
const char *tl_st_dtype_name(tl_st_dtype dtype);
/* 4, 2, 2. */
size_t tl_st_dtype_size(tl_st_dtype dtype);

typedef struct tl_st_tensor {
  const char *name; /* UTF-8, non-empty, no U+0000 (arena; not NUL-ended) */
  size_t name_len;
  tl_st_dtype dtype;
  size_t rank;           /* 0 for a scalar */
  const uint64_t *shape; /* rank entries (arena) */
  uint64_t n_elements;   /* product of shape; 1 for a scalar */
  const uint8_t *data;   /* inside the parsed buffer; no alignment promise */
  size_t len;            /* n_elements * dtype size */
  size_t file_offset;    /* of data, from the start of the file */
  size_t shard;          /* the caller's shard index, copied through */
} tl_st_tensor;

typedef struct tl_st_meta {
  const char *key, *value; /* UTF-8 (arena; may contain U+0000) */
  size_t key_len, value_len;
} tl_st_meta;

typedef struct tl_st_file {
  tl_st_tensor *tensors; /* in header order */
  size_t n_tensors;
  tl_st_meta *metadata; /* "__metadata__" in header order */
  size_t n_metadata;
  size_t header_len;  /* N */
  size_t data_offset; /* 8 + N */
} tl_st_file;

/* Why parsing stopped: "<file>: tensor '<name>': field '<field>': <reason>"
 * (tensor and field omitted where they do not apply; long or non-printable
 * names are truncated and escaped). Always NUL-terminated. */
typedef struct tl_st_error {
  char message[512];
} tl_st_error;

/* Parses data[0..len) as one safetensors file. label names the file in
 * messages (may be NULL). shard is copied into every tensor. On success
 * *out describes the tensors, whose data point into data; strings and
 * arrays live in arena. On failure *out is zeroed and the arena is
 * rewound to where it was. */
tl_status tl_st_parse(const uint8_t *data, size_t len, const char *label,
                      size_t shard, tl_arena *arena, tl_st_file *out,
                      tl_st_error *err);

#endif
