/* Signed promotions (docs/promotion-receipts.md §Signatures): Ed25519 keys
 * (libsodium) in two small text files, a tinylm.signature/1 receipt over a
 * promotion's root id in the store, and its verification under a public
 * key the reader trusts. A signature says who vouches for the promotion;
 * everything else a reader verifies is the receipts' and the judges'. */
#ifndef TL_NATIVE_PROMOTE_SIGN_H
#define TL_NATIVE_PROMOTE_SIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "promote_store.h"
#include "tinylm.h"

/* The files' first lines: KEY (secret, 0600) and KEY.pub. */
#define TL_SIGN_SECRET_HEADER "tinylm-secret-key/1 ed25519"
#define TL_SIGN_PUBLIC_HEADER "tinylm-public-key/1 ed25519"

/* Why --trust refused, as promote show names it (the rule). */
#define TL_TRUST_MISSING "missing_signature" /* none over this promotion */
#define TL_TRUST_OTHER_KEY "untrusted_key"   /* signed, by another key only */
#define TL_TRUST_BAD "bad_signature"         /* by this key, and it does not verify */

typedef struct tl_sign_key {
  uint8_t secret[64]; /* libsodium's: the seed, then the public key */
  uint8_t pub[32];
} tl_sign_key;

/* A new key pair into path (secret, 0600) and path.pub, each written to a
 * temporary file beside it and published by link (by rename with force):
 * an existing file is refused (TL_ERR_CONFLICT) unless force. */
tl_status tl_sign_keygen(const char *path, bool force, char *err, size_t err_cap);

/* The secret key file (its header, its seed, its public key agreeing; a
 * file group or others may read is refused) and a public key file.
 * TL_ERR_INVALID_ARGUMENT naming the file and line for anything else. */
tl_status tl_sign_key_read(const char *path, tl_sign_key *k, char *err, size_t err_cap);
tl_status tl_sign_public_read(const char *path, uint8_t pub[32], char *err, size_t err_cap);
/* Wipes a key read into memory. */
void tl_sign_key_clear(tl_sign_key *k);

/* Signs the promotion whose root is root and puts the signature receipt
 * into the store (*sig_root: its root id). */
tl_status tl_sign_promotion(tl_store *s, const tl_sign_key *k, const uint8_t root[32],
                            uint8_t sig_root[32], char *err, size_t err_cap);

/* TL_OK when the store holds a signature receipt over root by key pub that
 * verifies (*sig_root: its id). Else *rule says why: TL_TRUST_MISSING
 * (not_found), TL_TRUST_OTHER_KEY (conflict: signed by other keys only),
 * TL_TRUST_BAD (hash_mismatch: by pub and it does not verify, or the
 * receipt is damaged), with err saying which. */
tl_status tl_sign_trust(tl_store *s, const uint8_t root[32], const uint8_t pub[32],
                        const char **rule, uint8_t sig_root[32], char *err, size_t err_cap);

/* tinylm promote keygen -o KEY [--force] [--json] */
int tl_promote_keygen_main(int argc, char **argv);

#endif
