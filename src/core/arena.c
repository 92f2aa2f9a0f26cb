#include "arena.h"

#include <string.h>

#include "checked.h"

/* Debug builds poison fresh allocations (0xAA) and released bytes (0x55),
 * as SQLite does, so reads of uninitialised or released memory show. */
#ifdef TL_DEBUG
#define TL_ARENA_POISON_ALLOC 0xAA
#define TL_ARENA_POISON_FREE 0x55
#endif

tl_status tl_arena_init(tl_arena *a, void *mem, size_t cap) {
  if (a == NULL || (mem == NULL && cap != 0)) return TL_ERR_INVALID_ARGUMENT;
  a->base = (uint8_t *)mem;
  a->cap = cap;
  a->used = 0;
  a->high_water = 0;
  a->fail_countdown = 0;
  return TL_OK;
}

/* Offset from base at which an allocation aligned to align would start. */
static tl_status aligned_offset(const tl_arena *a, size_t align, size_t *out) {
  uintptr_t addr = (uintptr_t)a->base + a->used;
  uintptr_t mask = (uintptr_t)align - 1;
  size_t pad = (size_t)((align - (addr & mask)) & mask);
  return tl_add_size(a->used, pad, out);
}

static size_t effective_align(size_t align) {
  return align < TL_ARENA_MIN_ALIGN ? TL_ARENA_MIN_ALIGN : align;
}

tl_status tl_arena_alloc(tl_arena *a, size_t size, size_t align, void **out) {
  size_t start, end;
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (a == NULL || (align & (align - 1)) != 0) return TL_ERR_INVALID_ARGUMENT;
  align = effective_align(align);
  if (a->fail_countdown != 0 && --a->fail_countdown == 0)
    return TL_ERR_OUT_OF_MEMORY;
  if (a->base == NULL) return TL_ERR_OUT_OF_MEMORY; /* an empty arena */
  if (aligned_offset(a, align, &start) != TL_OK || start > a->cap ||
      size > a->cap - start)
    return TL_ERR_OUT_OF_MEMORY;
  end = start + size;
#ifdef TL_DEBUG
  memset(a->base + start, TL_ARENA_POISON_ALLOC, size);
#endif
  a->used = end;
  if (end > a->high_water) a->high_water = end;
  *out = a->base + start;
  return TL_OK;
}

tl_status tl_arena_alloc_array(tl_arena *a, size_t count, size_t elem_size,
                               size_t align, void **out) {
  size_t bytes;
  if (out == NULL) return TL_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (tl_mul_size(count, elem_size, &bytes) != TL_OK)
    return TL_ERR_INTEGER_OVERFLOW;
  return tl_arena_alloc(a, bytes, align, out);
}

size_t tl_arena_available(const tl_arena *a, size_t align) {
  size_t start;
  if (a == NULL || (align & (align - 1)) != 0) return 0;
  if (aligned_offset(a, effective_align(align), &start) != TL_OK ||
      start > a->cap)
    return 0;
  return a->cap - start;
}

tl_arena_mark tl_arena_mark_now(const tl_arena *a) {
  tl_arena_mark m;
  m.used = a->used;
  return m;
}

tl_status tl_arena_rewind(tl_arena *a, tl_arena_mark mark) {
  if (a == NULL || mark.used > a->used) return TL_ERR_INVALID_ARGUMENT;
#ifdef TL_DEBUG
  memset(a->base + mark.used, TL_ARENA_POISON_FREE, a->used - mark.used);
#endif
  a->used = mark.used;
  return TL_OK;
}

void tl_arena_reset(tl_arena *a) {
  tl_arena_mark start = {0};
  (void)tl_arena_rewind(a, start);
}

tl_status tl_arena_sub(tl_arena *parent, size_t cap, size_t align,
                       tl_arena *child) {
  void *mem;
  tl_status st;
  if (child == NULL) return TL_ERR_INVALID_ARGUMENT;
  st = tl_arena_alloc(parent, cap, align, &mem);
  if (st != TL_OK) return st;
  return tl_arena_init(child, mem, cap);
}
