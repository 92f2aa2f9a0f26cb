/* Generational handles: lifecycle, forgery, the generation limit. */
#include "api/handle.h"

#include "tl_test.h"

static tl_handle_slot slots[4];
static int objs[4];

static void issue_get_release(tl_test_ctx *t) {
  tl_handle_table tab;
  uint32_t a = 0, b = 0;
  void *o = NULL;
  tl_handle_table_init(&tab, TL_HANDLE_SESSION, slots, 4);
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[0], &a));
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[1], &b));
  TL_EXPECT(t, a != 0 && b != 0 && a != b);
  TL_EXPECT_EQ_U64(t, a >> TL_HANDLE_KIND_SHIFT, TL_HANDLE_SESSION);
  TL_EXPECT_OK(t, tl_handle_get(&tab, a, &o));
  TL_EXPECT(t, o == &objs[0]);
  TL_EXPECT_OK(t, tl_handle_get(&tab, b, &o));
  TL_EXPECT(t, o == &objs[1]);
  TL_EXPECT_OK(t, tl_handle_release(&tab, a, &o));
  TL_EXPECT(t, o == &objs[0]);
  TL_EXPECT_STATUS(t, tl_handle_issue(&tab, NULL, &a), TL_ERR_INVALID_ARGUMENT);
}

static void released_and_reused_handles_are_stale(tl_test_ctx *t) {
  tl_handle_table tab;
  uint32_t a = 0, c = 0;
  void *o = NULL;
  tl_handle_table_init(&tab, TL_HANDLE_MODEL, slots, 4);
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[0], &a));
  TL_EXPECT_OK(t, tl_handle_release(&tab, a, &o));
  /* use after free, double free */
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, a, &o), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_release(&tab, a, &o), TL_ERR_STALE_HANDLE);
  /* the slot is reused with the next generation: the old handle still
   * names nothing, the new one its own object */
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[2], &c));
  TL_EXPECT_EQ_U64(t, (c >> TL_HANDLE_INDEX_SHIFT) & (TL_HANDLE_MAX_SLOTS - 1),
                   (a >> TL_HANDLE_INDEX_SHIFT) & (TL_HANDLE_MAX_SLOTS - 1));
  TL_EXPECT(t, c != a);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, a, &o), TL_ERR_STALE_HANDLE);
  TL_EXPECT_OK(t, tl_handle_get(&tab, c, &o));
  TL_EXPECT(t, o == &objs[2]);
}

static void forged_handles_are_invalid(tl_test_ctx *t) {
  tl_handle_table tab, other;
  tl_handle_slot other_slots[2];
  uint32_t a = 0, gen;
  void *o = NULL;
  tl_handle_table_init(&tab, TL_HANDLE_GENERATION, slots, 4);
  tl_handle_table_init(&other, TL_HANDLE_MODEL, other_slots, 2);
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[0], &a));
  gen = a & TL_HANDLE_GEN_MAX;
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, 0, &o), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, 0xFFFFFFFFu, &o), TL_ERR_INVALID_HANDLE);
  /* the right slot under another kind tag, in either table */
  TL_EXPECT_STATUS(t, tl_handle_get(&other, a, &o), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, (a & ~(3u << TL_HANDLE_KIND_SHIFT)) |
                                              (uint32_t)TL_HANDLE_MODEL << TL_HANDLE_KIND_SHIFT,
                                    &o),
                   TL_ERR_INVALID_HANDLE);
  /* an index past the table */
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, a | 4u << TL_HANDLE_INDEX_SHIFT, &o),
                   TL_ERR_INVALID_HANDLE);
  /* a generation never issued: 0, and the next one */
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, a & ~TL_HANDLE_GEN_MAX, &o), TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, (a & ~TL_HANDLE_GEN_MAX) | (gen + 1), &o),
                   TL_ERR_INVALID_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_release(&tab, (a & ~TL_HANDLE_GEN_MAX) | (gen + 1), &o),
                   TL_ERR_INVALID_HANDLE);
  /* an unused slot */
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, a | 1u << TL_HANDLE_INDEX_SHIFT, &o),
                   TL_ERR_INVALID_HANDLE);
  TL_EXPECT_OK(t, tl_handle_get(&tab, a, &o)); /* nothing above disturbed it */
}

static void full_table_is_typed(tl_test_ctx *t) {
  tl_handle_table tab;
  uint32_t h[4], extra;
  void *o;
  tl_handle_table_init(&tab, TL_HANDLE_MODEL, slots, 4);
  for (int i = 0; i < 4; i++) TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[i], &h[i]));
  TL_EXPECT_STATUS(t, tl_handle_issue(&tab, &objs[0], &extra), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_OK(t, tl_handle_release(&tab, h[2], &o));
  TL_EXPECT_OK(t, tl_handle_issue(&tab, &objs[0], &extra));
}

/* Every generation of a slot is issued once; at the last one the slot
 * retires instead of wrapping to a generation an old handle carries. */
static void generation_counter_never_wraps(tl_test_ctx *t) {
  tl_handle_table tab;
  uint32_t first = 0, h = 0, last = 0;
  void *o;
  uint32_t issued = 0;
  tl_handle_table_init(&tab, TL_HANDLE_SESSION, slots, 1);
  while (tl_handle_issue(&tab, &objs[0], &h) == TL_OK) {
    if (issued == 0) first = h;
    issued++;
    last = h;
    if (tl_handle_release(&tab, h, &o) != TL_OK) break;
  }
  TL_EXPECT_EQ_U64(t, issued, TL_HANDLE_GEN_MAX);
  TL_EXPECT_EQ_U64(t, last & TL_HANDLE_GEN_MAX, TL_HANDLE_GEN_MAX);
  TL_EXPECT_STATUS(t, tl_handle_issue(&tab, &objs[0], &h), TL_ERR_OUT_OF_MEMORY);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, first, &o), TL_ERR_STALE_HANDLE);
  TL_EXPECT_STATUS(t, tl_handle_get(&tab, last, &o), TL_ERR_STALE_HANDLE);
}

static const tl_test_case cases[] = {
    TL_CASE(issue_get_release),
    TL_CASE(released_and_reused_handles_are_stale),
    TL_CASE(forged_handles_are_invalid),
    TL_CASE(full_table_is_typed),
    TL_CASE(generation_counter_never_wraps),
};
TL_SUITE(handle, cases);
