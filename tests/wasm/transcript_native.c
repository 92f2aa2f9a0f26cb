/* Native side of the identity check: writes the transcript to stdout and
 * the record count to stderr. */
#include <stdio.h>
#include <stdlib.h>

#include "transcript.h"

int main(void) {
  size_t cap = 1u << 20, records = 0, len;
  uint8_t *out = malloc(cap), *scratch = malloc(TL_TRANSCRIPT_SCRATCH);
  if (out == NULL || scratch == NULL) return 1;
  len = tl_transcript(out, cap, scratch, &records);
  if (len == 0) {
    fprintf(stderr, "transcript failed\n");
    return 1;
  }
  fwrite(out, 1, len, stdout);
  fprintf(stderr, "%zu\n", records);
  free(out);
  free(scratch);
  return 0;
}
