#include "api/handle.h"

void tl_handle_table_init(tl_handle_table *t, uint32_t kind, tl_handle_slot *slots,
                          uint32_t cap) {
  t->kind = kind;
  t->slots = slots;
  t->cap = cap < TL_HANDLE_MAX_SLOTS ? cap : TL_HANDLE_MAX_SLOTS;
  for (uint32_t i = 0; i < t->cap; i++) {
    slots[i].obj = NULL;
    slots[i].gen = 0;
    slots[i].live = false;
  }
}

tl_status tl_handle_issue(tl_handle_table *t, void *obj, uint32_t *handle) {
  if (obj == NULL) return TL_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < t->cap; i++) {
    tl_handle_slot *s = &t->slots[i];
    if (s->live || s->gen == TL_HANDLE_GEN_MAX) continue; /* in use, retired */
    s->gen++;
    s->live = true;
    s->obj = obj;
    *handle = t->kind << TL_HANDLE_KIND_SHIFT | i << TL_HANDLE_INDEX_SHIFT | s->gen;
    return TL_OK;
  }
  return TL_ERR_OUT_OF_MEMORY;
}

static tl_status classify(const tl_handle_table *t, uint32_t handle, tl_handle_slot **slot) {
  uint32_t kind = handle >> TL_HANDLE_KIND_SHIFT;
  uint32_t index = (handle >> TL_HANDLE_INDEX_SHIFT) & (TL_HANDLE_MAX_SLOTS - 1u);
  uint32_t gen = handle & TL_HANDLE_GEN_MAX;
  tl_handle_slot *s;
  if (kind != t->kind || index >= t->cap || gen == 0) return TL_ERR_INVALID_HANDLE;
  s = &t->slots[index];
  if (gen > s->gen) return TL_ERR_INVALID_HANDLE; /* never issued */
  if (gen < s->gen || !s->live) return TL_ERR_STALE_HANDLE;
  *slot = s;
  return TL_OK;
}

tl_status tl_handle_get(const tl_handle_table *t, uint32_t handle, void **obj) {
  tl_handle_slot *s;
  tl_status st = classify(t, handle, &s);
  if (st == TL_OK) *obj = s->obj;
  return st;
}

tl_status tl_handle_release(tl_handle_table *t, uint32_t handle, void **obj) {
  tl_handle_slot *s;
  tl_status st = classify(t, handle, &s);
  if (st != TL_OK) return st;
  *obj = s->obj;
  s->obj = NULL;
  s->live = false;
  return TL_OK;
}
