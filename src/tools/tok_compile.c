#include "tok_compile.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "tok/tokenizer.h"
#include "tool_msg.h"
#include "input_snapshot.h"
#include "utf8.h"

/* The Qwen2 pre-tokenizer pattern, byte for byte as tokenizer.json holds
 * it; it is the only Split pattern the runtime implements. */
static const char qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * other 68 bytes to U+0100.. in byte order. */
static bool byte_is_printable(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
         (b >= 0xAE && b <= 0xFF);
}

uint32_t tl_byte_level_char(uint8_t byte) {
  unsigned shifted = 0;
  if (byte_is_printable(byte)) return byte;
  for (unsigned b = 0; b < byte; b++)
    if (!byte_is_printable(b)) shifted++;
  return 256 + shifted;
}

int tl_byte_level_byte(uint32_t cp) {
  if (cp < 256) return byte_is_printable(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  for (unsigned b = 0, shifted = 0; b < 256; b++) {
    if (byte_is_printable(b)) continue;
    if (256 + shifted == cp) return (int)b;
    shifted++;
  }
  return -1;
}

typedef struct ctx {
  const char *file; /* for messages */
  char *err;
  size_t err_cap;
} ctx;

static tl_status refuse(ctx *c, tl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tl_status refuse(ctx *c, tl_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tl_tool_vmsg(c->err, c->err_cap, c->file, fmt, ap);
  va_end(ap);
  return st;
}

/* The object must have exactly the keys in `allowed` (NULL-terminated). */
static tl_status only_keys(ctx *c, json_t *obj, const char *where,
                           const char *const *allowed) {
  const char *key;
  json_t *value;
  if (!json_is_object(obj))
    return refuse(c, TL_ERR_INVALID_MODEL, "%s: expected an object", where);
  json_object_foreach(obj, key, value) {
    bool ok = false;
    (void)value;
    for (size_t i = 0; allowed[i] != NULL; i++)
      if (strcmp(key, allowed[i]) == 0) ok = true;
    if (!ok)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "%s.%s: unknown field (not in the qwen2-byte-bpe profile)",
                    where, key);
  }
  return TL_OK;
}

static tl_status want_string(ctx *c, json_t *obj, const char *where,
                             const char *key, const char *want) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "%s.%s: must be \"%s\" (the only value the runtime "
                  "implements)",
                  where, key, want);
  return TL_OK;
}

static tl_status want_bool(ctx *c, json_t *obj, const char *where,
                           const char *key, bool want) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_boolean(v) || json_is_true(v) != want)
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "%s.%s: must be %s (the only value the runtime implements)",
                  where, key, want ? "true" : "false");
  return TL_OK;
}

/* Absent, null, or equal to want. */
static tl_status want_null_or_string(ctx *c, json_t *obj, const char *where,
                                     const char *key, const char *want) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL || json_is_null(v)) return TL_OK;
  return want_string(c, obj, where, key, want);
}

static tl_status want_null(ctx *c, json_t *obj, const char *where,
                           const char *key) {
  json_t *v = json_object_get(obj, key);
  if (v != NULL && !json_is_null(v))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "%s.%s: must be null (not implemented)", where, key);
  return TL_OK;
}

/* ByteLevel(add_prefix_space=false, trim_offsets=false, use_regex=false),
 * as pre-tokenizer, post-processor or decoder. */
static tl_status check_byte_level(ctx *c, json_t *obj, const char *where) {
  static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets",
                                     "use_regex", NULL};
  tl_status st = only_keys(c, obj, where, keys);
  if (st == TL_OK) st = want_string(c, obj, where, "type", "ByteLevel");
  if (st == TL_OK) st = want_bool(c, obj, where, "add_prefix_space", false);
  if (st == TL_OK) st = want_bool(c, obj, where, "trim_offsets", false);
  if (st == TL_OK) st = want_bool(c, obj, where, "use_regex", false);
  return st;
}

/* ByteLevel (nothing appended), or TemplateProcessing whose single
 * template is "$A:0 X:0" with X one special token of one id: *append is
 * that id (else -1). The pair template is not used (inputs are single
 * texts) but must be an array. */
