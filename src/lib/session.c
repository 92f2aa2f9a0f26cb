/* Also built into the wasm32 API modules (docs/web.md, Modules): use only
 * the C library web/wasm/hosted provides (no jansson, files or threads). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "sample/sampler.h"

/* Prefill runs in chunks of this many tokens (a cancellation point each).
 * 64 reads each weight once per 64 tokens, which keeps the fast lane's
 * prefill as fast as one call of 512 tokens (q8, one thread: 148 tokens/s
 * at 64 and at 512, 126 at 32) with an eighth of its scratch (4.4 vs 35 MB
 * for the 0.6B shape). */
#define PREFILL_CHUNK 64

/* The effective EOS set from the metadata ("config" -> "config" ->
 * "eos_token_ids"). */
static tl_status read_eos(tl_session *s) {
  const tl_slm_section *meta;
  tl_cbor_reader r;
  size_t n;
  if (tl_slm_find(&s->model.slm, TL_SLM_METADATA, &meta) != TL_OK ||
      tl_cbor_reader_init(&r, meta->data, meta->len, NULL) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (tl_cbor_map_find(&r, "config") != TL_OK ||
      tl_cbor_map_find(&r, "config") != TL_OK ||
      tl_cbor_map_find(&r, "eos_token_ids") != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (tl_cbor_expect_array(&r, &n) != TL_OK || n == 0 || n > TL_SESSION_MAX_EOS)
    return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n; i++) {
    uint64_t v;
    if (tl_cbor_expect_uint(&r, &v) != TL_OK || v > UINT32_MAX)
      return TL_ERR_INVALID_MODEL;
    s->eos[i] = (uint32_t)v;
  }
  s->n_eos = n;
  /* The sampler wants the set strictly ascending. */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && s->eos[j - 1] > s->eos[j]; j--) {
      uint32_t t = s->eos[j];
      s->eos[j] = s->eos[j - 1];
      s->eos[j - 1] = t;
    }
  return TL_OK;
}

/* metadata "generation_defaults" (a map, or null / absent: none). */
static tl_status read_gen_defaults(tl_session *s) {
  const tl_slm_section *meta;
  tl_cbor_reader r;
  tl_cbor_item it;
  size_t n;
  tl_gen_defaults *g = &s->gen;
  if (tl_slm_find(&s->model.slm, TL_SLM_METADATA, &meta) != TL_OK ||
      tl_cbor_reader_init(&r, meta->data, meta->len, NULL) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (tl_cbor_map_find(&r, "generation_defaults") != TL_OK) return TL_OK;
  if (tl_cbor_peek(&r, &it) != TL_OK) return TL_ERR_INVALID_MODEL;
  if (it.type == TL_CBOR_NULL) return TL_OK;
  if (tl_cbor_expect_map(&r, &n) != TL_OK) return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    size_t klen, vlen;
    char text[64];
    if (tl_cbor_expect_text(&r, &k, &klen) != TL_OK) return TL_ERR_INVALID_MODEL;
    if (tl_cbor_text_is(k, klen, "do_sample")) {
      if (tl_cbor_expect_bool(&r, &g->do_sample) != TL_OK) return TL_ERR_INVALID_MODEL;
      g->has_do_sample = true;
    } else if (tl_cbor_text_is(k, klen, "top_k")) {
      uint64_t u;
      if (tl_cbor_expect_uint(&r, &u) != TL_OK || u > UINT32_MAX) return TL_ERR_INVALID_MODEL;
      g->top_k = (uint32_t)u;
      g->has_top_k = true;
    } else {
      struct {
        const char *key;
        bool *has;
        double *value;
      } floats[] = {{"temperature", &g->has_temperature, &g->temperature},
                    {"top_p", &g->has_top_p, &g->top_p},
                    {"min_p", &g->has_min_p, &g->min_p},
                    {"repetition_penalty", &g->has_repeat_penalty, &g->repeat_penalty}};
      size_t f = 0;
      for (; f < 4; f++)
        if (tl_cbor_text_is(k, klen, floats[f].key)) break;
      if (f == 4) {
        if (tl_cbor_skip(&r) != TL_OK) return TL_ERR_INVALID_MODEL;
        continue;
      }
      /* floats travel as Python repr text; strtod reads them exactly */
      if (tl_cbor_expect_text(&r, &v, &vlen) != TL_OK || vlen >= sizeof text)
        return TL_ERR_INVALID_MODEL;
      memcpy(text, v, vlen);
      text[vlen] = '\0';
      *floats[f].value = strtod(text, NULL);
      *floats[f].has = true;
    }
  }
  return TL_OK;
}

