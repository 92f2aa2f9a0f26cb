/* Encoding text through a loaded tokenizer on the native host: buffers
 * that grow as needed and are reused from one input to the next. */
#ifndef TL_NATIVE_ENCODER_H
#define TL_NATIVE_ENCODER_H

#include "tok/tokenizer.h"

typedef struct tl_encoder {
  const tl_tokenizer *tok;
  void *scratch_mem;
  size_t scratch_cap;
  uint32_t *ids;      /* results of the last run */
  tl_tok_span *spans; /* byte offsets of the last run */
  size_t ids_cap;
} tl_encoder;

/* Encodes text into e->ids / e->spans; *n gets the token count. Invalid
 * UTF-8: TL_ERR_INVALID_UTF8 with *err_offset. */
tl_status tl_encoder_run(tl_encoder *e, const uint8_t *text, size_t len,
                         size_t *n, size_t *err_offset);
/* The same, with the special tokens whose text starts in plain[0..n_plain)
 * encoded as text (tl_tok_encode_plain). */
tl_status tl_encoder_run_plain(tl_encoder *e, const uint8_t *text, size_t len,
                               const tl_tok_span *plain, size_t n_plain, size_t *n,
                               size_t *err_offset);
void tl_encoder_free(tl_encoder *e);

/* Decodes ids[0..n) in mode into a malloc'd buffer (*out, *len bytes;
 * freed by the caller also on failure). An id outside the vocabulary:
 * TL_ERR_INVALID_ARGUMENT with *bad its position. */
tl_status tl_decoder_run(const tl_tokenizer *tok, const uint32_t *ids,
                         size_t n, tl_tok_decode_mode mode, uint8_t **out,
                         size_t *len, size_t *bad);

#endif
