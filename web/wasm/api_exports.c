/* The wasm32 API modules' exports (build/web/tinylm-*.wasm; docs/web.md):
 * the public API of include/tinylm.h under its own names, over integers,
 * handles and offsets into this module's memory, plus malloc/free
 * (malloc.c) for the caller's buffers.
 *
 * Every pointer and length the caller passes is checked against the
 * memory before the API sees it: inputs must lie inside the memory,
 * outputs inside the heap (past the module's stack and data), else
 * TL_ERR_BOUNDS with the error record saying which argument — never a
 * trap, and the module never reads or writes outside its memory.
 * tl_model_open_file (no files) and tl_model_open_reader (no function
 * pointers across the boundary) are not exported; generation callbacks
 * are the host's imports below, not pointers in the parameters. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "abi.h"
#include "tinylm.h"


/* Streaming: the generation's handle with each id, visible bytes, prefill
 * progress; a nonzero return cancels (as the C callbacks). */
IMPORT(tl_host_token) int tl_host_token(uint32_t gen, uint32_t id);
IMPORT(tl_host_text) int tl_host_text(uint32_t gen, const uint8_t *bytes, size_t len);
IMPORT(tl_host_prefill) int tl_host_prefill(uint32_t gen, size_t done, size_t total);

/* The layouts the JS loader reads and writes (web/tinylm.js; wasm32:
 * pointers and size_t are 4 bytes, uint64_t and double 8-aligned). */
AT(tl_error, status, 0);
AT(tl_error, stage, 4);
AT(tl_error, layer, 28);
AT(tl_error, position, 32);
AT(tl_error, index, 40);
AT(tl_error, kind, 48);
AT(tl_error, line, 72);
AT(tl_error, column, 76);
AT(tl_error, message, 80);
_Static_assert(sizeof(tl_error) == 592, "tl_error");
AT(tl_session_options, lane, 0);
AT(tl_session_options, threads, 4);
AT(tl_session_options, context, 8);
AT(tl_session_options, flags, 12);
AT(tl_session_options, mem_budget, 16);
_Static_assert(sizeof(tl_session_options) == 24, "tl_session_options");
AT(tl_preflight_plan, context, 0);
AT(tl_preflight_plan, weights, 8);
AT(tl_preflight_plan, total, 56);
_Static_assert(sizeof(tl_preflight_plan) == 64, "tl_preflight_plan");
AT(tl_generation_params, text, 0);
AT(tl_generation_params, text_len, 4);
AT(tl_generation_params, messages_json, 8);
AT(tl_generation_params, messages_len, 12);
AT(tl_generation_params, ids, 16);
AT(tl_generation_params, n_ids, 20);
AT(tl_generation_params, given, 24);
AT(tl_generation_params, temperature, 32);
AT(tl_generation_params, top_p, 40);
AT(tl_generation_params, min_p, 48);
AT(tl_generation_params, repeat_penalty, 56);
AT(tl_generation_params, top_k, 64);
AT(tl_generation_params, repeat_window, 68);
AT(tl_generation_params, seed, 72);
AT(tl_generation_params, turn, 80);
AT(tl_generation_params, max_tokens, 84);
AT(tl_generation_params, stop_strings, 88);
AT(tl_generation_params, stop_lens, 92);
AT(tl_generation_params, n_stops, 96);
AT(tl_generation_params, flags, 100);
AT(tl_generation_params, on_token, 104);
AT(tl_generation_params, ctx, 120);
AT(tl_generation_params, grammar, 124);
AT(tl_generation_params, think_budget, 128);
AT(tl_generation_params, frequency_penalty, 136);
AT(tl_generation_params, presence_penalty, 144);
AT(tl_generation_params, bias_ids, 152);
AT(tl_generation_params, bias, 156);
AT(tl_generation_params, n_bias, 160);
_Static_assert(sizeof(tl_generation_params) == 168, "tl_generation_params");
/* What a caller that predates the structured-output fields passes (the
 * JS loader's 128 bytes): the rest is read only with TL_GENERATE_GRAMMAR,
 * and past the grammar's fields (the loader's 136 bytes) only with
 * TL_GENERATE_PENALTIES. */
