/* safetensors intake (docs/safetensors.md): valid single-file and sharded
 * checkpoints, and a corpus of malformed ones written by the tests, each
 * refused with its typed status and a message naming file, tensor, field. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "st_checkpoint.h"
#include "tl_test.h"

/* A fresh temporary directory per call (removed by rm_dir). */
static char *make_dir(void) {
  char tmpl[] = "/tmp/tl_st_XXXXXX";
  char *d = mkdtemp(tmpl);
  return d != NULL ? strdup(d) : NULL;
}

static void rm_dir(char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  free(dir);
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void write_raw(const char *dir, const char *name, const void *bytes,
                      size_t len) {
  char *path = join(dir, name);
  FILE *f = fopen(path, "wb");
  if (f != NULL) {
    if (len > 0) fwrite(bytes, 1, len, f);
    fclose(f);
  }
  free(path);
}

/* A safetensors file: declared header length n_decl (SIZE_MAX: the real
 * one), the header text, then data_len bytes 0, 1, 2, ... */
static void write_st_n(const char *dir, const char *name, uint64_t n_decl,
                       const char *header, size_t data_len) {
  size_t h = strlen(header), len = 8 + h + data_len;
  uint8_t *b = malloc(len);
  if (b == NULL) return;
  tl_store_le64(b, n_decl == UINT64_MAX ? h : n_decl);
  memcpy(b + 8, header, h);
  for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (uint8_t)i;
  write_raw(dir, name, b, len);
  free(b);
}

static void write_st(const char *dir, const char *name, const char *header,
                     size_t data_len) {
  write_st_n(dir, name, UINT64_MAX, header, data_len);
}

static bool expect_msg(tl_test_ctx *t, const char *err, const char *want) {
  if (strstr(err, want) != NULL) return TL_EXPECT(t, true);
  tl_test_print(t, "  message: ");
  tl_test_print(t, err);
  tl_test_print(t, "\n  wanted substring: ");
  tl_test_print(t, want);
  tl_test_print(t, "\n");
  return TL_EXPECT(t, strstr(err, want) != NULL);
}

/* Opens dir/name (a file, or an index when it ends in .json) and expects
 * status want with a message containing each of the substrings. */
static void expect_refused_as(tl_test_ctx *t, const char *dir, const char *name,
                              bool names_it, tl_status want, const char *sub1,
                              const char *sub2) {
  char *path = join(dir, name);
  tl_st_checkpoint ck;
  char err[1024] = "";
  size_t n = strlen(name);
  tl_status st = n > 5 && strcmp(name + n - 5, ".json") == 0
                     ? tl_st_open_index(path, &ck, err, sizeof err)
                     : tl_st_open_file(path, &ck, err, sizeof err);
  TL_EXPECT_STATUS(t, st, want);
  TL_EXPECT_EQ_U64(t, ck.n_sources, 0); /* nothing kept open */
  if (names_it) expect_msg(t, err, name);
  if (sub1 != NULL) expect_msg(t, err, sub1);
  if (sub2 != NULL) expect_msg(t, err, sub2);
  free(path);
}

static void expect_refused(tl_test_ctx *t, const char *dir, const char *name,
                           tl_status want, const char *sub1, const char *sub2) {
  expect_refused_as(t, dir, name, true, want, sub1, sub2);
}

static void valid_single_file(tl_test_ctx *t) {
  char *dir = make_dir();
  if (!TL_EXPECT(t, dir != NULL)) return;
  const char *hdr =
      "{\"__metadata__\":{\"format\":\"pt\",\"a\":\"1\"},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"data_offsets\":[24,32],\"shape\":[4],\"dtype\":\"BF16\"},"
      "\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[32,34]},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[34,34]}}  ";
  write_st(dir, "model.safetensors", hdr, 34);
  tl_st_checkpoint ck;
  char err[1024] = "";
  if (!TL_EXPECT_OK(t, tl_st_open_dir(dir, &ck, err, sizeof err))) {
    tl_test_print(t, err);
    rm_dir(dir);
    return;
  }
  TL_EXPECT(t, !ck.sharded);
  TL_EXPECT_EQ_U64(t, ck.n_sources, 1);
  TL_EXPECT_EQ_U64(t, ck.n_tensors, 4);
  const tl_st_source *s = &ck.sources[0];
  TL_EXPECT_STR(t, s->name, "model.safetensors");
  TL_EXPECT_EQ_U64(t, s->size, 8 + strlen(hdr) + 34);
  uint8_t want[32];
  tl_sha256(s->view.data, s->view.len, want);
  TL_EXPECT_MEM(t, s->sha256, want, 32);
  TL_EXPECT_EQ_U64(t, s->n_metadata, 2);
  if (s->n_metadata == 2) {
    TL_EXPECT_MEM(t, s->metadata[0].key, "format", 6);
    TL_EXPECT_MEM(t, s->metadata[0].value, "pt", 2);
    TL_EXPECT_MEM(t, s->metadata[1].key, "a", 1);
  }
  if (ck.n_tensors == 4) {
    const tl_st_tensor *w = &ck.tensors[0], *b = &ck.tensors[1],
                       *sc = &ck.tensors[2], *z = &ck.tensors[3];
    TL_EXPECT_MEM(t, w->name, "w", 1);
    TL_EXPECT_EQ_U64(t, w->dtype, TL_ST_F32);
    TL_EXPECT_EQ_U64(t, w->rank, 2);
    TL_EXPECT_EQ_U64(t, w->shape[0], 2);
    TL_EXPECT_EQ_U64(t, w->shape[1], 3);
    TL_EXPECT_EQ_U64(t, w->n_elements, 6);
    TL_EXPECT_EQ_U64(t, w->len, 24);
    TL_EXPECT(t, w->data == s->view.data + 8 + strlen(hdr));
    TL_EXPECT_EQ_U64(t, b->dtype, TL_ST_BF16);
    TL_EXPECT_EQ_U64(t, b->file_offset, 8 + strlen(hdr) + 24);
    TL_EXPECT_EQ_U64(t, b->data[0], 24);
    TL_EXPECT_EQ_U64(t, sc->rank, 0);
    TL_EXPECT_EQ_U64(t, sc->n_elements, 1);
    TL_EXPECT_EQ_U64(t, sc->len, 2);
    TL_EXPECT_EQ_U64(t, z->n_elements, 0);
    TL_EXPECT_EQ_U64(t, z->len, 0);
    TL_EXPECT_EQ_U64(t, w->shard, 0);
  }
  TL_EXPECT_STR(t, tl_st_dtype_name(TL_ST_BF16), "BF16");
  tl_st_checkpoint_close(&ck);
  rm_dir(dir);
}

#define F32_2(off) \
  "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" off "]}"

static void malformed_single_files(tl_test_ctx *t) {
  char *dir = make_dir();
  if (!TL_EXPECT(t, dir != NULL)) return;
  write_raw(dir, "trunc.safetensors", "\x10\0\0", 3);
  expect_refused(t, dir, "trunc.safetensors", TL_ERR_INVALID_MODEL,
                 "field 'header length'", "shorter than the 8-byte");
  write_st_n(dir, "past.safetensors", 1000, "{}", 0);
  expect_refused(t, dir, "past.safetensors", TL_ERR_INVALID_MODEL,
                 "1000 is past the end of the file", NULL);
  write_st_n(dir, "huge.safetensors", 100000001, "{}", 0);
  expect_refused(t, dir, "huge.safetensors", TL_ERR_INVALID_MODEL,
                 "exceeds the 100000000-byte limit", NULL);
  write_st(dir, "notjson.safetensors", "{\"a\": nope}", 0);
  expect_refused(t, dir, "notjson.safetensors", TL_ERR_INVALID_MODEL,
                 "field 'header'", "not valid JSON");
  write_st(dir, "array.safetensors", "[]", 0);
  expect_refused(t, dir, "array.safetensors", TL_ERR_INVALID_MODEL,
                 "not a JSON object", NULL);
  write_st(dir, "overlap.safetensors",
           "{\"a\":" F32_2("0,8") ",\"b\":" F32_2("4,12") "}", 12);
  expect_refused(t, dir, "overlap.safetensors", TL_ERR_INVALID_MODEL,
                 "tensor 'b': field 'data_offsets'", "overlaps tensor 'a'");
  write_st(dir, "gap.safetensors",
           "{\"a\":" F32_2("0,8") ",\"b\":" F32_2("12,20") "}", 20);
  expect_refused(t, dir, "gap.safetensors", TL_ERR_INVALID_MODEL, "tensor 'b'",
                 "gap of 4 bytes");
  write_st(dir, "trailing.safetensors", "{\"a\":" F32_2("0,8") "}", 9);
  expect_refused(t, dir, "trailing.safetensors", TL_ERR_INVALID_MODEL,
                 "1 trailing bytes", NULL);
  write_st(dir, "pastdata.safetensors", "{\"a\":" F32_2("0,8") "}", 4);
  expect_refused(t, dir, "pastdata.safetensors", TL_ERR_INVALID_MODEL,
                 "tensor 'a': field 'data_offsets'", "past the data region");
  write_st(dir, "i8.safetensors",
           "{\"q\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
           2);
  expect_refused(t, dir, "i8.safetensors", TL_ERR_UNSUPPORTED_QUANTIZATION,
                 "tensor 'q': field 'dtype'", "'I8' is not supported");
  write_st(dir, "q9.safetensors",
           "{\"q\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,2]}}",
           2);
  expect_refused(t, dir, "q9.safetensors", TL_ERR_INVALID_MODEL,
                 "'Q9' is not a safetensors dtype", NULL);
  write_st(dir, "mismatch.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
           8);
  expect_refused(t, dir, "mismatch.safetensors", TL_ERR_INVALID_MODEL,
                 "tensor 'a': field 'data_offsets'",
                 "holds 8 bytes but shape and dtype need 12");
  write_st(dir, "overflow.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,2],"
           "\"data_offsets\":[0,8]}}",
           8);
  expect_refused(t, dir, "overflow.safetensors", TL_ERR_INTEGER_OVERFLOW,
                 "tensor 'a': field 'shape'", "overflows 64 bits");
  write_st(dir, "bytesover.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
           "\"data_offsets\":[0,8]}}",
           8);
  expect_refused(t, dir, "bytesover.safetensors", TL_ERR_INTEGER_OVERFLOW,
                 "byte count overflows", NULL);
  write_st(
      dir, "neg.safetensors",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}", 8);
  expect_refused(t, dir, "neg.safetensors", TL_ERR_INVALID_MODEL,
                 "field 'shape'", "dimension 1 is not a non-negative integer");
  write_st(dir, "float.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}",
           8);
  expect_refused(t, dir, "float.safetensors", TL_ERR_INVALID_MODEL,
                 "dimension 0 is not a non-negative integer", NULL);
  write_st(dir, "dup.safetensors",
           "{\"a\":" F32_2("0,8") ",\"a\":" F32_2("8,16") "}", 16);
  expect_refused(t, dir, "dup.safetensors", TL_ERR_INVALID_MODEL,
                 "duplicate key", NULL);
  write_st(dir, "unknown.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],"
           "\"foo\":1}}",
           8);
  expect_refused(t, dir, "unknown.safetensors", TL_ERR_INVALID_MODEL,
                 "tensor 'a'", "unknown field 'foo'");
  write_st(dir, "missing.safetensors",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0);
  expect_refused(t, dir, "missing.safetensors", TL_ERR_INVALID_MODEL,
                 "field 'data_offsets': missing", NULL);
  write_st(dir, "empty.safetensors", "{\"\":" F32_2("0,8") "}", 8);
  expect_refused(t, dir, "empty.safetensors", TL_ERR_INVALID_MODEL,
                 "tensor name is empty", NULL);
  write_st(dir, "meta.safetensors", "{\"__metadata__\":{\"k\":1}}", 0);
  expect_refused(t, dir, "meta.safetensors", TL_ERR_INVALID_MODEL,
                 "field '__metadata__'", "value of 'k' is not a string");
  write_st(dir, "badutf8.safetensors", "{\"\xff\":" F32_2("0,8") "}", 8);
  expect_refused(t, dir, "badutf8.safetensors", TL_ERR_INVALID_MODEL,
                 "not valid JSON", NULL);
  expect_refused(t, dir, "absent.safetensors", TL_ERR_IO, NULL, NULL);
  rm_dir(dir);
}

/* Two shards: s1 holds a and c, s2 holds b. */
static void write_two_shards(const char *dir) {
  write_st(dir, "s1.safetensors",
           "{\"a\":" F32_2("0,8") ",\"c\":" F32_2("8,16") "}", 16);
  write_st(dir, "s2.safetensors", "{\"b\":" F32_2("0,8") "}", 8);
}

static void write_index(const char *dir, const char *name, const char *map) {
  char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"metadata\":{\"total_size\":24},\"weight_map\":{%s}}", map);
  write_raw(dir, name, buf, strlen(buf));
}

