/* Native helper for tests/diff/cbor_diff.py: runs the core CBOR reader and
 * writer over streams of documents.
 *
 *   cbor_tool canon [TAG...]    < stream
 *       For each document: the strict verdict under the default limits
 *       with TAG... allowed, and, when it is valid, its re-encoding through
 *       the writer (tl_cbor_copy_item). One line per document:
 *         OK <hex of the re-encoding>
 *         ERR <status> <fault kind> <fault offset>
 *       Two independent paths decide (tl_cbor_validate, and the reader
 *       under tl_cbor_copy_item + tl_cbor_reader_finish); if they disagree
 *       the line is "MISMATCH ..." and the exit status is 1.
 *   cbor_tool gen SEED N [TAG...] > stream
 *       N random documents written with the writer: nested arrays and maps
 *       (pairs put in random order, so the writer sorts them), unsigned
 *       and negative integers with every head-width boundary, byte and
 *       text strings (non-ASCII and U+0000 included), bool, null, and the
 *       given tags. Map keys are of mixed types but never contain bool, so
 *       Python dicts (where True == 1) keep every key.
 *
 * A stream is a sequence of documents, each a 4-byte big-endian length
 * followed by that many bytes. Host code: stdio and malloc are fine here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbor/cbor.h"
#include "cbor_gen.h"
#include "tinylm.h"
#include "utf8.h"

#define MAX_DOC (1u << 24)
#define GEN_CAP 65536

static int usage(void) {
  fprintf(stderr,
          "usage: cbor_tool canon [TAG...] < stream\n"
          "       cbor_tool gen SEED N [TAG...] > stream\n");
  return 2;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') return 0;
  *out = (uint64_t)v;
  return 1;
}

static int parse_tags(int argc, char **argv, tl_cbor_limits *l) {
  *l = tl_cbor_limits_default();
  if (argc > TL_CBOR_MAX_ALLOWED_TAGS) return 0;
  for (int i = 0; i < argc; i++)
    if (!parse_u64(argv[i], &l->allowed_tags[i])) return 0;
  l->n_allowed_tags = (size_t)argc;
  return 1;
}

/* ------------------------------------------------------------------------ */
/* canon                                                                    */

static void print_hex(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    putchar(digits[p[i] >> 4]);
    putchar(digits[p[i] & 15]);
  }
}

/* Re-encodes doc through reader + writer. Returns the status; *fault is
 * the reader's fault, *out_len the re-encoding's length. */
static tl_status recode(const uint8_t *doc, size_t len, const tl_cbor_limits *l,
                        uint8_t *out, size_t cap, tl_arena *scratch,
                        size_t *out_len, tl_cbor_fault *fault) {
  tl_cbor_reader r;
  tl_cbor_writer w;
  tl_status st = tl_cbor_reader_init(&r, doc, len, l);
  if (st != TL_OK) return st;
  st = tl_cbor_writer_init(&w, out, cap, scratch);
  if (st == TL_OK) st = tl_cbor_copy_item(&r, &w);
  if (st == TL_OK) st = tl_cbor_reader_finish(&r);
  if (st == TL_OK) st = tl_cbor_writer_finish(&w, out_len);
  *fault = r.fault;
  return st;
}

static int read_exact(uint8_t *p, size_t n) {
  return fread(p, 1, n, stdin) == n;
}

static int canon(int argc, char **argv) {
  tl_cbor_limits limits;
  uint8_t *doc = NULL, *out = NULL, *mem = NULL;
  int rc = 0;
  if (!parse_tags(argc, argv, &limits)) return usage();
  for (;;) {
    uint8_t hdr[4];
    size_t len, n;
    tl_arena scratch;
    tl_cbor_fault f1, f2;
    tl_status s1, s2;
    size_t out_len = 0, mem_cap;
    if (fread(hdr, 1, 4, stdin) != 4) break;
    len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 |
          hdr[3];
    if (len > MAX_DOC) {
      fprintf(stderr, "cbor_tool: document of %zu bytes too large\n", len);
      return 1;
    }
    /* The writer's scratch: offsets of open maps (< 8 bytes per item
     * plus 8 per map), index arrays and one body copy. */
    mem_cap = 32 * len + 4096;
    free(doc);
    free(out);
    free(mem);
    doc = malloc(len + 1);
    out = malloc(len + 1);
    mem = malloc(mem_cap);
    if (doc == NULL || out == NULL || mem == NULL) {
      fprintf(stderr, "cbor_tool: out of memory\n");
      return 1;
    }
    if (!read_exact(doc, len)) {
      fprintf(stderr, "cbor_tool: truncated stream\n");
      return 1;
    }
    s1 = tl_cbor_validate(doc, len, &limits, &f1);
    tl_arena_init(&scratch, mem, mem_cap);
    /* The writer's buffer holds len bytes: valid input re-encodes to the
     * same length, so TL_ERR_BOUNDS here would itself be a finding. */
    s2 = recode(doc, len, &limits, out, len, &scratch, &out_len, &f2);
    n = out_len;
    if (s1 != s2 || f1.kind != f2.kind || f1.offset != f2.offset) {
      printf("MISMATCH validate=%s/%s/%zu recode=%s/%s/%zu\n",
             tl_status_name(s1), tl_cbor_fault_name(f1.kind), f1.offset,
             tl_status_name(s2), tl_cbor_fault_name(f2.kind), f2.offset);
      rc = 1;
    } else if (s1 != TL_OK) {
      printf("ERR %s %s %zu\n", tl_status_name(s1), tl_cbor_fault_name(f1.kind),
             f1.offset);
    } else {
      fputs("OK ", stdout);
      print_hex(out, n);
      putchar('\n');
    }
  }
  free(doc);
  free(out);
  free(mem);
  return rc;
}

static int generate(int argc, char **argv) {
  tl_cbor_limits tags;
  uint64_t seed, count, conflicts = 0;
  uint8_t *buf = malloc(GEN_CAP), *mem = malloc(1u << 20);
  tl_cbor_gen g;
  if (argc < 2 || !parse_u64(argv[0], &seed) || !parse_u64(argv[1], &count) ||
      !parse_tags(argc - 2, argv + 2, &tags))
    return usage();
  if (buf == NULL || mem == NULL) return 1;
  g.state = seed;
  g.tags = &tags;
  for (uint64_t i = 0; i < count;) {
    tl_cbor_writer w;
    tl_arena scratch;
    size_t len = 0;
    tl_status st;
    uint8_t hdr[4];
    tl_arena_init(&scratch, mem, 1u << 20);
    tl_cbor_writer_init(&w, buf, GEN_CAP, &scratch);
    st = tl_cbor_gen_document(&g, &w, &len);
    if (st == TL_ERR_CONFLICT) { /* random keys collided: try again */
      conflicts++;
      continue;
    }
    if (st != TL_OK) {
      fprintf(stderr, "cbor_tool gen: document %llu: %s\n",
              (unsigned long long)i, tl_status_name(st));
      return 1;
    }
    hdr[0] = (uint8_t)(len >> 24);
    hdr[1] = (uint8_t)(len >> 16);
    hdr[2] = (uint8_t)(len >> 8);
    hdr[3] = (uint8_t)len;
    fwrite(hdr, 1, 4, stdout);
    fwrite(buf, 1, len, stdout);
    i++;
  }
  fprintf(stderr, "cbor_tool gen: %llu documents, %llu key conflicts redrawn\n",
          (unsigned long long)count, (unsigned long long)conflicts);
  free(buf);
  free(mem);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "canon") == 0)
    return canon(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "gen") == 0)
    return generate(argc - 2, argv + 2);
  return usage();
}