#define GEN_PARAMS_BASE 124u
#define GEN_PARAMS_GRAMMAR_END 136u
AT(tl_generation_result, ids, 0);
AT(tl_generation_result, n_ids, 4);
AT(tl_generation_result, text, 8);
AT(tl_generation_result, text_len, 12);
AT(tl_generation_result, raw, 16);
AT(tl_generation_result, raw_len, 20);
AT(tl_generation_result, stop, 24);
AT(tl_generation_result, prompt_tokens, 28);
AT(tl_generation_result, position, 32);
AT(tl_generation_result, prefill_us, 40);
AT(tl_generation_result, decode_us, 48);
AT(tl_generation_result, receipt, 56);
AT(tl_generation_result, receipt_len, 60);
AT(tl_generation_result, receipt_id, 64);
_Static_assert(sizeof(tl_generation_result) == 136, "tl_generation_result");

/* tl_wasm_span_ok, where NULL (offset 0) passes: the API refuses a NULL
 * it cannot take with its own typed error (invalid_argument). */
static bool span_ok(const void *p, size_t n, bool output) {
  return p == NULL || tl_wasm_span_ok(p, n, output);
}

/* n elements of size bytes. */
static bool array_ok(const void *p, size_t n, size_t size, bool output) {
  return (n == 0 || n <= SIZE_MAX / size) && span_ok(p, n * size, output);
}

/* A NUL-terminated string inside the memory. */
static bool cstr_ok(const char *s) {
  uintptr_t a = (uintptr_t)s, mem = tl_wasm_memory_bytes();
  if (s == NULL || a >= mem) return false;
  return memchr(s, 0, mem - a) != NULL;
}

/* A refusal at the boundary is this module's last error until the next
 * call goes through to the API, which records its own: tl_error_detail
 * with TL_NO_HANDLE reports whichever is later. */
static tl_error refusal;
static bool refused;

static tl_status refuse(tl_status st, const char *what) {
  size_t n = strlen(what);
  memset(&refusal, 0, sizeof refusal);
  refusal.status = st;
  refusal.layer = -1;
  if (n >= sizeof refusal.message) n = sizeof refusal.message - 1;
  memcpy(refusal.message, what, n);
  refused = true;
  return st;
}

static tl_status through(tl_status st) {
  refused = false;
  return st;
}

static tl_status bounds(const char *what) { return refuse(TL_ERR_BOUNDS, what); }

#define CHECK(cond, what) \
  do {                    \
    if (!(cond)) return bounds(what); \
  } while (0)

EXPORT(tl_abi_version) uint32_t w_abi_version(void);
uint32_t w_abi_version(void) { return tl_abi_version(); }

EXPORT(tl_api_init) tl_status w_api_init(uint32_t abi);
tl_status w_api_init(uint32_t abi) { return through(tl_api_init(abi)); }

EXPORT(tl_status_name) const char *w_status_name(tl_status st);
const char *w_status_name(tl_status st) { return tl_status_name(st); }

EXPORT(tl_version) const char *w_version(void);
const char *w_version(void) { return tl_version(); }

EXPORT(tl_error_detail) tl_status w_error_detail(uint32_t h, tl_error *out);
tl_status w_error_detail(uint32_t h, tl_error *out) {
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  if (!span_ok(out, sizeof *out, true)) return TL_ERR_BOUNDS;
  if (h == TL_NO_HANDLE && refused) {
    memcpy(out, &refusal, sizeof refusal);
    return TL_OK;
  }
  return tl_error_detail(h, out);
}

