/* The defect a tinylm-lane-mutant process plants (src/core/model/
 * lane_mutant.h): TL_LANE_MUTANT names it, read once. Unset or empty is
 * none; an unknown name stops the process before main, so a typo in the mutation
 * table cannot pass as a clean run. Linked into the test binary only. */
/* this file is the hook lane_mutant.h declares for the mutant build */
#define TL_LANE_MUTANTS

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lane_mutant.h"

static const char *const names[TL_LANE_MUT_COUNT] = {
    [TL_LANE_MUT_NONE] = "",
    [TL_LANE_MUT_ROPE_THETA_1_1] = "rope_theta_x1.1",
    [TL_LANE_MUT_ROPE_THETA_3] = "rope_theta_x3",
    [TL_LANE_MUT_RMS_EPS_X10] = "rms_eps_x10_layer1",
    [TL_LANE_MUT_POS_SHIFT_20] = "position_shift_from_20",
    [TL_LANE_MUT_POS_SHIFT_200] = "position_shift_from_200",
    [TL_LANE_MUT_KV_ROW_LATE] = "kv_row_late",
    [TL_LANE_MUT_ATTN_SCALE_1_01] = "attention_scale_x1.01",
    [TL_LANE_MUT_SILU_APPROX] = "silu_approximation",
    [TL_LANE_MUT_TEMP_1_05] = "temperature_x1.05",
    [TL_LANE_MUT_TEMP_0_95] = "temperature_x0.95",
    [TL_LANE_MUT_TOP_P_0_95] = "top_p_0.95",
    [TL_LANE_MUT_TOP_K_PLUS_1] = "top_k_plus_1",
    [TL_LANE_MUT_MIN_P_0_05] = "min_p_0.05",
    [TL_LANE_MUT_PENALTY_TWICE] = "repetition_penalty_twice",
};

static tl_lane_mutant_id chosen;

/* Read before main, so the pool's threads only ever read it. */
__attribute__((constructor)) static void choose_mutant(void) {
  const char *want = getenv("TL_LANE_MUTANT");
  int i = 0;
  if (want == NULL) want = "";
  while (i < TL_LANE_MUT_COUNT && strcmp(names[i], want) != 0) i++;
  if (i == TL_LANE_MUT_COUNT) {
    fprintf(stderr, "tinylm-lane-mutant: unknown TL_LANE_MUTANT '%s'\n", want);
    exit(70);
  }
  chosen = (tl_lane_mutant_id)i;
}

tl_lane_mutant_id tl_lane_mutant(void) { return chosen; }