static tl_status check_post_processor(ctx *c, json_t *pp, int64_t *append) {
  static const char *const keys[] = {"type", "single", "pair", "special_tokens", NULL};
  static const char *const spec_keys[] = {"id", "ids", "tokens", NULL};
  const char *w = "post_processor";
  json_t *single, *seq, *tok, *name, *spec, *ids;
  tl_status st;
  *append = -1;
  if (!json_is_string(json_object_get(pp, "type")) ||
      strcmp(json_string_value(json_object_get(pp, "type")), "TemplateProcessing") != 0)
    return check_byte_level(c, pp, w);
  if ((st = only_keys(c, pp, w, keys)) != TL_OK) return st;
  single = json_object_get(pp, "single");
  seq = json_object_get(json_array_get(single, 0), "Sequence");
  tok = json_object_get(json_array_get(single, 1), "SpecialToken");
  name = json_object_get(tok, "id");
  if (json_array_size(single) != 2 || json_object_size(json_array_get(single, 0)) != 1 ||
      json_object_size(json_array_get(single, 1)) != 1 || json_object_size(seq) != 2 ||
      !json_is_string(json_object_get(seq, "id")) ||
      strcmp(json_string_value(json_object_get(seq, "id")), "A") != 0 ||
      !json_is_integer(json_object_get(seq, "type_id")) ||
      json_integer_value(json_object_get(seq, "type_id")) != 0 || json_object_size(tok) != 2 ||
      !json_is_string(name) || !json_is_integer(json_object_get(tok, "type_id")) ||
      json_integer_value(json_object_get(tok, "type_id")) != 0)
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "%s.single: must be [$A, one special token] (the only template the "
                  "runtime implements)", w);
  if (!json_is_array(json_object_get(pp, "pair")))
    return refuse(c, TL_ERR_INVALID_MODEL, "%s.pair: expected an array", w);
  spec = json_object_get(json_object_get(pp, "special_tokens"), json_string_value(name));
  if (json_object_size(json_object_get(pp, "special_tokens")) != 1 ||
      (st = only_keys(c, spec, "post_processor.special_tokens", spec_keys)) != TL_OK)
    return st != TL_OK ? st
                       : refuse(c, TL_ERR_INVALID_MODEL,
                                "%s.special_tokens: must describe exactly the appended token", w);
  ids = json_object_get(spec, "ids");
  if (!json_equal(json_object_get(spec, "id"), name) || json_array_size(ids) != 1 ||
      !json_is_integer(json_array_get(ids, 0)) || json_integer_value(json_array_get(ids, 0)) < 0 ||
      json_array_size(json_object_get(spec, "tokens")) != 1 ||
      !json_equal(json_array_get(json_object_get(spec, "tokens"), 0), name))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "%s.special_tokens[\"%s\"]: must be one token of one id", w,
                  json_string_value(name));
  *append = json_integer_value(json_array_get(ids, 0));
  return TL_OK;
}

static tl_status check_pipeline(ctx *c, json_t *root, int64_t *append) {
  static const char *const top[] = {"version",        "truncation",
                                    "padding",        "added_tokens",
                                    "normalizer",     "pre_tokenizer",
                                    "post_processor", "decoder",
                                    "model",          NULL};
  static const char *const seq_keys[] = {"type", "pretokenizers", NULL};
  static const char *const split_keys[] = {"type", "pattern", "behavior",
                                           "invert", NULL};
  static const char *const pattern_keys[] = {"Regex", NULL};
  static const char *const nfc_keys[] = {"type", NULL};
  json_t *pre, *list, *split, *pattern;
  tl_status st = only_keys(c, root, "(root)", top);
  if (st == TL_OK) st = want_string(c, root, "(root)", "version", "1.0");
  if (st == TL_OK) st = want_null(c, root, "(root)", "truncation");
  if (st == TL_OK) st = want_null(c, root, "(root)", "padding");
  if (st != TL_OK) return st;
  st =
      only_keys(c, json_object_get(root, "normalizer"), "normalizer", nfc_keys);
  if (st == TL_OK)
    st = want_string(c, json_object_get(root, "normalizer"), "normalizer",
                     "type", "NFC");
  if (st != TL_OK) return st;
  pre = json_object_get(root, "pre_tokenizer");
  st = only_keys(c, pre, "pre_tokenizer", seq_keys);
  if (st == TL_OK)
    st = want_string(c, pre, "pre_tokenizer", "type", "Sequence");
  if (st != TL_OK) return st;
  list = json_object_get(pre, "pretokenizers");
  if (!json_is_array(list) || json_array_size(list) != 2)
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "pre_tokenizer.pretokenizers: must be [Split, ByteLevel]");
  split = json_array_get(list, 0);
  st = only_keys(c, split, "pre_tokenizer.pretokenizers[0]", split_keys);
  if (st == TL_OK)
    st = want_string(c, split, "pre_tokenizer.pretokenizers[0]", "type",
                     "Split");
  if (st == TL_OK)
    st = want_string(c, split, "pre_tokenizer.pretokenizers[0]", "behavior",
                     "Isolated");
  if (st == TL_OK)
    st = want_bool(c, split, "pre_tokenizer.pretokenizers[0]", "invert", false);
  if (st != TL_OK) return st;
  pattern = json_object_get(split, "pattern");
  st = only_keys(c, pattern, "pre_tokenizer.pretokenizers[0].pattern",
                 pattern_keys);
  if (st == TL_OK &&
      (!json_is_string(json_object_get(pattern, "Regex")) ||
       strcmp(json_string_value(json_object_get(pattern, "Regex")),
              qwen2_pattern) != 0))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "pre_tokenizer.pretokenizers[0].pattern.Regex: not the Qwen2 "
                  "pattern (the only one the runtime implements)");
  if (st == TL_OK)
    st = check_byte_level(c, json_array_get(list, 1),
                          "pre_tokenizer.pretokenizers[1]");
  if (st == TL_OK)
    st = check_post_processor(c, json_object_get(root, "post_processor"), append);
  if (st == TL_OK)
    st = check_byte_level(c, json_object_get(root, "decoder"), "decoder");
  return st;
}