EXPORT(tl_model_open_bytes)
tl_status w_model_open_bytes(const void *data, size_t len, uint32_t flags, tl_model_handle *out);
tl_status w_model_open_bytes(const void *data, size_t len, uint32_t flags, tl_model_handle *out) {
  CHECK(span_ok(data, len, false), "tl_model_open_bytes: data outside the memory");
  CHECK(span_ok(out, sizeof *out, true), "tl_model_open_bytes: out outside the heap");
  return through(tl_model_open_bytes(data, len, flags, out));
}

EXPORT(tl_model_close) tl_status w_model_close(tl_model_handle m);
tl_status w_model_close(tl_model_handle m) { return through(tl_model_close(m)); }

EXPORT(tl_model_artifact_id) tl_status w_model_artifact_id(tl_model_handle m, uint8_t *id);
tl_status w_model_artifact_id(tl_model_handle m, uint8_t *id) {
  CHECK(span_ok(id, 32, true), "tl_model_artifact_id: id outside the heap");
  return through(tl_model_artifact_id(m, id));
}

EXPORT(tl_model_preflight)
tl_status w_model_preflight(tl_model_handle m, const tl_session_options *o, tl_preflight_plan *out);
tl_status w_model_preflight(tl_model_handle m, const tl_session_options *o,
                            tl_preflight_plan *out) {
  CHECK(span_ok(o, o ? sizeof *o : 0, false), "tl_model_preflight: opts outside the memory");
  CHECK(span_ok(out, sizeof *out, true), "tl_model_preflight: out outside the heap");
  return through(tl_model_preflight(m, o, out));
}

EXPORT(tl_session_new)
tl_status w_session_new(tl_model_handle m, const tl_session_options *o, tl_session_handle *out);
tl_status w_session_new(tl_model_handle m, const tl_session_options *o, tl_session_handle *out) {
  CHECK(span_ok(o, o ? sizeof *o : 0, false), "tl_session_new: opts outside the memory");
  CHECK(span_ok(out, sizeof *out, true), "tl_session_new: out outside the heap");
  return through(tl_session_new(m, o, out));
}

EXPORT(tl_session_free) tl_status w_session_free(tl_session_handle s);
tl_status w_session_free(tl_session_handle s) { return through(tl_session_free(s)); }

EXPORT(tl_session_reset) tl_status w_session_reset(tl_session_handle s);
tl_status w_session_reset(tl_session_handle s) { return through(tl_session_reset(s)); }

EXPORT(tl_session_position) tl_status w_session_position(tl_session_handle s, uint32_t *pos);
tl_status w_session_position(tl_session_handle s, uint32_t *pos) {
  CHECK(span_ok(pos, sizeof *pos, true), "tl_session_position: position outside the heap");
  return through(tl_session_position(s, pos));
}

EXPORT(tl_model_render)
tl_status w_model_render(tl_model_handle m, const void *json, size_t json_len, void *out,
                         size_t cap, size_t *len, int *add_gen);
tl_status w_model_render(tl_model_handle m, const void *json, size_t json_len, void *out,
                         size_t cap, size_t *len, int *add_gen) {
  CHECK(span_ok(json, json_len, false), "tl_model_render: json outside the memory");
  CHECK(span_ok(out, cap, true), "tl_model_render: out outside the heap");
  CHECK(span_ok(len, sizeof *len, true), "tl_model_render: len outside the heap");
  CHECK(span_ok(add_gen, add_gen ? sizeof *add_gen : 0, true),
        "tl_model_render: add_gen outside the heap");
  return through(tl_model_render(m, json, json_len, out, cap, len, add_gen));
}

EXPORT(tl_model_encode)
tl_status w_model_encode(tl_model_handle m, const void *text, size_t len, uint32_t *ids,
                         size_t cap, size_t *n);
