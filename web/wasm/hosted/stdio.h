/* The <stdio.h> of the wasm32 API modules (web/wasm/README in docs/web.md):
 * formatting into buffers only. There are no files: FILE exists so that
 * host headers declaring FILE * parameters compile; nothing here opens,
 * reads or writes one. */
#ifndef TL_WASM_STDIO_H
#define TL_WASM_STDIO_H

#include <stdarg.h>
#include <stddef.h>

typedef struct tl_wasm_file FILE;

int snprintf(char *restrict buf, size_t cap, const char *restrict fmt, ...)
    __attribute__((format(printf, 3, 4)));
int vsnprintf(char *restrict buf, size_t cap, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
