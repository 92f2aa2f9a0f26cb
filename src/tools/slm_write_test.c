/* The .slm writer and the core reader together: round trip, determinism,
 * and that every single-byte corruption of a file is refused. */
#define _POSIX_C_SOURCE 200809L
#include "slm_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "hash/sha256.h"
#include "tl_test.h"

static const uint8_t meta[] = {0xa1, 0x61, 0x61, 0x01}; /* {"a": 1} */
static const uint8_t payload[] = "tokenizer bytes, 33 of them....";

static bool write_sample(tl_test_ctx *t, const char *path, uint8_t id[32]) {
  tl_slm_part parts[2] = {
      {TL_SLM_METADATA, TL_SLM_SECTION_REQUIRED, meta, sizeof meta},
      {TL_SLM_TOKENIZER, TL_SLM_SECTION_REQUIRED, payload, sizeof payload}};
  char err[256];
  return TL_EXPECT_OK(t, tl_slm_write(path, parts, 2, id, err, sizeof err));
}

static void round_trip_exposes_the_sections(tl_test_ctx *t) {
  char path[] = "/tmp/tl_slm_test_XXXXXX";
  int fd = mkstemp(path);
  uint8_t id[32], file_id[32];
  tl_file_view v;
  tl_slm slm;
  const tl_slm_section *s;
  char err[256];
  close(fd);
  unlink(path); /* a new name: the writer replaces no file it was not told to */
  if (!write_sample(t, path, id)) return;
  if (!TL_EXPECT_OK(t, tl_file_open_view(path, &v, err, sizeof err))) return;
  TL_EXPECT_OK(t, tl_sha256(v.data, v.len, file_id));
  TL_EXPECT_MEM(t, id, file_id, 32); /* artifact id = SHA-256 of the file */
  TL_EXPECT_EQ_U64(t, v.len % 64, (64 + 2 * 64 + 64 + sizeof payload) % 64);
  TL_EXPECT_OK(t, tl_slm_open(&slm, v.data, v.len, TL_SLM_VERIFY_EAGER, NULL));
  if (!TL_EXPECT_OK(t, tl_slm_find(&slm, TL_SLM_TOKENIZER, &s))) return;
  TL_EXPECT_EQ_U64(t, s->len, sizeof payload);
  TL_EXPECT_MEM(t, s->data, payload, sizeof payload);
  TL_EXPECT_EQ_U64(t, (uintptr_t)(s->data - v.data) % 64, 0);
  TL_EXPECT_STATUS(t, tl_slm_find(&slm, TL_SLM_TENSOR_DIR, &s),
                   TL_ERR_INVALID_MODEL);
  tl_file_close_view(&v);
  unlink(path);
}

static void writing_twice_gives_identical_bytes(tl_test_ctx *t) {
  char a[] = "/tmp/tl_slm_a_XXXXXX", b[] = "/tmp/tl_slm_b_XXXXXX";
  uint8_t ida[32], idb[32];
  close(mkstemp(a));
  unlink(a); /* a fresh name for the writer */
  close(mkstemp(b));
  unlink(b); /* a fresh name for the writer */
  if (write_sample(t, a, ida) && write_sample(t, b, idb))
    TL_EXPECT_MEM(t, ida, idb, 32);
  unlink(a);
  unlink(b);
}

/* Every byte of the file is covered by a check: header fields, reserved
 * zeros, the table, zero padding, and section digests. */
static void every_single_byte_flip_is_refused(tl_test_ctx *t) {
  char path[] = "/tmp/tl_slm_flip_XXXXXX";
  uint8_t id[32], *copy;
  tl_file_view v;
  char err[256];
  size_t undetected = 0;
  close(mkstemp(path));
  unlink(path); /* a fresh name for the writer */
  if (!write_sample(t, path, id)) return;
  if (!TL_EXPECT_OK(t, tl_file_open_view(path, &v, err, sizeof err))) return;
  copy = malloc(v.len);
  for (size_t at = 0; copy != NULL && at < v.len; at++) {
    tl_slm slm;
    memcpy(copy, v.data, v.len);
    copy[at] ^= 0x01;
    if (tl_slm_open(&slm, copy, v.len, TL_SLM_VERIFY_EAGER, NULL) == TL_OK) {
      if (undetected++ == 0) {
        tl_test_print(t, "  undetected flip at byte ");
        tl_test_print_u64(t, at);
        tl_test_print(t, "\n");
      }
    }
  }
  TL_EXPECT_EQ_U64(t, undetected, 0);
  /* Lazy open skips digests: a flip inside a section is then found by
   * tl_slm_verify_section. */
  if (copy != NULL) {
    tl_slm slm;
    const tl_slm_section *s;
    memcpy(copy, v.data, v.len);
    copy[v.len - 1] ^= 0x80;
    TL_EXPECT_OK(t, tl_slm_open(&slm, copy, v.len, TL_SLM_VERIFY_LAZY, NULL));
    if (TL_EXPECT_OK(t, tl_slm_find(&slm, TL_SLM_TOKENIZER, &s)))
      TL_EXPECT_STATUS(t, tl_slm_verify_section(s), TL_ERR_HASH_MISMATCH);
  }
  free(copy);
  tl_file_close_view(&v);
  unlink(path);
}

static void truncation_at_every_length_is_refused(tl_test_ctx *t) {
  char path[] = "/tmp/tl_slm_trunc_XXXXXX";
  uint8_t id[32];
  tl_file_view v;
  char err[256];
  close(mkstemp(path));
  unlink(path); /* a fresh name for the writer */
  if (!write_sample(t, path, id)) return;
  if (!TL_EXPECT_OK(t, tl_file_open_view(path, &v, err, sizeof err))) return;
  for (size_t len = 0; len < v.len; len++) {
    tl_slm slm;
    uint64_t declared = 0;
    if (!TL_EXPECT_STATUS(
            t, tl_slm_open(&slm, v.data, len, TL_SLM_VERIFY_EAGER, NULL),
            TL_ERR_INVALID_MODEL))
      break;
    /* The header still says how long the file was (the CLI prints
     * "truncated: N of M bytes"); below 24 bytes it cannot. */
    if (!TL_EXPECT_STATUS(t, tl_slm_declared_len(v.data, len, &declared),
                          len < 24 ? TL_ERR_INVALID_MODEL : TL_OK) ||
        !TL_EXPECT(t, len < 24 || declared == v.len))
      break;
  }
  tl_file_close_view(&v);
  unlink(path);
}

static void failed_write_leaves_no_file(tl_test_ctx *t) {
  tl_slm_part part = {TL_SLM_METADATA, 0, meta, sizeof meta};
  uint8_t id[32];
  char err[256];
  TL_EXPECT_STATUS(
      t, tl_slm_write("/nonexistent-dir/x.slm", &part, 1, id, err, sizeof err),
      TL_ERR_IO);
  TL_EXPECT(t, access("/nonexistent-dir/x.slm", F_OK) != 0);
}

static const tl_test_case cases[] = {
    TL_CASE(round_trip_exposes_the_sections),
    TL_CASE(writing_twice_gives_identical_bytes),
    TL_CASE(every_single_byte_flip_is_refused),
    TL_CASE(truncation_at_every_length_is_refused),
    TL_CASE(failed_write_leaves_no_file),
};
TL_SUITE(slm_write, cases);
