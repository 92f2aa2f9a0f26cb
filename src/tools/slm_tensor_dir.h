/* The writer's half of the tensor directory (docs/slm.md SLM-10..12):
 * lays tensors out in the data section and encodes the directory bytes
 * that src/core/slm/tensors.h reads. */
#ifndef TL_TOOLS_SLM_TENSOR_DIR_H
#define TL_TOOLS_SLM_TENSOR_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"
#include "slm/tensors.h"

typedef struct tl_td_entry {
  const char *name; /* NUL-terminated */
  tl_qtype type;
  bool packed; /* q8/q4 rows in tl_kern_pack's layout (SLM-11) */
  uint32_t rank;
  uint64_t shape[TL_SLM_TD_MAX_RANK];
  /* Set by tl_td_layout. */
  size_t rows, n; /* SLM-11 */
  uint64_t offset, len;
  /* Set by the caller once the tensor's bytes are written. */
  uint8_t digest[32];
} tl_td_entry;

/* Checks the names (SLM-10: allowed bytes, strictly ascending) and shapes,
 * and assigns each entry its byte length and 64-aligned offset; *data_len
 * gets the data section's length. TL_ERR_INVALID_ARGUMENT or
 * TL_ERR_INTEGER_OVERFLOW with the tensor named in err. */
tl_status tl_td_layout(tl_td_entry *entries, size_t n, uint64_t *data_len,
                       char *err, size_t err_cap);

/* Bytes of the encoded directory. */
size_t tl_td_encoded_len(const tl_td_entry *entries, size_t n);

/* Encodes the directory into out (tl_td_encoded_len bytes). */
void tl_td_encode(const tl_td_entry *entries, size_t n, uint8_t *out);

#endif
