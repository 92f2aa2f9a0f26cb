/* tinylm encode / tinylm decode: text to token ids and back through an
 * artifact's tokenizer. --jsonl runs many inputs through one process (the
 * differential tests use it). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "clock.h"
#include "encoder.h"
#include "file.h"
#include "model.h"

static const char encode_usage[] =
    "usage: tinylm encode MODEL.slm (--text S | --file F | --jsonl) [--json] "
    "[--offsets] [--bench]\n"
    "  --jsonl    read {\"hex\": ...} lines on stdin, write one result line "
    "each\n"
    "  --bench    print `tokens N bytes B seconds S` instead of the ids\n";

static const char decode_usage[] =
    "usage: tinylm decode MODEL.slm (--ids \"1 2 3\" | --jsonl) "
    "[--mode raw|visible|diagnostic] [--json]\n";

static json_t *result_json(const tl_encoder *e, size_t n, bool offsets) {
  json_t *ids = json_array(), *spans = offsets ? json_array() : NULL;
  for (size_t i = 0; i < n; i++) {
    json_array_append_new(ids, json_integer(e->ids[i]));
    if (offsets)
      json_array_append_new(spans,
                            json_pack("[I,I]", (json_int_t)e->spans[i].start,
                                      (json_int_t)e->spans[i].end));
  }
  if (offsets) return json_pack("{s:o, s:o}", "ids", ids, "offsets", spans);
  return json_pack("{s:o}", "ids", ids);
}

static void print_json_line(json_t *obj) {
  char *text = json_dumps(obj, JSON_COMPACT);
  if (text != NULL) puts(text);
  free(text);
  json_decref(obj);
}

static int encode_jsonl(tl_encoder *e) {
  char *line = NULL;
  size_t line_cap = 0;
  ssize_t got;
  long lineno = 0;
  while ((got = getline(&line, &line_cap, stdin)) > 0) {
    json_error_t jerr;
    json_t *in = json_loads(line, 0, &jerr);
    const char *hex = json_string_value(json_object_get(in, "hex"));
    uint8_t *text = NULL;
    size_t len = 0, n = 0, bad = 0;
    tl_status st;
    lineno++;
    if (hex == NULL || tl_cli_unhex(hex, &text, &len) != 0) {
      json_decref(in);
      free(line);
      return tl_cli_usage(true, "stdin line %ld: expected {\"hex\": \"...\"}",
                          lineno);
    }
    st = tl_encoder_run(e, text, len, &n, &bad);
    if (st == TL_OK)
      print_json_line(result_json(e, n, true));
    else if (st == TL_ERR_INVALID_UTF8)
      print_json_line(json_pack("{s:s, s:I}", "error", tl_status_name(st),
                                "offset", (json_int_t)bad));
    else
      print_json_line(json_pack("{s:s}", "error", tl_status_name(st)));
    free(text);
    json_decref(in);
  }
  free(line);
  return TL_EXIT_OK;
}


int tl_cmd_encode(int argc, char **argv) {
  const char *model = NULL, *text = NULL, *file = NULL;
  bool json = false, offsets = false, jsonl = false, bench = false;
  tl_native_model m;
  tl_file_view view = {0};
  tl_encoder e = {0};
  char err[1024];
  size_t n = 0, bad = 0;
  tl_status st;
  int rc = TL_EXIT_OK;
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(encode_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--offsets") == 0) {
      offsets = true;
    } else if (strcmp(argv[i], "--jsonl") == 0) {
      jsonl = true;
    } else if (strcmp(argv[i], "--bench") == 0) {
      bench = true;
    } else if (strcmp(argv[i], "--text") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &text);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--file") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &file);
      if (u >= 0) return u;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i],
                          encode_usage);
    } else if (model == NULL) {
      model = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", encode_usage);
    }
  }
  if (model == NULL || (text != NULL) + (file != NULL) + jsonl != 1)
    return tl_cli_usage(
        json, "MODEL.slm and one of --text, --file, --jsonl\n%s", encode_usage);
  st = tl_native_model_open(model, &m, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  e.tok = m.tok;
  if (jsonl) {
    rc = encode_jsonl(&e);
    goto done;
  }
  if (file != NULL) {
    st = tl_file_open_view(file, &view, err, sizeof err);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  } else {
    view.data = (const uint8_t *)text;
    view.len = strlen(text);
  }
  {
    double t0 = tl_now_s();
    st = tl_encoder_run(&e, view.data, view.len, &n, &bad);
    if (st == TL_OK && bench)
      printf("tokens %zu bytes %zu seconds %.6f\n", n, view.len,
             tl_now_s() - t0);
  }
  if (st == TL_ERR_INVALID_UTF8) {
    rc = tl_cli_fail_with(json, st,
                          json_pack("{s:I}", "offset", (json_int_t)bad),
                          "byte offset %zu", bad);
  } else if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "encoding failed");
  } else if (bench) {
    /* printed above */
  } else if (json) {
    print_json_line(result_json(&e, n, offsets));
  } else {
    for (size_t i = 0; i < n; i++) printf(i ? " %u" : "%u", e.ids[i]);
    putchar('\n');
    if (offsets) {
      for (size_t i = 0; i < n; i++)
        printf(i ? " %u:%u" : "%u:%u", e.spans[i].start, e.spans[i].end);
      putchar('\n');
    }
  }
  if (file != NULL) tl_file_close_view(&view);
done:
  tl_encoder_free(&e);
  tl_native_model_close(&m);
  return rc;
}

static int parse_mode(const char *s, tl_tok_decode_mode *mode) {
  if (strcmp(s, "raw") == 0)
    *mode = TL_TOK_DECODE_RAW;
  else if (strcmp(s, "visible") == 0)
    *mode = TL_TOK_DECODE_VISIBLE;
  else if (strcmp(s, "diagnostic") == 0)
    *mode = TL_TOK_DECODE_DIAGNOSTIC;
  else
    return -1;
  return 0;
}