/* metadata "embedding" (absent: a language model): {"pooling": "last",
 * "normalize": true, "append_id": u}, the only pooling the runtime has. */
static tl_status read_embedding(tl_session *s) {
  const tl_slm_section *meta;
  tl_cbor_reader r;
  size_t n;
  bool last = false, normalize = false, append = false;
  if (tl_slm_find(&s->model.slm, TL_SLM_METADATA, &meta) != TL_OK ||
      tl_cbor_reader_init(&r, meta->data, meta->len, NULL) != TL_OK)
    return TL_ERR_INVALID_MODEL;
  if (tl_cbor_map_find(&r, "embedding") != TL_OK) return TL_OK;
  if (tl_cbor_expect_map(&r, &n) != TL_OK || n != 3) return TL_ERR_INVALID_MODEL;
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    size_t klen, vlen;
    if (tl_cbor_expect_text(&r, &k, &klen) != TL_OK) return TL_ERR_INVALID_MODEL;
    if (tl_cbor_text_is(k, klen, "pooling")) {
      if (tl_cbor_expect_text(&r, &v, &vlen) != TL_OK) return TL_ERR_INVALID_MODEL;
      last = tl_cbor_text_is(v, vlen, "last");
    } else if (tl_cbor_text_is(k, klen, "normalize")) {
      if (tl_cbor_expect_bool(&r, &normalize) != TL_OK) return TL_ERR_INVALID_MODEL;
    } else if (tl_cbor_text_is(k, klen, "append_id")) {
      uint64_t u;
      if (tl_cbor_expect_uint(&r, &u) != TL_OK || u >= s->qwen.cfg.vocab)
        return TL_ERR_INVALID_MODEL;
      s->embed_append = (uint32_t)u;
      append = true;
    } else {
      return TL_ERR_INVALID_MODEL;
    }
  }
  if (!last || !normalize || !append) return TL_ERR_UNSUPPORTED_FEATURE;
  s->embedding = true;
  return TL_OK;
}

void tl_memory_plan_text(const tl_memory_plan *p, char *buf, size_t cap) {
  snprintf(buf, cap,
           "weights %.1f MB, tokenizer+template %.1f MB, KV cache "
           "%.1f MB, forward scratch %.1f MB, logits %.1f MB, sampler %.1f MB; "
           "total %.1f MB",
           p->weights / 1e6, p->tokenizer / 1e6, p->kv_cache / 1e6,
           p->scratch / 1e6, p->logits / 1e6, p->sampler / 1e6, p->total / 1e6);
}

/* Room for the binding: the layer table and the rope frequencies. */
static size_t bind_bytes(const tl_slm_tensors *t) {
  /* every layer has 11 tensors, so n/11 + 1 bounds the layer count */
  return (t->n / 11 + 1) * sizeof(tl_qwen3_layer) + (64u << 10);
}

/* Binds the weights of the open s->model (path names it in err); on
 * failure everything is released. */
static tl_status bind_model(tl_session *s, const char *path, char *err,
                            size_t err_cap) {
  tl_status st;
  size_t bytes;
  if (!s->model.has_tensors) {
    snprintf(err, err_cap, "%s: a tokenizer-only artifact has no weights", path);
    st = TL_ERR_INVALID_MODEL;
    goto fail;
  }
  bytes = bind_bytes(&s->model.tensors);
  s->bind_mem = malloc(bytes);
  if (s->bind_mem == NULL) {
    snprintf(err, err_cap, "%s: out of memory", path);
    st = TL_ERR_OUT_OF_MEMORY;
    goto fail;
  }
  tl_arena_init(&s->bind_arena, s->bind_mem, bytes);
  st = tl_qwen3_load(&s->qwen, &s->model.slm, &s->model.tensors, &s->bind_arena);
  if (st == TL_OK) st = read_eos(s);
  if (st == TL_OK) st = read_gen_defaults(s);
  if (st == TL_OK) st = read_embedding(s);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: cannot bind the Qwen3 weights (%s)", path,
             tl_status_name(st));
    goto fail;
  }
  s->defined_ids = tl_tok_vocab_size(s->model.tok);
  s->max_token_bytes = 1;
  for (uint32_t id = 0; id < s->defined_ids; id++) {
    const uint8_t *b;
    size_t n = 0;
    if (tl_tok_token_bytes(s->model.tok, id, &b, &n) == TL_OK && n > s->max_token_bytes)
      s->max_token_bytes = n;
  }
  return TL_OK;