static tl_status check_model_options(ctx *c, json_t *model) {
  static const char *const keys[] = {"type",
                                     "dropout",
                                     "unk_token",
                                     "continuing_subword_prefix",
                                     "end_of_word_suffix",
                                     "fuse_unk",
                                     "byte_fallback",
                                     "ignore_merges",
                                     "vocab",
                                     "merges",
                                     NULL};
  tl_status st = only_keys(c, model, "model", keys);
  if (st == TL_OK) st = want_string(c, model, "model", "type", "BPE");
  if (st == TL_OK) st = want_null(c, model, "model", "dropout");
  if (st == TL_OK) st = want_null(c, model, "model", "unk_token");
  if (st == TL_OK)
    st =
        want_null_or_string(c, model, "model", "continuing_subword_prefix", "");
  if (st == TL_OK)
    st = want_null_or_string(c, model, "model", "end_of_word_suffix", "");
  if (st == TL_OK) st = want_bool(c, model, "model", "fuse_unk", false);
  if (st == TL_OK) st = want_bool(c, model, "model", "byte_fallback", false);
  if (st == TL_OK) st = want_bool(c, model, "model", "ignore_merges", false);
  return st;
}

/* A growable byte buffer. */
typedef struct buf {
  uint8_t *p;
  size_t len, cap;
} buf;

static bool buf_reserve(buf *b, size_t extra) {
  size_t need = b->len + extra, cap = b->cap ? b->cap : 1024;
  uint8_t *q;
  if (need < b->len) return false;
  if (need <= b->cap) return true;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) return false;
    cap *= 2;
  }
  q = realloc(b->p, cap);
  if (q == NULL) return false;
  b->p = q;
  b->cap = cap;
  return true;
}

static bool buf_put(buf *b, const void *data, size_t n) {
  if (!buf_reserve(b, n)) return false;
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  return true;
}

static bool buf_u32(buf *b, uint32_t v) {
  uint8_t le[4];
  tl_store_le32(le, v);
  return buf_put(b, le, 4);
}

/* Undoes the byte-level map: token text (UTF-8 of byte-level chars) to raw
 * bytes. */
static tl_status unmap_token(ctx *c, const char *text, buf *out) {
  size_t len = strlen(text), pos = 0;
  uint32_t cp;
  if (len == 0)
    return refuse(c, TL_ERR_INVALID_MODEL, "model.vocab: empty token string");
  while (pos < len) {
    int byte;
    if (tl_utf8_next((const uint8_t *)text, len, &pos, &cp) != TL_OK)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "model.vocab: token is not valid UTF-8");
    byte = tl_byte_level_byte(cp);
    if (byte < 0)
      return refuse(c, TL_ERR_INVALID_MODEL,
                    "model.vocab: token \"%s\" has U+%04X, which is not a "
                    "ByteLevel character",
                    text, (unsigned)cp);
    if (!buf_reserve(out, 1))
      return refuse(c, TL_ERR_OUT_OF_MEMORY, "out of memory");
    out->p[out->len++] = (uint8_t)byte;
  }
  return TL_OK;
}

