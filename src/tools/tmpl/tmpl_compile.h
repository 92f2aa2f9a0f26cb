/* The chat-template compiler (native, converter side): Jinja source in the
 * subset of docs/template.md -> IR bytes in deterministic CBOR, which embed
 * the SHA-256 of the source. Anything outside the subset is refused with
 * "line:column: <construct> is not supported" (or a syntax error). */
#ifndef TL_TOOLS_TMPL_COMPILE_H
#define TL_TOOLS_TMPL_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* Compiles src[0..len) (UTF-8). On TL_OK *ir (malloc'd; free() it) holds
 * *ir_len bytes. On failure *ir is NULL and err (when err_cap > 0) holds a
 * NUL-terminated message "L:C: ..." (1-based line and column; the column
 * counts characters). Errors: TL_ERR_UNSUPPORTED_FEATURE (a construct
 * outside the subset), TL_ERR_INVALID_ARGUMENT (a syntax error),
 * TL_ERR_INVALID_UTF8, TL_ERR_BOUNDS (a limit of tmpl_ir.h), and
 * TL_ERR_OUT_OF_MEMORY. */
tl_status tl_tmpl_compile(const char *src, size_t len, uint8_t **ir,
                          size_t *ir_len, char *err, size_t err_cap);

#endif
