/* libFuzzer target for observation documents (src/core/model/observe.c),
 * what `tinylm observe --compare` parses, also from a browser. Any bytes
 * give TL_OK or a typed refusal naming why, never a crash or a read past
 * the input. An accepted document's records lie inside its model and
 * prompt; written back (tl_observe_write) it reads back to the same
 * records; compared with itself it is identical, or refused for a record
 * it holds twice. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/observe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static void accepted(const tl_observe_doc *d, tl_arena *arena) {
  const tl_observe_meta *m = &d->meta;
  size_t bound = tl_observe_doc_bound(m, d->n_records), len = 0, cap;
  uint8_t *back = bound < SIZE_MAX ? malloc(bound) : NULL;
  tl_observe_doc again;
  tl_observe_diff diff;
  const char *why = NULL;
  tl_status st;
  for (size_t i = 0; i < d->n_records; i++) {
    const tl_observe_record *r = &d->records[i];
    CHECK((unsigned)r->stage < TL_QWEN3_STAGE_COUNT);
    CHECK(r->layer >= -1 && (r->layer < 0 || (uint32_t)r->layer < m->layers));
    CHECK(r->pos < m->n_ids && r->nonfinite <= r->count);
  }
  CHECK(back != NULL);
  st = tl_observe_write(m, d->records, d->n_records, back, bound, &len, arena);
  CHECK(st == TL_OK && len <= bound);
  st = tl_observe_read(back, len, &again, arena, &why);
  CHECK(st == TL_OK && again.n_records == d->n_records && again.meta.n_ids == m->n_ids);
  CHECK(strcmp(again.meta.profile, m->profile) == 0 && strcmp(again.meta.isa, m->isa) == 0);
  for (size_t i = 0; i < d->n_records; i++) CHECK(tl_observe_record_equal(&d->records[i], &again.records[i]));
  free(back);
  cap = tl_observe_compare_bound(d);
  if (cap > (64u << 20)) return; /* a model of millions of layers: not here */
  {
    void *mem = malloc(cap);
    tl_arena scratch;
    CHECK(mem != NULL && tl_arena_init(&scratch, mem, cap) == TL_OK);
    st = tl_observe_compare(d, &again, &scratch, &diff, &why);
    CHECK((st == TL_OK && diff.verdict == TL_OBSERVE_IDENTICAL) ||
          (st == TL_ERR_INVALID_ARGUMENT && why != NULL));
    free(mem);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uint8_t mem[16u << 20];
  tl_arena arena;
  tl_observe_doc doc;
  const char *why = NULL;
  uint8_t *copy;
  tl_status st;
  if (size > (1u << 20)) return 0;
  /* the document as its own allocation, so ASan sees any overread */
  copy = malloc(size ? size : 1);
  CHECK(copy != NULL);
  memcpy(copy, data, size);
  CHECK(tl_arena_init(&arena, mem, sizeof mem) == TL_OK);
  st = tl_observe_read(copy, size, &doc, &arena, &why);
  if (st == TL_OK) accepted(&doc, &arena);
  else CHECK((st == TL_ERR_INVALID_CBOR || st == TL_ERR_INVALID_ARGUMENT) && why != NULL);
  free(copy);
  return 0;
}
