/* The tokenizer runtime: executes a compiled tokenizer section
 * (docs/tokenizer-section.md) — added-token split, NFC, the Qwen2
 * pre-tokenizer, byte-level BPE — and decodes ids back to bytes.
 * Freestanding: memory comes from arenas, text is (bytes, length). */
#ifndef TL_CORE_TOK_TOKENIZER_H
#define TL_CORE_TOK_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "tinylm.h"

#define TL_TOK_MAGIC "TLTK"
#define TL_TOK_VERSION_MAJOR 1
#define TL_TOK_VERSION_MINOR 0
#define TL_TOK_HEADER_LEN 64
#define TL_TOK_PROFILE_QWEN2_BYTE_BPE 1u
/* The Unicode versions this runtime's tables implement; a section must
 * declare exactly these (docs/unicode.md explains why there are two). */
#define TL_TOK_NFC_UNICODE_VERSION 0x00090000u
#define TL_TOK_CLASS_UNICODE_VERSION 0x00100000u

enum {
  TL_TOK_ADDED_SPECIAL = 1u << 0,
  TL_TOK_ADDED_NORMALIZED = 1u << 1,
  TL_TOK_ADDED_LSTRIP = 1u << 2,
  TL_TOK_ADDED_RSTRIP = 1u << 3,
  TL_TOK_ADDED_SINGLE_WORD = 1u << 4
};

typedef struct tl_tokenizer tl_tokenizer;

/* A token's [start, end) byte range in the original input. */
typedef struct tl_tok_span {
  uint32_t start, end;
} tl_tok_span;

/* Decode modes (decode.c has the details):
 *   RAW         every token's bytes, concatenated; may be ill-formed UTF-8
 *               (HF's decode is String::from_utf8_lossy of these bytes).
 *   VISIBLE     RAW without the tokens flagged special (HF's
 *               skip_special_tokens); non-special added tokens stay.
 *   DIAGNOSTIC  RAW made printable: each byte of an ill-formed subpart and
 *               of a C0/DEL/C1 control character becomes \xHH, a backslash
 *               becomes \\, every other character is itself. */
typedef enum tl_tok_decode_mode {
  TL_TOK_DECODE_RAW,       /* every token's bytes */
  TL_TOK_DECODE_VISIBLE,   /* tokens flagged special are skipped */
  TL_TOK_DECODE_DIAGNOSTIC /* raw, with non-printable bytes escaped */
} tl_tok_decode_mode;

/* Validates the section (every field of TOK-S-1..6) and builds the lookup
 * structures in arena. The section bytes must outlive the tokenizer. */
tl_status tl_tok_load(const uint8_t *section, size_t len, tl_arena *arena,
                      const tl_tokenizer **out);

/* Arena bytes tl_tok_load needs at most for this section (read from its
 * header; TL_ERR_INVALID_MODEL when the header cannot be read). */
tl_status tl_tok_load_arena_bound(const uint8_t *section, size_t len,
                                  size_t *bytes);

uint32_t tl_tok_vocab_size(const tl_tokenizer *tok);

/* Token id's bytes (raw for model tokens, content for added tokens). */
tl_status tl_tok_token_bytes(const tl_tokenizer *tok, uint32_t id,
                             const uint8_t **bytes, size_t *len);

/* Encodes text. ids (and offsets, when not NULL) get *n_ids entries; when
 * ids_cap is too small the result is TL_ERR_BOUNDS and *n_ids is the
 * number needed. Invalid UTF-8 gives TL_ERR_INVALID_UTF8 with *err_offset
 * = the byte offset of the first maximal ill-formed subpart. scratch
 * provides working memory (see tl_tok_encode_scratch_bound); it is rewound
 * before returning. */
tl_status tl_tok_encode(const tl_tokenizer *tok, const uint8_t *text,
                        size_t len, tl_arena *scratch, uint32_t *ids,
                        tl_tok_span *offsets, size_t ids_cap, size_t *n_ids,
                        size_t *err_offset);

/* tl_tok_encode, except that a special token whose text starts inside one
 * of the byte ranges plain[0..n_plain) of text is not matched: its bytes
 * are encoded with the text around them, as if it were no token at all
 * (transformers' split_special_tokens, for those ranges only). Used to
 * keep text a user typed from becoming control tokens while a template's
 * own stay special. */
tl_status tl_tok_encode_plain(const tl_tokenizer *tok, const uint8_t *text,
                              size_t len, const tl_tok_span *plain,
                              size_t n_plain, tl_arena *scratch, uint32_t *ids,
                              tl_tok_span *offsets, size_t ids_cap,
                              size_t *n_ids, size_t *err_offset);

/* Whether id is an added token flagged special (<|im_end|> in Qwen3). */
bool tl_tok_is_special(const tl_tokenizer *tok, uint32_t id);

/* Scratch bytes tl_tok_encode needs at most for an input of len bytes:
 * 99 * len + 1 MiB + 336 (NFC of the whole input as one span, 27 per byte
 * + 64, unicode.h; BPE of a piece as long as the normalized text, 24 per
 * normalized byte, <= 3 normalized bytes per input byte; the word cache,
 * <= 1 MiB). What a call really takes is far less: text that is already
 * NFC needs no NFC memory, and BPE needs 24 bytes per byte of the longest
 * piece only when it is longer than 64 bytes. */
tl_status tl_tok_encode_scratch_bound(size_t len, size_t *bytes);

/* Writes the decoded bytes; when cap is too small the result is
 * TL_ERR_BOUNDS and *out_len is the length needed. An id outside the
 * vocabulary is TL_ERR_INVALID_ARGUMENT with *bad_index its position. */
tl_status tl_tok_decode(const tl_tokenizer *tok, const uint32_t *ids,
                        size_t n_ids, tl_tok_decode_mode mode, uint8_t *out,
                        size_t cap, size_t *out_len, size_t *bad_index);

#endif
