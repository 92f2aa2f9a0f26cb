/* The verified-stamp cache (docs/architecture.md, "Verified stamps"): a
 * record, in a directory only this user can change, that the file with a
 * given (device, inode, size, mtime, ctime) and header digest passed every
 * section and tensor digest, with its artifact id once known. An open that
 * finds a matching stamp skips the digest pass (the structure is still
 * validated; the q8/q4 codes are checked by the lane unless a codes
 * stamp of the same file says they were); anything changed
 * in the key is a miss, and so a full verification. Native only. */
#ifndef TL_NATIVE_STAMP_H
#define TL_NATIVE_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* TINYLM_VERIFY=full (or --verify full): verify every digest even when a
 * stamp matches; unset, empty or "stamp": use a stamp when one matches. */
#define TL_VERIFY_ENV "TINYLM_VERIFY"

/* What fstat says of an open file; the stamp's key. */
typedef struct tl_stamp_key {
  uint64_t dev, ino;
  int64_t size, mtime_s, mtime_ns, ctime_s, ctime_ns;
} tl_stamp_key;

/* false when fd cannot be examined. */
bool tl_stamp_key_of(int fd, tl_stamp_key *k);
bool tl_stamp_key_equal(const tl_stamp_key *a, const tl_stamp_key *b);

/* Whether TL_VERIFY_ENV asks for a full verification; a value other than
 * the two is TL_ERR_INVALID_ARGUMENT with err saying so. */
tl_status tl_stamp_full_wanted(bool *full, char *err, size_t err_cap);

/* Whether the cache holds a stamp for k whose header digest is header (the
 * file's bytes 32..63); *has_id and id[] get its artifact id when it has
 * one. A cache directory that is missing, a link, another user's or
 * group/other-writable is no stamp. */
bool tl_stamp_lookup(const tl_stamp_key *k, const uint8_t header[32], uint8_t id[32],
                     bool *has_id);

/* Records (replacing atomically: temporary file + rename) that the file
 * k names, with that header digest, passed every digest; id: its artifact
 * id, or NULL. Best effort: nothing is written when the cache directory
 * is refused or cannot be made, or when the file changed less than two
 * seconds ago (a timestamp tick can hold two writes: such a file's key
 * may not name its bytes). */
void tl_stamp_record(const tl_stamp_key *k, const uint8_t header[32], const uint8_t *id);

/* The same for a second fact about the file: its q8/q4 codes passed Q-17
 * (the fast lane's validation, F-9). Only meaningful beside a verified
 * stamp of the same key and header (the bytes are those that were
 * verified and validated): the lane skips the validation only then. */
bool tl_stamp_codes_lookup(const tl_stamp_key *k, const uint8_t header[32]);
void tl_stamp_codes_record(const tl_stamp_key *k, const uint8_t header[32]);

#endif
