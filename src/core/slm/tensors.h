/* The tensor directory and tensor data sections of a .slm artifact
 * (docs/slm.md, SLM-10..SLM-14). The directory is validated as a whole at
 * open; entries are decoded on demand from its bytes, so the reader keeps
 * no per-tensor state and needs no allocation. */
#ifndef TL_CORE_SLM_TENSORS_H
#define TL_CORE_SLM_TENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "slm/slm.h"
#include "tinylm.h"

#define TL_SLM_TD_MAGIC "TLTD"
#define TL_SLM_TD_VERSION 1
#define TL_SLM_TD_HEADER_LEN 32
#define TL_SLM_TD_ENTRY_LEN 96
#define TL_SLM_TD_MAX_TENSORS 65536
#define TL_SLM_TD_MAX_NAME 255
#define TL_SLM_TD_MAX_RANK 4

/* Directory dtype codes (SLM-11). */
typedef enum tl_slm_dtype {
  TL_SLM_DTYPE_F32 = 1,
  TL_SLM_DTYPE_F16 = 2,
  TL_SLM_DTYPE_BF16 = 3,
  TL_SLM_DTYPE_Q8 = 4,
  TL_SLM_DTYPE_Q4 = 5,
  /* q8 and q4 in the fast lane's packed layout (tl_kern_pack): the same
   * values and byte count, each group's bytes permuted (SLM-11) */
  TL_SLM_DTYPE_Q8P = 6,
  TL_SLM_DTYPE_Q4P = 7
} tl_slm_dtype;

/* "f32", "f16", "bf16", "q8", "q4", "q8p", "q4p"; NULL for another code. */
const char *tl_slm_dtype_name(uint32_t code);
/* The element encoding of a directory code (false for an unknown code);
 * *packed (when not NULL): whether its rows are in the packed layout. */
bool tl_slm_dtype_qtype(uint32_t code, tl_qtype *out, bool *packed);
/* The code of type in the stored or (packed: q8/q4 only) packed layout. */
uint32_t tl_slm_dtype_code(tl_qtype type, bool packed);

typedef struct tl_slm_tensor {
  const char *name; /* not NUL-terminated; [A-Za-z0-9._-] */
  size_t name_len;
  tl_qtype type;
  uint32_t rank;
  uint64_t shape[TL_SLM_TD_MAX_RANK]; /* dims past rank are 0 */
  size_t rows, n;                     /* SLM-11: rows x n elements */
  bool packed;                        /* q8/q4 rows in tl_kern_pack's layout */
  const uint8_t *data;                /* 64-byte aligned in the file */
  size_t len;
  const uint8_t *digest; /* BLAKE3-256 of data[0..len) */
} tl_slm_tensor;

typedef struct tl_slm_tensors {
  const uint8_t *dir; /* the directory section */
  size_t n;
  const uint8_t *names;
  const uint8_t *data; /* the tensor data section */
  size_t data_len;
} tl_slm_tensors;

/* Validates the directory and the data section of an opened artifact
 * (SLM-10..SLM-12) and, when eager, every tensor digest. Section digests
 * are the caller's (tl_slm_open). Failures: TL_ERR_INVALID_MODEL (a
 * section missing or a rule broken), TL_ERR_UNSUPPORTED_ABI (another
 * directory version), TL_ERR_INTEGER_OVERFLOW (a size that does not fit),
 * TL_ERR_HASH_MISMATCH (a tensor digest). *fail_offset, when not NULL,
 * gets the file offset of the failing field (or tensor). */
tl_status tl_slm_tensors_open(tl_slm_tensors *t, const tl_slm *slm,
                              tl_slm_verify verify, size_t *fail_offset);

/* Entry i (i < t->n) of a validated directory. */
tl_status tl_slm_tensor_at(const tl_slm_tensors *t, size_t i,
                           tl_slm_tensor *out);

/* The entry named name[0..len) (binary search), or TL_ERR_BOUNDS when the
 * directory has no such tensor. */
tl_status tl_slm_tensor_find(const tl_slm_tensors *t, const char *name,
                             size_t len, tl_slm_tensor *out);

/* TL_ERR_HASH_MISMATCH when the tensor's bytes do not match its digest. */
tl_status tl_slm_tensor_verify(const tl_slm_tensor *tensor);

#endif