tl_status w_model_encode(tl_model_handle m, const void *text, size_t len, uint32_t *ids,
                         size_t cap, size_t *n) {
  CHECK(span_ok(text, len, false), "tl_model_encode: text outside the memory");
  CHECK(array_ok(ids, cap, sizeof *ids, true), "tl_model_encode: ids outside the heap");
  CHECK(span_ok(n, sizeof *n, true), "tl_model_encode: n outside the heap");
  return through(tl_model_encode(m, text, len, ids, cap, n));
}

EXPORT(tl_model_decode)
tl_status w_model_decode(tl_model_handle m, const uint32_t *ids, size_t n, uint32_t mode,
                         void *out, size_t cap, size_t *len);
tl_status w_model_decode(tl_model_handle m, const uint32_t *ids, size_t n, uint32_t mode,
                         void *out, size_t cap, size_t *len) {
  CHECK(array_ok(ids, n, sizeof *ids, false), "tl_model_decode: ids outside the memory");
  CHECK(span_ok(out, cap, true), "tl_model_decode: out outside the heap");
  CHECK(span_ok(len, sizeof *len, true), "tl_model_decode: len outside the heap");
  return through(tl_model_decode(m, ids, n, mode, out, cap, len));
}

EXPORT(tl_generation_new) tl_status w_generation_new(tl_session_handle s, tl_generation_handle *out);
tl_status w_generation_new(tl_session_handle s, tl_generation_handle *out) {
  CHECK(span_ok(out, sizeof *out, true), "tl_generation_new: out outside the heap");
  return through(tl_generation_new(s, out));
}

/* The C callbacks, forwarding to the host with the generation's handle. */
static int cb_token(void *ctx, uint32_t id) { return tl_host_token((uint32_t)(uintptr_t)ctx, id); }
static int cb_text(void *ctx, const uint8_t *bytes, size_t len) {
  return tl_host_text((uint32_t)(uintptr_t)ctx, bytes, len);
}
static int cb_prefill(void *ctx, size_t done, size_t total) {
  return tl_host_prefill((uint32_t)(uintptr_t)ctx, done, total);
}

/* params as tinylm.h lays it out, with every callback field 0 (the
 * module installs the host's); each prompt and stop string is checked. */
EXPORT(tl_generation_run) tl_status w_generation_run(tl_generation_handle g,
                                                      const tl_generation_params *params);
tl_status w_generation_run(tl_generation_handle g, const tl_generation_params *params) {
  tl_generation_params p;
  if (params == NULL) return through(tl_generation_run(g, NULL));
  CHECK(span_ok(params, GEN_PARAMS_BASE, false), "tl_generation_run: params outside the memory");
  memset(&p, 0, sizeof p);
  memcpy(&p, params, GEN_PARAMS_BASE);
  if (p.flags & (TL_GENERATE_GRAMMAR | TL_GENERATE_PENALTIES)) {
    size_t end = p.flags & TL_GENERATE_PENALTIES ? sizeof *params : GEN_PARAMS_GRAMMAR_END;
    CHECK(span_ok(params, end, false), "tl_generation_run: params outside the memory");
    memcpy(&p, params, end);
  }
  if (p.flags & TL_GENERATE_PENALTIES) {
    CHECK(array_ok(p.bias_ids, p.n_bias, sizeof *p.bias_ids, false),
          "tl_generation_run: bias_ids outside the memory");
    CHECK(array_ok(p.bias, p.n_bias, sizeof *p.bias, false),
          "tl_generation_run: bias outside the memory");
  }
  CHECK(span_ok(p.text, p.text_len, false), "tl_generation_run: text outside the memory");
  CHECK(span_ok(p.messages_json, p.messages_len, false),
        "tl_generation_run: messages_json outside the memory");
  CHECK(array_ok(p.ids, p.n_ids, sizeof *p.ids, false),
        "tl_generation_run: ids outside the memory");
  CHECK(array_ok(p.stop_strings, p.n_stops, sizeof *p.stop_strings, false),
        "tl_generation_run: stop_strings outside the memory");
  CHECK(array_ok(p.stop_lens, p.n_stops, sizeof *p.stop_lens, false),
        "tl_generation_run: stop_lens outside the memory");
  for (size_t i = 0; i < p.n_stops && p.stop_strings != NULL; i++)
    CHECK(p.stop_strings[i] == NULL ||
              (p.stop_lens ? span_ok(p.stop_strings[i], p.stop_lens[i], false)
                           : cstr_ok(p.stop_strings[i])),
          "tl_generation_run: a stop string outside the memory");
  if (p.on_token != NULL || p.on_text != NULL || p.on_prefill != NULL || p.on_choice != NULL ||
      p.ctx != NULL)
    return refuse(TL_ERR_INVALID_ARGUMENT,
                          "tl_generation_run: callbacks are the host's imports; the params' "
                          "callback fields must be 0");
  p.on_token = cb_token;
  p.on_text = cb_text;
  p.on_prefill = cb_prefill;
  p.ctx = (void *)(uintptr_t)g;
  return through(tl_generation_run(g, &p));
}

