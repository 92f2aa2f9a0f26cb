/* Philox-4x32-10's published known answers, for the unit tests and the
 * wasm32 modules' start-up self-test (web/wasm/self_test.c). */
#ifndef TL_CORE_PHILOX_KAT_H
#define TL_CORE_PHILOX_KAT_H

#include <stdint.h>

typedef struct tl_philox_kat_case {
  uint32_t ctr[4], key[2], out[4];
} tl_philox_kat_case;

#define TL_PHILOX_KAT_COUNT 3

/* Random123 tests/kat_vectors, the three "philox4x32 10" lines
 * (https://github.com/DEShawResearch/random123, tests/kat_vectors;
 * columns: counter[4] key[2] expected[4]):
 *   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000
 *                 6627e8d5 e169c58d bc57ac4c 9b00dbd8
 *   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
 *                 408f276d 41c83b0e a20bc7c6 6d5451fd
 *   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0
 *                 d16cfe09 94fdcceb 5001e420 24126ea1              (pi) */
static const tl_philox_kat_case tl_philox_kat[TL_PHILOX_KAT_COUNT] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

#endif