int tl_cli_parse_ids(const char *s, uint32_t **ids, size_t *n) {
  size_t cap = 16;
  *n = 0;
  *ids = malloc(cap * sizeof **ids);
  while (*ids != NULL) {
    char *end;
    unsigned long long v;
    while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
    if (*s == '\0') return 0;
    if (*s < '0' || *s > '9') break;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || v > UINT32_MAX) break;
    if (*n == cap) {
      uint32_t *bigger = realloc(*ids, 2 * cap * sizeof **ids);
      if (bigger == NULL) break;
      *ids = bigger;
      cap *= 2;
    }
    (*ids)[(*n)++] = (uint32_t)v;
    s = end;
  }
  free(*ids);
  *ids = NULL;
  return -1;
}

static int decode_jsonl(const tl_tokenizer *tok) {
  char *line = NULL, *hex = NULL;
  size_t line_cap = 0;
  long lineno = 0;
  while (getline(&line, &line_cap, stdin) > 0) {
    json_error_t jerr;
    json_t *in = json_loads(line, 0, &jerr), *arr = json_object_get(in, "ids"),
           *v;
    const char *mode_name = json_string_value(json_object_get(in, "mode"));
    tl_tok_decode_mode mode = TL_TOK_DECODE_RAW;
    uint32_t *ids;
    size_t n = json_array_size(arr), i, len = 0, bad = 0;
    uint8_t *out = NULL;
    tl_status st;
    lineno++;
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!json_is_array(arr) || ids == NULL ||
        (mode_name != NULL && parse_mode(mode_name, &mode) != 0)) {
      free(ids);
      json_decref(in);
      free(line);
      return tl_cli_usage(true,
                          "stdin line %ld: expected {\"ids\": [...], "
                          "\"mode\": \"raw|visible|diagnostic\"}",
                          lineno);
    }
    json_array_foreach(arr, i, v) {
      json_int_t id = json_integer_value(v);
      ids[i] =
          id < 0 || id > (json_int_t)UINT32_MAX ? UINT32_MAX : (uint32_t)id;
    }
    st = tl_decoder_run(tok, ids, n, mode, &out, &len, &bad);
    if (st == TL_OK) {
      char *h = realloc(hex, 2 * len + 1);
      if (h == NULL)
        st = TL_ERR_OUT_OF_MEMORY;
      else {
        hex = h;
        tl_hex_encode(out, len, hex);
        print_json_line(json_pack("{s:s}", "hex", hex));
      }
    }
    if (st != TL_OK)
      print_json_line(json_pack("{s:s, s:I}", "error", tl_status_name(st),
                                "index", (json_int_t)bad));
    free(out);
    free(ids);
    json_decref(in);
  }
  free(line);
  free(hex);
  return TL_EXIT_OK;
}

int tl_cmd_decode(int argc, char **argv) {
  const char *model = NULL, *ids_text = NULL;
  bool json = false, jsonl = false;
  tl_tok_decode_mode mode = TL_TOK_DECODE_RAW;
  tl_native_model m;
  uint32_t *ids = NULL;
  uint8_t *out = NULL;
  size_t n = 0, len = 0, bad = 0;
  char err[1024];
  tl_status st;
  int rc = TL_EXIT_OK;
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(decode_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--jsonl") == 0) {
      jsonl = true;
    } else if (strcmp(argv[i], "--ids") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &ids_text);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--mode") == 0) {
      const char *name;
      int u = tl_cli_value(json, argc, argv, &i, &name);
      if (u >= 0) return u;
      if (parse_mode(name, &mode) != 0)
        return tl_cli_usage(json,
                            "unknown --mode '%s' (raw, visible or "
                            "diagnostic)",
                            name);
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i],
                          decode_usage);
    } else if (model == NULL) {
      model = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", decode_usage);
    }
  }
  if (model == NULL || (ids_text != NULL) + jsonl != 1)
    return tl_cli_usage(json, "MODEL.slm and one of --ids, --jsonl\n%s",
                        decode_usage);
  if (ids_text != NULL && tl_cli_parse_ids(ids_text, &ids, &n) != 0)
    return tl_cli_usage(json,
                        "--ids: expected non-negative integers "
                        "separated by spaces, got '%s'",
                        ids_text);
  st = tl_native_model_open(model, &m, err, sizeof err);
  if (st != TL_OK) {
    free(ids);
    return tl_cli_fail(json, st, "%s", err);
  }
  if (jsonl) {
    rc = decode_jsonl(m.tok);
  } else {
    st = tl_decoder_run(m.tok, ids, n, mode, &out, &len, &bad);
    if (st == TL_ERR_INVALID_ARGUMENT)
      rc = tl_cli_fail_with(json, st,
                            json_pack("{s:I}", "index", (json_int_t)bad),
                            "id %u at position %zu is outside the vocabulary "
                            "(0..%u)",
                            ids[bad], bad, tl_tok_vocab_size(m.tok) - 1);
    else if (st != TL_OK)
      rc = tl_cli_fail(json, st, "decoding failed");
    else if (json) {
      json_t *obj = json_pack("{s:s%}", "text", (const char *)out, len);
      if (obj == NULL) { /* not valid UTF-8: give the bytes as hex */
        char *h = malloc(2 * len + 1);
        if (h != NULL) tl_hex_encode(out, len, h);
        obj = json_pack("{s:s}", "hex", h ? h : "");
        free(h);
      }
      print_json_line(obj);
    } else {
      fwrite(out, 1, len, stdout);
    }
  }
  free(out);
  free(ids);
  tl_native_model_close(&m);
  return rc;
}