EXPORT(tl_grammar_compile)
tl_status w_grammar_compile(uint32_t kind, const void *text, size_t len, tl_grammar_handle *out);
tl_status w_grammar_compile(uint32_t kind, const void *text, size_t len, tl_grammar_handle *out) {
  CHECK(span_ok(text, len, false), "tl_grammar_compile: text outside the memory");
  CHECK(span_ok(out, sizeof *out, true), "tl_grammar_compile: out outside the heap");
  return through(tl_grammar_compile(kind, text, len, out));
}

EXPORT(tl_grammar_free) tl_status w_grammar_free(tl_grammar_handle h);
tl_status w_grammar_free(tl_grammar_handle h) { return through(tl_grammar_free(h)); }

EXPORT(tl_grammar_get_digest)
tl_status w_grammar_get_digest(tl_grammar_handle h, uint8_t *digest);
tl_status w_grammar_get_digest(tl_grammar_handle h, uint8_t *digest) {
  CHECK(span_ok(digest, 32, true), "tl_grammar_get_digest: digest outside the heap");
  return through(tl_grammar_get_digest(h, digest));
}

EXPORT(tl_generation_cancel) tl_status w_generation_cancel(tl_generation_handle g);
tl_status w_generation_cancel(tl_generation_handle g) { return through(tl_generation_cancel(g)); }

EXPORT(tl_generation_result_get)
tl_status w_generation_result_get(tl_generation_handle g, tl_generation_result *out);
tl_status w_generation_result_get(tl_generation_handle g, tl_generation_result *out) {
  CHECK(span_ok(out, sizeof *out, true), "tl_generation_result_get: out outside the heap");
  return through(tl_generation_result_get(g, out));
}

EXPORT(tl_generation_free) tl_status w_generation_free(tl_generation_handle g);
tl_status w_generation_free(tl_generation_handle g) { return through(tl_generation_free(g)); }

EXPORT(tl_session_observe)
tl_status w_session_observe(tl_session_handle s, const void *text, size_t text_len,
                            const uint32_t *ids, size_t n_ids, void *out, size_t cap, size_t *len);
tl_status w_session_observe(tl_session_handle s, const void *text, size_t text_len,
                            const uint32_t *ids, size_t n_ids, void *out, size_t cap,
                            size_t *len) {
  CHECK(span_ok(text, text_len, false), "tl_session_observe: text outside the memory");
  CHECK(array_ok(ids, n_ids, sizeof *ids, false), "tl_session_observe: ids outside the memory");
  CHECK(span_ok(out, cap, true), "tl_session_observe: out outside the heap");
  CHECK(span_ok(len, sizeof *len, true), "tl_session_observe: len outside the heap");
  return through(tl_session_observe(s, text, text_len, ids, n_ids, out, cap, len));
}
