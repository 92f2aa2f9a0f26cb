/* Where Qwen3's think block lies (gen/think.h): reasoning between the
 * tags without the newlines around it, the answer after "</think>" and
 * its newlines; a block only where the reply opens with the tag; while
 * the reply grows, what could still change is held back.
 *
 * Planted defects caught (each run by hand): a partial "</think>" not held
 * (split_offsets, every_prefix...); a partial "<think>" not held; the
 * newlines after "</think>" kept in the answer. In serve_http_test.c: the
 * tool calls read from the think block under reasoning_format "none"; "none"
 * still reporting reasoning_content; a reasoning delta ending inside a
 * UTF-8 sequence. */
#include "gen/think.h"

#include <string.h>

#include "tl_test.h"

static void split_offsets(tl_test_ctx *t) {
  static const struct {
    const char *s;
    bool final, block, closed;
    size_t reason_from, reason_to, answer_from;
  } cases[] = {
      {"<think>\n\n</think>\n\n{\"a\": 1}", true, true, true, 9, 9, 19},
      {"<think>\nhm\n</think>\n\n{}", true, true, true, 8, 10, 21},
      {"<think>\nhm\n</think>\n\n{}", false, true, true, 8, 10, 21},
      {"<think>hm</think>42", true, true, true, 7, 9, 17},   /* no newlines at all */
      {"<think>a</think>b</think>c", true, true, true, 7, 8, 16}, /* the first close ends it */
      {"{\"a\": 1}", true, false, false, 0, 0, 0},
      {"{\"a\": 1}", false, false, false, 0, 0, 0},
      {"x<think>hm</think>y", true, false, false, 0, 0, 0},  /* text before the tag: no block */
      {"\n<think>hm</think>y", false, false, false, 0, 0, 0},
      {"", false, true, false, 0, 0, 0},                     /* nothing yet: may open one */
      {"", true, false, false, 0, 0, 0},
      {"<thi", false, true, false, 4, 4, 4},                 /* may yet open a block: all held */
      {"<thi", true, false, false, 0, 0, 0},                 /* ended: no block */
      {"<thx", false, false, false, 0, 0, 0},                /* can no longer open one */
      {"<think>\nhm\n</thi", false, true, false, 8, 10, 16}, /* a partial close and its newline held */
      {"<think>\nhm\n</thi", true, true, false, 8, 16, 16},  /* cut short: all of it reasoning */
      {"<think>\nhm\n", false, true, false, 8, 10, 11},
      {"<think>\nhm\n", true, true, false, 8, 10, 11},       /* never closed: no answer */
      {"<think>", true, true, false, 7, 7, 7},
      {"<think>\n\n</think>", false, true, true, 9, 9, 17},
      {"<think>\n\n</think>\n", false, true, true, 9, 9, 18},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_think th;
    tl_think_split((const uint8_t *)cases[i].s, strlen(cases[i].s), cases[i].final, &th);
    TL_EXPECT(t, th.block == cases[i].block);
    TL_EXPECT_EQ_U64(t, th.reason_from, cases[i].reason_from);
    TL_EXPECT_EQ_U64(t, th.reason_to, cases[i].reason_to);
    TL_EXPECT_EQ_U64(t, th.answer_from, cases[i].answer_from);
    TL_EXPECT(t, th.closed == cases[i].closed);
  }
}

/* Streaming sends, at every prefix of the reply, the reasoning up to
 * reason_to and the answer from answer_from: what it sent must be a prefix
 * of the final parts, and never part of a tag (the tags split across
 * arrivals at every byte). The final parts come from the full text. */
static void every_prefix_agrees_with_the_whole(tl_test_ctx *t) {
  static const char *const replies[] = {
      "<think>\nLet me add.\n</think>\n\n12 + 30 = 42.",
      "<think>\n\n</think>\n\nHi!",
      "<think>\na </thin b\n</think>\n\n<think> c",  /* a false close, a tag in the answer */
      "<think>\nnever closed\n</th",
      "no block <think>",
      "<thin",
  };
  for (size_t r = 0; r < sizeof replies / sizeof replies[0]; r++) {
    const uint8_t *s = (const uint8_t *)replies[r];
    size_t len = strlen(replies[r]);
    tl_think all;
    tl_think_split(s, len, true, &all);
    for (size_t n = 0; n <= len; n++) {
      tl_think p;
      size_t rlen, alen;
      tl_think_split(s, n, false, &p);
      if (!p.block) { /* no block: it is all answer, as the whole says */
        TL_EXPECT(t, !all.block);
        continue;
      }
      rlen = p.reason_to - p.reason_from;
      alen = n - p.answer_from;
      if (!all.block) { /* a prefix that could have opened one: nothing sent */
        TL_EXPECT(t, rlen == 0 && alen == 0);
        continue;
      }
      TL_EXPECT(t, p.reason_from == all.reason_from || rlen == 0);
      TL_EXPECT(t, rlen <= all.reason_to - all.reason_from &&
                       memcmp(s + p.reason_from, s + all.reason_from, rlen) == 0);
      TL_EXPECT(t, alen == 0 || (p.answer_from == all.answer_from && alen <= len - all.answer_from));
    }
  }
}

static const tl_test_case cases[] = {
    TL_CASE(split_offsets),
    TL_CASE(every_prefix_agrees_with_the_whole),
};
TL_SUITE(think, cases);