/* Open-addressing set of merge pairs, to refuse duplicates. */
typedef struct pair_set {
  uint64_t *slots; /* 0 = empty; keys are (left+1) << 32 | (right+1) */
  size_t mask;
} pair_set;

static bool pair_set_add(pair_set *s, uint32_t left, uint32_t right) {
  uint64_t key = (uint64_t)(left + 1u) << 32 | (right + 1u);
  size_t i = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & s->mask;
  while (s->slots[i] != 0) {
    if (s->slots[i] == key) return false;
    i = (i + 1) & s->mask;
  }
  s->slots[i] = key;
  return true;
}

typedef struct compiler {
  ctx c;
  uint32_t n_tokens;
  buf bytes;  /* token bytes in id order */
  buf merges; /* {left, right, result} records */
  buf added;  /* {id, flags} records */
  uint32_t n_merges, n_added;
  uint8_t **token_ptr; /* per id: bytes while building (before packing) */
  size_t *token_len;
} compiler;

static tl_status set_token(compiler *k, uint32_t id, const uint8_t *p,
                           size_t n) {
  if (id >= k->n_tokens)
    return refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "token id %u is outside 0..%u (ids must be dense)",
                  (unsigned)id, (unsigned)(k->n_tokens - 1));
  if (k->token_ptr[id] != NULL)
    return refuse(&k->c, TL_ERR_INVALID_MODEL, "token id %u is defined twice",
                  (unsigned)id);
  k->token_ptr[id] = malloc(n);
  if (k->token_ptr[id] == NULL)
    return refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(k->token_ptr[id], p, n);
  k->token_len[id] = n;
  return TL_OK;
}

static tl_status vocab_id(compiler *k, json_t *vocab, const char *token,
                          const char *where, uint32_t *id) {
  json_t *v = json_object_get(vocab, token);
  if (!json_is_integer(v))
    return refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "%s: \"%s\" is not in model.vocab", where, token);
  *id = (uint32_t)json_integer_value(v);
  return TL_OK;
}

static tl_status compile_merges(compiler *k, json_t *model) {
  json_t *vocab = json_object_get(model, "vocab");
  json_t *merges = json_object_get(model, "merges"), *m;
  size_t i;
  pair_set set;
  tl_status st = TL_OK;
  char where[64];
  if (!json_is_array(merges))
    return refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "model.merges: expected an array");
  set.mask = 1;
  while (set.mask < 2 * json_array_size(merges) + 1) set.mask <<= 1;
  set.slots = calloc(set.mask, sizeof *set.slots);
  set.mask -= 1;
  if (set.slots == NULL)
    return refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  json_array_foreach(merges, i, m) {
    char left[1024], right[1024], joined[2048];
    uint32_t l = 0, r = 0, res = 0;
    snprintf(where, sizeof where, "model.merges[%zu]", i);
    if (json_is_string(m)) {
      /* "a b": byte-level tokens never hold a literal space. */
      const char *s = json_string_value(m), *sp = strchr(s, ' ');
      if (sp == NULL || strchr(sp + 1, ' ') != NULL ||
          (size_t)(sp - s) >= sizeof left || strlen(sp + 1) >= sizeof right) {
        st = refuse(&k->c, TL_ERR_INVALID_MODEL, "%s: expected \"left right\"",
                    where);
        break;
      }
      memcpy(left, s, (size_t)(sp - s));
      left[sp - s] = '\0';
      strcpy(right, sp + 1);
    } else if (json_is_array(m) && json_array_size(m) == 2 &&
               json_is_string(json_array_get(m, 0)) &&
               json_is_string(json_array_get(m, 1)) &&
               strlen(json_string_value(json_array_get(m, 0))) < sizeof left &&
               strlen(json_string_value(json_array_get(m, 1))) < sizeof right) {
      strcpy(left, json_string_value(json_array_get(m, 0)));
      strcpy(right, json_string_value(json_array_get(m, 1)));
    } else {
      st = refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "%s: expected \"left right\" or [left, right]", where);
      break;
    }
    snprintf(joined, sizeof joined, "%s%s", left, right);
    if ((st = vocab_id(k, vocab, left, where, &l)) != TL_OK ||
        (st = vocab_id(k, vocab, right, where, &r)) != TL_OK ||
        (st = vocab_id(k, vocab, joined, where, &res)) != TL_OK)
      break;
    if (!pair_set_add(&set, l, r)) {
      st = refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "%s: duplicate merge \"%s\" \"%s\"", where, left, right);
      break;
    }
    if (!buf_u32(&k->merges, l) || !buf_u32(&k->merges, r) ||
        !buf_u32(&k->merges, res)) {
      st = refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    k->n_merges++;
  }
  free(set.slots);
  return st;
}

