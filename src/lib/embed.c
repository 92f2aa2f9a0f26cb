/* Last-token pooling and L2 normalisation (embed.h). */
#include "embed.h"

#include <string.h>

typedef struct last_row {
  uint32_t pos;
  float *row; /* hidden floats */
  size_t n;
} last_row;

static bool wants(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos) {
  const last_row *l = ctx;
  (void)layer;
  return stage == TL_QWEN3_STAGE_FINAL_NORM && pos == l->pos;
}

static void row(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
                const float *data, size_t n) {
  last_row *l = ctx;
  (void)stage;
  (void)layer;
  (void)pos;
  if (n == l->n) memcpy(l->row, data, n * sizeof *data);
}

tl_status tl_embed(const tl_qwen3 *m, tl_qwen3_cache *cache, tl_arena *scratch, size_t chunk,
                   const uint32_t *ids, size_t n, uint32_t append_id, uint32_t dims,
                   float *out, tl_qwen3_fault *fault) {
  size_t hidden = m->cfg.hidden;
  last_row l = {(uint32_t)n, out, hidden};
  tl_qwen3_capture cap = {wants, row, &l};
  double sum = 0, norm;
  tl_status st;
  if (dims == 0 || dims > hidden || chunk == 0) return TL_ERR_INVALID_ARGUMENT;
  if (n + 1 > cache->capacity) return TL_ERR_CONTEXT_EXCEEDED;
  cache->len = 0;
  for (size_t at = 0; at < n; at += chunk) {
    size_t k = n - at < chunk ? n - at : chunk;
    if ((st = tl_qwen3_forward(m, cache, ids + at, k, NULL, NULL, scratch, fault)) != TL_OK)
      return st;
  }
  st = tl_qwen3_forward(m, cache, &append_id, 1, NULL, &cap, scratch, fault);
  if (st == TL_OK) {
    for (uint32_t i = 0; i < dims; i++) sum += (double)out[i] * out[i];
    norm = __builtin_sqrt(sum);
    if (!(norm > 0)) return TL_ERR_NUMERICAL_FAILURE;
    for (uint32_t i = 0; i < dims; i++) out[i] = (float)(out[i] / norm);
  }
  return st;
}
