/* libFuzzer target for golden documents (src/tools/golden.c), what
 * `tinylm verify --golden` parses. Any bytes give TL_OK or a typed
 * refusal with a message, never a crash or a huge allocation. An accepted
 * document's records hold exactly the product of their shape in values,
 * their first dimension is the number of positions, the positions are
 * ascending inside the prompt, and one margin comes per continuation id.
 * It is then written back as a run's capture (tl_golden_write_run, what
 * --dump writes) and that document must read back with the same prompt,
 * positions, records and shapes, and its values as the f32 roundings. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/tools/cbor_doc.c"
#include "../../src/host/cbor_alloc.c"
#include "../../src/tools/golden.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)       \
  do {                    \
    if (!(cond)) abort(); \
  } while (0)

static void check_accepted(const tl_golden *g) {
  CHECK(g->n_ids > 0 && g->n_positions > 0);
  for (size_t i = 0; i < g->n_positions; i++) {
    CHECK(g->positions[i] < g->n_ids);
    CHECK(i == 0 || g->positions[i] > g->positions[i - 1]);
  }
  CHECK(g->n_continuation == 0 || g->margins != NULL);
  for (size_t r = 0; r < g->n_records; r++) {
    const tl_golden_record *rec = &g->records[r];
    size_t count = 1;
    CHECK(rec->rank >= 1 && rec->rank <= TL_GOLDEN_MAX_RANK);
    CHECK(rec->shape[0] == g->n_positions);
    for (size_t d = 0; d < rec->rank; d++) {
      CHECK(rec->shape[d] > 0);
      CHECK(tl_mul_size(count, rec->shape[d], &count) == TL_OK);
    }
    CHECK(count == rec->count && rec->values != NULL);
    CHECK(rec->stage < TL_QWEN3_STAGE_COUNT);
  }
}

static void round_trip(const tl_golden *g) {
  float **values = calloc(g->n_records ? g->n_records : 1, sizeof *values);
  uint8_t *doc = NULL;
  size_t len = 0;
  tl_golden back;
  char err[256];
  tl_status st;
  /* both lanes' producers read back */
  tl_golden_producer p = g->n_records % 2 ? (tl_golden_producer){"tinylm-fast", "fast/4"}
                                          : (tl_golden_producer){"tinylm-scalar", "scalar-f32/1"};
  CHECK(values != NULL);
  for (size_t r = 0; r < g->n_records; r++) {
    values[r] = malloc(g->records[r].count * sizeof(float));
    CHECK(values[r] != NULL);
    for (size_t i = 0; i < g->records[r].count; i++)
      values[r][i] = (float)g->records[r].values[i];
  }
  st = tl_golden_write_run(g, values, NULL, 0, "fuzz", p, &doc, &len);
  CHECK(st == TL_OK);
  st = tl_golden_read(doc, len, &back, err, sizeof err);
  CHECK(st == TL_OK);
  CHECK(back.n_ids == g->n_ids &&
        memcmp(back.ids, g->ids, g->n_ids * sizeof *g->ids) == 0);
  CHECK(back.n_positions == g->n_positions &&
        memcmp(back.positions, g->positions,
               g->n_positions * sizeof *g->positions) == 0);
  CHECK(back.n_records == g->n_records && back.n_continuation == 0);
  CHECK(strcmp(back.producer, p.name) == 0 &&
        strcmp(back.precision, "f32") == 0);
  for (size_t r = 0; r < g->n_records; r++) {
    const tl_golden_record *a = &g->records[r], *b = &back.records[r];
    CHECK(a->stage == b->stage && a->layer == b->layer && a->rank == b->rank &&
          a->count == b->count);
    CHECK(memcmp(a->shape, b->shape, a->rank * sizeof *a->shape) == 0);
    for (size_t i = 0; i < a->count; i++)
      CHECK(memcmp(&b->values[i], &(double){(double)values[r][i]},
                   sizeof(double)) == 0);
  }
  tl_golden_free(&back);
  for (size_t r = 0; r < g->n_records; r++) free(values[r]);
  free(values);
  free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_golden g;
  char err[256];
  uint8_t *copy;
  tl_status st;
  if (size > (1u << 20)) return 0;
  /* the document as its own allocation, so ASan sees any overread */
  copy = malloc(size ? size : 1);
  CHECK(copy != NULL);
  memcpy(copy, data, size);
  err[0] = '\0';
  st = tl_golden_read(copy, size, &g, err, sizeof err);
  if (st == TL_OK) {
    check_accepted(&g);
    round_trip(&g);
    tl_golden_free(&g);
  } else {
    CHECK(st == TL_ERR_INVALID_MODEL || st == TL_ERR_OUT_OF_MEMORY);
    CHECK(st == TL_ERR_OUT_OF_MEMORY || err[0] != '\0');
    /* a failed read leaves nothing to free */
    CHECK(g.records == NULL && g.ids == NULL && g.n_records == 0);
  }
  free(copy);
  return 0;
}