static void valid_two_shards(tl_test_ctx *t) {
  char *dir = make_dir();
  if (!TL_EXPECT(t, dir != NULL)) return;
  write_two_shards(dir);
  write_index(dir, "model.safetensors.index.json",
              "\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\","
              "\"c\":\"s1.safetensors\"");
  tl_st_checkpoint ck;
  char err[1024] = "";
  if (!TL_EXPECT_OK(t, tl_st_open_dir(dir, &ck, err, sizeof err))) {
    tl_test_print(t, err);
    rm_dir(dir);
    return;
  }
  TL_EXPECT(t, ck.sharded);
  TL_EXPECT_EQ_U64(t, ck.n_sources, 3);
  TL_EXPECT_EQ_U64(t, ck.n_tensors, 3);
  if (ck.n_sources == 3 && ck.n_tensors == 3) {
    TL_EXPECT_STR(t, ck.sources[0].name, "model.safetensors.index.json");
    TL_EXPECT_STR(t, ck.sources[1].name, "s1.safetensors");
    TL_EXPECT_STR(t, ck.sources[2].name, "s2.safetensors");
    for (size_t i = 0; i < 3; i++) {
      uint8_t want[32];
      tl_sha256(ck.sources[i].view.data, ck.sources[i].view.len, want);
      TL_EXPECT_MEM(t, ck.sources[i].sha256, want, 32);
    }
    TL_EXPECT_MEM(t, ck.tensors[0].name, "a", 1);
    TL_EXPECT_MEM(t, ck.tensors[1].name, "c", 1);
    TL_EXPECT_MEM(t, ck.tensors[2].name, "b", 1);
    TL_EXPECT_EQ_U64(t, ck.tensors[0].shard, 1);
    TL_EXPECT_EQ_U64(t, ck.tensors[1].shard, 1);
    TL_EXPECT_EQ_U64(t, ck.tensors[2].shard, 2);
    TL_EXPECT(t, ck.tensors[2].data ==
                     ck.sources[2].view.data + ck.tensors[2].file_offset);
    TL_EXPECT(t, ck.index_metadata != NULL);
  }
  tl_st_checkpoint_close(&ck);
  rm_dir(dir);
}

