/* The native model open (model.c) against a file that changes after it:
 * the bytes outside the tensor data are the process's own, a truncated
 * page of the tensor data reads as zeros instead of raising SIGBUS, and
 * the model then counts as changed. Runs from the repository root. */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "tl_test.h"

#define TINY "tests/golden/slm/tiny-f32.slm"

static bool copy_tiny(const char *to) {
  FILE *in = fopen(TINY, "rb"), *out = fopen(to, "wb");
  char buf[4096];
  size_t n;
  bool ok = in != NULL && out != NULL;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (in) fclose(in);
  if (out && fclose(out) != 0) ok = false;
  return ok;
}

static void truncated_file_reads_as_changed(tl_test_ctx *t) {
  char path[] = "/tmp/tl_model_test_XXXXXX";
  tl_native_model m;
  const tl_slm_section *data;
  uint8_t *head, sum = 0;
  char err[512];
  int fd = mkstemp(path);
  if (!TL_EXPECT(t, fd >= 0)) return;
  close(fd);
  if (!TL_EXPECT(t, copy_tiny(path))) goto out;
  if (!TL_EXPECT_OK(t, tl_native_model_open(path, &m, err, sizeof err))) goto out;
  TL_EXPECT(t, !tl_native_model_changed(&m));
  TL_EXPECT_OK(t, tl_slm_find(&m.slm, TL_SLM_TENSOR_DATA, &data));
  head = malloc(64);
  if (head != NULL) memcpy(head, m.view.data, 64);
  TL_EXPECT(t, truncate(path, 0) == 0);
  /* the header is the process's own: unchanged */
  TL_EXPECT(t, head != NULL && memcmp(head, m.view.data, 64) == 0);
  /* a whole page of the tensor data (past the new end): zeros, no SIGBUS */
  {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t p = ((uintptr_t)data->data + page - 1) & ~(page - 1);
    if (TL_EXPECT(t, p + page <= (uintptr_t)(data->data + data->len))) {
      for (uintptr_t i = 0; i < page; i++) sum |= *(volatile const uint8_t *)(p + i);
      TL_EXPECT_EQ_U64(t, sum, 0);
    }
  }
  TL_EXPECT(t, tl_native_model_changed(&m));
  free(head);
  tl_native_model_close(&m);
out:
  unlink(path);
}

static const tl_test_case cases[] = {
    TL_CASE(truncated_file_reads_as_changed),
};
TL_SUITE(model, cases);
