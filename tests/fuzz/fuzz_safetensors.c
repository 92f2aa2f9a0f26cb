/* libFuzzer target for src/core/safetensors (docs/safetensors.md): the
 * input is one safetensors file in memory. Refusals carry a typed status
 * from the documented set, a non-empty message, and leave the arena as it
 * was. An accepted file's tensors lie inside the data region, tile it
 * exactly in some order, and have len == n_elements * dtype size == the
 * product of their shape. Allocation failures give TL_ERR_OUT_OF_MEMORY or
 * the same result. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "safetensors/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static void check_accepted(const uint8_t *data, size_t size,
                           const tl_st_file *f) {
  uint64_t covered = 0;
  CHECK(f->data_offset == 8 + f->header_len && f->data_offset <= size);
  for (size_t i = 0; i < f->n_tensors; i++) {
    const tl_st_tensor *t = &f->tensors[i];
    uint64_t count = 1;
    for (size_t d = 0; d < t->rank; d++) count *= t->shape[d];
    CHECK(count == t->n_elements);
    CHECK((uint64_t)t->len == t->n_elements * tl_st_dtype_size(t->dtype));
    CHECK(t->file_offset >= f->data_offset && t->file_offset <= size &&
          t->len <= size - t->file_offset);
    CHECK(t->data == data + t->file_offset);
    CHECK(t->name_len > 0);
    covered += t->len;
  }
  /* Non-overlapping ranges inside the region that sum to its size tile
   * it exactly. */
  CHECK(covered == size - f->data_offset);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t cap = 64 * size + 65536;
  uint8_t *mem = malloc(cap);
  CHECK(mem != NULL);
  tl_arena a;
  tl_st_file f;
  tl_st_error e;
  CHECK(tl_arena_init(&a, mem, cap) == TL_OK);
  tl_status st = tl_st_parse(data, size, "fuzz", 0, &a, &f, &e);
  if (st == TL_OK) {
    check_accepted(data, size, &f);
  } else {
    CHECK(st == TL_ERR_INVALID_MODEL || st == TL_ERR_INTEGER_OVERFLOW ||
          st == TL_ERR_UNSUPPORTED_QUANTIZATION);
    CHECK(a.used == 0 && f.tensors == NULL && f.n_tensors == 0);
    CHECK(strlen(e.message) > 6 && memcmp(e.message, "fuzz: ", 6) == 0);
  }
  size_t used = a.used;
  for (size_t k = 1; k <= 8; k++) {
    tl_arena_reset(&a);
    a.fail_countdown = k;
    tl_status s2 = tl_st_parse(data, size, "fuzz", 0, &a, &f, &e);
    if (s2 == TL_ERR_OUT_OF_MEMORY) {
      CHECK(a.used == 0);
      continue;
    }
    CHECK(s2 == st);
    if (s2 == TL_OK) CHECK(a.used == used);
    break;
  }
  free(mem);
  return 0;
}
