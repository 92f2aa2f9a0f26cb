/* The few <string.h> functions the freestanding core and the test harness
 * use, for the wasm32 build, which has no C library (see libc.c). */
#ifndef TL_WASM_STRING_H
#define TL_WASM_STRING_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

#endif
