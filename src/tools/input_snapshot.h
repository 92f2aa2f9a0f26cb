/* Source files read once (convert's inputs).
 *
 * A conversion records the SHA-256 of every source file and then parses
 * it. Reading the file twice by path let a file replaced in between give
 * an artifact whose recorded hash is of other bytes. So convert takes each
 * input once into private memory (tl_snapshot_take), hashes those bytes,
 * and the JSON readers (config, generation config, tokenizer, tokenizer
 * config) parse the same bytes through tl_snapshot_json instead of
 * reopening the path. A path never taken is read from the file, once.
 *
 * The snapshots are process-wide until tl_snapshot_release_all; one
 * conversion at a time takes them (the CLI's convert; not thread-safe). */
#ifndef TL_TOOLS_INPUT_SNAPSHOT_H
#define TL_TOOLS_INPUT_SNAPSHOT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* Reads the regular file at path into memory once and keeps it under
 * that exact path string; *data and *len stay valid until release. */
tl_status tl_snapshot_take(const char *path, const uint8_t **data, size_t *len,
                           char *err, size_t err_cap);

/* The JSON document at path: parsed from its snapshot when one was taken,
 * else loaded from the file (as json_load_file; e->line < 0 on an I/O
 * error). */
json_t *tl_snapshot_json(const char *path, size_t flags, json_error_t *e);

void tl_snapshot_release_all(void);

#endif