static tl_status compile_vocab(compiler *k, json_t *model, size_t n_added) {
  json_t *vocab = json_object_get(model, "vocab"), *v;
  const char *token;
  buf raw = {0};
  tl_status st = TL_OK;
  size_t n = json_object_size(vocab);
  if (!json_is_object(vocab) || n == 0)
    return refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "model.vocab: expected a non-empty object");
  if (n + n_added > UINT32_MAX - 1)
    return refuse(&k->c, TL_ERR_INVALID_MODEL, "model.vocab: too large");
  k->n_tokens = (uint32_t)(n + n_added);
  k->token_ptr = calloc(k->n_tokens, sizeof *k->token_ptr);
  k->token_len = calloc(k->n_tokens, sizeof *k->token_len);
  if (k->token_ptr == NULL || k->token_len == NULL)
    return refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  json_object_foreach(vocab, token, v) {
    json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
    if (id < 0 || (uint64_t)id >= n) {
      st = refuse(&k->c, TL_ERR_INVALID_MODEL,
                  "model.vocab[\"%s\"]: id must be an integer in 0..%zu "
                  "(model ids are dense)",
                  token, n - 1);
      break;
    }
    raw.len = 0;
    if ((st = unmap_token(&k->c, token, &raw)) != TL_OK) break;
    if ((st = set_token(k, (uint32_t)id, raw.p, raw.len)) != TL_OK) break;
  }
  free(raw.p);
  if (st != TL_OK) return st;
  bool single[256] = {false};
  for (uint32_t id = 0; id < n; id++)
    if (k->token_len[id] == 1) single[k->token_ptr[id][0]] = true;
  for (unsigned b = 0; b < 256; b++) {
    if (!single[b])
      return refuse(&k->c, TL_ERR_INVALID_MODEL,
                    "model.vocab: no token for the single byte 0x%02X", b);
  }
  return TL_OK;
}

static tl_status compile_added(compiler *k, json_t *added, size_t n_vocab) {
  static const char *const keys[] = {"id",      "content", "single_word",
                                     "lstrip",  "rstrip",  "normalized",
                                     "special", NULL};
  static const char *const flag_names[] = {"special", "normalized", "lstrip",
                                           "rstrip", "single_word"};
  json_t *a;
  size_t i;
  uint32_t prev_id = 0;
  char where[64];
  json_array_foreach(added, i, a) {
    tl_status st;
    json_t *id = json_object_get(a, "id"),
           *content = json_object_get(a, "content");
    uint32_t flags = 0;
    snprintf(where, sizeof where, "added_tokens[%zu]", i);
    if ((st = only_keys(&k->c, a, where, keys)) != TL_OK) return st;
    if (!json_is_integer(id) || json_integer_value(id) < (json_int_t)n_vocab)
      return refuse(&k->c, TL_ERR_INVALID_MODEL,
                    "%s.id: must be an integer past the model vocabulary "
                    "(>= %zu); added tokens that reuse a model id are not "
                    "supported",
                    where, n_vocab);
    if (i > 0 && (uint32_t)json_integer_value(id) <= prev_id)
      return refuse(&k->c, TL_ERR_INVALID_MODEL,
                    "%s.id: ids must be strictly increasing", where);
    if (!json_is_string(content) || json_string_length(content) == 0)
      return refuse(&k->c, TL_ERR_INVALID_MODEL,
                    "%s.content: must be a non-empty string", where);
    for (unsigned f = 0; f < 5; f++) {
      json_t *v = json_object_get(a, flag_names[f]);
      if (!json_is_boolean(v))
        return refuse(&k->c, TL_ERR_INVALID_MODEL, "%s.%s: must be a boolean",
                      where, flag_names[f]);
      if (json_is_true(v)) flags |= 1u << f;
    }
    for (uint32_t other = (uint32_t)n_vocab; other < k->n_tokens; other++)
      if (k->token_ptr[other] != NULL &&
          k->token_len[other] == json_string_length(content) &&
          memcmp(k->token_ptr[other], json_string_value(content),
                 k->token_len[other]) == 0)
        return refuse(&k->c, TL_ERR_INVALID_MODEL,
                      "%s.content: \"%s\" is already an added token", where,
                      json_string_value(content));
    prev_id = (uint32_t)json_integer_value(id);
    if ((st = set_token(k, prev_id, (const uint8_t *)json_string_value(content),
                        json_string_length(content))) != TL_OK)
      return st;
    if (!buf_u32(&k->added, prev_id) || !buf_u32(&k->added, flags))
      return refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
    k->n_added++;
  }
  return TL_OK;
}

