/* Tensor element encodings (docs/quant.md): f32 -> f16 / bf16 (RNE) and
 * back, and the q8 / q4 block layouts (32 elements per block along the row,
 * f32 scale, symmetric codes) with their packers and unpackers.
 *
 * Tensors are `rows` rows of `n` elements. Encoders check every input
 * before writing a byte; on TL_ERR_NUMERICAL_FAILURE *bad_index (when not
 * NULL) gets the flattened index of the offending element. */
#ifndef TL_CORE_QUANT_H
#define TL_CORE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_QUANT_BLOCK 32
#define TL_QUANT_Q8_BLOCK_BYTES 36 /* f32 scale + 32 int8 codes */
#define TL_QUANT_Q4_BLOCK_BYTES 20 /* f32 scale + 16 bytes of nibbles */

typedef enum tl_qtype {
  TL_QTYPE_F32,
  TL_QTYPE_F16,
  TL_QTYPE_BF16,
  TL_QTYPE_Q8,
  TL_QTYPE_Q4
} tl_qtype;

/* Element conversions, total functions: overflow gives +-Inf,
 * a NaN gives a quiet NaN of the same sign. */
uint16_t tl_f32_to_f16(float x);
float tl_f16_to_f32(uint16_t h);
uint16_t tl_f32_to_bf16(float x);
float tl_bf16_to_f32(uint16_t h);

/* Bytes of one row of n elements / of rows x n (TL_ERR_INTEGER_OVERFLOW,
 * TL_ERR_INVALID_ARGUMENT for an unknown type). */
tl_status tl_quant_row_bytes(tl_qtype type, size_t n, size_t *out);
tl_status tl_quant_tensor_bytes(tl_qtype type, size_t rows, size_t n,
                                size_t *out);

/* Encodes rows x n f32 values into dst (dst_len must be at least
 * tl_quant_tensor_bytes, else TL_ERR_BOUNDS). */
tl_status tl_quant_pack(tl_qtype type, const float *src, size_t rows, size_t n,
                        uint8_t *dst, size_t dst_len, size_t *bad_index);
tl_status tl_quant_pack_q8(const float *src, size_t rows, size_t n,
                           uint8_t *dst, size_t dst_len, size_t *bad_index);
tl_status tl_quant_pack_q4(const float *src, size_t rows, size_t n,
                           uint8_t *dst, size_t dst_len, size_t *bad_index);

/* Decodes rows x n elements from src (src_len at least the tensor bytes,
 * else TL_ERR_BOUNDS) into dst. Stored bytes are validated:
 * TL_ERR_INVALID_MODEL for a negative or non-finite scale, a code outside
 * the domain, non-zero padding or codes under a zero scale, or a product
 * that overflows. On error dst's contents are unspecified. */
tl_status tl_quant_unpack(tl_qtype type, const uint8_t *src, size_t src_len,
                          size_t rows, size_t n, float *dst);
tl_status tl_quant_unpack_q8(const uint8_t *src, size_t src_len, size_t rows,
                             size_t n, float *dst);
tl_status tl_quant_unpack_q4(const uint8_t *src, size_t src_len, size_t rows,
                             size_t n, float *dst);

#endif
