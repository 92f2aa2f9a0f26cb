/* The Qwen3 forward pass, scalar strict lane (docs/architecture.md §6, docs/forward.md):
 * f32 storage and accumulation in a fixed left-to-right order, weights of
 * any .slm dtype decoded row by row, own deterministic exp/sin/cos, so
 * native and wasm32 give identical bits.
 *
 * Prefill and decode are one code path: a call processes n tokens layer by
 * layer (all positions' projections, then each position's attention over
 * the cache), and every output element is computed by the same operations
 * in the same order whether its token came in a batch or alone. Hence a
 * prompt prefilled at once and the same prompt fed token by token give
 * bit-identical logits and KV contents (tested). */
#ifndef TL_CORE_MODEL_QWEN3_H
#define TL_CORE_MODEL_QWEN3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "quant/quant.h"
#include "slm/slm.h"
#include "slm/tensors.h"
#include "tinylm.h"

typedef struct tl_qwen3_config {
  uint32_t vocab, hidden, inter, layers, heads, kv_heads, head_dim;
  uint32_t max_positions;
  float rms_eps;     /* rms_norm_eps rounded to f32, as torch adds it */
  double rope_theta; /* rope base */
} tl_qwen3_config;

/* One weight: rows x n elements of type, row-major (norms: 1 x n). data:
 * the bytes as stored (NULL once tl_qwen3_pack packed them in place, or
 * when the artifact holds them packed: SLM-11); packed: a q8/q4 weight's
 * rows in the fast lane's layout (tl_kern_pack), NULL until tl_qwen3_pack
 * unless the artifact holds them so. */
typedef struct tl_qwen3_weight {
  const uint8_t *data, *packed;
  size_t len;
  tl_qtype type;
  size_t rows, n;
} tl_qwen3_weight;

typedef struct tl_qwen3_layer {
  tl_qwen3_weight attn_norm, q, k, v, o, q_norm, k_norm, mlp_norm, gate, up,
      down;
} tl_qwen3_layer;

/* Deliberate faults for the mutation tests (docs/forward.md §Mutations):
 * each bit breaks one piece the way a plausible bug would. Zero in any
 * real run. */
enum {
  TL_QWEN3_MUT_ROPE_PAIRING = 1u << 0,  /* adjacent pairs, not rotate_half */
  TL_QWEN3_MUT_NO_Q_NORM = 1u << 1,     /* q_norm skipped */
  TL_QWEN3_MUT_GQA_MAP = 1u << 2,       /* head h reads kv head h % K */
  TL_QWEN3_MUT_SOFTMAX_NO_MAX = 1u << 3, /* exp without max subtraction */
  TL_QWEN3_MUT_MASK_OFF_BY_ONE = 1u << 4, /* a query sees the next key */
  TL_QWEN3_MUT_RMS_EPS = 1u << 5         /* epsilon 1e-5 instead of config */
};

typedef struct tl_qwen3 {
  tl_qwen3_config cfg;
  tl_qwen3_weight embed, final_norm, lm_head;
  tl_qwen3_layer *layers;
  float *inv_freq;    /* head_dim / 2 rope frequencies (f32, as torch) */
  uint32_t mutations; /* TL_QWEN3_MUT_* (tests only) */
  /* The fast lane (docs/fast-profile.md): its kernels, or NULL for the
   * strict lane; par runs its tasks (NULL: the caller alone). Set with
   * tl_qwen3_set_lane. */
  const tl_kernels *fast;
  const tl_parallel *par;
  /* A device that computes the fast lane's q8/q4 products instead of the
   * kernels (the browser's WebGPU lane: docs/webgpu-profile.md), or NULL.
   * Set with tl_qwen3_set_device. */
  const tl_kern_device *device;
} tl_qwen3;

/* Row r of w decoded to f32 (w->n values, exact for every type: q8/q4 are
 * code x scale), from the stored or the packed bytes. TL_ERR_BOUNDS past
 * the last row, TL_ERR_INVALID_MODEL for bytes that do not decode. */
tl_status tl_qwen3_weight_row(const tl_qwen3_weight *w, size_t r, float *out);

/* Reads the effective config from the metadata (the "config" map of
 * docs/slm.md) and binds every tensor, checking its shape against the
 * config. TL_ERR_INVALID_MODEL (missing or misshapen tensor, bad config),
 * TL_ERR_UNSUPPORTED_FEATURE (a config value the lane does not implement),
 * TL_ERR_UNSUPPORTED_SHAPE (a row wider than 2^24 elements),
 * TL_ERR_OUT_OF_MEMORY (arena). */
