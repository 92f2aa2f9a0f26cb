/* Arenas: the core's only source of memory (docs/architecture.md §2).
 *
 * The host hands in one region; the core carves it with bump allocation.
 * Memory is released all at once (reset) or back to a mark (rewind). A
 * sub-arena takes a fixed slice of its parent so one subsystem cannot eat
 * another's budget. Nothing here calls malloc. */
#ifndef TL_CORE_ARENA_H
#define TL_CORE_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

typedef struct tl_arena {
  uint8_t *base;
  size_t cap;
  size_t used;
  size_t high_water; /* the largest `used` ever seen since init */
  /* Fault injection for tests: when non-zero, it counts down on every
   * allocation and the allocation that takes it to zero fails with
   * TL_ERR_OUT_OF_MEMORY (then it stays zero: disarmed). */
  size_t fail_countdown;
} tl_arena;

/* Alignment every allocation gets at least. */
#define TL_ARENA_MIN_ALIGN 16u

/* mem may be NULL only when cap is 0. */
tl_status tl_arena_init(tl_arena *a, void *mem, size_t cap);

/* *out gets size bytes aligned to align (a power of two; smaller values
 * are raised to TL_ARENA_MIN_ALIGN). size 0 is allowed and yields a valid,
 * unique-enough pointer that must not be dereferenced. On failure *out is
 * NULL and the arena is unchanged. */
tl_status tl_arena_alloc(tl_arena *a, size_t size, size_t align, void **out);

/* tl_arena_alloc of count * elem_size bytes, overflow-checked. */
tl_status tl_arena_alloc_array(tl_arena *a, size_t count, size_t elem_size,
                               size_t align, void **out);

/* Bytes still available at the given alignment. */
size_t tl_arena_available(const tl_arena *a, size_t align);

/* A mark records `used`; rewinding releases everything allocated after it. */
typedef struct tl_arena_mark {
  size_t used;
} tl_arena_mark;
tl_arena_mark tl_arena_mark_now(const tl_arena *a);
tl_status tl_arena_rewind(tl_arena *a, tl_arena_mark mark);

/* Releases everything; the high-water mark is kept. */
void tl_arena_reset(tl_arena *a);

/* Carves cap bytes (aligned to align) from parent and makes child an arena
 * over them. The child's memory stays allocated in the parent until the
 * parent is reset or rewound past it. */
tl_status tl_arena_sub(tl_arena *parent, size_t cap, size_t align,
                       tl_arena *child);

#endif