/* tokenizer_config.json's added_tokens_decoder must describe the same
 * added tokens (content and flags) as tokenizer.json. */
static tl_status check_config(ctx *c, json_t *config, json_t *added) {
  static const char *const flag_names[] = {"special", "normalized", "lstrip",
                                           "rstrip", "single_word"};
  json_t *decoder = json_object_get(config, "added_tokens_decoder"), *a;
  size_t i;
  if (decoder == NULL) return TL_OK;
  if (!json_is_object(decoder))
    return refuse(c, TL_ERR_INVALID_MODEL,
                  "added_tokens_decoder: expected an object");
  if (json_object_size(decoder) != json_array_size(added))
    return refuse(c, TL_ERR_CONFLICT,
                  "added_tokens_decoder has %zu tokens, tokenizer.json "
                  "added_tokens has %zu",
                  json_object_size(decoder), json_array_size(added));
  json_array_foreach(added, i, a) {
    char key[32];
    json_t *d;
    snprintf(key, sizeof key, "%lld",
             (long long)json_integer_value(json_object_get(a, "id")));
    d = json_object_get(decoder, key);
    if (!json_is_object(d) || !json_equal(json_object_get(d, "content"),
                                          json_object_get(a, "content")))
      return refuse(c, TL_ERR_CONFLICT,
                    "added_tokens_decoder[\"%s\"]: content differs from "
                    "tokenizer.json added_tokens[%zu]",
                    key, i);
    for (unsigned f = 0; f < 5; f++)
      if (!json_equal(json_object_get(d, flag_names[f]),
                      json_object_get(a, flag_names[f])))
        return refuse(c, TL_ERR_CONFLICT,
                      "added_tokens_decoder[\"%s\"].%s differs from "
                      "tokenizer.json added_tokens[%zu].%s",
                      key, flag_names[f], i, flag_names[f]);
  }
  return TL_OK;
}

