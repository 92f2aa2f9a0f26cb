/* The chat page `tinylm serve` answers at / (docs/server.md, The chat
 * page): web/server/index.html, web/server/chat.js and web/app.css,
 * compiled into the binary by the Makefile (build/CFG/gen/serve_page.c),
 * so a fresh clone and an installed tinylm serve the same bytes and no
 * file system path is ever resolved from a request. */
#ifndef TL_NATIVE_SERVE_PAGE_H
#define TL_NATIVE_SERVE_PAGE_H

#include <stddef.h>

typedef struct tl_srv_page_file {
  const char *path; /* "/", "/chat.js", "/app.css" */
  const char *type; /* its Content-Type */
  const unsigned char *data;
  size_t len;
} tl_srv_page_file;

extern const tl_srv_page_file tl_srv_page_files[];
extern const size_t tl_srv_page_count;

#endif
