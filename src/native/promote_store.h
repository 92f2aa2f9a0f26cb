/* The evidence store of tinylm promote (docs/promotion.md §The evidence
 * store): an append-only directory of content-addressed objects.
 *
 *   DIR/objects/HEX64        any bytes, named by their SHA-256
 *   DIR/receipts/HEX64.cbor  comparison and promotion receipts, by root id
 *   DIR/index.jsonl          one line appended per object/receipt written
 *
 * Nothing is ever rewritten: a write goes to a temporary file that is
 * linked into place; when the name exists, its bytes must equal the new
 * ones (same content: nothing to do) or the store is damaged
 * (TL_ERR_HASH_MISMATCH). Every read checks the name against the bytes.
 *
 * Custody: DIR, objects/ and receipts/ must each be a real directory (not
 * a symbolic link) owned by the effective user and not group- or
 * other-writable; tl_store_open refuses anything else (TL_ERR_IO naming
 * the directory and why) and from then on names every entry relative to
 * the directories it checked, so nothing outside them is read or
 * written. */
#ifndef TL_NATIVE_PROMOTE_STORE_H
#define TL_NATIVE_PROMOTE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_store tl_store;

/* Opens DIR (creating it and its subdirectories, 0700, when create is
 * true). TL_ERR_IO (absent, or refused: see Custody above) /
 * TL_ERR_INVALID_ARGUMENT (not a directory, or an index.jsonl line that is
 * not exactly what the store writes: see tl_store_last_entry) with err
 * naming the path. */
tl_status tl_store_open(const char *dir, bool create, tl_store **out,
                        char *err, size_t err_cap);
void tl_store_close(tl_store *s);
const char *tl_store_dir(const tl_store *s);

/* Puts bytes as an object; id gets their SHA-256. `what` is a short label
 * for the index line ("observation", "plan", "golden", "run"). */
tl_status tl_store_put(tl_store *s, const char *what, const uint8_t *bytes,
                       size_t len, uint8_t id[32], char *err, size_t err_cap);
/* Reads an object (malloc'd): TL_ERR_NOT_FOUND when absent,
 * TL_ERR_HASH_MISMATCH when its bytes do not hash to its name. */
tl_status tl_store_get(tl_store *s, const uint8_t id[32], uint8_t **bytes,
                       size_t *len, char *err, size_t err_cap);
bool tl_store_has(tl_store *s, const uint8_t id[32]);

/* Puts a receipt file under its root id (the caller has checked it). */
tl_status tl_store_put_receipt(tl_store *s, const char *what,
                               const uint8_t root[32], const uint8_t *doc,
                               size_t len, char *err, size_t err_cap);
/* Reads a receipt by root id (malloc'd); TL_ERR_NOT_FOUND when absent.
 * The caller verifies it (its root must recompute to `root`). */
tl_status tl_store_get_receipt(tl_store *s, const uint8_t root[32],
                               uint8_t **doc, size_t *len, char *err,
                               size_t err_cap);
/* The id of the last index.jsonl line of kind (receipt or object) and
 * label `what` (the store's most recent promotion: true, "promotion").
 * Every line must be exactly what the store writes, {"id", "kind",
 * "size", "what"}, its id 64 lower-case hex digits: anything else (a
 * path, "../") is TL_ERR_INVALID_ARGUMENT naming the line, never
 * followed. TL_ERR_NOT_FOUND when none. */
tl_status tl_store_last_entry(tl_store *s, bool receipt, const char *what, uint8_t id[32],
                              char *err, size_t err_cap);
/* Every receipt's root id in the store, sorted (malloc'd array of n). */
tl_status tl_store_list_receipts(tl_store *s, uint8_t (**ids)[32], size_t *n,
                                 char *err, size_t err_cap);

#endif
