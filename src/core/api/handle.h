/* Generational handles (docs/api.md §Handles): the integers the public API
 * gives out for its objects, so that a freed, reused or forged handle is a
 * typed error and never a wrong object or a crash.
 *
 *   bits 31..30  kind (0 grammar, 1 model, 2 session, 3 generation; the
 *                handle 0 is never valid: no slot has generation 0)
 *   bits 29..20  slot index
 *   bits 19..0   generation of the slot: 1 on its first use, one more on
 *                each reuse
 *
 * A handle is classified against its table: another kind, an index past
 * the table, generation 0 or one the slot has not reached yet is
 * TL_ERR_INVALID_HANDLE (forged); an older generation of the slot, or the
 * current one after it was released, is TL_ERR_STALE_HANDLE. A slot whose
 * generation reaches TL_HANDLE_GEN_MAX is retired when released (never
 * reused), so generations never wrap and a stale handle stays stale.
 *
 * Freestanding and unsynchronised: the host serialises calls on a table
 * (the native API holds one mutex). */
#ifndef TL_CORE_API_HANDLE_H
#define TL_CORE_API_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

#define TL_HANDLE_KIND_SHIFT 30
#define TL_HANDLE_INDEX_SHIFT 20
#define TL_HANDLE_INDEX_BITS 10
#define TL_HANDLE_MAX_SLOTS (1u << TL_HANDLE_INDEX_BITS)
#define TL_HANDLE_GEN_MAX ((1u << TL_HANDLE_INDEX_SHIFT) - 1u)

enum {
  TL_HANDLE_GRAMMAR = 0,
  TL_HANDLE_MODEL = 1,
  TL_HANDLE_SESSION = 2,
  TL_HANDLE_GENERATION = 3
};

typedef struct tl_handle_slot {
  void *obj;
  uint32_t gen; /* the last generation issued (0: never used) */
  bool live;
} tl_handle_slot;

typedef struct tl_handle_table {
  uint32_t kind;
  tl_handle_slot *slots;
  uint32_t cap;
} tl_handle_table;

/* slots[0..cap) (cap at most TL_HANDLE_MAX_SLOTS) start unused. */
void tl_handle_table_init(tl_handle_table *t, uint32_t kind, tl_handle_slot *slots,
                          uint32_t cap);

/* A new handle for obj (not NULL) in the lowest free slot;
 * TL_ERR_OUT_OF_MEMORY when every slot is live or retired. */
tl_status tl_handle_issue(tl_handle_table *t, void *obj, uint32_t *handle);

/* The object of a live handle, else the typed error above. */
tl_status tl_handle_get(const tl_handle_table *t, uint32_t handle, void **obj);

/* Ends a live handle (its object in *obj), else the typed error above:
 * a second release of the same handle is TL_ERR_STALE_HANDLE. */
tl_status tl_handle_release(tl_handle_table *t, uint32_t handle, void **obj);

#endif
