/* Messages of the converter-side tools: "<file>: <what went wrong>". */
#ifndef TL_TOOLS_TOOL_MSG_H
#define TL_TOOLS_TOOL_MSG_H

#include <stdarg.h>
#include <stddef.h>

/* Writes "<file>: " followed by the formatted text into err (err_cap
 * bytes, always NUL-terminated, truncated when long). */
void tl_tool_vmsg(char *err, size_t err_cap, const char *file, const char *fmt,
                  va_list ap);

#endif
