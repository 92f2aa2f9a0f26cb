/* The wasm host's memory: one bump region after __heap_base, grown with
 * memory.grow. JS places inputs there (tl_wasm_alloc) and hands the core
 * arenas carved from it. Released only all at once (tl_wasm_reset). */
#include <stddef.h>
#include <stdint.h>

extern unsigned char __heap_base;

static uintptr_t heap_top;

#define WASM_PAGE 65536u

void *tl_wasm_alloc(size_t n);
void tl_wasm_reset(void);

/* Returns 16-byte-aligned memory, or 0 when memory cannot grow. */
__attribute__((export_name("tl_wasm_alloc"))) void *tl_wasm_alloc(size_t n) {
  uintptr_t start, end, have;
  if (heap_top == 0) heap_top = (uintptr_t)&__heap_base;
  start = (heap_top + 15u) & ~(uintptr_t)15u;
  if (start < heap_top || n > UINTPTR_MAX - start) return 0;
  end = start + n;
  have = (uintptr_t)__builtin_wasm_memory_size(0) * WASM_PAGE;
  if (end > have) {
    uintptr_t pages = (end - have + WASM_PAGE - 1) / WASM_PAGE;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
  }
  heap_top = end;
  return (void *)start;
}

__attribute__((export_name("tl_wasm_reset"))) void tl_wasm_reset(void) {
  heap_top = (uintptr_t)&__heap_base;
}
