/* The tensor directory reader (docs/slm.md SLM-10..SLM-13) on artifacts
 * built here byte by byte from the spec: a valid one is exposed exactly,
 * and each broken rule gets its own typed refusal. Freestanding, so it
 * runs natively and in wasm32. */
#include "slm/tensors.h"

#include <string.h>

#include "bytes.h"
#include "hash/blake3.h"
#include "tl_test.h"

#define FILE_CAP 2048

/* Two tensors: "a.w" f32 [2, 3] (24 bytes) and "b" q8 [1, 40] (2 blocks,
 * 72 bytes at offset 64). */
typedef struct sample {
  uint8_t dir[32 + 2 * 96 + 4];
  uint8_t data[64 + 72];
  uint8_t file[FILE_CAP];
  size_t len;
} sample;

static void entry(uint8_t *e, uint32_t name_off, uint32_t name_len,
                  uint32_t dtype, uint32_t rank, uint64_t d0, uint64_t d1,
                  uint64_t off, uint64_t len) {
  tl_store_le32(e, name_off);
  tl_store_le32(e + 4, name_len);
  tl_store_le32(e + 8, dtype);
  tl_store_le32(e + 12, rank);
  tl_store_le64(e + 16, d0);
  tl_store_le64(e + 24, d1);
  tl_store_le64(e + 48, off);
  tl_store_le64(e + 56, len);
}

static void sample_init(sample *s) {
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < 24; i++) s->data[i] = (uint8_t)(i * 7 + 1);
  /* q8 blocks: scale 1.0f then codes; all valid. */
  for (size_t b = 0; b < 2; b++) {
    tl_store_le32(s->data + 64 + 36 * b, tl_f32_to_bits(1.0f));
    for (size_t k = 0; k < 32; k++)
      s->data[64 + 36 * b + 4 + k] = b == 1 && k >= 8 ? 0 : (uint8_t)k;
  }
  memcpy(s->dir, "TLTD", 4);
  tl_store_le32(s->dir + 4, 1);
  tl_store_le32(s->dir + 8, 2);
  tl_store_le32(s->dir + 12, 96);
  tl_store_le64(s->dir + 16, 32 + 2 * 96);
  tl_store_le64(s->dir + 24, 4);
  entry(s->dir + 32, 0, 3, TL_SLM_DTYPE_F32, 2, 2, 3, 0, 24);
  entry(s->dir + 128, 3, 1, TL_SLM_DTYPE_Q8, 2, 1, 40, 64, 72);
  memcpy(s->dir + 224, "a.wb", 4);
}

/* Digests of the tensors (as stored in the directory), then the
 * container around metadata, dir and data, with its own digests. */
static void sample_seal(sample *s, bool tensor_digests) {
  static const uint8_t meta[] = {0xa0};
  const uint8_t *parts[3] = {meta, s->dir, s->data};
  size_t lens[3] = {sizeof meta, sizeof s->dir, sizeof s->data};
  uint32_t kinds[3] = {TL_SLM_METADATA, TL_SLM_TENSOR_DIR, TL_SLM_TENSOR_DATA};
  size_t off = 64 + 3 * 64;
  if (tensor_digests) {
    tl_blake3(s->data, 24, s->dir + 32 + 64);
    tl_blake3(s->data + 64, 72, s->dir + 128 + 64);
  }
  memset(s->file, 0, sizeof s->file);
  memcpy(s->file, TL_SLM_MAGIC, 8);
  tl_store_le32(s->file + 8, 1);
  tl_store_le32(s->file + 12, 64);
  tl_store_le32(s->file + 24, 3);
  tl_store_le32(s->file + 28, 64);
  for (size_t i = 0; i < 3; i++) {
    uint8_t *e = s->file + 64 + 64 * i;
    off = (off + 63) / 64 * 64;
    tl_store_le32(e, kinds[i]);
    tl_store_le32(e + 4, 1);
    tl_store_le64(e + 8, off);
    tl_store_le64(e + 16, lens[i]);
    tl_blake3(parts[i], lens[i], e + 24);
    memcpy(s->file + off, parts[i], lens[i]);
    off += lens[i];
  }
  s->len = off;
  tl_store_le64(s->file + 16, off);
  tl_slm_header_digest(s->file, 64 + 3 * 64, s->file + 32);
}

