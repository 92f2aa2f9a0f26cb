/* What the wasm32 API modules' own files share (docs/web.md): the
 * attributes that name an export or an import of "env", the layout
 * assertion for structures the JS loader reads, the bounds check of a
 * caller's pointer (no argument reads or writes outside the memory or,
 * for an output, into the module's own stack and data), and the fast
 * lane's kernels in this module. */
#ifndef TL_WASM_ABI_H
#define TL_WASM_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define EXPORT(name) __attribute__((export_name(#name)))
#define IMPORT(name) __attribute__((import_module("env"), import_name(#name)))

/* The field's offset on wasm32 (pointers and size_t 4 bytes), as
 * web/tinylm.js reads it. */
#define AT(type, field, off) _Static_assert(offsetof(type, field) == (off), #type "." #field)

extern unsigned char __heap_base;

/* The memory's size now, in bytes. */
static inline uintptr_t tl_wasm_memory_bytes(void) {
  return (uintptr_t)__builtin_wasm_memory_size(0) * 65536u;
}

/* [p, p + n) lies inside the memory; an output also past __heap_base. */
static inline bool tl_wasm_span_ok(const void *p, size_t n, bool output) {
  uintptr_t a = (uintptr_t)p, mem = tl_wasm_memory_bytes();
  if (output && a < (uintptr_t)&__heap_base) return false;
  return a <= mem && n <= mem - a;
}

/* The fast lane's kernels here: SIMD128 in the modules built with it,
 * else the scalar twins (the same bits, docs/fast-profile.md). */
static inline const tl_kernels *tl_wasm_lane_kernels(void) {
  const tl_kernels *k = tl_kernels_get(TL_KERN_WASM_SIMD128);
  return k != NULL ? k : tl_kernels_get(TL_KERN_SCALAR);
}

#endif