tl_status tl_qwen3_load(tl_qwen3 *m, const tl_slm *slm,
                        const tl_slm_tensors *tensors, tl_arena *arena);

/* The KV cache: per layer and KV head, capacity rows of head_dim values
 * for K (after norm and rope) and V, so that one head's keys lie side by
 * side for attention. Rows [0, len) are valid. The strict lane keeps f32
 * rows (k, v); the fast lane binary16 ones (k16, v16: fast/4's F-11);
 * the other pair is NULL. */
typedef struct tl_qwen3_cache {
  float *k, *v;        /* [layers][kv_heads][capacity][head_dim] */
  uint16_t *k16, *v16; /* the same layout */
  uint32_t capacity, len;
  uint32_t kv_heads, head_dim; /* the model's, set by tl_qwen3_cache_init */
} tl_qwen3_cache;

/* Where K and V of (layer, KV head, position) start in c->k and c->v. */
static inline size_t tl_qwen3_cache_at(const tl_qwen3_cache *c, uint32_t layer, uint32_t head,
                                       uint32_t pos) {
  return (((size_t)layer * c->kv_heads + head) * c->capacity + pos) * c->head_dim;
}

/* Weight i of m (i < 3 + 11 * layers: embed, final_norm, lm_head, then
 * each layer's), NULL past the last; the tied lm_head is its own entry. */
tl_qwen3_weight *tl_qwen3_weight_at(tl_qwen3 *m, size_t i);

/* How m's q8/q4 weights are laid out: *stored, whether one is in the
 * stored layout (the fast lane must pack it); *packed, whether one is
 * packed already (SLM-11a). */
void tl_qwen3_quant_layouts(const tl_qwen3 *m, bool *stored, bool *packed);

/* Prepares m's q8/q4 weights for the fast lane (F-9): validates every one
 * once, in whichever layout it has (Q-17, with par's threads; may be
 * NULL): TL_ERR_INVALID_MODEL and nothing changes; then packs those whose stored bytes lie in [from, from
 * + len) into the same offsets of to (tl_kern_pack). to == from packs in
 * place: their stored layout is then gone (data NULL) and the strict lane
 * decodes the packed rows instead, to the same values. A weight in two
 * roles (tied embeddings) is packed once. */
tl_status tl_qwen3_pack(tl_qwen3 *m, const uint8_t *from, size_t len, uint8_t *to,
                        const tl_parallel *par);

/* Selects the fast lane with kernels k (NULL: the strict lane) and par
 * (may be NULL). The fast lane runs once every q8/q4 weight is packed
 * (tl_qwen3_pack, before or after this): a forward pass before that is
 * TL_ERR_INVALID_ARGUMENT. The scratch bound depends on the lane: plan
 * after. */
tl_status tl_qwen3_set_lane(tl_qwen3 *m, const tl_kernels *k,
                            const tl_parallel *par);

/* Hands the fast lane's q8/q4 products to dev (NULL: the kernels): every
 * call whose matrices are all q8/q4 goes to dev in one piece, after its
 * activations were quantized (F-3); the rest of the pass is unchanged.
 * dev must hold every packed weight it will be asked for. */
void tl_qwen3_set_device(tl_qwen3 *m, const tl_kern_device *dev);

/* A cache of capacity positions for m's lane as it is now (choose the
 * lane first): f32 rows on the strict lane, binary16 on the fast lane; a
 * forward pass on the other lane refuses it (TL_ERR_INVALID_ARGUMENT). */
tl_status tl_qwen3_cache_init(tl_qwen3_cache *c, const tl_qwen3 *m,
                              uint32_t capacity, tl_arena *arena);

/* The bytes of K and V that tl_qwen3_cache_init allocates for capacity
 * positions on m's lane (without alignment): 2 x layers x capacity x
 * kv_heads x head_dim x 4 (strict) or x 2 (fast). */
uint64_t tl_qwen3_cache_bytes(const tl_qwen3 *m, uint32_t capacity);

