/* The .slm artifact container (docs/slm.md): a fixed header, a section
 * table, and 64-byte-aligned sections each with a BLAKE3-256 digest. This
 * reader validates every field before exposing a byte of any section. */
#ifndef TL_CORE_SLM_H
#define TL_CORE_SLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_SLM_MAGIC "\x89SLM\r\n\x1a\n"
#define TL_SLM_VERSION_MAJOR 1
#define TL_SLM_VERSION_MINOR 0
#define TL_SLM_HEADER_LEN 64
#define TL_SLM_ENTRY_LEN 64
#define TL_SLM_ALIGN 64
#define TL_SLM_MAX_SECTIONS 16

typedef enum tl_slm_kind {
  TL_SLM_METADATA = 1,   /* deterministic CBOR */
  TL_SLM_TOKENIZER = 2,  /* docs/tokenizer-section.md */
  TL_SLM_TEMPLATE = 3,   /* compiled chat template IR */
  TL_SLM_TENSOR_DIR = 4, /* tensor directory */
  TL_SLM_TENSOR_DATA = 5 /* aligned tensor data */
} tl_slm_kind;

/* Section flag: a reader that does not know the kind must refuse the file. */
#define TL_SLM_SECTION_REQUIRED 1u

typedef struct tl_slm_section {
  uint32_t kind;
  uint32_t flags;
  const uint8_t *data;
  size_t len;
  uint8_t digest[32]; /* BLAKE3-256 of the section's bytes */
} tl_slm_section;

typedef struct tl_slm {
  const uint8_t *file;
  size_t len;
  uint16_t version_minor;
  size_t n_sections;
  tl_slm_section sections[TL_SLM_MAX_SECTIONS];
} tl_slm;

typedef enum tl_slm_verify {
  TL_SLM_VERIFY_EAGER, /* every section's digest is checked at open */
  TL_SLM_VERIFY_LAZY   /* digests are checked by tl_slm_verify_section */
} tl_slm_verify;

/* Validates magic, version, header, the section table and every section's
 * offset, length, alignment, order, overlap and zero padding (and, when
 * eager, digests). Failures: TL_ERR_INVALID_MODEL (malformed),
 * TL_ERR_UNSUPPORTED_ABI (newer major version, unknown required section),
 * TL_ERR_HASH_MISMATCH (a digest). *fail_offset, when not NULL, gets the
 * file offset of the field that failed. */
tl_status tl_slm_open(tl_slm *slm, const uint8_t *file, size_t len,
                      tl_slm_verify verify, size_t *fail_offset);

/* The section of that kind, or TL_ERR_INVALID_MODEL when absent. */
tl_status tl_slm_find(const tl_slm *slm, tl_slm_kind kind,
                      const tl_slm_section **out);

/* The file length the header declares (offset 16), when the file starts
 * with the magic and header_len: a caller names a truncated file as such
 * (tl_slm_open refuses it as TL_ERR_INVALID_MODEL at offset 16).
 * TL_ERR_INVALID_MODEL when those 24 bytes are not there. */
tl_status tl_slm_declared_len(const uint8_t *file, size_t len,
                              uint64_t *declared);

/* BLAKE3-256 over the header's first 32 bytes and the section table
 * (header bytes 64 .. table_end): the value stored at header offset 32. */
tl_status tl_slm_header_digest(const uint8_t *file, size_t table_end,
                               uint8_t digest[32]);

typedef enum tl_slm_artifact_kind {
  TL_SLM_ARTIFACT_TOKENIZER_ONLY = 1,
  TL_SLM_ARTIFACT_MODEL = 2
} tl_slm_artifact_kind;

/* SLM-4a: the metadata section is a deterministic CBOR map whose "format"
 * is "tinylm.slm" and whose "artifact_kind" names the sections the file
 * must hold. Reads the metadata bytes (verify the section first when the
 * file was opened lazily). TL_ERR_INVALID_MODEL otherwise (a missing
 * section, malformed CBOR, another format, an unknown kind). */
tl_status tl_slm_artifact(const tl_slm *slm, tl_slm_artifact_kind *kind);

/* TL_ERR_HASH_MISMATCH when the section's bytes do not match its digest. */
tl_status tl_slm_verify_section(const tl_slm_section *section);

#endif
