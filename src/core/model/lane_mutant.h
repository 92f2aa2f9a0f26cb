/* Planted defects of the fast lane for promotion's mutation table
 * (tests/promote/mutation_test.py, docs/promotion.md §Tests). Only the
 * test binary build/<cfg>/tinylm-lane-mutant is compiled with
 * -DTL_LANE_MUTANTS: there TL_LANE_MUT(x) asks tests/promote/lane_mutant.c
 * which defect the environment variable TL_LANE_MUTANT names. In every
 * other build (the library, the installed CLI, wasm) it is the constant
 * false, so no hook survives compilation. Every hook also requires the
 * fast lane: the strict lane stays the reference a promotion compares
 * against. */
#ifndef TL_CORE_MODEL_LANE_MUTANT_H
#define TL_CORE_MODEL_LANE_MUTANT_H

#include <stdint.h>

typedef enum tl_lane_mutant_id {
  TL_LANE_MUT_NONE = 0,
  TL_LANE_MUT_ROPE_THETA_1_1,   /* RoPE theta x1.1 */
  TL_LANE_MUT_ROPE_THETA_3,     /* RoPE theta x3 */
  TL_LANE_MUT_RMS_EPS_X10,      /* RMSNorm epsilon x10 in layer 1's attn_norm */
  TL_LANE_MUT_POS_SHIFT_20,     /* positions from token 20 on rotated as one later */
  TL_LANE_MUT_POS_SHIFT_200,    /* the same from token 200 */
  TL_LANE_MUT_KV_ROW_LATE,      /* each K/V cache row holds the previous position's */
  TL_LANE_MUT_ATTN_SCALE_1_01,  /* attention scale x1.01 */
  TL_LANE_MUT_SILU_APPROX,      /* SiLU through a close approximation of e^-g */
  TL_LANE_MUT_TEMP_1_05,        /* sampling temperature x1.05 */
  TL_LANE_MUT_TEMP_0_95,        /* sampling temperature x0.95 */
  TL_LANE_MUT_TOP_P_0_95,       /* top-p 0.95 where 1 (off) was asked */
  TL_LANE_MUT_TOP_K_PLUS_1,     /* top-k one more than asked (when on) */
  TL_LANE_MUT_MIN_P_0_05,       /* min-p 0.05 where 0 (off) was asked */
  TL_LANE_MUT_PENALTY_TWICE,    /* the repetition penalty applied twice */
  TL_LANE_MUT_COUNT
} tl_lane_mutant_id;

#ifdef TL_LANE_MUTANTS
/* The defect TL_LANE_MUTANT names (tests/promote/lane_mutant.c). */
tl_lane_mutant_id tl_lane_mutant(void);
#define TL_LANE_MUT(id) (tl_lane_mutant() == (id))
#else
#define TL_LANE_MUT(id) ((void)(id), 0)
#endif

#endif
