/* The <stdlib.h> of the wasm32 API modules: the heap (web/wasm/malloc.c)
 * and strtod (exact, on the core's decimal conversion). */
#ifndef TL_WASM_STDLIB_H
#define TL_WASM_STDLIB_H

#include <stddef.h>

void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
double strtod(const char *restrict s, char **restrict end);

#endif
