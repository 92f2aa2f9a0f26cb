/* The core .slm reader on the committed golden model artifact
 * tests/golden/slm/tiny-q4.slm (tools/slm_goldens.sh): accepted as it is;
 * every single-byte corruption and a few truncations refused by the eager
 * open of container + tensor directory (SLM-2, -5, -13); a corrupted tensor
 * found by tl_slm_tensor_verify when only the structure was checked (lazy
 * open, section digest not checked). Runs from the repository root, like
 * the other suites that read tests/fixtures. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "slm/slm.h"
#include "slm/tensors.h"
#include "tl_test.h"

#define GOLDEN_Q4 "tests/golden/slm/tiny-q4.slm"

/* The golden's bytes in a 64-byte-aligned writable buffer (the reader
 * sees it as a file image; flips are made and undone in place). */
typedef struct golden {
  uint8_t *data;
  size_t len;
} golden;

static bool load_golden(tl_test_ctx *t, golden *g) {
  tl_file_view v;
  char err[256];
  if (!TL_EXPECT_OK(t, tl_file_open_view(GOLDEN_Q4, &v, err, sizeof err))) {
    tl_test_print(t, err);
    tl_test_print(t, "\n");
    return false;
  }
  g->len = v.len;
  g->data = aligned_alloc(64, (v.len + 63) / 64 * 64);
  if (!TL_EXPECT(t, g->data != NULL)) {
    tl_file_close_view(&v);
    return false;
  }
  memcpy(g->data, v.data, v.len);
  tl_file_close_view(&v);
  return true;
}

/* Eager open of the container and the tensor directory. */
static tl_status open_eager(const uint8_t *data, size_t len) {
  tl_slm slm;
  tl_slm_tensors ts;
  tl_status st = tl_slm_open(&slm, data, len, TL_SLM_VERIFY_EAGER, NULL);
  if (st != TL_OK) return st;
  return tl_slm_tensors_open(&ts, &slm, TL_SLM_VERIFY_EAGER, NULL);
}

static bool refusal_status(tl_status st) {
  return st == TL_ERR_INVALID_MODEL || st == TL_ERR_HASH_MISMATCH ||
         st == TL_ERR_UNSUPPORTED_ABI || st == TL_ERR_INTEGER_OVERFLOW;
}

static void golden_q4_is_accepted(tl_test_ctx *t) {
  golden g;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_slm_tensor tensor, found;
  size_t at = 0;
  if (!load_golden(t, &g)) return;
  TL_EXPECT_EQ_U64(t, g.len % 64, 0);
  if (TL_EXPECT_OK(t, tl_slm_open(&slm, g.data, g.len, TL_SLM_VERIFY_EAGER,
                                  &at)) &&
      TL_EXPECT_OK(t, tl_slm_tensors_open(&ts, &slm, TL_SLM_VERIFY_EAGER,
                                          &at))) {
    TL_EXPECT_EQ_U64(t, slm.n_sections, 5);
    /* 24 stored tensors: the separate lm_head is an alias of the embedding
     * (tests/golden/slm/README.md). */
    TL_EXPECT_EQ_U64(t, ts.n, 24);
    for (size_t i = 0; i < ts.n; i++) {
      if (!TL_EXPECT_OK(t, tl_slm_tensor_at(&ts, i, &tensor))) break;
      TL_EXPECT_OK(t, tl_slm_tensor_verify(&tensor));
      TL_EXPECT_EQ_U64(t, ((uintptr_t)tensor.data - (uintptr_t)g.data) % 64,
                       0);
      TL_EXPECT(t, tensor.type == TL_QTYPE_Q4 || tensor.rank == 1);
      if (TL_EXPECT_OK(t, tl_slm_tensor_find(&ts, tensor.name,
                                             tensor.name_len, &found)))
        TL_EXPECT(t, found.data == tensor.data);
    }
    TL_EXPECT_STATUS(t, tl_slm_tensor_find(&ts, "lm_head.weight", 14, &found),
                     TL_ERR_BOUNDS);
    TL_EXPECT_OK(t, tl_slm_tensor_find(&ts, "model.embed_tokens.weight", 25,
                                       &found));
  }
  free(g.data);
}