static void malformed_shards(tl_test_ctx *t) {
  char *dir = make_dir();
  if (!TL_EXPECT(t, dir != NULL)) return;
  write_two_shards(dir);
  write_index(dir, "missing.json",
              "\"a\":\"s1.safetensors\",\"b\":\"s3.safetensors\","
              "\"c\":\"s1.safetensors\"");
  expect_refused(t, dir, "missing.json", TL_ERR_INVALID_MODEL,
                 "tensor 'b': field 'weight_map'", "s3.safetensors");
  write_index(dir, "extra.json",
              "\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"");
  expect_refused(t, dir, "extra.json", TL_ERR_INVALID_MODEL,
                 "s1.safetensors: tensor 'c'", "extra tensor");
  write_index(dir, "absent.json",
              "\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\","
              "\"c\":\"s1.safetensors\",\"d\":\"s2.safetensors\"");
  expect_refused(t, dir, "absent.json", TL_ERR_INVALID_MODEL,
                 "tensor 'd': field 'weight_map'", "missing from shard");
  write_index(dir, "wrong.json",
              "\"a\":\"s2.safetensors\",\"b\":\"s2.safetensors\","
              "\"c\":\"s1.safetensors\"");
  expect_refused(t, dir, "wrong.json", TL_ERR_INVALID_MODEL, "tensor 'a'",
                 "names shard 's2.safetensors'");
  write_index(dir, "traverse.json",
              "\"a\":\"../s1.safetensors\",\"b\":\"s2.safetensors\"");
  expect_refused(t, dir, "traverse.json", TL_ERR_INVALID_MODEL,
                 "tensor 'a': field 'weight_map'", "not a plain file name");
  write_index(dir, "slash.json", "\"a\":\"sub/s1.safetensors\"");
  expect_refused(t, dir, "slash.json", TL_ERR_INVALID_MODEL,
                 "not a plain file name", NULL);
  {
    static const char j[] = "{\"weight_map\":{},\"x\":1}";
    write_raw(dir, "unknown.json", j, strlen(j));
  }
  expect_refused(t, dir, "unknown.json", TL_ERR_INVALID_MODEL,
                 "unknown field 'x'", NULL);
  write_raw(dir, "nomap.json", "{\"metadata\":{}}", 15);
  expect_refused(t, dir, "nomap.json", TL_ERR_INVALID_MODEL,
                 "field 'weight_map': missing", NULL);
  {
    static const char j[] =
        "{\"weight_map\":{\"a\":\"s1.safetensors\",\"a\":\"s1.safetensors\"}}";
    write_raw(dir, "dupkey.json", j, strlen(j));
  }
  expect_refused(t, dir, "dupkey.json", TL_ERR_INVALID_MODEL, "duplicate key",
                 NULL);
  /* Tensor a in two shards: s3 repeats it beside b. */
  write_st(dir, "s3.safetensors",
           "{\"a\":" F32_2("0,8") ",\"b\":" F32_2("8,16") "}", 16);
  write_index(dir, "twice.json",
              "\"a\":\"s1.safetensors\",\"c\":\"s1.safetensors\","
              "\"b\":\"s3.safetensors\"");
  expect_refused_as(t, dir, "twice.json", false, TL_ERR_INVALID_MODEL,
                    "s3.safetensors: tensor 'a'", "duplicate: also in shard");
  /* A malformed shard is reported under its own name. */
  write_st(dir, "bad.safetensors", "{\"a\":" F32_2("0,8") "}", 9);
  write_index(dir, "badshard.json", "\"a\":\"bad.safetensors\"");
  expect_refused_as(t, dir, "badshard.json", false, TL_ERR_INVALID_MODEL,
                    "bad.safetensors", "trailing bytes");
  rm_dir(dir);
}

/* The core parser refuses with the arena rewound, and every allocation
 * failure is TL_ERR_OUT_OF_MEMORY. */
static void core_parse_from_memory(tl_test_ctx *t) {
  static const char hdr[] = "{\"a\":" F32_2("0,8") "}";
  uint8_t file[8 + sizeof hdr - 1 + 8];
  tl_store_le64(file, sizeof hdr - 1);
  memcpy(file + 8, hdr, sizeof hdr - 1);
  memset(file + 8 + sizeof hdr - 1, 0, 8);
  static uint8_t mem[16384];
  tl_arena a;
  tl_st_file f;
  tl_st_error e;
  TL_EXPECT_OK(t, tl_arena_init(&a, mem, sizeof mem));
  TL_EXPECT_OK(t, tl_st_parse(file, sizeof file, "m", 7, &a, &f, &e));
  TL_EXPECT_EQ_U64(t, f.n_tensors, 1);
  TL_EXPECT_EQ_U64(t, f.tensors[0].shard, 7);
  TL_EXPECT_EQ_U64(t, f.data_offset, 8 + sizeof hdr - 1);
  size_t used = a.used;
  int ooms = 0;
  for (size_t k = 1; k < 64; k++) {
    tl_arena_reset(&a);
    a.fail_countdown = k;
    tl_status st = tl_st_parse(file, sizeof file, "m", 0, &a, &f, &e);
    if (st == TL_OK) {
      TL_EXPECT_EQ_U64(t, a.used, used);
      break;
    }
    ooms++;
    TL_EXPECT_STATUS(t, st, TL_ERR_OUT_OF_MEMORY);
    TL_EXPECT_EQ_U64(t, a.used, 0);
    TL_EXPECT(t, f.tensors == NULL);
  }
  TL_EXPECT(t, ooms > 0);
  tl_arena_reset(&a);
  a.fail_countdown = 0;
  file[0] ^= 1; /* header length off by one */
  TL_EXPECT_STATUS(t, tl_st_parse(file, sizeof file, NULL, 0, &a, &f, &e),
                   TL_ERR_INVALID_MODEL);
  TL_EXPECT_EQ_U64(t, a.used, 0);
  TL_EXPECT_STATUS(t, tl_st_parse(NULL, 4, NULL, 0, &a, &f, &e),
                   TL_ERR_INVALID_ARGUMENT);
}

static const tl_test_case cases[] = {
    TL_CASE(valid_single_file),      TL_CASE(malformed_single_files),
    TL_CASE(valid_two_shards),       TL_CASE(malformed_shards),
    TL_CASE(core_parse_from_memory),
};
TL_SUITE(safetensors, cases);