/* Capture points, in the order of the computation (docs/golden.md). */
#define TL_QWEN3_STAGES(X)                                                  \
  X(EMBEDDING, "embedding") X(ATTN_NORM, "attn_norm") X(Q, "q") X(K, "k")   \
  X(V, "v") X(Q_NORM, "q_norm") X(K_NORM, "k_norm") X(Q_ROPE, "q_rope")     \
  X(K_ROPE, "k_rope") X(SCORES, "scores") X(SCORES_MASKED, "scores_masked") \
  X(PROBS, "probs") X(ATTN_OUT, "attn_out") X(O_PROJ, "o_proj")             \
  X(ATTN_RESIDUAL, "attn_residual") X(MLP_NORM, "mlp_norm") X(GATE, "gate") \
  X(UP, "up") X(ACT, "act") X(DOWN, "down") X(LAYER_OUT, "layer_out")       \
  X(FINAL_NORM, "final_norm") X(LOGITS, "logits")

typedef enum tl_qwen3_stage {
#define TL_QWEN3_STAGE_ENUM_(id, name) TL_QWEN3_STAGE_##id,
  TL_QWEN3_STAGES(TL_QWEN3_STAGE_ENUM_)
#undef TL_QWEN3_STAGE_ENUM_
      TL_QWEN3_STAGE_COUNT
} tl_qwen3_stage;

const char *tl_qwen3_stage_name(tl_qwen3_stage s);
/* The stage of that name, or TL_QWEN3_STAGE_COUNT. */
tl_qwen3_stage tl_qwen3_stage_find(const char *name, size_t len);

/* A capture sink: for each stage, layer (-1 outside layers) and position
 * it wants, it receives the row (for scores/probs: heads x keys, keys =
 * every cached key after this call, masked ones -inf / 0). */
typedef struct tl_qwen3_capture {
  bool (*wants)(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos);
  void (*row)(void *ctx, tl_qwen3_stage stage, int32_t layer, uint32_t pos,
              const float *data, size_t n);
  void *ctx;
} tl_qwen3_capture;

/* Where a non-finite value first appeared. */
typedef struct tl_qwen3_fault {
  tl_qwen3_stage stage;
  int32_t layer;
  uint32_t pos;
  size_t index;
} tl_qwen3_fault;

/* Runs ids[0..n) at positions cache->len .. cache->len + n - 1, appends
 * their K/V to the cache, and writes the last position's logits (vocab
 * floats) to logits (may be NULL). cap may be NULL. scratch holds the
 * working buffers and is rewound before returning.
 * Errors: TL_ERR_CONTEXT_EXCEEDED (past the cache capacity or
 * max_position_embeddings; nothing is changed), TL_ERR_INVALID_ARGUMENT
 * (an id outside the vocabulary), TL_ERR_NUMERICAL_FAILURE (a NaN/Inf:
 * *fault names stage, layer, position and index; the cache length is
 * unchanged), TL_ERR_INVALID_MODEL (stored quantized bytes that do not
 * decode), TL_ERR_OUT_OF_MEMORY (scratch). */
tl_status tl_qwen3_forward(const tl_qwen3 *m, tl_qwen3_cache *cache,
                           const uint32_t *ids, size_t n, float *logits,
                           const tl_qwen3_capture *cap, tl_arena *scratch,
                           tl_qwen3_fault *fault);

/* Scratch bytes a forward call of n tokens over at most keys keys needs at
 * most on the lane set now (tl_qwen3_set_lane): in proportion to n and to
 * keys, never n x keys (the fast lane's attention scores four
 * positions at a time). Plan after setting the lane. */
size_t tl_qwen3_scratch_bound(const tl_qwen3 *m, size_t n, uint32_t keys);

/* One token of each of n sequences (a batched decode step): ids[t] at
 * position caches[t]->len of caches[t] (n distinct caches), its logits
 * (vocab floats) to logits[t]; each cache grows by one. On the fast lane
 * the products of all n tokens read each weight tile once (F-8) and each
 * token's attention is the one-token call's over its own cache, so every
 * row's logits and K/V are the bits tl_qwen3_forward gives for that token
 * alone; the strict lane runs the tokens one by one. No capture. Errors
 * as tl_qwen3_forward (TL_ERR_INVALID_ARGUMENT also for a cache given
 * twice); on any error no cache grows and the fault does not say which
 * row failed (run the rows alone to find it). */
tl_status tl_qwen3_forward_rows(const tl_qwen3 *m, tl_qwen3_cache *const *caches,
                                const uint32_t *ids, size_t n, float *const *logits,
                                tl_arena *scratch, tl_qwen3_fault *fault);

/* Scratch bytes a tl_qwen3_forward_rows call of n rows over at most keys
 * keys needs at most. */
size_t tl_qwen3_rows_scratch_bound(const tl_qwen3 *m, size_t n, uint32_t keys);

#endif