fail:
  tl_session_close(s);
  return st;
}

tl_status tl_session_open(tl_session *s, const char *path, char *err,
                          size_t err_cap) {
  tl_status st;
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", path);
  st = tl_native_model_open(path, &s->model, err, err_cap);
  if (st != TL_OK) return st;
  return bind_model(s, path, err, err_cap);
}

tl_status tl_session_open_shared(tl_session *s, const tl_native_model *m,
                                 const char *name, char *err, size_t err_cap) {
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", name);
  /* A shallow copy: the tokenizer, template and tensors stay m's, which
   * nothing here writes to. */
  s->model = *m;
  s->shared_model = true;
  return bind_model(s, name, err, err_cap);
}

tl_status tl_session_lane(tl_session *s, const tl_lane_options *o, char *err,
                          size_t err_cap) {
  return tl_native_lane_start(&s->lane, &s->qwen, o, err, err_cap);
}

tl_status tl_session_plan(tl_session *s, uint32_t context, size_t chunk,
                          char *err, size_t err_cap) {
  const tl_qwen3_config *c = &s->qwen.cfg;
  const tl_slm_section *data;
  if (context == 0) context = c->max_positions < 4096 ? c->max_positions : 4096;
  if (context > c->max_positions) {
    snprintf(err, err_cap, "context %u exceeds max_position_embeddings %u",
             context, c->max_positions);
    return TL_ERR_CONTEXT_EXCEEDED;
  }
  s->context = context;
  s->prefill_chunk = chunk ? chunk : PREFILL_CHUNK;
  tl_slm_find(&s->model.slm, TL_SLM_TENSOR_DATA, &data);
  s->plan.weights = data->len;
  s->plan.tokenizer = s->model.arena.cap;
  s->plan.kv_cache = tl_qwen3_cache_bytes(&s->qwen, context); /* the lane's (F-11) */
  s->plan.scratch = tl_qwen3_scratch_bound(&s->qwen, s->prefill_chunk, context);
  s->plan.logits = (uint64_t)c->vocab * sizeof(float);
  s->plan.sampler = tl_sampler_scratch_bytes(c->vocab);
  s->plan.total = s->plan.weights + s->plan.tokenizer + s->plan.kv_cache +
                  s->plan.scratch + s->plan.logits + s->plan.sampler;
  return TL_OK;
}

