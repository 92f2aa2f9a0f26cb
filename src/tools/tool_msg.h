/* Messages of the converter-side tools: "<file>: <what went wrong>". */
#ifndef TL_TOOLS_TOOL_MSG_H
#define TL_TOOLS_TOOL_MSG_H

#include <stdarg.h>
#include <stddef.h>

#include "tinylm.h"

/* Writes "<file>: " followed by the formatted text into err (err_cap
 * bytes, always NUL-terminated, truncated when long). */
void tl_tool_vmsg(char *err, size_t err_cap, const char *file, const char *fmt,
                  va_list ap);

/* Writes the formatted text into err (err_cap bytes, always
 * NUL-terminated) and returns st: `return tl_fail(err, cap, TL_ERR_IO,
 * "...", ...);`. */
tl_status tl_fail(char *err, size_t err_cap, tl_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