static tl_status open_sample(sample *s, tl_slm_verify mode,
                             tl_slm_tensors *t) {
  tl_slm slm;
  tl_status st = tl_slm_open(&slm, s->file, s->len, mode, NULL);
  if (st != TL_OK) return st;
  return tl_slm_tensors_open(t, &slm, mode, NULL);
}

static void a_valid_directory_is_exposed(tl_test_ctx *t) {
  static sample s;
  tl_slm_tensors ts;
  tl_slm_tensor x;
  sample_init(&s);
  sample_seal(&s, true);
  if (!TL_EXPECT_OK(t, open_sample(&s, TL_SLM_VERIFY_EAGER, &ts))) return;
  TL_EXPECT_EQ_U64(t, ts.n, 2);
  if (!TL_EXPECT_OK(t, tl_slm_tensor_at(&ts, 1, &x))) return;
  TL_EXPECT_EQ_U64(t, x.name_len, 1);
  TL_EXPECT(t, x.name[0] == 'b');
  TL_EXPECT(t, x.type == TL_QTYPE_Q8);
  TL_EXPECT_EQ_U64(t, x.rows, 1);
  TL_EXPECT_EQ_U64(t, x.n, 40);
  TL_EXPECT_EQ_U64(t, x.len, 72);
  TL_EXPECT_EQ_U64(t, (uintptr_t)(x.data - s.file) % 64, 0);
  if (!TL_EXPECT_OK(t, tl_slm_tensor_find(&ts, "a.w", 3, &x))) return;
  TL_EXPECT_EQ_U64(t, x.rank, 2);
  TL_EXPECT_EQ_U64(t, x.shape[0], 2);
  TL_EXPECT_EQ_U64(t, x.shape[1], 3);
  TL_EXPECT_EQ_U64(t, x.rows * x.n, 6);
  TL_EXPECT_MEM(t, x.data, s.data, 24);
  TL_EXPECT_STATUS(t, tl_slm_tensor_find(&ts, "a", 1, &x), TL_ERR_BOUNDS);
  TL_EXPECT_STATUS(t, tl_slm_tensor_find(&ts, "c", 1, &x), TL_ERR_BOUNDS);
  TL_EXPECT_STATUS(t, tl_slm_tensor_at(&ts, 2, &x), TL_ERR_BOUNDS);
}

static void lazy_verification_is_per_tensor(tl_test_ctx *t) {
  static sample s;
  tl_slm_tensors ts;
  tl_slm_tensor x;
  sample_init(&s);
  sample_seal(&s, true);
  s.data[5] ^= 1; /* after the digests: tensor "a.w" no longer matches */
  sample_seal(&s, false);
  TL_EXPECT_STATUS(t, open_sample(&s, TL_SLM_VERIFY_EAGER, &ts),
                   TL_ERR_HASH_MISMATCH);
  if (!TL_EXPECT_OK(t, open_sample(&s, TL_SLM_VERIFY_LAZY, &ts))) return;
  (void)tl_slm_tensor_at(&ts, 0, &x);
  TL_EXPECT_STATUS(t, tl_slm_tensor_verify(&x), TL_ERR_HASH_MISMATCH);
  (void)tl_slm_tensor_at(&ts, 1, &x);
  TL_EXPECT_OK(t, tl_slm_tensor_verify(&x));
}

/* One broken rule per case; the directory is resealed so that only the
 * rule under test can fail. */
typedef struct breakage {
  const char *what;
  size_t at; /* byte of the directory to overwrite */
  uint64_t value;
  size_t width; /* 1, 4 or 8 */
  tl_status want;
} breakage;

