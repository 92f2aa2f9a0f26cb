/* A text embedding from an embedding model (session.h's embedding;
 * docs/server.md, Embeddings): the input ids and the id the tokenizer
 * appends run through the model from an empty cache; the final-norm
 * hidden state of that appended last token (last-token pooling, as
 * Qwen3-Embedding's publisher defines it), its first dims components
 * L2-normalised (Matryoshka truncation). The same ids give the same bits
 * whatever ran before (the cache starts empty every time). */
#ifndef TL_LIB_EMBED_H
#define TL_LIB_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model/qwen3.h"

/* out: room for hidden floats, the first dims (1..hidden) the result. cache: emptied and reused (its capacity
 * must hold n + 1 positions: else TL_ERR_CONTEXT_EXCEEDED); scratch: a
 * forward pass of chunk tokens. Errors as tl_qwen3_forward's;
 * TL_ERR_NUMERICAL_FAILURE also for a zero state (no direction). */
tl_status tl_embed(const tl_qwen3 *m, tl_qwen3_cache *cache, tl_arena *scratch, size_t chunk,
                   const uint32_t *ids, size_t n, uint32_t append_id, uint32_t dims,
                   float *out, tl_qwen3_fault *fault);

#endif
