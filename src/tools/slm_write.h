/* Writes a .slm container (docs/slm.md): deterministic bytes (same
 * sections, same file) and atomic (temp file + rename).
 *
 * Two ways: tl_slm_write for sections held in memory, or the streaming
 * writer for sections produced piece by piece (tensor data): the section
 * lengths are fixed up front, each section is appended to in order, and
 * finish writes the table and header, fsyncs, hashes the file and renames
 * it into place. */
#ifndef TL_TOOLS_SLM_WRITE_H
#define TL_TOOLS_SLM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "file.h"
#include "hash/blake3.h"
#include "slm/slm.h"

typedef struct tl_slm_part {
  tl_slm_kind kind;
  uint32_t flags; /* TL_SLM_SECTION_REQUIRED or 0 */
  const uint8_t *data; /* NULL for a section the streaming writer fills */
  size_t len;
} tl_slm_part;

/* Lays out the parts in the given order and writes path. artifact_id gets
 * the SHA-256 of the whole file. */
tl_status tl_slm_write(const char *path, const tl_slm_part *parts, size_t n,
                       uint8_t artifact_id[32], char *err, size_t err_cap);

typedef struct tl_slm_writer_section {
  tl_slm_kind kind;
  uint32_t flags;
  uint64_t offset, len, written;
  tl_blake3_hasher hasher;
} tl_slm_writer_section;

typedef struct tl_slm_writer {
  tl_file_atomic file;
  size_t n;
  uint64_t file_len;
  tl_slm_writer_section sections[TL_SLM_MAX_SECTIONS];
} tl_slm_writer;

/* Creates the temporary file for sections of the given kinds, flags and
 * lengths (parts[i].data is not read). */
tl_status tl_slm_writer_begin(tl_slm_writer *w, const char *path,
                              const tl_slm_part *parts, size_t n, char *err,
                              size_t err_cap);
/* Appends to section i; a section may not grow past its declared length
 * (TL_ERR_BOUNDS). */
tl_status tl_slm_writer_append(tl_slm_writer *w, size_t i, const void *data,
                               size_t len, char *err, size_t err_cap);
/* Every section must be complete (TL_ERR_INTERNAL_INVARIANT otherwise).
 * On any failure the temporary file is removed. */
tl_status tl_slm_writer_finish(tl_slm_writer *w, uint8_t artifact_id[32],
                               char *err, size_t err_cap);
/* Removes the temporary file (after a failed append, or to give up). */
void tl_slm_writer_abort(tl_slm_writer *w);

#endif
