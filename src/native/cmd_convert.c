/* tinylm convert: a Hugging Face directory to a .slm artifact. This stage
 * implements --tokenizer-only (tokenizer and chat-template sections plus
 * metadata); weight conversion arrives with the .slm converter. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "cli.h"
#include "file.h"
#include "hash/sha256.h"
#include "slm_write.h"
#include "tmpl_section_build.h"
#include "tok_compile.h"

static const char usage_text[] =
    "usage: tinylm convert HF_DIR -o OUT.slm --tokenizer-only [--json]\n"
    "  HF_DIR holds tokenizer.json and tokenizer_config.json\n";

typedef struct source {
  const char *name;
  char path[4096];
  size_t size;
  uint8_t sha256[32];
} source;

static tl_status hash_source(source *s, char *err, size_t err_cap) {
  tl_file_view v;
  tl_status st = tl_file_open_view(s->path, &v, err, err_cap);
  if (st != TL_OK) return st;
  s->size = v.len;
  st = tl_sha256(v.data, v.len, s->sha256);
  tl_file_close_view(&v);
  return st;
}

static void put_str(tl_cbor_writer *w, const char *s) {
  tl_cbor_put_text(w, s, strlen(s));
}

/* The metadata section of a tokenizer-only artifact (deterministic CBOR;
 * no timestamps or paths, so the same inputs give the same bytes). */
static tl_status build_metadata(const source *src, size_t n_src,
                                const tl_tok_compiled *tok,
                                const tl_tmpl_section_built *tmpl, uint8_t *buf,
                                size_t cap, size_t *len) {
  static uint8_t scratch_mem[1 << 16];
  tl_arena scratch;
  tl_cbor_writer w;
  uint8_t tok_digest[32];
  tl_arena_init(&scratch, scratch_mem, sizeof scratch_mem);
  tl_cbor_writer_init(&w, buf, cap, &scratch);
  tl_sha256(tok->section, tok->len, tok_digest);
  tl_cbor_begin_map(&w, 5);
  put_str(&w, "chat_template");
  tl_cbor_begin_map(&w, 2);
  put_str(&w, "source_sha256");
  tl_cbor_put_bytes(&w, tmpl->source_sha256, 32);
  put_str(&w, "ir_sha256");
  tl_cbor_put_bytes(&w, tmpl->ir_sha256, 32);
  tl_cbor_end_map(&w);
  put_str(&w, "format");
  put_str(&w, "tinylm.slm");
  put_str(&w, "artifact_kind");
  put_str(&w, "tokenizer-only");
  put_str(&w, "converter");
  tl_cbor_begin_map(&w, 2);
  put_str(&w, "name");
  put_str(&w, "tinylm convert");
  put_str(&w, "version");
  put_str(&w, TL_VERSION_STRING);
  tl_cbor_end_map(&w);
  put_str(&w, "tokenizer");
  tl_cbor_begin_map(&w, 6);
  put_str(&w, "profile");
  put_str(&w, "qwen2-byte-bpe");
  put_str(&w, "n_tokens");
  tl_cbor_put_uint(&w, tok->n_tokens);
  put_str(&w, "n_merges");
  tl_cbor_put_uint(&w, tok->n_merges);
  put_str(&w, "n_added");
  tl_cbor_put_uint(&w, tok->n_added);
  put_str(&w, "section_sha256");
  tl_cbor_put_bytes(&w, tok_digest, 32);
  put_str(&w, "sources");
  tl_cbor_begin_array(&w, n_src);
  for (size_t i = 0; i < n_src; i++) {
    tl_cbor_begin_map(&w, 3);
    put_str(&w, "name");
    put_str(&w, src[i].name);
    put_str(&w, "size");
    tl_cbor_put_uint(&w, src[i].size);
    put_str(&w, "sha256");
    tl_cbor_put_bytes(&w, src[i].sha256, 32);
    tl_cbor_end_map(&w);
  }
  tl_cbor_end_array(&w);
  tl_cbor_end_map(&w);
  tl_cbor_end_map(&w);
  return tl_cbor_writer_finish(&w, len);
}

int tl_cmd_convert(int argc, char **argv) {
  const char *dir = NULL, *out = NULL;
  bool json = false, tokenizer_only = false;
  source src[2] = {{.name = "tokenizer.json"},
                   {.name = "tokenizer_config.json"}};
  tl_tok_compiled tok;
  tl_tmpl_section_built tmpl;
  uint8_t meta[4096], id[32];
  size_t meta_len = 0;
  char err[1024], id_hex[65];
  tl_status st;
  int rc;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--tokenizer-only") == 0) {
      tokenizer_only = true;
    } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else if (dir == NULL) {
      dir = argv[i];
    } else {
      return tl_cli_usage(json, "one HF_DIR only\n%s", usage_text);
    }
  }
  if (dir == NULL || out == NULL)
    return tl_cli_usage(json, "HF_DIR and -o OUT.slm are required\n%s",
                        usage_text);
  if (!tokenizer_only)
    return tl_cli_fail(json, TL_ERR_UNSUPPORTED_FEATURE,
                       "weight conversion is not implemented yet; "
                       "--tokenizer-only converts the tokenizer alone");
  for (size_t i = 0; i < 2; i++) {
    snprintf(src[i].path, sizeof src[i].path, "%s/%s", dir, src[i].name);
    st = hash_source(&src[i], err, sizeof err);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  }
  st = tl_tok_compile(src[0].path, src[1].path, &tok, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  st = tl_tmpl_section_build(src[1].path, &tmpl, err, sizeof err);
  if (st != TL_OK) {
    tl_tok_compiled_free(&tok);
    return tl_cli_fail(json, st, "%s", err);
  }
  st = build_metadata(src, 2, &tok, &tmpl, meta, sizeof meta, &meta_len);
  if (st != TL_OK) {
    tl_tok_compiled_free(&tok);
    tl_tmpl_section_built_free(&tmpl);
    return tl_cli_fail(json, TL_ERR_INTERNAL_INVARIANT,
                       "metadata encoding failed (%s)", tl_status_name(st));
  }
  {
    tl_slm_part parts[3] = {
        {TL_SLM_METADATA, TL_SLM_SECTION_REQUIRED, meta, meta_len},
        {TL_SLM_TOKENIZER, TL_SLM_SECTION_REQUIRED, tok.section, tok.len},
        {TL_SLM_TEMPLATE, TL_SLM_SECTION_REQUIRED, tmpl.bytes, tmpl.len}};
    st = tl_slm_write(out, parts, 3, id, err, sizeof err);
  }
  tl_tmpl_section_built_free(&tmpl);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
  } else {
    tl_cli_hex(id, 32, id_hex);
    if (json)
      printf(
          "{\"artifact_id\":\"%s\",\"tokens\":%u,\"merges\":%u,"
          "\"added_tokens\":%u}\n",
          id_hex, tok.n_tokens, tok.n_merges, tok.n_added);
    else
      printf(
          "wrote %s (tokenizer and chat template only: %u tokens, %u merges, "
          "%u added)\n"
          "artifact id (sha256) %s\n",
          out, tok.n_tokens, tok.n_merges, tok.n_added, id_hex);
    rc = TL_EXIT_OK;
  }
  tl_tok_compiled_free(&tok);
  return rc;
}
