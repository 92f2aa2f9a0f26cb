/* The official BLAKE3 test vectors (blake3_vectors.h) with the three modes
 * they cover, shared by the portable suite and the backend dispatch suite. */
#ifndef TL_CORE_BLAKE3_TV_H
#define TL_CORE_BLAKE3_TV_H

#include "hash/blake3.h"
#include "hash/blake3_vectors.h"

enum { MODE_HASH, MODE_KEYED, MODE_DERIVE, MODE_COUNT };

static inline void init_mode(tl_blake3_hasher *h, int mode) {
  if (mode == MODE_KEYED)
    tl_blake3_hasher_init_keyed(h, (const uint8_t *)TL_BLAKE3_TV_KEY);
  else if (mode == MODE_DERIVE)
    tl_blake3_hasher_init_derive_key(h, TL_BLAKE3_TV_CONTEXT,
                                     sizeof TL_BLAKE3_TV_CONTEXT - 1);
  else
    tl_blake3_hasher_init(h);
}

static inline const char *tv_hex(const tl_blake3_tv *tv, int mode) {
  return mode == MODE_KEYED    ? tv->keyed_hash
         : mode == MODE_DERIVE ? tv->derive_key
                               : tv->hash;
}

#endif