static void golden_q4_refuses_every_byte_flip(tl_test_ctx *t) {
  golden g;
  size_t accepted = 0, odd_status = 0;
  if (!load_golden(t, &g)) return;
  for (size_t i = 0; i < g.len; i++) {
    g.data[i] ^= 0x01;
    tl_status st = open_eager(g.data, g.len);
    g.data[i] ^= 0x01;
    if (st == TL_OK) {
      if (accepted++ < 8) {
        tl_test_print(t, "  flip accepted at offset ");
        tl_test_print_u64(t, i);
        tl_test_print(t, "\n");
      }
    } else if (!refusal_status(st)) {
      if (odd_status++ < 8) {
        tl_test_print(t, "  flip at offset ");
        tl_test_print_u64(t, i);
        tl_test_print(t, " refused with an unexpected status ");
        tl_test_print(t, tl_status_name(st));
        tl_test_print(t, "\n");
      }
    }
  }
  TL_EXPECT_EQ_U64(t, accepted, 0);
  TL_EXPECT_EQ_U64(t, odd_status, 0);
  TL_EXPECT_OK(t, open_eager(g.data, g.len)); /* every flip was undone */
  free(g.data);
}

static void golden_q4_refuses_truncations(tl_test_ctx *t) {
  golden g;
  if (!load_golden(t, &g)) return;
  size_t lens[] = {0,         1,         8,         32,         63,
                   64,        65,        128,       g.len / 2,  g.len - 64,
                   g.len - 1};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    tl_status st = open_eager(g.data, lens[k]);
    if (!TL_EXPECT(t, st != TL_OK && refusal_status(st))) {
      tl_test_print(t, "  truncation to ");
      tl_test_print_u64(t, lens[k]);
      tl_test_print(t, " bytes: ");
      tl_test_print(t, tl_status_name(st));
      tl_test_print(t, "\n");
    }
  }
  free(g.data);
}

/* Lazy open checks the structure only (SLM-5, SLM-13): with one tensor
 * byte flipped both opens succeed, tl_slm_tensor_verify finds the flipped
 * tensor (and only it), and the data section's digest is wrong too. */
static void lazy_open_then_tensor_verify_finds_a_flip(tl_test_ctx *t) {
  golden g;
  tl_slm slm;
  tl_slm_tensors ts;
  tl_slm_tensor tensor, other;
  const tl_slm_section *data_sec;
  if (!load_golden(t, &g)) return;
  if (!TL_EXPECT_OK(t, tl_slm_open(&slm, g.data, g.len, TL_SLM_VERIFY_LAZY,
                                   NULL)) ||
      !TL_EXPECT_OK(t, tl_slm_tensors_open(&ts, &slm, TL_SLM_VERIFY_LAZY,
                                           NULL)) ||
      !TL_EXPECT_OK(t, tl_slm_find(&slm, TL_SLM_TENSOR_DATA, &data_sec))) {
    free(g.data);
    return;
  }
  for (size_t i = 0; i < ts.n; i++) {
    if (!TL_EXPECT_OK(t, tl_slm_tensor_at(&ts, i, &tensor))) break;
    size_t first = (size_t)(tensor.data - g.data);
    size_t picks[3] = {first, first + tensor.len / 2, first + tensor.len - 1};
    for (size_t k = 0; k < 3; k++) {
      size_t off = picks[k];
      g.data[off] ^= 0x01;
      tl_slm slm2;
      tl_slm_tensors ts2;
      tl_slm_tensor flipped;
      bool opened =
          TL_EXPECT_OK(t, tl_slm_open(&slm2, g.data, g.len,
                                      TL_SLM_VERIFY_LAZY, NULL)) &&
          TL_EXPECT_OK(t, tl_slm_tensors_open(&ts2, &slm2, TL_SLM_VERIFY_LAZY,
                                              NULL)) &&
          TL_EXPECT_OK(t, tl_slm_tensor_at(&ts2, i, &flipped));
      if (opened) {
        TL_EXPECT_STATUS(t, tl_slm_tensor_verify(&flipped),
                         TL_ERR_HASH_MISMATCH);
        /* The neighbours are untouched. */
        if (i > 0 && TL_EXPECT_OK(t, tl_slm_tensor_at(&ts2, i - 1, &other)))
          TL_EXPECT_OK(t, tl_slm_tensor_verify(&other));
        if (i + 1 < ts2.n &&
            TL_EXPECT_OK(t, tl_slm_tensor_at(&ts2, i + 1, &other)))
          TL_EXPECT_OK(t, tl_slm_tensor_verify(&other));
        TL_EXPECT_STATUS(t, tl_slm_verify_section(data_sec),
                         TL_ERR_HASH_MISMATCH);
      }
      g.data[off] ^= 0x01;
    }
  }
  TL_EXPECT_OK(t, tl_slm_verify_section(data_sec));
  free(g.data);
}

static const tl_test_case cases[] = {
    TL_CASE(golden_q4_is_accepted),
    TL_CASE(golden_q4_refuses_every_byte_flip),
    TL_CASE(golden_q4_refuses_truncations),
    TL_CASE(lazy_open_then_tensor_verify_finds_a_flip),
};
TL_SUITE(slm_golden, cases);