tl_status tl_session_allocate(tl_session *s, uint64_t mem_budget, char *err,
                              size_t err_cap) {
  /* the cache is one allocation of the arena, aligned to 64 twice */
  uint64_t arena_bytes = s->plan.kv_cache + s->plan.scratch + 256;
  tl_status st;
  if (mem_budget != 0 && s->plan.total > mem_budget) {
    char text[512];
    tl_memory_plan_text(&s->plan, text, sizeof text);
    snprintf(err, err_cap, "the plan needs %.1f MB, over --mem-budget %.1f MB: %s",
             s->plan.total / 1e6, mem_budget / 1e6, text);
    return TL_ERR_OUT_OF_MEMORY;
  }
  s->arena_mem = arena_bytes <= SIZE_MAX ? malloc((size_t)arena_bytes) : NULL;
  s->sampler_mem = malloc(s->plan.sampler);
  s->logits = malloc(s->plan.logits);
  if (s->arena_mem == NULL || s->sampler_mem == NULL || s->logits == NULL) {
    snprintf(err, err_cap, "out of memory for %.1f MB", s->plan.total / 1e6);
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_arena_init(&s->arena, s->arena_mem, (size_t)arena_bytes);
  tl_arena_init(&s->sampler_scratch, s->sampler_mem, s->plan.sampler);
  st = tl_qwen3_cache_init(&s->cache, &s->qwen, s->context, &s->arena);
  if (st != TL_OK) snprintf(err, err_cap, "%s: %s", s->path, tl_status_name(st));
  if (st == TL_OK)
    st = tl_native_lane_copy(&s->lane, &s->qwen, &s->model, s->path, err, err_cap);
  return st;
}

tl_status tl_session_artifact_id(tl_session *s, const uint8_t **id) {
  if (!s->has_artifact_id) {
    tl_status st = tl_native_model_artifact_id(&s->model, s->artifact_id);
    if (st != TL_OK) return st;
    s->has_artifact_id = true;
  }
  *id = s->artifact_id;
  return TL_OK;
}

uint64_t tl_session_slot_bytes(const tl_session *master) {
  return master->plan.kv_cache + 256 + master->plan.logits + master->plan.sampler;
}

tl_status tl_session_open_slot(tl_session *slot, const tl_session *master, char *err,
                               size_t err_cap) {
  uint64_t cache_bytes = master->plan.kv_cache + 256; /* aligned to 64 twice */
  tl_status st;
  *slot = *master; /* model, binding, lane: master's, never freed here */
  slot->slot = true;
  slot->grammar_mem = NULL; /* a slot constrains its own turns */
  slot->grammar_cap = 0;
  slot->grammar_matcher = NULL;
  slot->allow = NULL;
  slot->arena_mem = cache_bytes <= SIZE_MAX ? malloc((size_t)cache_bytes) : NULL;
  slot->sampler_mem = malloc(master->plan.sampler);
  slot->logits = malloc(master->plan.logits);
  if (slot->arena_mem == NULL || slot->sampler_mem == NULL || slot->logits == NULL) {
    snprintf(err, err_cap, "out of memory for a slot of %.1f MB",
             tl_session_slot_bytes(master) / 1e6);
    tl_session_close(slot);
    return TL_ERR_OUT_OF_MEMORY;
  }
  tl_arena_init(&slot->arena, slot->arena_mem, (size_t)cache_bytes);
  tl_arena_init(&slot->sampler_scratch, slot->sampler_mem, master->plan.sampler);
  st = tl_qwen3_cache_init(&slot->cache, &slot->qwen, slot->context, &slot->arena);
  if (st != TL_OK) {
    snprintf(err, err_cap, "%s: %s", slot->path, tl_status_name(st));
    tl_session_close(slot);
  }
  return st;
}

tl_status tl_session_grammar_memory(tl_session *s, size_t bytes) {
  if (s->allow == NULL) {
    s->allow = calloc((s->qwen.cfg.vocab + 63) / 64, sizeof *s->allow);
    if (s->allow == NULL) return TL_ERR_OUT_OF_MEMORY;
  }
  if (s->grammar_cap < bytes) {
    free(s->grammar_mem);
    s->grammar_matcher = NULL;
    s->grammar_mem = malloc(bytes);
    s->grammar_cap = s->grammar_mem != NULL ? bytes : 0;
    if (s->grammar_mem == NULL) return TL_ERR_OUT_OF_MEMORY;
  }
  return TL_OK;
}

void tl_session_close(tl_session *s) {
  free(s->grammar_mem);
  free(s->allow);
  s->grammar_mem = NULL;
  s->allow = NULL;
  s->grammar_cap = 0;
  s->grammar_matcher = NULL;
  if (s->slot) {
    free(s->arena_mem);
    free(s->sampler_mem);
    free(s->logits);
    s->arena_mem = s->sampler_mem = NULL;
    s->logits = NULL;
    return;
  }
  tl_native_lane_stop(&s->lane);
  if (!s->shared_model) tl_native_model_close(&s->model);
  free(s->bind_mem);
  free(s->arena_mem);
  free(s->sampler_mem);
  free(s->logits);
  s->bind_mem = s->arena_mem = s->sampler_mem = NULL;
  s->logits = NULL;
}
