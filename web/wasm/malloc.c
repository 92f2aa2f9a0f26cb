/* The heap of the wasm32 API modules: malloc/free over the memory after
 * __heap_base, grown with memory.grow. Exported too, for the JS loader's
 * buffers (model bytes, prompts, results it reads back).
 *
 * Blocks are contiguous, each behind a 16-byte header (its size with the
 * used bit, and the previous block's size), so free merges a block with
 * both neighbours at once; malloc takes the first free block that fits
 * (the API makes few, large allocations: a walk is cheap). Payloads are
 * 16-byte aligned. Every API call runs on one thread (pthread.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern unsigned char __heap_base;

#define WASM_PAGE 65536u
#define HDR 16u
#define USED 1u

typedef struct block {
  size_t size; /* whole block, header included, multiple of 16; | USED */
  size_t prev; /* the previous block's size (0: the first block) */
  size_t pad[2];
} block;

_Static_assert(sizeof(block) == HDR, "the header is 16 bytes on wasm32");

static uintptr_t heap_start, heap_end; /* blocks tile [heap_start, heap_end) */

static size_t bsize(const block *b) { return b->size & ~(size_t)USED; }
static block *next_of(block *b) { return (block *)((uintptr_t)b + bsize(b)); }
static block *prev_of(block *b) { return (block *)((uintptr_t)b - b->prev); }

/* Adds bytes (a multiple of 16) at the end of the heap as one free block,
 * merged with a free last block; NULL when memory cannot grow. */
static block *grow(size_t bytes, block *last) {
  uintptr_t have = (uintptr_t)__builtin_wasm_memory_size(0) * WASM_PAGE;
  block *b;
  if (heap_end > UINTPTR_MAX - bytes) return NULL;
  if (heap_end + bytes > have) {
    uintptr_t need = heap_end + bytes - have;
    if (__builtin_wasm_memory_grow(0, (need + WASM_PAGE - 1) / WASM_PAGE) == (size_t)-1)
      return NULL;
  }
  if (last != NULL && !(last->size & USED)) {
    last->size += bytes;
    b = last;
  } else {
    b = (block *)heap_end;
    b->size = bytes;
    b->prev = last != NULL ? bsize(last) : 0;
  }
  heap_end += bytes;
  return b;
}

/* Marks b used with `need` bytes, splitting off the rest when it can hold
 * a block of its own. */
static void *take(block *b, size_t need) {
  size_t have = bsize(b);
  if (have - need >= 2 * HDR) {
    block *rest = (block *)((uintptr_t)b + need);
    rest->size = have - need;
    rest->prev = need;
    if ((uintptr_t)rest + bsize(rest) < heap_end) next_of(rest)->prev = bsize(rest);
    have = need;
  }
  b->size = have | USED;
  return (void *)((uintptr_t)b + HDR);
}

__attribute__((export_name("malloc"))) void *malloc(size_t n) {
  block *b, *last = NULL;
  size_t need;
  if (heap_start == 0) heap_start = heap_end = ((uintptr_t)&__heap_base + 15u) & ~(uintptr_t)15u;
  if (n > SIZE_MAX - 2 * HDR) return NULL;
  need = ((n + 15u) & ~(size_t)15u) + HDR;
  for (b = (block *)heap_start; (uintptr_t)b < heap_end; b = next_of(b)) {
    if (!(b->size & USED) && bsize(b) >= need) return take(b, need);
    last = b;
  }
  /* grow by what the free last block lacks */
  b = grow(last != NULL && !(last->size & USED) ? need - bsize(last) : need, last);
  return b != NULL ? take(b, need) : NULL;
}

__attribute__((export_name("free"))) void free(void *p) {
  block *b;
  if (p == NULL) return;
  b = (block *)((uintptr_t)p - HDR);
  b->size &= ~(size_t)USED;
  if ((uintptr_t)next_of(b) < heap_end && !(next_of(b)->size & USED)) b->size += bsize(next_of(b));
  if (b->prev != 0 && !(prev_of(b)->size & USED)) {
    block *pb = prev_of(b);
    pb->size += bsize(b);
    b = pb;
  }
  if ((uintptr_t)next_of(b) < heap_end) next_of(b)->prev = bsize(b);
}

void *calloc(size_t n, size_t size) {
  void *p;
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  p = malloc(n * size);
  if (p != NULL) memset(p, 0, n * size);
  return p;
}

void *realloc(void *p, size_t n) {
  block *b;
  void *q;
  size_t old;
  if (p == NULL) return malloc(n);
  b = (block *)((uintptr_t)p - HDR);
  old = bsize(b) - HDR;
  if (n <= old) return p;
  q = malloc(n);
  if (q == NULL) return NULL;
  memcpy(q, p, old);
  free(p);
  return q;
}
