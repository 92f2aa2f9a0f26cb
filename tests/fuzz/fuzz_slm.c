/* libFuzzer target: the .slm container reader and the tensor directory
 * reader on arbitrary bytes. Any input must give a typed status without
 * reading outside the buffer; an accepted file's sections must lie inside
 * it; an accepted tensor directory's entries must decode, lie inside the
 * tensor data section, be found by name, and (after an eager open) match
 * their digests. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "hash/blake3.h"
#include "slm/slm.h"
#include "slm/tensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                   \
  do {                                \
    if (!(cond)) __builtin_trap();    \
  } while (0)

/* Recomputes the digest of every section the table places inside the
 * file, so that a mutated section still passes the eager digest checks
 * and the fuzzer reaches the tensor directory behind them. */
static void reseal_sections(uint8_t *file, size_t size, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t *e = file + TL_SLM_HEADER_LEN + i * TL_SLM_ENTRY_LEN;
    uint64_t off = tl_load_le64(e + 8), len = tl_load_le64(e + 16);
    if (off <= size && len <= size - off)
      (void)tl_blake3(file + off, (size_t)len, e + 24);
  }
}

static void check_tensors(const tl_slm *slm, tl_slm_verify mode) {
  tl_slm_tensors ts;
  tl_slm_tensor t, found;
  const tl_slm_section *data_sec;
  if (tl_slm_tensors_open(&ts, slm, mode, NULL) != TL_OK) return;
  CHECK(tl_slm_find(slm, TL_SLM_TENSOR_DATA, &data_sec) == TL_OK);
  CHECK(ts.n >= 1 && ts.n <= TL_SLM_TD_MAX_TENSORS);
  for (size_t i = 0; i < ts.n; i++) {
    CHECK(tl_slm_tensor_at(&ts, i, &t) == TL_OK);
    CHECK(t.name_len >= 1 && t.name_len <= TL_SLM_TD_MAX_NAME);
    CHECK(t.rank >= 1 && t.rank <= TL_SLM_TD_MAX_RANK);
    CHECK(t.data >= data_sec->data && t.len <= data_sec->len &&
          (size_t)(t.data - data_sec->data) <= data_sec->len - t.len);
    CHECK(tl_slm_tensor_find(&ts, t.name, t.name_len, &found) == TL_OK);
    CHECK(found.data == t.data && found.len == t.len &&
          found.name_len == t.name_len &&
          memcmp(found.name, t.name, t.name_len) == 0);
    tl_status st = tl_slm_tensor_verify(&t);
    /* An eager open has checked every tensor digest already. */
    CHECK(st == TL_OK || (mode == TL_SLM_VERIFY_LAZY &&
                          st == TL_ERR_HASH_MISMATCH));
  }
  CHECK(tl_slm_tensor_at(&ts, ts.n, &t) != TL_OK);
  /* '~' is outside the name alphabet [A-Za-z0-9._-]: never present. */
  CHECK(tl_slm_tensor_find(&ts, "~missing", 8, &found) == TL_ERR_BOUNDS);
  CHECK(tl_slm_tensor_find(&ts, "", 0, &found) != TL_OK);
}

/* Opens data as it is, a copy whose header digest has been made right (so
 * the fuzzer also reaches the section-table checks behind it), and a copy
 * whose section digests have been made right as well (so it reaches the
 * tensor directory in eager mode), each lazily and eagerly. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_slm slm;
  size_t at = 0;
  tl_slm_verify modes[2] = {TL_SLM_VERIFY_LAZY, TL_SLM_VERIFY_EAGER};
  uint8_t *fixed = NULL, *sealed = NULL;
  if (size >= TL_SLM_HEADER_LEN) {
    uint32_t n = tl_load_le32(data + 24);
    size_t table_end = TL_SLM_HEADER_LEN + (size_t)(n % 32) * TL_SLM_ENTRY_LEN;
    if (table_end <= size && (fixed = malloc(size)) != NULL) {
      memcpy(fixed, data, size);
      tl_slm_header_digest(fixed, table_end, fixed + 32);
      if ((sealed = malloc(size)) != NULL) {
        memcpy(sealed, data, size);
        reseal_sections(sealed, size, n % 32);
        tl_slm_header_digest(sealed, table_end, sealed + 32);
      }
    }
  }
  for (int m = 0; m < 6; m++) {
    const uint8_t *file = m < 2 ? data : m < 4 ? fixed : sealed;
    if (file == NULL) continue;
    if (tl_slm_open(&slm, file, size, modes[m % 2], &at) != TL_OK) continue;
    for (size_t i = 0; i < slm.n_sections; i++) {
      const tl_slm_section *s = &slm.sections[i];
      if (s->data < file || s->len > size ||
          (size_t)(s->data - file) > size - s->len)
        __builtin_trap();
      (void)tl_slm_verify_section(s);
    }
    check_tensors(&slm, TL_SLM_VERIFY_LAZY);
    check_tensors(&slm, TL_SLM_VERIFY_EAGER);
  }
  free(fixed);
  free(sealed);
  return 0;
}
