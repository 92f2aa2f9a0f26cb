/* A safetensors checkpoint on disk (docs/safetensors.md): one
 * model.safetensors, or shards listed by model.safetensors.index.json.
 * Files are mapped (tl_file_open_regular), hashed with SHA-256 in one pass
 * over the mapping, and parsed with the core's tl_st_parse; the sharded form
 * is cross-checked against the index (ST-20..ST-27).
 *
 * Every file is a regular file (symlinks followed; a FIFO, device or
 * directory is refused before any byte is read) and the index is at most
 * TL_ST_MAX_INDEX_BYTES (ST-27).
 *
 * Failures: the statuses of tl_st_parse, and TL_ERR_INVALID_MODEL for an
 * index or shard set that does not agree (a missing or unreadable shard
 * file included), TL_ERR_IO for a single file or index that cannot be
 * read; err names the file, the tensor and the field. */
#ifndef TL_TOOLS_ST_CHECKPOINT_H
#define TL_TOOLS_ST_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "file.h"
#include "hash/sha256.h"
#include "json/json.h"
#include "safetensors/safetensors.h"

/* One file read: the index (sharded form) or a shard. */
typedef struct tl_st_source {
  char *path; /* as opened (malloc) */
  char *name; /* base name (points into path) */
  uint64_t size;
  uint8_t sha256[TL_SHA256_DIGEST_LEN];
  tl_file_view view;
  tl_st_meta *metadata; /* the shard's "__metadata__" (index: none) */
  size_t n_metadata;
  tl_arena arena; /* the parsed header or index */
  void *arena_mem;
} tl_st_source;

typedef struct tl_st_checkpoint {
  bool sharded;
  /* sharded: sources[0] is the index, shards follow in order of first
   * appearance in weight_map; single: sources[0] is the file. */
  tl_st_source *sources;
  size_t n_sources;
  /* Every tensor: shard by shard, each in header order (malloc). tensor.shard
   * is an index into sources (the file holding it). */
  tl_st_tensor *tensors;
  size_t n_tensors;
  /* sharded: the index's "metadata" object (recorded, not interpreted),
   * NULL when absent. */
  const tl_json_value *index_metadata;
} tl_st_checkpoint;

/* Most distinct shard files an index may name (ST-26). */
#define TL_ST_MAX_SHARDS 1024
/* Largest index file (ST-27): the limit ST-2 sets on a header. */
#define TL_ST_MAX_INDEX_BYTES 100000000u

/* One safetensors file. */
tl_status tl_st_open_file(const char *path, tl_st_checkpoint *ck, char *err,
                          size_t err_cap);
/* model.safetensors.index.json and the shards beside it. */
tl_status tl_st_open_index(const char *index_path, tl_st_checkpoint *ck,
                           char *err, size_t err_cap);
/* dir/model.safetensors.index.json when it exists, else
 * dir/model.safetensors. */
tl_status tl_st_open_dir(const char *dir, tl_st_checkpoint *ck, char *err,
                         size_t err_cap);
/* Unmaps and frees; safe on a zeroed or failed checkpoint. */
void tl_st_checkpoint_close(tl_st_checkpoint *ck);

#endif