static void each_broken_rule_is_refused(tl_test_ctx *t) {
  static const breakage cases[] = {
      {"magic", 0, 'X', 1, TL_ERR_INVALID_MODEL},
      {"directory version 2", 4, 2, 4, TL_ERR_UNSUPPORTED_ABI},
      {"no tensors", 8, 0, 4, TL_ERR_INVALID_MODEL},
      {"entry_len", 12, 64, 4, TL_ERR_INVALID_MODEL},
      {"names_off", 16, 40, 8, TL_ERR_INVALID_MODEL},
      {"names_len", 24, 5, 8, TL_ERR_INVALID_MODEL},
      {"name_off not contiguous", 128, 2, 4, TL_ERR_INVALID_MODEL},
      {"empty name", 36, 0, 4, TL_ERR_INVALID_MODEL},
      {"unknown dtype", 40, 9, 4, TL_ERR_INVALID_MODEL},
      {"rank 0", 44, 0, 4, TL_ERR_INVALID_MODEL},
      {"rank 5", 44, 5, 4, TL_ERR_INVALID_MODEL},
      {"a dim past the rank", 64, 1, 8, TL_ERR_INVALID_MODEL},
      {"a zero dim", 48, 0, 8, TL_ERR_INVALID_MODEL},
      {"shape overflows", 48, UINT64_MAX / 2, 8, TL_ERR_INTEGER_OVERFLOW},
      {"data_len for the dtype", 88, 20, 8, TL_ERR_INVALID_MODEL},
      {"second offset not the aligned end", 176, 32, 8, TL_ERR_INVALID_MODEL},
      {"second offset one block later", 176, 128, 8, TL_ERR_INVALID_MODEL},
      {"names out of order", 224, 'c', 1, TL_ERR_INVALID_MODEL},
      {"a forbidden name byte", 225, '/', 1, TL_ERR_INVALID_MODEL},
  };
  static sample s;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const breakage *b = &cases[i];
    tl_slm_tensors ts;
    tl_status st;
    sample_init(&s);
    if (b->width == 1) s.dir[b->at] = (uint8_t)b->value;
    if (b->width == 4) tl_store_le32(s.dir + b->at, (uint32_t)b->value);
    if (b->width == 8) tl_store_le64(s.dir + b->at, b->value);
    sample_seal(&s, true);
    st = open_sample(&s, TL_SLM_VERIFY_LAZY, &ts);
    if (!TL_EXPECT_STATUS(t, st, b->want)) {
      tl_test_print(t, "    case: ");
      tl_test_print(t, b->what);
      tl_test_print(t, "\n");
    }
    TL_EXPECT_EQ_U64(t, ts.n, 0); /* nothing exposed after a refusal */
  }
}

static void padding_between_tensors_is_zero(tl_test_ctx *t) {
  static sample s;
  tl_slm_tensors ts;
  sample_init(&s);
  s.data[40] = 1;
  sample_seal(&s, true);
  TL_EXPECT_STATUS(t, open_sample(&s, TL_SLM_VERIFY_LAZY, &ts),
                   TL_ERR_INVALID_MODEL);
}

static void dtype_codes_round_trip(tl_test_ctx *t) {
  for (uint32_t code = 0; code < 10; code++) {
    tl_qtype q;
    bool packed = false;
    bool known = tl_slm_dtype_qtype(code, &q, &packed);
    TL_EXPECT(t, known == (code >= 1 && code <= 7));
    TL_EXPECT(t, (tl_slm_dtype_name(code) != NULL) == known);
    /* SLM-11: 6 and 7 are q8 and q4 in the packed layout */
    TL_EXPECT(t, packed == (code == 6 || code == 7));
    if (code == 6 || code == 7) TL_EXPECT(t, q == (code == 6 ? TL_QTYPE_Q8 : TL_QTYPE_Q4));
    if (known) TL_EXPECT_EQ_U64(t, tl_slm_dtype_code(q, packed), code);
  }
  /* no packed layout for the float types */
  TL_EXPECT_EQ_U64(t, tl_slm_dtype_code(TL_QTYPE_BF16, true), 0);
}

static const tl_test_case cases[] = {
    TL_CASE(a_valid_directory_is_exposed),
    TL_CASE(lazy_verification_is_per_tensor),
    TL_CASE(each_broken_rule_is_refused),
    TL_CASE(padding_between_tensors_is_zero),
    TL_CASE(dtype_codes_round_trip),
};
TL_SUITE(tensors, cases);
