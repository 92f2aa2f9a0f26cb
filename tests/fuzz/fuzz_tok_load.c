/* libFuzzer target for tl_tok_load, a parser of untrusted bytes (TOK-S-6):
 * any bytes in, never a crash, never more arena than
 * tl_tok_load_arena_bound. A section that loads must then encode and
 * decode without crashing: a few fixed texts, every id in every mode. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "tok/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static const char *const texts[] = {
    "Hello world, I'm here!  \n\n\tx",
    "<think>\xC3\xA9t\xC3\xA9 e\xCC\x81</think> \xF0\x9F\x98\x80",
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
    "<|im_start|>user\n  <s> x<W>y \xE3\x80\x80<L> ab"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const tl_tokenizer *tok = NULL;
  size_t bound = 0;
  tl_arena arena;
  void *mem;
  tl_status st;
  uint8_t *copy;
  if (size > (1u << 20)) return 0;
  /* the section as its own allocation, so ASan sees any overread */
  copy = malloc(size ? size : 1);
  CHECK(copy != NULL);
  memcpy(copy, data, size);
  st = tl_tok_load_arena_bound(copy, size, &bound);
  if (st != TL_OK || bound > (256u << 20)) {
    /* the loader must refuse what the bound could not read */
    tl_arena_init(&arena, NULL, 0);
    CHECK(tl_tok_load(copy, size, &arena, &tok) != TL_OK);
    free(copy);
    return 0;
  }
  mem = malloc(bound);
  CHECK(mem != NULL);
  tl_arena_init(&arena, mem, bound);
  st = tl_tok_load(copy, size, &arena, &tok);
  CHECK(arena.high_water <= bound);
  if (st == TL_OK) {
    uint32_t ids[512];
    uint8_t out[4096];
    size_t n, out_len, bad, scratch_bound;
    void *scratch_mem;
    CHECK(tl_tok_encode_scratch_bound(256, &scratch_bound) == TL_OK);
    scratch_mem = malloc(scratch_bound);
    CHECK(scratch_mem != NULL);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
      tl_arena scratch;
      tl_tok_span offs[512];
      tl_arena_init(&scratch, scratch_mem, scratch_bound);
      st = tl_tok_encode(tok, (const uint8_t *)texts[i], strlen(texts[i]),
                         &scratch, ids, offs, 512, &n, NULL);
      CHECK(st == TL_OK || st == TL_ERR_BOUNDS);
      if (st == TL_OK)
        CHECK(tl_tok_decode(tok, ids, n, TL_TOK_DECODE_RAW, out, sizeof out,
                            &out_len, &bad) != TL_ERR_INVALID_ARGUMENT);
    }
    free(scratch_mem);
    for (uint32_t id = 0; id < tl_tok_vocab_size(tok) && id < 4096; id++)
      for (int mode = 0; mode < 3; mode++)
        CHECK(tl_tok_decode(tok, &id, 1, (tl_tok_decode_mode)mode, out,
                            sizeof out, &out_len,
                            &bad) != TL_ERR_INVALID_ARGUMENT);
  } else {
    CHECK(tok == NULL && arena.used == 0);
  }
  free(mem);
  free(copy);
  return 0;
}
