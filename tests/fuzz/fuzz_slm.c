/* libFuzzer target: the .slm container reader on arbitrary bytes. Any
 * input must give a typed status without reading outside the buffer; an
 * accepted file's sections must lie inside it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "slm/slm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Opens data as it is, and a copy whose header digest has been made right,
 * so the fuzzer also reaches the section-table checks behind it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_slm slm;
  size_t at = 0;
  tl_slm_verify modes[2] = {TL_SLM_VERIFY_LAZY, TL_SLM_VERIFY_EAGER};
  uint8_t *fixed = NULL;
  if (size >= TL_SLM_HEADER_LEN) {
    uint32_t n = tl_load_le32(data + 24);
    size_t table_end = TL_SLM_HEADER_LEN + (size_t)(n % 32) * TL_SLM_ENTRY_LEN;
    if (table_end <= size && (fixed = malloc(size)) != NULL) {
      memcpy(fixed, data, size);
      tl_slm_header_digest(fixed, table_end, fixed + 32);
    }
  }
  for (int m = 0; m < 4; m++) {
    const uint8_t *file = m < 2 ? data : fixed;
    if (file == NULL) break;
    if (tl_slm_open(&slm, file, size, modes[m % 2], &at) != TL_OK) continue;
    for (size_t i = 0; i < slm.n_sections; i++) {
      const tl_slm_section *s = &slm.sections[i];
      if (s->data < file || s->len > size ||
          (size_t)(s->data - file) > size - s->len)
        __builtin_trap();
      (void)tl_slm_verify_section(s);
    }
  }
  free(fixed);
  return 0;
}