static tl_status pack(compiler *k, tl_tok_compiled *out) {
  buf s = {0};
  size_t index_off = TL_TOK_HEADER_LEN, bytes_off, merges_off, added_off,
         total_bytes = 0;
  uint8_t header[TL_TOK_HEADER_LEN] = {0};
  for (uint32_t id = 0; id < k->n_tokens; id++) {
    if (k->token_ptr[id] == NULL)
      return refuse(&k->c, TL_ERR_INVALID_MODEL,
                    "token id %u is not defined by model.vocab or "
                    "added_tokens (ids must be dense)",
                    (unsigned)id);
    total_bytes += k->token_len[id];
  }
  if (total_bytes > UINT32_MAX / 2)
    return refuse(&k->c, TL_ERR_INVALID_MODEL, "vocabulary too large");
  bytes_off = index_off + 4 * ((size_t)k->n_tokens + 1);
  merges_off = (bytes_off + total_bytes + 3) & ~(size_t)3;
  added_off = merges_off + k->merges.len;
  memcpy(header, TL_TOK_MAGIC, 4);
  header[4] = TL_TOK_VERSION_MAJOR;
  header[6] = TL_TOK_VERSION_MINOR;
  tl_store_le32(header + 8, TL_TOK_PROFILE_QWEN2_BYTE_BPE);
  tl_store_le32(header + 12, TL_TOK_NFC_UNICODE_VERSION);
  tl_store_le32(header + 16, TL_TOK_CLASS_UNICODE_VERSION);
  tl_store_le32(header + 20, k->n_tokens);
  tl_store_le32(header + 24, k->n_merges);
  tl_store_le32(header + 28, k->n_added);
  tl_store_le32(header + 32, (uint32_t)index_off);
  tl_store_le32(header + 36, (uint32_t)bytes_off);
  tl_store_le32(header + 40, (uint32_t)total_bytes);
  tl_store_le32(header + 44, (uint32_t)merges_off);
  tl_store_le32(header + 48, (uint32_t)added_off);
  tl_store_le32(header + 52, (uint32_t)(added_off + k->added.len));
  if (added_off + k->added.len > UINT32_MAX)
    return refuse(&k->c, TL_ERR_INVALID_MODEL, "tokenizer section too large");
  bool ok = buf_put(&s, header, sizeof header);
  uint32_t at = 0;
  for (uint32_t id = 0; ok && id <= k->n_tokens; id++) {
    ok = buf_u32(&s, at);
    if (id < k->n_tokens) at += (uint32_t)k->token_len[id];
  }
  for (uint32_t id = 0; ok && id < k->n_tokens; id++)
    ok = buf_put(&s, k->token_ptr[id], k->token_len[id]);
  while (ok && s.len < merges_off) ok = buf_put(&s, "", 1);
  ok = ok && buf_put(&s, k->merges.p, k->merges.len) &&
       buf_put(&s, k->added.p, k->added.len);
  if (!ok) {
    free(s.p);
    return refuse(&k->c, TL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  out->section = s.p;
  out->len = s.len;
  out->n_tokens = k->n_tokens;
  out->n_merges = k->n_merges;
  out->n_added = k->n_added;
  return TL_OK;
}

static json_t *load_json(ctx *c, const char *path, tl_status *st) {
  json_error_t e;
  json_t *root = tl_snapshot_json(path, JSON_REJECT_DUPLICATES, &e);
  if (root == NULL)
    *st = refuse(c, e.line < 0 ? TL_ERR_IO : TL_ERR_INVALID_MODEL,
                 "line %d, column %d: %s", e.line, e.column, e.text);
  return root;
}

tl_status tl_tok_compile(const char *tokenizer_json,
                         const char *tokenizer_config_json,
                         tl_tok_compiled *out, char *err, size_t err_cap) {
  compiler k;
  json_t *root = NULL, *config = NULL, *model, *added;
  tl_status st = TL_OK;
  memset(&k, 0, sizeof k);
  memset(out, 0, sizeof *out);
  k.c.err = err;
  k.c.err_cap = err_cap;
  k.c.file = tokenizer_config_json;
  config = load_json(&k.c, tokenizer_config_json, &st);
  k.c.file = tokenizer_json;
  if (config != NULL) root = load_json(&k.c, tokenizer_json, &st);
  if (root == NULL) goto done;
  if ((st = check_pipeline(&k.c, root, &out->append_id)) != TL_OK) goto done;
  model = json_object_get(root, "model");
  if ((st = check_model_options(&k.c, model)) != TL_OK) goto done;
  added = json_object_get(root, "added_tokens");
  if (!json_is_array(added)) {
    st = refuse(&k.c, TL_ERR_INVALID_MODEL, "added_tokens: expected an array");
    goto done;
  }
  if ((st = compile_vocab(&k, model, json_array_size(added))) != TL_OK ||
      (st = compile_merges(&k, model)) != TL_OK ||
      (st = compile_added(&k, added,
                          json_object_size(json_object_get(model, "vocab")))) !=
          TL_OK)
    goto done;
  k.c.file = tokenizer_config_json;
  if (!json_is_object(config)) {
    st = refuse(&k.c, TL_ERR_INVALID_MODEL, "expected a JSON object");
    goto done;
  }
  if ((st = check_config(&k.c, config, added)) != TL_OK) goto done;
  k.c.file = tokenizer_json;
  st = pack(&k, out);
done:
  for (uint32_t id = 0; k.token_ptr != NULL && id < k.n_tokens; id++)
    free(k.token_ptr[id]);
  free(k.token_ptr);
  free(k.token_len);
  free(k.merges.p);
  free(k.added.p);
  json_decref(root);
  json_decref(config);
  return st;
}

void tl_tok_compiled_free(tl_tok_compiled *c) {
  free(c->section);
  memset(c, 0, sizeof *c);
}
